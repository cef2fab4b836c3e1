"""The event contract, schema 1 (docs/design.md, section 4).

Every event is a frozen msgspec Struct in one tagged union (``type`` holds a snake-case tag)
carrying the envelope ``run_id``/``seq``/``ts`` and a typed ``payload``. Producers build a
payload and let an :class:`~telemetry.bus.Emitter` stamp the envelope, so each field is
defined exactly once, here. Evolution: append fields with defaults, never change a type;
readers ignore unknown fields and refuse only a newer *major* ``schema``.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias, get_args

import msgspec

SCHEMA_MAJOR: Final = 1
"""Major version written in ``run_started.schema``; a reader refuses anything newer."""
SCHEMA_MINOR: Final = 4
"""Minor version: additive changes only, always readable by a reader of the same major.

1: ``approx_kl`` is the mean over the last epoch's minibatches (0: over every epoch's);
``grad_norm_actor``, ``grad_norm_critic``, ``grad_clip_scale``, ``return_std`` and
``entropy_normalized`` appended to ``ppo_update``. 2: the reference KL and its
coefficients, ``ratio_std``, ``entropy_penalty``, ``entropy_below_threshold``,
``td_error_mean`` and ``return_scale`` appended to ``ppo_update``. 3: ``full_reward_rate``,
``max_new_tokens_rate`` and ``max_length_rate`` (token-level PPO) appended to
``ppo_update``. 4: ``world_size`` appended to ``run_started``."""


class Payload(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Base of every payload: what a trainer reports, before the envelope is stamped.

    Fields left at their default are not written: absent means "not measured" (or the
    default), which keeps lines short and the encoder on its fast path.
    """


class TrainerInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Who wrote the log."""

    name: str
    """Trainer name, e.g. ``sanctum-ppo`` or ``stable-baselines3``."""
    version: str = ""
    """Trainer version string."""


class RunStartedPayload(Payload, frozen=True, kw_only=True, omit_defaults=False):
    """First event of every run (written in full: other tools read its schema and config)."""

    schema: int = SCHEMA_MAJOR
    """Major schema version of this log."""
    trainer: TrainerInfo
    """Name and version of the program that wrote the log."""
    env_id: str | None = None
    """Gymnasium id (or any label) of the environment."""
    seed: int | None = None
    """Seed of the run, when it has one."""
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    """The full configuration in force, including KL estimator and thresholds."""
    host: str = ""
    """Host name of the machine that trained."""
    pid: int = 0
    """Process id of the trainer."""
    schema_minor: int = SCHEMA_MINOR
    """Minor schema version (additive changes)."""
    world_size: int = 1
    """Processes that trained together (torch.distributed ranks); rank 0 wrote this log and
    every figure in it is over all ranks (schema 1.4)."""


class RolloutPayload(Payload, frozen=True, kw_only=True):
    """One rollout collected before an update."""

    update: int
    """0-based index of the update this rollout feeds."""
    global_step: int
    """Environment steps so far, all envs together."""
    episodes: int = 0
    """Episodes finished during this rollout."""
    episode_return_mean: float | None = None
    """Mean undiscounted return of those episodes; null when none finished."""
    episode_return_min: float | None = None
    """Smallest such return; null when none finished."""
    episode_return_max: float | None = None
    """Largest such return; null when none finished."""
    episode_length_mean: float | None = None
    """Mean length of those episodes; null when none finished."""
    steps_per_second: float | None = None
    """Environment steps per second, collection and update together."""


class EarlyStop(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Why and where an update stopped early: data, not a print."""

    epoch: int
    """0-based PPO epoch at which the stop fired."""
    minibatch: int
    """0-based minibatch within that epoch (the last one for epoch scope)."""
    kl: float
    """The KL value that crossed the threshold."""
    threshold: float
    """``max_kl`` in force."""
    scope: Literal["minibatch", "epoch"]
    """``minibatch``: checked before each step; ``epoch``: checked on the epoch mean."""
    applied: bool
    """Whether the optimizer step of the offending minibatch was applied."""

    def describe(self) -> str:
        """The one deterministic reason text, e.g.
        ``approx_kl 0.0412 > max_kl 0.0300 at epoch 2 minibatch 3 (minibatch not applied)``.
        """
        if self.scope == "minibatch":
            tail = "minibatch applied" if self.applied else "minibatch not applied"
        else:  # epoch scope judges the epoch mean after its steps ran
            tail = "epoch mean, minibatch applied"
        return (
            f"approx_kl {self.kl:.4f} > max_kl {self.threshold:.4f} "
            f"at epoch {self.epoch} minibatch {self.minibatch} ({tail})"
        )


