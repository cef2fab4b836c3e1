"""The corpus behind ``health_calibration.py``: real healthy runs and real broken runs.

Every run is the real trainer (``ppo.run.trainer.Trainer``) on a real Gymnasium environment,
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

Environment faults (``env_faults.py``) are Gymnasium wrappers registered under a per-run id;
agent faults are applied by a Trainer that runs a hook before the onset update.
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
import torch

from lib import EXAMPLES
from lib.env_faults import ENV_FAULTS, make_faulty
from lib.peer_runs import record_cleanrl, record_sb3, zoo_settings
from ppo.config import PPOConfig
from ppo.model.checkpoint import Counters
from ppo.rollout.collector import Collector
from ppo.run.trainer import Progress, Trainer
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.generate import Generation
from ppo.tokens.reward import RewardTerms
from ppo.tokens.task import TokenTask
from ppo.tokens.trainer import TokenTrainer
from ppo.tokens.update import TokenBatch
from ppo.update.agent import PPOAgent
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
class Target:
    """The score a healthy run of a setting reaches, and where that figure is published."""

    score: float
    """A healthy run's final return (mean of its last 20 episodes) is at least this."""
    source: str


CARTPOLE_SOLVED = Target(475.0, "Gymnasium's CartPole-v1 reward_threshold")
ACROBOT_SOLVED = Target(-100.0, "Gymnasium's Acrobot-v1 reward_threshold")


def zoo_band(mean: float, std: float, env: str) -> Target:
    """RL Zoo's published PPO score for ``env``, less two of its standard deviations."""
    return Target(
        round(mean - 2 * std, 1),
        f"RL Zoo benchmark.md (commit 0088472b8cb6), ppo {env}: {mean:g} +- {std:g}, minus 2 std",
    )


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
    trainer: str = "ppo"
    """``ppo`` (ours), ``sb3`` (Stable-Baselines3 through SanctumCallback) or ``cleanrl``
    (a CleanRL-structure script)."""
    setting: str = "default"
    """Which settings: ``default`` (the trainer's own), ``zoo`` (RL Zoo's tuned ones) ..."""
    split: str = "tune"
    """``tune``: the rules were fitted to this run; ``heldout``: they were not."""
    target: Target | None = None
    """The score a healthy run reaches (None: no published score for this setting)."""

    @property
    def env_id(self) -> str:
        if self.config.get("algorithm") == "token_ppo":
            return "digit-sum (tokens)"
        return str(self.config.get("env_id", "CartPole-v1"))


DEFAULT_SEEDS = (1, 2, 3)


PENDULUM_BAND = zoo_band(-172.225, 104.159, "Pendulum-v1")


def healthy_cases(seeds: tuple[int, ...] = DEFAULT_SEEDS) -> list[Case]:
    """Our trainer's healthy runs: CartPole, Acrobot, Pendulum by seed, fine-tuning and
    token-level PPO."""
    cases = []
    for seed in seeds:
        cases.append(Case(f"cartpole-s{seed}", True, {"seed": seed}, target=CARTPOLE_SOLVED))
        cases.append(
            Case(
                f"acrobot-s{seed}",
                True,
                {"env_id": "Acrobot-v1", "seed": seed},
                target=ACROBOT_SOLVED,
            )
        )
        cases.append(
            Case(
                f"pendulum-s{seed}",
                True,
                {**PENDULUM_ZOO, "seed": seed},
                setting="zoo",
                target=PENDULUM_BAND,
            )
        )
    return cases + finetune_cases() + token_cases()


def finetune_cases() -> list[Case]:
    """Healthy fine-tuning: the example on two seeds, a 5x looser target, no control."""
    tuned = {"setting": "finetune", "target": CARTPOLE_SOLVED}
    return [
        Case("finetune-s7", True, FINETUNE, **tuned),
        Case("finetune-s8", True, {**FINETUNE, "seed": 8}, **tuned),
        Case("finetune-target0.1", True, {**FINETUNE, "ref_kl_target": 0.1}, **tuned),
        Case("finetune-free", True, FREE_FINETUNE, **tuned),
    ]


def token_cases() -> list[Case]:
    """Healthy token-level PPO: the example on two seeds."""
    seeds = (1, 2)
    return [
        Case(f"tokens-s{seed}", True, {**TOKENS, "seed": seed}, setting="tokens") for seed in seeds
    ]


def _sb3(
    name: str, env_id: str, seed: int, steps: int, setting: str, target: Target, split: str
) -> Case:
    """A healthy SB3 run: ``setting`` is ``zoo``, ``zoo, 1 env`` or ``default``."""
    settings: dict[str, Any] = {}
    if setting.startswith("zoo"):
        settings = zoo_settings(env_id, **({"n_envs": 1} if setting == "zoo, 1 env" else {}))
    config = {"env_id": env_id, "seed": seed, "total_steps": steps, "sb3": settings}
    return Case(name, True, config, trainer="sb3", setting=setting, split=split, target=target)


