"""The corpus behind ``health_calibration.py``: real healthy runs and real broken runs.

Every run is the real trainer (``ppo.trainer.Trainer``) on a real Gymnasium environment,
recorded to a real event log. Healthy runs use configurations known to learn: the default
config (CleanRL's) on CartPole-v1 and Acrobot-v1 at full length, and RL Zoo's tuned PPO
hyperparameters on Pendulum-v1. Broken runs start from a healthy configuration and break
it in a known way from a known update (the *onset*):

- ``lr_spike``: the learning rate jumps 200x (and stops annealing) at the onset;
- ``wide_clip``: 40 epochs per update with a clip range of 10 from the start;
- ``nan_obs``: the environment's observations become NaN at the onset;
- ``entropy_collapse``: the actor's output layer is scaled by 1000 at the onset, so the
  policy becomes deterministic;
- ``value_scale``: rewards, and so value targets, are multiplied by 1e4 from the onset;
- ``stall``: the environment blocks for longer than the stall limit once, at the onset;
- ``reward_hack``: fine-tuning with a reference KL too weak to hold it, the reward
  changes at the onset to pay for pushing left, so the policy drifts steadily from its
  reference while each update stays small (the RLHF failure a reference KL is for);
- ``length_bonus``: token-level PPO with ``length_penalty = -0.3`` from the start (a sign
  slip: 0.3 paid per generated token), so the policy learns to fill ``max_new_tokens``
  instead of answering;
- ``token_entropy_collapse``: token-level PPO whose LM head is scaled by 1000 at the
  onset, so generation becomes deterministic.

Fine-tuning runs (``examples/finetune.toml``) first train their starting policy
(``examples/healthy.toml``) in a folder of their own. Token-level runs are
``examples/token_ppo.toml`` (its warm start, then PPO) on their seed.

Environment faults are Gymnasium wrappers registered under a per-run id; agent faults are
applied by a Trainer that runs a hook before the onset update.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from ppo.agent import PPOAgent
from ppo.checkpoint import Counters
from ppo.config import PPOConfig
from ppo.rollout import Collector
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.generate import Generation
from ppo.tokens.reward import RewardTerms
from ppo.tokens.task import TokenTask
from ppo.tokens.trainer import TokenTrainer
from ppo.tokens.update import TokenBatch
from ppo.trainer import Progress, Trainer
from telemetry import Recorder
from telemetry.eventlog import EventLogWriter

PENDULUM_ZOO: dict[str, Any] = {
    "env_id": "Pendulum-v1",
    "total_steps": 100_000,
    "num_envs": 4,
    "num_steps": 1024,
    "gamma": 0.9,
    "gae_lambda": 0.95,
    "update_epochs": 10,
    "num_minibatches": 64,
    "ent_coef": 0.0,
    "learning_rate": 1e-3,
    "anneal_lr": False,
    "clip_range_vf": None,
}
"""RL Baselines3 Zoo's PPO hyperparameters for Pendulum-v1 (without gSDE), 100k steps."""

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str) -> dict[str, Any]:
    """The settings of ``examples/<name>.toml``."""
    with (EXAMPLES / f"{name}.toml").open("rb") as fh:
        return tomllib.load(fh)


STARTING_POLICY = "<starting policy>"
"""``init_from`` of a fine-tuning case: trained first from examples/healthy.toml."""
FINETUNE: dict[str, Any] = {**example("finetune"), "init_from": STARTING_POLICY}
FREE_FINETUNE: dict[str, Any] = {**FINETUNE, "ref_kl_loss_coef": 1e-6, "ref_kl_target": None}
"""Fine-tuning whose reference KL is measured but too weak to hold anything."""

BROKEN_BASE: dict[str, Any] = {"env_id": "CartPole-v1", "total_steps": 60_000}
"""Broken runs break a default CartPole run; 117 updates is enough to see each fault."""
TOKENS: dict[str, Any] = example("token_ppo")
"""Token-level PPO on the shipped digit-sum task (80 updates)."""


@dataclass(frozen=True)
class Case:
    """One run of the corpus."""

    name: str
    healthy: bool
    config: dict[str, Any]
    onset: int | None = None
    """0-based update from which the run is broken (None for healthy runs)."""
    fault: str | None = None
    fault_args: dict[str, Any] = field(default_factory=dict)