class PPOUpdatePayload(Payload, frozen=True, kw_only=True):
    """One PPO update; definitions in docs/design.md, section 4. Absent means not measured."""

    update: int
    """0-based update index."""
    global_step: int
    """Environment steps so far."""
    approx_kl: float
    """Mean over the last epoch's evaluated minibatches of the configured estimator, each
    measured before its minibatch's step (nats); Stable-Baselines3's definition."""
    approx_kl_max: float | None = None
    """Largest minibatch approx_kl."""
    kl_final: float | None = None
    """The estimator over the whole batch after the last step."""
    clip_fraction: float
    """Fraction of samples with abs(ratio - 1) > clip_range, mean over minibatches."""
    clip_fraction_lower: float | None = None
    """Dual-clip only: fraction of negative-advantage samples where the dual bound binds."""
    ratio_mean: float | None = None
    """Mean probability ratio pi_new/pi_old over the update."""
    ratio_min: float | None = None
    """Smallest probability ratio."""
    ratio_max: float | None = None
    """Largest probability ratio."""
    entropy: float | None = None
    """Mean policy entropy (nats)."""
    entropy_coef: float | None = None
    """Entropy coefficient in force."""
    policy_loss: float | None = None
    """Mean clipped-surrogate loss over applied minibatches."""
    value_loss: float | None = None
    """Mean value loss over applied minibatches."""
    kl_penalty: float | None = None
    """Mean ``kl_coef * approx_kl`` term over applied minibatches."""
    total_loss: float | None = None
    """Mean total loss over applied minibatches."""
    kl_coef: float | None = None
    """KL penalty coefficient in force (changes when adaptive)."""
    explained_variance: float | None = None
    """1 - Var(R - V) / Var(R) on the rollout; null when Var(R) = 0."""
    grad_norm: float | None = None
    """Mean global gradient norm before clipping."""
    grad_norm_max: float | None = None
    """Largest global gradient norm before clipping."""
    learning_rate: float | None = None
    """Learning rate in force for this update."""
    advantage_mean: float | None = None
    """Mean advantage before normalisation."""
    advantage_std: float | None = None
    """Advantage standard deviation before normalisation."""
    return_mean: float | None = None
    """Mean return target."""
    value_mean: float | None = None
    """Mean value prediction on the rollout."""
    epochs_completed: int | None = None
    """PPO epochs that ran (fully or partly)."""
    minibatches_completed: int | None = None
    """Optimizer steps applied."""
    minibatches_planned: int | None = None
    """Optimizer steps planned: epochs x minibatches."""
    early_stopped: bool
    """Whether the update stopped before its planned minibatches."""
    early_stop_reason: str | None = None
    """Deterministic text, e.g. ``approx_kl 0.0412 > max_kl 0.0300 at epoch 2 minibatch 3``."""
    early_stop: EarlyStop | None = None
    """Structured record of the early stop."""
    skipped_steps: int | None = None
    """Optimizer steps skipped for a non-finite loss or gradient."""
    nonfinite_ratios: int | None = None
    """Ratios replaced by the NaN guard."""
    update_seconds: float | None = None
    """Wall time of the update."""
    grad_norm_actor: float | None = None
    """Mean pre-clip gradient norm of the actor's parameters (separate actor and critic)."""
    grad_norm_critic: float | None = None
    """Mean pre-clip gradient norm of the critic's parameters (separate actor and critic)."""
    grad_clip_scale: float | None = None
    """Mean factor the clip multiplied gradients by, min(1, max_grad_norm / grad_norm)."""
    return_std: float | None = None
    """Standard deviation of the return targets (explained variance needs them to vary)."""
    entropy_normalized: float | None = None
    """Mean entropy over log(allowed actions): 1 uniform, 0 deterministic (categorical)."""
    ratio_std: float | None = None
    """Standard deviation of the probability ratio within a minibatch, mean over them."""
    entropy_penalty: float | None = None
    """The min-entropy term added to the loss, mean over applied minibatches (with
    policy, value, entropy bonus, KL penalty and ref_kl_loss it sums to total_loss)."""
    entropy_below_threshold: bool | None = None
    """Whether the update's mean entropy was below min_entropy (absent: no floor set)."""
    td_error_mean: float | None = None
    """Mean one-step TD error r + gamma V(s') - V(s) on the rollout (reward units)."""
    return_scale: float | None = None
    """The divisor of the rewards when returns are normalised (returns are reported
    unnormalised)."""
    ref_kl: float | None = None
    """Mean per-sample KL(pi_theta || pi_ref) to the frozen reference policy over the
    evaluated minibatches (nats)."""
    ref_kl_coef: float | None = None
    """Coefficient of the reference KL in the loss in force (changes when adaptive)."""
    ref_kl_reward_coef: float | None = None
    """Coefficient of the reference-KL reward penalty in force (changes when adaptive)."""
    ref_kl_loss: float | None = None
    """``ref_kl_coef * ref_kl``, the term in the loss, mean over applied minibatches."""
    ref_kl_reward_penalty: float | None = None
    """Mean reference-KL penalty subtracted from each step's reward in the rollout."""
    full_reward_rate: float | None = None
    """Token-level PPO: share of the update's rollouts whose every answer digit was right
    (schema 1.3)."""
    max_new_tokens_rate: float | None = None
    """Token-level PPO: share of the update's rollouts stopped by ``max_new_tokens`` before
    answering, which earn no reward (schema 1.3)."""
    max_length_rate: float | None = None
    """Token-level PPO: share of the update's rollouts that used all ``max_new_tokens``
    tokens, answered on the last or not at all (schema 1.3): near 1, the policy is
    gaming the length."""