def _cleanrl(name: str, script: str, env_id: str, seed: int, steps: int, target: Target) -> Case:
    config = {"env_id": env_id, "seed": seed, "total_steps": steps, "script": script}
    return Case(
        name, True, config, trainer="cleanrl", setting="default", split="heldout", target=target
    )


ZOO_BANDS = {
    "Pendulum-v1": PENDULUM_BAND,
    "MountainCarContinuous-v0": zoo_band(88.343, 2.572, "MountainCarContinuous-v0"),
    "Acrobot-v1": zoo_band(-73.506, 18.201, "Acrobot-v1"),
    "LunarLander-v3": zoo_band(242.119, 31.823, "LunarLander-v2"),
    "MountainCar-v0": zoo_band(-110.423, 19.473, "MountainCar-v0"),
}
INVERTED_PENDULUM = Target(950.0, "Gymnasium's InvertedPendulum-v5 reward_threshold")
INVERTED_DOUBLE = Target(9100.0, "Gymnasium's InvertedDoublePendulum-v5 reward_threshold")


def peer_cases() -> list[Case]:
    """Healthy runs of the peers. Fitted to (``tune``): SB3 with RL Zoo's settings on
    CartPole, Pendulum and MountainCarContinuous (the runs the old rules failed), one of
    them on a single env, and SB3's defaults on CartPole. Held out: every other env and
    every CleanRL-structure run."""
    tune, held = "tune", "heldout"
    cases = [
        _sb3("sb3-zoo-cartpole-s1", "CartPole-v1", 1, 100_000, "zoo", CARTPOLE_SOLVED, tune),
        _sb3("sb3-zoo-pendulum-s1", "Pendulum-v1", 1, 100_000, "zoo", PENDULUM_BAND, tune),
        _sb3(
            "sb3-zoo-mountaincarc-s1",
            "MountainCarContinuous-v0",
            1,
            20_000,
            "zoo",
            ZOO_BANDS["MountainCarContinuous-v0"],
            tune,
        ),
        _sb3(
            "sb3-zoo-invpendulum-s1",
            "InvertedPendulum-v5",
            1,
            50_000,
            "zoo",
            INVERTED_PENDULUM,
            held,
        ),
        _cleanrl(
            "cleanrl-cartpole-s1", "cleanrl_ppo.py", "CartPole-v1", 1, 500_000, CARTPOLE_SOLVED
        ),
    ]
    cases += [
        _sb3("sb3-zoo-cartpole-s2", "CartPole-v1", 2, 100_000, "zoo", CARTPOLE_SOLVED, tune),
        _sb3("sb3-zoo-cartpole-s3", "CartPole-v1", 3, 100_000, "zoo", CARTPOLE_SOLVED, tune),
        _sb3("sb3-zoo-pendulum-s2", "Pendulum-v1", 2, 100_000, "zoo", PENDULUM_BAND, tune),
        _sb3("sb3-zoo-pendulum-s3", "Pendulum-v1", 3, 100_000, "zoo", PENDULUM_BAND, tune),
        _sb3(
            "sb3-zoo-mountaincarc-s2",
            "MountainCarContinuous-v0",
            2,
            20_000,
            "zoo",
            ZOO_BANDS["MountainCarContinuous-v0"],
            tune,
        ),
        _sb3(
            "sb3-zoo1-cartpole-s1", "CartPole-v1", 1, 100_000, "zoo, 1 env", CARTPOLE_SOLVED, tune
        ),
        _sb3("sb3-zoo1-pendulum-s2", "Pendulum-v1", 2, 100_000, "zoo, 1 env", PENDULUM_BAND, tune),
        _sb3(
            "sb3-default-cartpole-s1", "CartPole-v1", 1, 100_000, "default", CARTPOLE_SOLVED, tune
        ),
        _sb3("sb3-zoo-acrobot-s1", "Acrobot-v1", 1, 200_000, "zoo", ZOO_BANDS["Acrobot-v1"], held),
        _sb3(
            "sb3-zoo-invpendulum-s2",
            "InvertedPendulum-v5",
            2,
            50_000,
            "zoo",
            INVERTED_PENDULUM,
            held,
        ),
        _sb3(
            "sb3-zoo-lunarlander-s1",
            "LunarLander-v3",
            1,
            1_000_000,
            "zoo",
            ZOO_BANDS["LunarLander-v3"],
            held,
        ),
        _sb3(
            "sb3-zoo-invdouble-s1",
            "InvertedDoublePendulum-v5",
            1,
            200_000,
            "zoo",
            INVERTED_DOUBLE,
            held,
        ),
        _sb3(
            "sb3-zoo-mountaincar-s1",
            "MountainCar-v0",
            1,
            1_000_000,
            "zoo",
            ZOO_BANDS["MountainCar-v0"],
            held,
        ),
        _sb3("sb3-default-acrobot-s1", "Acrobot-v1", 1, 100_000, "default", ACROBOT_SOLVED, held),
        _cleanrl("cleanrl-acrobot-s1", "cleanrl_ppo.py", "Acrobot-v1", 1, 500_000, ACROBOT_SOLVED),
        _cleanrl(
            "cleanrl-invpendulum-s1",
            "cleanrl_ppo_continuous.py",
            "InvertedPendulum-v5",
            1,
            100_000,
            INVERTED_PENDULUM,
        ),
    ]
    return cases


