"""The benches' shared code; the entry scripts are the files in ``bench/`` above it.

The rule: an entry script imports from ``lib``, never from another entry script; nothing
in ``lib`` imports an entry script, and no two ``lib`` modules import each other. Entry
scripts run as ``python bench/NAME.py``, which puts ``bench/`` on ``sys.path``, so they and
``lib`` itself import ``lib.MODULE``.

- ``payloads``: the realistic ``ppo_update`` and ``rollout`` payloads the benches write;
- ``emit_path``: the emit path's timings (emit + record, encode, stage by stage) on a
  ``ppo_update`` with every field set, written to time an older tree too;
- ``screen``: the real ``sanctum`` in a pseudo-terminal, its on-screen latency and CPU;
- ``calibration_corpus``: the healthy and broken runs behind ``health_calibration.py``;
- ``peer_runs``: those runs recorded by Stable-Baselines3 and CleanRL's structure;
- ``env_faults``: the environment faults both kinds of corpus run inject;
- ``integration_runs``: the corpus runs of the trainers measured from outside (the plain
  PyTorch loop, TorchRL, skrl, Tianshou), through their examples;
- ``learning_runs``: one training run for ``learning_bench.py``, ours, SB3's or CleanRL's;
- ``trl_runs``: tiny TRL GRPO/RLOO runs on the CPU (the TRL callback's tests and benches);
- ``llm_corpus``: the language-model RL runs behind ``llm_calibration.py``;
- ``calibration_cli``: the options both calibration benches take.
"""

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
"""The repository's ``examples/`` folder (configurations and peer scripts the benches run)."""
