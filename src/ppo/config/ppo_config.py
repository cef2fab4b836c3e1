"""PPOConfig: every hyperparameter of a run, validated once, loadable from TOML and --set.

The defaults are CleanRL's ``ppo.py`` CartPole baseline. A config is frozen and validated
on construction: every bad field is reported together, in field order, each message naming
the field and the offending value (``kl_penalty_coefficient must be finite and >= 0, got
nan``), because a run that starts with a silently clamped threshold is worse than one that
refuses to start. Loading, coercion and ``--set`` live in :mod:`ppo.config.settings`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypeAlias

from ppo.config import kl_settings as shared
from ppo.config import validators as valid
from ppo.config.limits import (
    MAX_ASYNC_ENVS,
    MAX_HIDDEN_LAYERS,
    MAX_HIDDEN_WIDTH,
    MAX_MINIBATCH_STEPS,
    MAX_NUM_ENVS,
    MAX_SEED,
    MAX_TORCH_THREADS,
    MAX_UPDATE_EPOCHS,
)
from ppo.config.settings import Settings, setting
from ppo.core.choices import DeviceName
from ppo.core.kl import KLEstimator
from ppo.core.kl_control import KL_COEF_MAX, KL_COEF_MIN

EarlyStopScope: TypeAlias = Literal["minibatch", "epoch"]
AdvantageMode: TypeAlias = Literal["gae", "episodic"]
Activation: TypeAlias = Literal["tanh", "relu"]
VectorKind: TypeAlias = Literal["sync", "async", "envpool"]
"""How the environments are stepped (``ppo.rollout.envs``)."""


@dataclass(frozen=True)
class PPOConfig(Settings):
    """Hyperparameters of one PPO run (CleanRL CartPole defaults)."""

    # Each field is declared once: its type, then its default, validator and one-line doc
    # (``setting``), which ``ppo config`` lists. A bool or Literal field names no validator:
    # its type gives it (``setting(default, doc=...)``).
    # setting() returns a dataclasses.field; ruff's RUF009 cannot see that through the
    # Literal and KLEstimator aliases, hence its noqa on those fields.

    # --- run ---
    env_id: str = setting("CartPole-v1", valid.text, "Gymnasium id of the environment.")
    seed: int = setting(
        1,
        valid.integer(0, MAX_SEED),
        "Seed for environments, network initialisation, sampling and minibatch order.",
    )
    total_steps: int = setting(
        500_000,
        valid.integer(1),
        "Environment steps to train for, all environments together (rounded up to a batch).",
    )
    torch_threads: int = setting(
        1,
        valid.integer(1, MAX_TORCH_THREADS),
        "PyTorch intra-op threads, 1 to 1024; 1 is fastest for small MLPs on a few cores.",
    )
    device: DeviceName = setting(  # noqa: RUF009
        "cpu",
        doc="Where the policy, its update and the reference run: cpu (the default: a small MLP "
        "over vector observations trains fastest there, as SB3 also advises), auto (CUDA "
        "when torch sees a device, else the CPU) or cuda. The environments step on the CPU "
        "(on CUDA with a copy of the actor, refreshed after each update); across processes "
        "on CUDA each rank takes cuda:LOCAL_RANK and NCCL. run_started's config records the "
        "device used (device_used).",
    )
    checkpoint_every: int = setting(
        50, valid.integer(0), "Save a checkpoint every this many updates (0: only at the end)."
    )
    heartbeat_seconds: float = setting(
        5.0,
        valid.number(0, 5, strict_low=True),
        "Emit a heartbeat when nothing else was emitted for this long (at most 5 s).",
    )
    rank_trace: bool = setting(
        False,
        doc="Each process appends one line per update to `runs/<run>/ranks/rank<R>.jsonl`: its "
        "early-stop decision, the minibatches it completed and a checksum of its parameters, "
        "which must be the same on every rank (for debugging training across processes).",
    )
    collective_timeout_seconds: float = setting(
        30.0,
        valid.positive,
        "Across processes: a rank that does not reach a collective within this long ends the run "
        "as failed, naming the rank (it must exceed the slowest rank's rollout).",
    )

    # --- rollout ---
    num_envs: int = setting(
        4,
        valid.integer(1, MAX_NUM_ENVS),
        "Parallel environments in the vector env, all processes together: 1 to 4096 (at most 256 "
        'with `vector_env = "async"`, one process each).',
    )
    vector_env: VectorKind = setting(  # noqa: RUF009
        "sync",
        doc="`sync`: all environments in this process (fastest for cheap ones like CartPole); "
        "`async`: one subprocess each (Gymnasium's AsyncVectorEnv, for heavy ones); `envpool`: "
        "EnvPool's C++ pool (the `envpool` extra; CartPole, Acrobot, Pendulum, MuJoCo, ...).",
    )
    num_steps: int = setting(128, valid.integer(1), "Steps per environment per rollout.")
    gamma: float = setting(0.99, valid.number(0, 1), "Discount factor.")
    gae_lambda: float = setting(
        0.95, valid.number(0, 1), "GAE lambda (bias-variance trade-off of the advantage)."
    )
    advantage_mode: AdvantageMode = setting(  # noqa: RUF009
        "gae", doc="`gae`, or `episodic` for A = R - V with R the discounted return-to-go."
    )

    # --- optimisation ---
    learning_rate: float = setting(
        2.5e-4, valid.positive, "Adam learning rate at the start of training."
    )
    anneal_lr: bool = setting(True, doc="Decay the learning rate linearly to 0 over the run.")
    adam_eps: float = setting(
        1e-5, valid.positive, "Adam epsilon (CleanRL uses 1e-5, not torch's 1e-8)."
    )
    update_epochs: int = setting(
        4,
        valid.integer(1, MAX_UPDATE_EPOCHS),
        "PPO epochs per update, 1 to 10000 (and update_epochs x num_minibatches at most 100000).",
    )
    num_minibatches: int = setting(
        4,
        valid.integer(1, MAX_MINIBATCH_STEPS),
        "Minibatches per epoch (at most num_envs x num_steps).",
    )
    max_grad_norm: float | None = setting(
        0.5,
        valid.positive_or_none,
        "Clip the global gradient norm to this (none: no clipping; the norm is still measured).",
    )
    norm_adv: bool = setting(True, doc="Normalise advantages per minibatch.")
    adv_std_min: float = setting(
        1e-8,
        valid.positive,
        "Advantages are divided by max(std, adv_std_min) so a flat batch cannot explode.",
    )

    # --- policy ---
    hidden_sizes: tuple[int, ...] = setting(
        (64, 64),
        valid.sizes(MAX_HIDDEN_LAYERS, MAX_HIDDEN_WIDTH),
        "Hidden layer widths of the actor and of the critic MLP: 1 to 64 layers of 1 to 10^6 "
        "units.",
    )
    activation: Activation = setting(  # noqa: RUF009
        "tanh", doc="Hidden activation."
    )

    # --- loss ---
    clip_range: float = setting(
        0.2,
        valid.positive,
        "PPO ratio clip: surrogate uses clip(r, 1 - clip_range, 1 + clip_range).",
    )
    clip_ratio_c: float | None = setting(
        None,
        valid.number(1, strict_low=True, optional=True),
        "Dual-clip bound (> 1) on the loss of negative-advantage samples; none: off.",
    )
    clip_range_vf: float | None = setting(
        0.2,
        valid.positive_or_none,
        "Clip value predictions to old value +- this (CleanRL clip_vloss); none: off.",
    )
    vf_coef: float = setting(0.5, valid.non_negative, "Weight of the value loss.")
    ent_coef: float = setting(
        0.01, valid.non_negative, "Entropy bonus coefficient at the start of training."
    )
    ent_coef_final: float | None = setting(
        None,
        valid.number(0, optional=True),
        "If set, the entropy coefficient moves linearly to this value over the run.",
    )
    min_entropy: float | None = setting(
        None,
        valid.number(optional=True),
        "If set, penalise mean entropy below this (nats): min_entropy_coef * relu(min - H).",
    )
    min_entropy_coef: float = setting(1.0, valid.non_negative, "Weight of the min-entropy penalty.")

    # --- KL controls ---
    kl_estimator: KLEstimator = shared.kl_estimator(  # noqa: RUF009
        reads="approx_kl, penalty and early stop"
    )
    kl_penalty_coefficient: float = setting(
        0.0, valid.non_negative, "Total loss += coefficient * approx_kl (0: no penalty)."
    )
    kl_target: float | None = setting(
        None,
        valid.positive_or_none,
        "If set, adapt the penalty coefficient toward this KL (the x2 / /2 update of the PPO "
        f"paper), within [{KL_COEF_MIN:g}, {KL_COEF_MAX:g}].",
    )
    max_kl: float | None = shared.max_kl(when="early when", aside=" No hidden 1.5 factor.")
    early_stop_scope: EarlyStopScope = setting(  # noqa: RUF009
        "minibatch",
        doc="`minibatch`: check before each step, skip it (SB3); `epoch`: check the epoch mean.",
    )
    log_ratio_clamp: float = shared.log_ratio_clamp()
    kl_final: bool = setting(
        True, doc="Also measure the estimator on the whole batch after the last step (one forward)."
    )

    # --- fine-tuning: KL to a frozen reference policy (the RLHF setting) ---
    init_from: str | None = setting(
        None,
        valid.text_or_none,
        "Start from the policy weights of this checkpoint (a .pt file or a run folder); the "
        "optimizer starts fresh. None: from a new initialisation.",
    )
    reference: str = setting(
        "init",
        valid.text,
        "The frozen reference policy: `init` (a copy of the policy training starts from) or a "
        "checkpoint (a .pt file or a run folder). Used only when a reference KL is on.",
    )
    ref_kl_loss_coef: float = shared.ref_kl_loss_coef(per="sample", aside="; verl's kl_loss")
    ref_kl_loss_estimator: KLEstimator = shared.ref_kl_loss_estimator(  # noqa: RUF009
        what="reference KL in the loss,"
    )
    ref_kl_in_reward: bool = setting(
        False, doc="Subtract ref_kl_reward_coef * KL(pi_old || pi_ref) per sample from the rewards."
    )
    ref_kl_reward_estimator: KLEstimator = setting(  # noqa: RUF009
        "k1",
        shared.estimator_name,
        "Estimator of the per-sample reward penalty (verl's default: k1).",
    )
    ref_kl_reward_coef: float = setting(
        0.001,
        valid.non_negative,
        "Coefficient of the reward penalty at the start (verl's default 0.001).",
    )
    ref_kl_target: float | None = shared.ref_kl_target(
        adapts="the reference-KL coefficients in force",
        controller="the proportional controller of Ziegler et al. 2019",
        bounded=True,
    )
    ref_kl_horizon: int = shared.ref_kl_horizon(
        steps="Environment steps", aside=" (verl's default)"
    )

    # --- normalisation (continuous control) ---
    normalize_obs: bool = setting(
        False,
        doc="Centre observations and divide them by their running standard deviation (updated "
        "after each rollout, saved in checkpoints), then clip them to +-obs_clip.",
    )
    obs_clip: float = setting(
        10.0, valid.positive, "With normalize_obs: the bound of a normalised observation."
    )
    normalize_returns: bool = setting(
        False,
        doc="Divide rewards by the running standard deviation of the discounted return, so value "
        "targets have unit scale; reported returns, values and TD errors stay unnormalised.",
    )
    reward_clip: float | None = setting(
        10.0,
        valid.positive_or_none,
        "With normalize_returns: clip the scaled rewards to +- this (none: no clipping).",
    )

    def problems(self) -> list[str]:
        """Every problem, in field order (empty when valid); the checks that involve two
        fields assume each field is well-typed, so they run only when every field is."""
        return valid.field_problems(self) or valid.in_field_order(self, _cross_field(self))

    # --- derived ---
    @property
    def batch_size(self) -> int:
        """Samples per rollout."""
        return self.num_envs * self.num_steps

    @property
    def uses_reference(self) -> bool:
        """Whether a reference KL is on (in the loss or in the reward)."""
        return self.ref_kl_loss_coef > 0.0 or self.ref_kl_in_reward

    @property
    def num_updates(self) -> int:
        """Updates needed to reach ``total_steps`` (at least one)."""
        return max(1, math.ceil(self.total_steps / self.batch_size))

    def learning_rate_at(self, update: int) -> float:
        """Learning rate in force for 0-based ``update`` (CleanRL's linear annealing)."""
        if not self.anneal_lr:
            return self.learning_rate
        return self.learning_rate * (1.0 - update / self.num_updates)

    def ent_coef_at(self, update: int) -> float:
        """Entropy coefficient in force for 0-based ``update``."""
        if self.ent_coef_final is None:
            return self.ent_coef
        frac = update / self.num_updates
        return self.ent_coef + (self.ent_coef_final - self.ent_coef) * frac


def _cross_field(config: PPOConfig) -> list[tuple[str, str]]:
    """Checks that involve two fields; each is reported at the first field's position."""
    problems: list[tuple[str, str]] = []
    if config.vector_env == "async" and config.num_envs > MAX_ASYNC_ENVS:
        problems.append(
            (
                "num_envs",
                f"num_envs must be <= {MAX_ASYNC_ENVS} with vector_env = 'async' (one process "
                f"per environment), got {config.num_envs!r}",
            )
        )
    batch = config.num_envs * config.num_steps
    if config.num_minibatches > batch:
        problems.append(
            (
                "num_minibatches",
                f"num_minibatches must be <= num_envs * num_steps ({batch}), "
                f"got {config.num_minibatches!r}",
            )
        )
    steps = config.update_epochs * config.num_minibatches
    if steps > MAX_MINIBATCH_STEPS:
        problems.append(
            (
                "update_epochs",
                f"update_epochs x num_minibatches must be <= {MAX_MINIBATCH_STEPS} (minibatch "
                f"steps per update), got {config.update_epochs} x {config.num_minibatches}",
            )
        )
    problems += _reference_problems(config)
    coef = config.kl_penalty_coefficient
    if config.kl_target is not None and not KL_COEF_MIN <= coef <= KL_COEF_MAX:
        problems.append(
            (
                "kl_target",
                f"kl_target needs kl_penalty_coefficient in [{KL_COEF_MIN:g}, "
                f"{KL_COEF_MAX:g}] to adapt from, got {coef!r}",
            )
        )
    return problems


def _reference_problems(config: PPOConfig) -> list[tuple[str, str]]:
    """A controller needs something to control, and a coefficient it can scale."""
    if config.ref_kl_target is None:
        return []
    if config.ref_kl_loss_coef == 0.0 and not config.ref_kl_in_reward:
        return [("ref_kl_target", "ref_kl_target needs ref_kl_loss_coef > 0 or ref_kl_in_reward")]
    scaled = [("ref_kl_loss_coef", config.ref_kl_loss_coef)] if config.ref_kl_loss_coef else []
    if config.ref_kl_in_reward:
        scaled.append(("ref_kl_reward_coef", config.ref_kl_reward_coef))
    return [
        (
            name,
            f"{name} must be in [{KL_COEF_MIN:g}, {KL_COEF_MAX:g}] for ref_kl_target to "
            f"adapt it, got {value!r}",
        )
        for name, value in scaled
        if not KL_COEF_MIN <= value <= KL_COEF_MAX
    ]