class AnomalyPayload(Payload, frozen=True, kw_only=True):
    """Something the trainer itself detected, e.g. a skipped step on a non-finite gradient."""

    severity: Literal["warning", "critical"]
    """How bad it is; a critical anomaly fails ``sanctum check``."""
    metric: str
    """The quantity concerned, e.g. ``grad_norm``."""
    value: float | None = None
    """Its value, when there is one (may be non-finite)."""
    message: str
    """One sentence for a human."""
    update: int | None = None
    """Update during which it happened."""
    global_step: int | None = None
    """Environment steps at that time."""


class HeartbeatPayload(Payload, frozen=True, kw_only=True):
    """Proof of life, at least every 5 s during long rollouts."""

    global_step: int
    """Environment steps so far."""


RunStatus: TypeAlias = Literal["completed", "failed", "interrupted"]


class RunFinishedPayload(Payload, frozen=True, kw_only=True):
    """Last event of every run that ended in an orderly way."""

    status: RunStatus
    """``completed``, ``failed`` (an exception) or ``interrupted`` (Ctrl-C, stop request)."""
    reason: str | None = None
    """Why it ended: the exception's summary, the signal, or null when completed."""
    global_step: int | None = None
    """Environment steps at the end."""
    updates: int | None = None
    """Updates completed."""
    duration_seconds: float | None = None
    """Wall time from run_started to run_finished."""


class Envelope(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", gc=False):
    """Fields every event carries, stamped by the Emitter."""

    run_id: str
    """Identifier of the run, unique per log."""
    seq: int
    """1, 2, 3... per run, without gaps."""
    ts: float
    """Unix time in seconds when the event was emitted."""


class RunStarted(Envelope, frozen=True, kw_only=True, tag="run_started"):
    """The run began; carries the schema version and the config."""

    payload: RunStartedPayload


class Rollout(Envelope, frozen=True, kw_only=True, tag="rollout"):
    """A rollout was collected."""

    payload: RolloutPayload


class PPOUpdate(Envelope, frozen=True, kw_only=True, tag="ppo_update"):
    """A PPO update finished."""

    payload: PPOUpdatePayload


class Anomaly(Envelope, frozen=True, kw_only=True, tag="anomaly"):
    """The trainer detected a problem."""

    payload: AnomalyPayload


class Heartbeat(Envelope, frozen=True, kw_only=True, tag="heartbeat"):
    """The trainer is alive."""

    payload: HeartbeatPayload


class RunFinished(Envelope, frozen=True, kw_only=True, tag="run_finished"):
    """The run ended."""

    payload: RunFinishedPayload


Event: TypeAlias = RunStarted | Rollout | PPOUpdate | Anomaly | Heartbeat | RunFinished
"""The tagged union of every kind in schema 1."""

EVENT_TYPES: Final[tuple[type[Envelope], ...]] = get_args(Event)
"""The event classes, in the order of the union."""

EVENT_FOR_PAYLOAD: Final[dict[type[Payload], type[Envelope]]] = {
    field.type: cls
    for cls in EVENT_TYPES
    for field in msgspec.structs.fields(cls)
    if field.name == "payload"
}
"""Which event class wraps which payload class."""


def kind_of(event_type: type[Envelope]) -> str:
    """The snake-case tag of an event class, e.g. ``ppo_update``."""
    tag = event_type.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


KINDS: Final[frozenset[str]] = frozenset(kind_of(t) for t in EVENT_TYPES)
"""Every tag this reader understands."""