DEFAULT_SEEDS = (1, 2, 3, 4)


def healthy_cases(quick: bool, seeds: tuple[int, ...] = DEFAULT_SEEDS) -> list[Case]:
    """At least 12 healthy runs (3 with ``quick``): CartPole, Acrobot, Pendulum, by seed."""
    seeds = seeds[:1] if quick else seeds
    cases = []
    for seed in seeds:
        cases.append(Case(f"cartpole-s{seed}", True, {"seed": seed}))
        cases.append(Case(f"acrobot-s{seed}", True, {"env_id": "Acrobot-v1", "seed": seed}))
        cases.append(Case(f"pendulum-s{seed}", True, {**PENDULUM_ZOO, "seed": seed}))
    return cases + finetune_cases(quick) + token_cases(quick)


def finetune_cases(quick: bool) -> list[Case]:
    """Healthy fine-tuning: the example on two seeds, a 5x looser target, no control."""
    cases = [Case("finetune-s7", True, FINETUNE)]
    if not quick:
        cases += [
            Case("finetune-s8", True, {**FINETUNE, "seed": 8}),
            Case("finetune-target0.1", True, {**FINETUNE, "ref_kl_target": 0.1}),
            Case("finetune-free", True, FREE_FINETUNE),
        ]
    return cases


def token_cases(quick: bool) -> list[Case]:
    """Healthy token-level PPO: the example on two seeds (one with ``quick``)."""
    seeds = (1,) if quick else (1, 2)
    return [Case(f"tokens-s{seed}", True, {**TOKENS, "seed": seed}) for seed in seeds]


def broken_cases(quick: bool, stall_seconds: float) -> list[Case]:
    """The six faults, each with its onset; ``quick`` leaves out the stall (it waits)."""
    cases = [
        Case("lr_spike", False, BROKEN_BASE, 30, "lr_spike", {"factor": 200.0}),
        Case(
            "wide_clip",
            False,
            {**BROKEN_BASE, "update_epochs": 40, "clip_range": 10.0},
            0,
        ),
        Case("nan_obs", False, BROKEN_BASE, 30, "nan_obs"),
        Case("entropy_collapse", False, BROKEN_BASE, 30, "entropy_collapse", {"factor": 1e3}),
        Case("value_scale", False, BROKEN_BASE, 30, "value_scale", {"factor": 1e4}),
        Case("reward_hack", False, FREE_FINETUNE, 20, "reward_hack"),
        Case("length_bonus", False, {**TOKENS, "length_penalty": -0.3}, 0),
        Case("token_entropy_collapse", False, TOKENS, 20, "lm_head_scale", {"factor": 1e3}),
    ]
    if not quick:
        cases.append(Case("stall", False, BROKEN_BASE, 30, "stall", {"seconds": stall_seconds}))
    return cases


# ----------------------------------------------------------------- environment faults


_STALLED: set[str] = set()
"""Stall tokens already spent in this process (gym.make deep-copies its kwargs, so the
environments of one run share this set, not a dict in their kwargs)."""


class _FaultWrapper(gym.Wrapper[Any, Any, Any, Any]):
    """Counts this environment's steps; from step ``start`` on, applies the fault."""

    def __init__(self, env: gym.Env[Any, Any], fault: str, start: int, **args: Any) -> None:
        super().__init__(env)
        self.fault, self.start, self.args = fault, start, args
        self.steps = 0

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps >= self.start:
            if self.fault == "reward_hack":
                reward = 1.0 if action == 0 else -1.0
            elif self.fault == "nan_obs":
                obs = np.full_like(obs, np.nan)
            elif self.fault == "value_scale":
                reward = reward * self.args["factor"]
            elif self.fault == "stall" and self.args["token"] not in _STALLED:
                _STALLED.add(self.args["token"])  # one environment stalls, once
                time.sleep(self.args["seconds"])
        return obs, reward, terminated, truncated, info


def _make_faulty(base: str, fault: str, start: int, **args: Any) -> gym.Env[Any, Any]:
    return _FaultWrapper(gym.make(base), fault, start, **args)


