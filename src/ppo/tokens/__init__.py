"""Token-level PPO: a language-model-shaped policy on a token task (task, generation,
reward, update, and the samples it records in rollouts.jsonl)."""