SB3_BROKEN_BASE: dict[str, Any] = {
    "env_id": "CartPole-v1",
    "seed": 1,
    "total_steps": 40_000,
    "sb3": zoo_settings("CartPole-v1"),
}
"""SB3's broken runs break RL Zoo's CartPole run (8 envs x 32 steps: 156 updates)."""


def peer_broken_cases(stall_seconds: float) -> list[Case]:
    """The faults of our trainer's corpus, injected into SB3 runs (callback or wrapper)."""
    base, wide = SB3_BROKEN_BASE, {**SB3_BROKEN_BASE["sb3"], "n_epochs": 40, "clip_range": 10.0}
    sb3 = {"trainer": "sb3", "setting": "zoo"}
    cases = [
        Case("sb3-lr_spike", False, base, 30, "lr_spike", {"factor": 100.0}, **sb3),
        Case("sb3-wide_clip", False, {**base, "sb3": wide}, 0, **sb3),
        Case("sb3-nan_obs", False, base, 30, "nan_obs", **sb3),
        Case("sb3-entropy_collapse", False, base, 30, "entropy_collapse", {"factor": 1e3}, **sb3),
        Case("sb3-value_scale", False, base, 30, "value_scale", {"factor": 1e4}, **sb3),
        # RL Zoo's schedule, lin_0.001, x100 from the first update
        Case(
            "sb3-lr_start",
            False,
            {**base, "sb3": {**base["sb3"], "learning_rate": "lin_0.1"}},
            0,
            **sb3,
        ),
    ]
    pendulum = {
        "env_id": "Pendulum-v1",
        "seed": 1,
        "total_steps": 80_000,
        "sb3": zoo_settings("Pendulum-v1"),
    }
    cases.append(  # continuous actions: no normalised entropy, gSDE noise
        Case("sb3-pendulum-lr_spike", False, pendulum, 10, "lr_spike", {"factor": 100.0}, **sb3)
    )
    cases.append(Case("sb3-stall", False, base, 30, "stall", {"seconds": stall_seconds}, **sb3))
    return cases


def broken_cases(stall_seconds: float) -> list[Case]:
    """Our trainer's faults, each with its onset."""
    cases = [
        Case("lr_spike", False, BROKEN_BASE, 30, "lr_spike", {"factor": 200.0}),
        Case(
            "wide_clip",
            False,
            {**BROKEN_BASE, "update_epochs": 40, "clip_range": 10.0},
            0,
        ),
        Case("nan_obs", False, BROKEN_BASE, 30, "nan_obs"),
        # the commonest user error: a bad setting from the first update, no healthy baseline
        Case("lr_start", False, {**BROKEN_BASE, "learning_rate": 0.05}, 0),
        Case("entropy_collapse", False, BROKEN_BASE, 30, "entropy_collapse", {"factor": 1e3}),
        Case("value_scale", False, BROKEN_BASE, 30, "value_scale", {"factor": 1e4}),
        Case("reward_hack", False, FREE_FINETUNE, 20, "reward_hack"),
        Case("length_bonus", False, {**TOKENS, "length_penalty": -0.3}, 0),
        Case("token_entropy_collapse", False, TOKENS, 20, "lm_head_scale", {"factor": 1e3}),
    ]
    cases.append(Case("stall", False, BROKEN_BASE, 30, "stall", {"seconds": stall_seconds}))
    return cases


# ----------------------------------------------------------------- environment faults


def register_env_fault(case: Case, config: PPOConfig) -> str:
    """Register ``case``'s faulty environment and return its id."""
    assert case.onset is not None and case.fault is not None
    env_id = f"SanctumCalibration/{case.name}-v0"
    args = dict(case.fault_args)
    if case.fault == "stall":
        args["token"] = f"{case.name}-{time.monotonic_ns()}"
    gym.register(
        id=env_id,
        entry_point=make_faulty,
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
    if case.trainer == "sb3":
        c = case.config
        return record_sb3(
            case.name,
            c["env_id"],
            c["sb3"],
            c["seed"],
            c["total_steps"],
            run_dir,
            case.fault,
            case.onset,
            case.fault_args,
        )
    if case.trainer == "cleanrl":
        c = case.config
        return record_cleanrl(
            case.name, c["script"], c["env_id"], c["seed"], c["total_steps"], run_dir
        )
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