ENV_FAULTS = ("nan_obs", "value_scale", "stall", "reward_hack")


def register_env_fault(case: Case, config: PPOConfig) -> str:
    """Register ``case``'s faulty environment and return its id."""
    assert case.onset is not None and case.fault is not None
    env_id = f"SanctumCalibration/{case.name}-v0"
    args = dict(case.fault_args)
    if case.fault == "stall":
        args["token"] = f"{case.name}-{time.monotonic_ns()}"
    gym.register(
        id=env_id,
        entry_point=_make_faulty,
        kwargs={
            "base": config.env_id,
            "fault": case.fault,
            "start": case.onset * config.num_steps + 1,  # each env steps num_steps per update
            **args,
        },
    )
    return env_id


# ----------------------------------------------------------------------- agent faults


def _lr_spike(agent: PPOAgent, factor: float) -> None:
    config = agent.config
    agent.config = dataclasses.replace(
        config, learning_rate=config.learning_rate * factor, anneal_lr=False
    )


def _entropy_collapse(agent: PPOAgent, factor: float) -> None:
    head = agent.policy.actor[-1]
    with torch.no_grad():
        for param in head.parameters():
            param.mul_(factor)


AGENT_FAULTS: dict[str, Callable[..., None]] = {
    "lr_spike": _lr_spike,
    "entropy_collapse": _entropy_collapse,
}


class FaultTrainer(Trainer):
    """A Trainer that applies an agent fault just before update ``onset``."""

    def __init__(self, config: PPOConfig, case: Case, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.case = case

    def _iteration(
        self, rec: Recorder, collector: Collector, agent: PPOAgent, counters: Counters
    ) -> Progress:
        if counters.update == self.case.onset and self.case.fault in AGENT_FAULTS:
            AGENT_FAULTS[self.case.fault](agent, **self.case.fault_args)
        return super()._iteration(rec, collector, agent, counters)


# ----------------------------------------------------------------- token-level faults


def _lm_head_scale(trainer: TokenTrainer, task: TokenTask, factor: float) -> None:
    with torch.no_grad():
        for param in task.model.lm_head.parameters():  # type: ignore[union-attr]
            param.mul_(factor)


TOKEN_FAULTS: dict[str, Callable[..., None]] = {
    "lm_head_scale": _lm_head_scale,
}


class TokenFaultTrainer(TokenTrainer):
    """A TokenTrainer that applies a token-level fault just before rollout ``onset``."""

    def __init__(self, config: TokenPPOConfig, case: Case, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.case = case

    def _rollout(
        self,
        update: int,
        task: TokenTask,
        reference: torch.nn.Module,
        records: EventLogWriter,
        generator: torch.Generator,
        allowed: torch.Tensor,
    ) -> tuple[TokenBatch, Generation, RewardTerms]:
        if update == self.case.onset and self.case.fault in TOKEN_FAULTS:
            TOKEN_FAULTS[self.case.fault](self, task, **self.case.fault_args)
        return super()._rollout(update, task, reference, records, generator, allowed)


def record(case: Case, run_dir: Path) -> Path:
    """Train ``case`` (its starting policy first, for fine-tuning) and return its events file."""
    torch.set_num_threads(1)
    if case.config.get("algorithm") == "token_ppo":
        config = TokenPPOConfig.from_mapping({**case.config, "torch_threads": 1})
        token_run = TokenFaultTrainer(config, case, run_dir=run_dir, run_id=case.name)
        return token_run.run().events_path
    settings = dict(case.config)
    if settings.get("init_from") == STARTING_POLICY:
        start = Trainer(
            PPOConfig.from_mapping(example("healthy")),
            run_dir=run_dir / "starts",
            run_id=f"{case.name}-start",
        )
        settings["init_from"] = str(start.run().events_path.parent)
    config = PPOConfig.from_mapping(settings)
    if case.fault in ENV_FAULTS:
        config = dataclasses.replace(config, env_id=register_env_fault(case, config))
    trainer = FaultTrainer(config, case, run_dir=run_dir, run_id=case.name)
    return trainer.run().events_path
