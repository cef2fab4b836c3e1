"""The event contract, schema 1 (docs/design.md, section 4).

Every event is a frozen msgspec Struct in one tagged union (``type`` holds a snake-case tag)
carrying the envelope ``run_id``/``seq``/``ts`` and a typed ``payload``. Producers build a
payload and let an :class:`~telemetry.bus.Emitter` stamp the envelope, so each field is
defined exactly once, here. Evolution: append fields with defaults, never change a type;
readers ignore unknown fields and refuse only a newer *major* ``schema``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import (
    Annotated,
    Any,
    Final,
    Generic,
    Literal,
    NamedTuple,
    TypeAlias,
    TypeVar,
    get_args,
    get_origin,
)

import msgspec

from telemetry.run_config import KL_ESTIMATOR, REF_KL_LOSS_ESTIMATOR, REF_KL_REWARD_ESTIMATOR

SCHEMA_MAJOR: Final = 1
"""Major version written in ``run_started.schema``; a reader refuses anything newer."""
SCHEMA_MINOR: Final = 7
"""Minor version: additive changes only, always readable by a reader of the same major.

1: ``approx_kl`` is the mean over the last epoch's minibatches (0: over every epoch's);
``grad_norm_actor``, ``grad_norm_critic``, ``grad_clip_scale``, ``return_std`` and
``entropy_normalized`` appended to ``ppo_update``. 2: the reference KL and its
coefficients, ``ratio_std``, ``entropy_penalty``, ``entropy_below_threshold``,
``td_error_mean`` and ``return_scale`` appended to ``ppo_update``. 3: ``full_reward_rate``,
``max_new_tokens_rate`` and ``max_length_rate`` (token-level PPO) appended to
``ppo_update``. 4: ``world_size`` appended to ``run_started``. 5 (critic-free and
sequence-level RL on language models: GRPO, RLOO, PPO in TRL or verl): ``algorithm``,
``kl`` (what each KL field measures) and ``policy_epochs`` appended to ``run_started``;
``approx_kl`` and ``clip_fraction`` of ``ppo_update`` may be absent (not measured: GRPO
logs no KL to the old policy); the reward's mean, std, equal-reward group share and named
components, completion lengths and the truncated share, ``tokens``, the low/high/region
clip fractions and ``logprob_gap`` appended to ``ppo_update``. A 1.0-1.4 log reads as
before: no ``algorithm`` is ``ppo``, no ``kl`` the meanings the fields' definitions give.
6: ``step_unit`` (what ``global_step`` counts) appended to ``run_started``; none is
environment steps, as every earlier log counts (token-level PPO's, tokens). 7:
``action_space`` (discrete or continuous) appended to ``run_started``; none is not declared."""

STEP_UNIT_MAX: Final = 32
"""Characters of ``run_started.step_unit`` at most: a unit's name, never a paragraph (a
reader skips a longer one's line, as any malformed line)."""
StepUnit: TypeAlias = Annotated[str, msgspec.Meta(min_length=1, max_length=STEP_UNIT_MAX)]
"""What ``global_step`` counts, named by a plural noun (``run_started.step_unit``)."""
POLICY_EPOCHS_MAX: Final = 1_000_000
"""``run_started.policy_epochs`` at most: far past any run's passes (PPO's epochs and GRPO's
iterations are tens). A reader skips a line that declares more, or fewer than 1, as any
malformed line: a hostile count never sizes a reader's window."""
PolicyEpochs: TypeAlias = Annotated[int, msgspec.Meta(ge=1, le=POLICY_EPOCHS_MAX)]
"""Optimisation passes over each batch, as ``run_started.policy_epochs`` declares them."""
INT64_MAX: Final = 2**63 - 1
"""No count of steps, updates or episodes passes this: a larger one is a hostile number."""
INT64_MIN: Final = -(2**63)
Int64: TypeAlias = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
"""An integer of ``ppo_update`` (its update index and step, its counts of epochs,
minibatches, steps and tokens, its early stop's epoch and minibatch): a negative one is
judged by the range contracts and the update order (a Bug row); one outside int64 makes
the line unreadable (a 400-digit count is a hostile number, and no float holds it)."""
Count: TypeAlias = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
"""A count or a 0-based index outside ``ppo_update`` (episodes, steps, updates): never
negative nor past :data:`INT64_MAX`; a reader skips a line that holds another, as any
malformed line."""
WorldSize: TypeAlias = Annotated[int, msgspec.Meta(ge=1, le=INT64_MAX)]
"""Processes that trained together: at least the one that wrote the log."""
ActionSpace: TypeAlias = Literal["discrete", "continuous"]
"""What a policy chooses (``run_started.action_space``): from a finite set, or a density."""
_DISCRETE_SPACES: Final = frozenset(
    {
        "Discrete",
        "MultiDiscrete",
        "MultiBinary",  # Gymnasium (and gym)
        "Categorical",
        "OneHot",
        "MultiCategorical",
        "MultiOneHot",
        "Binary",  # TorchRL specs
        "DiscreteTensorSpec",
        "OneHotDiscreteTensorSpec",
        "MultiDiscreteTensorSpec",
        "MultiOneHotDiscreteTensorSpec",
        "BinaryDiscreteTensorSpec",
    }
)
_CONTINUOUS_SPACES: Final = frozenset(
    {
        "Box",  # Gymnasium (and gym)
        "Bounded",
        "Unbounded",
        "BoundedContinuous",
        "UnboundedContinuous",  # TorchRL specs
        "BoundedTensorSpec",
        "UnboundedContinuousTensorSpec",
    }
)


def action_space_of(space: object) -> ActionSpace | None:
    """``run_started.action_space`` for a trainer's action space, read by its class's name so
    no library is imported: Gymnasium's ``Discrete``, ``MultiDiscrete`` and ``MultiBinary``
    (and TorchRL's categorical and one-hot specs) are discrete, ``Box`` (TorchRL's bounded
    and unbounded specs) continuous; ``"discrete"`` and ``"continuous"`` are themselves.
    Anything else (a ``Dict`` or ``Tuple`` of spaces, an unknown class) is None: not
    declared, as a writer that says nothing."""
    if isinstance(space, str) and space in ("discrete", "continuous"):
        return "discrete" if space == "discrete" else "continuous"
    name = type(space).__name__
    if name in _DISCRETE_SPACES:
        return "discrete"
    if name in _CONTINUOUS_SPACES:
        return "continuous"
    return None


def policy_epochs_of(value: object) -> int | None:
    """A trainer's setting as ``policy_epochs`` when :data:`PolicyEpochs` takes it (an
    integer in [1, POLICY_EPOCHS_MAX], no bool), else None (not declared): what a writer
    records, so that no reader refuses its line."""
    try:
        epochs: int = msgspec.convert(value, PolicyEpochs)
    except msgspec.ValidationError:
        return None
    return epochs


TOKENS: Final = "tokens"
"""``step_unit`` of a run whose ``global_step`` counts generated tokens (token-level PPO)."""
SAMPLES: Final = "samples"
"""``step_unit`` of a run whose ``global_step`` counts completions generated (TRL's
``episode``)."""
OPTIMIZER_STEPS: Final = "optimizer steps"
"""``step_unit`` of a run whose ``global_step`` is TRL's optimizer-step counter."""
TRAINING_STEPS: Final = "training steps"
"""``step_unit`` of a run whose ``global_step`` is verl's or OpenRLHF's training-step
counter (one per batch of rollouts and its update)."""


FACT_KEYS: Final = ("min", "max", "bound", "unit", "estimator", "runs")
"""The vocabulary of a field's ``Meta.extra`` (every key optional):

- ``min``, ``max`` (float): the range a correct trainer can log; a finite value outside it
  is a logging bug (``sanctum.health.contracts`` reads them). Never ``ge``/``le``
  constraints: a reader keeps an impossible value and shows it as what it is.
- ``bound`` (str): what the range means, for a message (default: ``a fraction`` for [0, 1],
  ``never negative`` for >= 0).
- ``unit`` (str): ``nats``, ``s``, ``steps/s``, ``reward units`` or ``tokens``.
- ``estimator`` (str): the ``run_started.config`` setting naming the KL estimator the field
  measures; ``min`` then holds only when that estimator is not a signed one.
- ``runs`` (str): the only runs that can have the field: :data:`LANGUAGE_MODEL_RUNS`
  (rewards and completions of a language model) or :data:`FINE_TUNING_RUNS` (the KL to a
  frozen reference); absent: any PPO run. A report lists such a field as "not measured"
  only in a run of that kind.
"""


LANGUAGE_MODEL_RUNS: Final = "language model"
"""``runs`` of a field only a language-model run has (rewards, completions, tokens)."""
FINE_TUNING_RUNS: Final = "fine-tuning"
"""``runs`` of a field only a run with a frozen reference policy has."""


def about(
    description: str,
    *,
    min: float | None = None,
    max: float | None = None,
    bound: str | None = None,
    unit: str | None = None,
    estimator: str | None = None,
    runs: str | None = None,
) -> msgspec.Meta:
    """A field's definition and facts, as ``Annotated[type, about(...)]`` carries them: the
    one source of the JSON Schema's descriptions, the docs' field tables, the help
    glossary and the range contracts."""
    facts = {
        "min": min,
        "max": max,
        "bound": bound,
        "unit": unit,
        "estimator": estimator,
        "runs": runs,
    }
    return msgspec.Meta(
        description=description, extra={k: v for k, v in facts.items() if v is not None}
    )


class FieldDoc(NamedTuple):
    """One field of a contract Struct with its definition and facts (see :func:`about`)."""

    name: str
    type: Any
    """The field's type, its ``Annotated`` wrapper removed."""
    required: bool
    description: str
    facts: Mapping[str, Any]
    """The ``Meta.extra`` of the field: keys from :data:`FACT_KEYS`."""


@functools.cache
def field_docs(struct: type[msgspec.Struct]) -> tuple[FieldDoc, ...]:
    """Every field of ``struct``, in order, with its definition (empty when it has none).
    Read once per Struct (resolving its annotations is what costs): the readers of the
    contract's definitions (the schema, the docs, the rules, the verl reader) share it."""
    docs = []
    for field in msgspec.structs.fields(struct):
        metas = [m for m in get_args(field.type)[1:] if isinstance(m, msgspec.Meta)]
        meta = next((m for m in metas if m.description is not None), None)  # about()'s
        docs.append(
            FieldDoc(
                name=field.name,
                type=bare_type(field.type),
                required=field.required,
                description=(meta.description or "") if meta else "",
                facts=MappingProxyType(dict(meta.extra or {}) if meta else {}),
            )
        )
    return tuple(docs)


def bare_type(annotation: Any) -> Any:
    """``annotation`` without its ``Annotated`` wrapper (``msgspec.structs.fields`` keeps it)."""
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


class Payload(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    """Base of every payload: what a trainer reports, before the envelope is stamped.

    Fields left at their default are not written: absent means "not measured" (or the
    default), which keeps lines short and the encoder on its fast path. Each field's
    definition is its ``about(...)``.
    """


class TrainerInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Who wrote the log."""

    name: Annotated[str, about("Trainer name, e.g. sanctum-ppo or stable-baselines3.")]
    version: Annotated[str, about("Trainer version string.")] = ""


class KLMeasure(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What one KL field of ``ppo_update`` measures (``run_started.kl``, schema 1.5)."""

    against: Annotated[
        Literal["old_policy", "reference"],
        about(
            "old_policy: the policy that sampled the batch against the one being optimised "
            "(PPO's trust region); reference: the policy being trained against the frozen "
            "reference model (the beta term of RLHF, GRPO and verl's use_kl_loss)."
        ),
    ]
    estimator: Annotated[
        str,
        about(
            "The estimator, lower-case: k1 (log r), k2 ((log r)^2 / 2), k3 ((r - 1) - log "
            "r), low_var_kl (verl's clamped k3), k3+ (verl's k3 with the k2 gradient), abs, "
            "mse, full (exact over the vocabulary)... k1 is signed: its mean may be "
            "negative."
        ),
    ]
    unit: Annotated[
        Literal["token", "sequence"],
        about(
            "token: a mean over the sampled tokens (or samples, in classic PPO); "
            "sequence: summed over each response's tokens, then averaged over the "
            "responses (TRL PPOTrainer's objective/kl), so it grows with response length."
        ),
    ]


class RunStartedPayload(Payload, frozen=True, kw_only=True, omit_defaults=False):
    """First event of every run (written in full: other tools read its schema and config)."""

    schema: Annotated[int, about("Major schema version of this log.")] = SCHEMA_MAJOR
    trainer: Annotated[TrainerInfo, about("Name and version of the program that wrote the log.")]
    env_id: Annotated[str | None, about("Gymnasium id (or any label) of the environment.")] = None
    seed: Annotated[int | None, about("Seed of the run, when it has one.")] = None
    config: Annotated[
        dict[str, Any],
        about("The full configuration in force, including the KL estimator and thresholds."),
    ] = msgspec.field(default_factory=dict)
    host: Annotated[str, about("Host name of the machine that trained.")] = ""
    pid: Annotated[int, about("Process id of the trainer.")] = 0
    schema_minor: Annotated[Count, about("Minor schema version (additive changes).")] = SCHEMA_MINOR
    world_size: Annotated[
        WorldSize,
        about(
            "Processes that trained together (torch.distributed ranks); rank 0 wrote this "
            "log and every figure in it is over all ranks (schema 1.4)."
        ),
    ] = 1
    algorithm: Annotated[
        str,
        about(
            "The algorithm that trained, lower-case: ppo, grpo, rloo, reinforce++, dr_grpo, "
            "... (free text; a log before schema 1.5 is ppo). Critic-free algorithms log no "
            "value loss or explained variance, GRPO no KL to the old policy."
        ),
    ] = "ppo"
    kl: Annotated[
        dict[str, KLMeasure] | None,
        about(
            "What each KL field of ppo_update measures, by field name (approx_kl, ref_kl, "
            "approx_kl_max, kl_final, ...): against the old policy or the reference, the "
            "estimator, per token or per sequence (schema 1.5). Absent, or a field not "
            "named: approx_kl, approx_kl_max and kl_final are to the old policy with "
            "config's kl_estimator, ref_kl to the reference with its ref_kl_loss_estimator, "
            "each per token (per sample)."
        ),
    ] = None
    policy_epochs: Annotated[
        PolicyEpochs | None,
        about(
            "Optimisation passes over each batch of samples: PPO's n_epochs, GRPO's "
            "num_iterations (TRL), verl's ppo_epochs (schema 1.5). With 1 and the old "
            "log-probabilities taken from the policy being optimised (TRL's GRPO with "
            "num_iterations 1) r is 1 by construction and clip_fraction 0; several "
            "optimiser steps per batch move r even with 1. Absent: not declared."
        ),
    ] = None
    step_unit: Annotated[
        StepUnit | None,
        about(
            "What global_step counts in every event of the run (and steps_per_second per "
            "second), as a plural noun, lower-case: tokens (generated tokens: sanctum-ppo's "
            "token-level PPO), samples (completions generated: TRL's PPO episode), "
            "optimizer steps (TRL's global_step), training steps (verl's and OpenRLHF's "
            "global_step)... (free text of 1 to 32 characters; schema 1.6). Absent: "
            "environment steps, all envs together, as every earlier log counts."
        ),
    ] = None
    action_space: Annotated[
        ActionSpace | None,
        about(
            "What the policy chooses: discrete (from a finite set, one choice or several: "
            "Gymnasium's Discrete, MultiDiscrete, MultiBinary), where entropy_normalized is "
            "defined; or continuous (a density over a Box, whose entropy in nats may be "
            "negative), where it is not, so no Entropy rule expects it and Entropy shift "
            "judges the entropy (schema 1.7). Absent: not declared."
        ),
    ] = None


class RolloutPayload(Payload, frozen=True, kw_only=True):
    """One rollout collected before an update."""

    update: Annotated[Count, about("0-based index of the update this rollout feeds.")]
    global_step: Annotated[
        Count, about("Steps so far, all envs together, in run_started.step_unit's unit.")
    ]
    episodes: Annotated[Count, about("Episodes finished during this rollout.")] = 0
    episode_return_mean: Annotated[
        float | None,
        about("Mean undiscounted return of those episodes; null when none finished."),
    ] = None
    episode_return_min: Annotated[
        float | None, about("Smallest such return; null when none finished.")
    ] = None
    episode_return_max: Annotated[
        float | None, about("Largest such return; null when none finished.")
    ] = None
    episode_length_mean: Annotated[
        float | None, about("Mean length of those episodes; null when none finished.")
    ] = None
    steps_per_second: Annotated[
        float | None,
        about(
            "Steps per second (run_started.step_unit's), collection and update together.",
            unit="steps/s",
        ),
    ] = None


class EarlyStop(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Why and where an update stopped early: data, not a print."""

    epoch: Annotated[Int64, about("0-based PPO epoch at which the stop fired.")]
    minibatch: Annotated[
        Int64, about("0-based minibatch within that epoch (the last one for epoch scope).")
    ]
    kl: Annotated[float, about("The KL value that crossed the threshold.", unit="nats")]
    threshold: Annotated[float, about("max_kl in force.", unit="nats")]
    scope: Annotated[
        Literal["minibatch", "epoch"],
        about("minibatch: checked before each step; epoch: checked on the epoch mean."),
    ]
    applied: Annotated[
        bool, about("Whether the optimizer step of the offending minibatch was applied.")
    ]

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


_APPLIED = "mean over applied minibatches"
_EVALUATED = "mean over the evaluated minibatches of every epoch"


class PPOUpdatePayload(Payload, frozen=True, kw_only=True):
    """One PPO update: how each number is computed is its ``about(...)``; the run's
    ``run_started.config`` names the estimator and thresholds in force. Absent means not
    measured. r is the probability ratio pi_new/pi_old of a sample."""

    update: Annotated[Int64, about("0-based update index.")]
    global_step: Annotated[
        Int64,
        about(
            "Steps so far in the unit run_started.step_unit names: environment steps, all "
            "envs together, when it names none; for a language model the tokens or "
            "completions (samples) generated so far, or the trainer's own step counter "
            "when it counts neither (TRL's and verl's global_step)."
        ),
    ]
    approx_kl: Annotated[
        float | None,
        about(
            "Mean over the minibatches evaluated in the update's last epoch of the configured "
            "estimator (default k3 = (r-1) - log r, r = pi_new/pi_old, from Schulman's "
            '"Approximating KL divergence"), each computed before its minibatch\'s optimizer '
            "step: KL(pi_old ‖ pi_new). Stable-Baselines3's "
            "definition; CleanRL logs the last minibatch's value (schema 1.1; 1.0 averaged "
            "every epoch). Absent when the algorithm measures no KL to the old policy "
            "(GRPO; schema 1.5); verl logs it as actor/ppo_kl (k1). run_started.kl may "
            "declare another estimator or unit.",
            min=0,
            unit="nats",
            estimator=KL_ESTIMATOR,
        ),
    ] = None
    approx_kl_max: Annotated[
        float | None,
        about(
            "The largest minibatch approx_kl of the update, any epoch.",
            min=0,
            unit="nats",
            estimator=KL_ESTIMATOR,
        ),
    ] = None
    kl_final: Annotated[
        float | None,
        about(
            "The same estimator over the whole batch after the last step: how far the "
            "update really moved the policy.",
            min=0,
            unit="nats",
            estimator=KL_ESTIMATOR,
        ),
    ] = None
    clip_fraction: Annotated[
        float | None,
        about(
            f"Fraction of samples with abs(r - 1) > clip_range, {_EVALUATED} (the "
            "SB3/CleanRL definition, whatever the advantage's sign; verl's actor/pg_clipfrac "
            "is clip_fraction_region). Absent when not measured (schema 1.5).",
            min=0,
            max=1,
        ),
    ] = None
    clip_fraction_lower: Annotated[
        float | None,
        about(
            "Dual clip only: fraction of negative-advantage samples where the dual bound "
            f"(r > clip_ratio_c) binds, {_EVALUATED}; verl's actor/pg_clipfrac_lower. Not "
            "clip_fraction_low, which is the share clipped at 1 - clip_range.",
            min=0,
            max=1,
        ),
    ] = None
    ratio_mean: Annotated[
        float | None, about(f"Mean of r over the update ({_EVALUATED}).", min=0)
    ] = None
    ratio_min: Annotated[float | None, about("Smallest r of the update.", min=0)] = None
    ratio_max: Annotated[float | None, about("Largest r of the update.", min=0)] = None
    entropy: Annotated[
        float | None,
        about(
            f"Policy entropy, {_EVALUATED}; never negative for a categorical policy. A "
            "collapse means the policy stopped exploring.",
            unit="nats",
        ),
    ] = None
    entropy_coef: Annotated[float | None, about("Entropy bonus coefficient in force.", min=0)] = (
        None
    )
    policy_loss: Annotated[float | None, about(f"Clipped-surrogate loss, {_APPLIED}.")] = None
    value_loss: Annotated[float | None, about(f"Value-function loss, {_APPLIED}.", min=0)] = None
    kl_penalty: Annotated[
        float | None, about(f"The kl_coef * approx_kl term of the loss, {_APPLIED}.")
    ] = None
    total_loss: Annotated[
        float | None,
        about(
            f"The loss optimised, {_APPLIED}: policy_loss + vf_coef * value_loss - "
            "entropy_coef * entropy + kl_penalty + entropy_penalty + ref_kl_loss (when every "
            "evaluated minibatch was applied)."
        ),
    ] = None
    kl_coef: Annotated[
        float | None, about("KL penalty coefficient in force (changes when adaptive).", min=0)
    ] = None
    explained_variance: Annotated[
        float | None,
        about(
            "1 - Var(R - V) / Var(R) on the rollout: 1 is a perfect critic, 0 or less is "
            "useless; absent when Var(R) = 0.",
            max=1,
            bound="1 - Var(R - V)/Var(R)",
        ),
    ] = None
    grad_norm: Annotated[
        float | None, about(f"Global gradient norm before clipping, {_EVALUATED}.", min=0)
    ] = None
    grad_norm_max: Annotated[
        float | None,
        about("Largest global gradient norm before clipping of the update.", min=0),
    ] = None
    learning_rate: Annotated[
        float | None,
        about(
            "Learning rate in force for this update (unbounded: SB3 with RL Zoo's lin_ "
            "schedules ends slightly below 0)."
        ),
    ] = None
    advantage_mean: Annotated[
        float | None, about("Mean advantage of the rollout, before normalisation.")
    ] = None
    advantage_std: Annotated[
        float | None,
        about("Standard deviation of the rollout's advantages, before normalisation.", min=0),
    ] = None
    return_mean: Annotated[
        float | None, about("Mean return target R of the rollout.", unit="reward units")
    ] = None
    value_mean: Annotated[
        float | None, about("Mean value prediction V on the rollout.", unit="reward units")
    ] = None
    epochs_completed: Annotated[
        Int64 | None, about("PPO epochs that ran (fully or partly).", min=0)
    ] = None
    minibatches_completed: Annotated[Int64 | None, about("Optimizer steps applied.", min=0)] = None
    minibatches_planned: Annotated[
        Int64 | None, about("Optimizer steps planned: epochs x minibatches.", min=0)
    ] = None
    early_stopped: Annotated[
        bool,
        about(
            "Whether the update stopped before its planned minibatches because approx_kl "
            "passed max_kl."
        ),
    ]
    early_stop_reason: Annotated[
        str | None,
        about(
            "The trainer's deterministic reason text, e.g. approx_kl 0.0412 > max_kl 0.0300 "
            "at epoch 2 minibatch 3 (minibatch not applied)."
        ),
    ] = None
    early_stop: Annotated[
        EarlyStop | None,
        about("Structured record of the early stop: epoch, minibatch, kl, threshold, scope."),
    ] = None
    skipped_steps: Annotated[
        Int64 | None, about("Optimizer steps skipped for a non-finite loss or gradient.", min=0)
    ] = None
    nonfinite_ratios: Annotated[
        Int64 | None, about("Ratios r replaced by the NaN guard.", min=0)
    ] = None
    update_seconds: Annotated[float | None, about("Wall time of the update.", min=0, unit="s")] = (
        None
    )
    grad_norm_actor: Annotated[
        float | None,
        about(
            f"The global gradient norm over the actor's parameters only, {_EVALUATED} "
            "(separate actor and critic networks).",
            min=0,
        ),
    ] = None
    grad_norm_critic: Annotated[
        float | None,
        about(
            f"The global gradient norm over the critic's parameters only, {_EVALUATED} "
            "(separate actor and critic networks).",
            min=0,
        ),
    ] = None
    grad_clip_scale: Annotated[
        float | None,
        about(
            "The factor clipping multiplied the gradients by, min(1, max_grad_norm / "
            f"grad_norm), {_EVALUATED}: 0.01 means steps were cut 100-fold; absent without "
            "clipping.",
            min=0,
            max=1,
        ),
    ] = None
    return_std: Annotated[
        float | None,
        about(
            "Standard deviation of the return targets R of the rollout (explained variance "
            "needs them to vary).",
            min=0,
            unit="reward units",
        ),
    ] = None
    entropy_normalized: Annotated[
        float | None,
        about(
            "Categorical policies: mean entropy over log(number of allowed actions); 1 is "
            "uniform, 0 deterministic. Near 0 is a collapse.",
            min=0,
            max=1,
        ),
    ] = None
    ratio_std: Annotated[
        float | None,
        about(
            f"Standard deviation of r within a minibatch, {_EVALUATED}: how unevenly the "
            "update moved the policy across samples.",
            min=0,
        ),
    ] = None
    entropy_penalty: Annotated[
        float | None,
        about(
            "The min-entropy term added to the loss, min_entropy_coef * relu(min_entropy - "
            f"H), {_APPLIED}; absent without min_entropy.",
            min=0,
        ),
    ] = None
    entropy_below_threshold: Annotated[
        bool | None,
        about("Whether the update's mean entropy was below min_entropy; absent without it."),
    ] = None
    td_error_mean: Annotated[
        float | None,
        about(
            "Mean one-step TD error r + gamma V(s') (1 - terminated) - V(s) on the rollout "
            "(after the reference-KL penalty, before normalisation): a critic biased low or "
            "high shows here before explained variance moves.",
            unit="reward units",
        ),
    ] = None
    return_scale: Annotated[
        float | None,
        about(
            "With normalize_returns: the running standard deviation of the discounted "
            "return the rewards were divided by; return_mean, return_std, value_mean and "
            "td_error_mean are reported unnormalised, advantages in the scaled units.",
            min=0,
        ),
    ] = None
    ref_kl: Annotated[
        float | None,
        about(
            "Fine-tuning: per-sample KL(pi_theta ‖ pi_ref) to the frozen reference policy "
            f"with ref_kl_loss_estimator, {_EVALUATED} (the samples' log-probabilities "
            "under the policy being trained are the sampled side).",
            min=0,
            unit="nats",
            estimator=REF_KL_LOSS_ESTIMATOR,
            runs=FINE_TUNING_RUNS,
        ),
    ] = None
    ref_kl_coef: Annotated[
        float | None,
        about(
            "Coefficient of the reference KL in the loss in force (changes when adaptive: "
            "with ref_kl_target the proportional controller of Ziegler et al. moves it by up "
            "to 20% x steps / horizon per update); absent when the loss does not hold it.",
            min=0,
            runs=FINE_TUNING_RUNS,
        ),
    ] = None
    ref_kl_reward_coef: Annotated[
        float | None,
        about(
            "Coefficient of the reference-KL penalty in the reward in force (adaptive "
            "likewise); absent without ref_kl_in_reward.",
            min=0,
            runs=FINE_TUNING_RUNS,
        ),
    ] = None
    ref_kl_loss: Annotated[
        float | None,
        about(
            f"ref_kl_coef * ref_kl, the term the reference KL adds to the loss, {_APPLIED}.",
            min=0,
            estimator=REF_KL_LOSS_ESTIMATOR,
            runs=FINE_TUNING_RUNS,
        ),
    ] = None
    ref_kl_reward_penalty: Annotated[
        float | None,
        about(
            "Mean over the rollout's steps of the penalty subtracted from the reward: "
            "ref_kl_reward_coef * KL(pi_old ‖ pi_ref) per sample with "
            "ref_kl_reward_estimator.",
            min=0,
            estimator=REF_KL_REWARD_ESTIMATOR,
            runs=FINE_TUNING_RUNS,
        ),
    ] = None
    full_reward_rate: Annotated[
        float | None,
        about(
            "Token-level PPO: share of the update's rollouts whose every answer digit was "
            "right (schema 1.3).",
            min=0,
            max=1,
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    max_new_tokens_rate: Annotated[
        float | None,
        about(
            "Token-level PPO: share of the update's rollouts stopped by max_new_tokens "
            "before answering, which earn reward 0 (schema 1.3).",
            min=0,
            max=1,
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    max_length_rate: Annotated[
        float | None,
        about(
            "Token-level PPO: share of the update's rollouts that used all max_new_tokens "
            "tokens, answered on the last or not at all (schema 1.3): rising toward 1, the "
            "policy is gaming the length.",
            min=0,
            max=1,
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    reward_mean: Annotated[
        float | None,
        about(
            "Mean reward of the update's completions (episodes): TRL's reward, verl's "
            "critic/score/mean (schema 1.5).",
            unit="reward units",
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    reward_std: Annotated[
        float | None,
        about(
            "Standard deviation of the rewards of the update's completions (episodes): "
            "TRL's reward_std (schema 1.5). Near 0, group-relative advantages vanish and "
            "GRPO learns nothing.",
            min=0,
            unit="reward units",
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    reward_zero_std_frac: Annotated[
        float | None,
        about(
            "Share of the update's prompt groups whose rewards are all equal (zero "
            "advantage, no gradient): TRL's frac_reward_zero_std (schema 1.5).",
            min=0,
            max=1,
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    reward_components: Annotated[
        dict[str, float] | None,
        about(
            "Mean of each named reward term of the update, by name: TRL's "
            "rewards/<func>/mean (schema 1.5). Their weighted sum is the reward.",
            unit="reward units",
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    completion_length_mean: Annotated[
        float | None,
        about(
            "Mean length of the update's completions in tokens: TRL's "
            "completions/mean_length, verl's response_length/mean (schema 1.5).",
            min=0,
            unit="tokens",
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    completion_length_min: Annotated[
        float | None,
        about(
            "Shortest completion of the update in tokens: TRL's completions/min_length, "
            "verl's response_length/min (schema 1.5).",
            min=0,
            unit="tokens",
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    completion_length_max: Annotated[
        float | None,
        about(
            "Longest completion of the update in tokens: TRL's completions/max_length, "
            "verl's response_length/max (schema 1.5).",
            min=0,
            unit="tokens",
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    completion_truncated_frac: Annotated[
        float | None,
        about(
            "Share of the update's completions cut at the length cap before they ended: "
            "TRL's completions/clipped_ratio, verl's response_length/clip_ratio (schema "
            "1.5). Rising toward 1 while the reward rises, the policy pads to the cap.",
            min=0,
            max=1,
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    tokens: Annotated[
        Int64 | None,
        about(
            "Tokens the update trained on: completion tokens, prompts excluded (TRL's "
            "num_tokens counts prompts too; schema 1.5).",
            min=0,
            unit="tokens",
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None
    clip_fraction_low: Annotated[
        float | None,
        about(
            "Share of tokens (samples) clipped at the lower bound, r < 1 - clip_range with "
            f"a negative advantage, {_EVALUATED}: TRL's clip_ratio/low_mean (schema 1.5). "
            "Not clip_fraction_lower (the dual clip's share, r > clip_ratio_c).",
            min=0,
            max=1,
        ),
    ] = None
    clip_fraction_high: Annotated[
        float | None,
        about(
            "Share of tokens (samples) clipped at the upper bound, r > 1 + clip_range with "
            f"a positive advantage, {_EVALUATED}: TRL's clip_ratio/high_mean (schema 1.5).",
            min=0,
            max=1,
        ),
    ] = None
    clip_fraction_region: Annotated[
        float | None,
        about(
            "Share of tokens (samples) clipped at either bound, clip_fraction_low + "
            f"clip_fraction_high, {_EVALUATED}: the tokens whose clipped term is the one "
            "the loss takes; TRL's clip_ratio/region_mean, verl's actor/pg_clipfrac "
            "(schema 1.5). clip_fraction counts abs(r - 1) > clip_range whatever the "
            "advantage's sign, so it is the larger.",
            min=0,
            max=1,
        ),
    ] = None
    logprob_gap: Annotated[
        float | None,
        about(
            "Mean abs(log pi_train - log pi_rollout) over the update's sampled tokens: how "
            "far the trainer's log-probabilities are from those of the engine that "
            "generated (vLLM, another precision); 0 when they are the same model and "
            "kernels. Like verl's training/rollout_probs_diff_mean, which compares "
            "probabilities, not log-probabilities (schema 1.5).",
            min=0,
            unit="nats",
            runs=LANGUAGE_MODEL_RUNS,
        ),
    ] = None


class AnomalyPayload(Payload, frozen=True, kw_only=True):
    """Something the trainer itself detected, e.g. a skipped step on a non-finite gradient."""

    severity: Annotated[
        Literal["warning", "critical"],
        about("How bad it is; a critical anomaly fails sanctum check."),
    ]
    metric: Annotated[str, about("The quantity concerned, e.g. grad_norm.")]
    value: Annotated[float | None, about("Its value, when there is one (may be non-finite).")] = (
        None
    )
    message: Annotated[str, about("One sentence for a human.")]
    update: Annotated[Count | None, about("Update during which it happened.")] = None
    global_step: Annotated[Count | None, about("Steps at that time (run_started.step_unit).")] = (
        None
    )


class HeartbeatPayload(Payload, frozen=True, kw_only=True):
    """Proof of life, at least every 5 s during long rollouts."""

    global_step: Annotated[Count, about("Steps so far (run_started.step_unit).")]


RunStatus: TypeAlias = Literal["completed", "failed", "interrupted"]


class RunFinishedPayload(Payload, frozen=True, kw_only=True):
    """Last event of every run that ended in an orderly way."""

    status: Annotated[
        RunStatus,
        about("completed, failed (an exception) or interrupted (Ctrl-C, a stop request)."),
    ]
    reason: Annotated[
        str | None,
        about("Why it ended: the exception's summary, the signal, or null when completed."),
    ] = None
    global_step: Annotated[Count | None, about("Steps at the end (run_started.step_unit).")] = None
    updates: Annotated[Count | None, about("Updates completed.")] = None
    duration_seconds: Annotated[
        float | None, about("Wall time from run_started to run_finished.", unit="s")
    ] = None


P = TypeVar("P", bound=Payload)

A_TIME: Final = msgspec.Meta(ge=0, le=sys.float_info.max)
"""A time a log can be judged by: finite and not before 1970. A line whose ``ts`` is NaN,
infinite or negative is not read (its silences and durations could not be measured). The
contract's bound on a measured number (a declared count is bounded too:
:data:`POLICY_EPOCHS_MAX`): a metric keeps even an impossible value, for the range contracts
to judge."""


class Envelope(msgspec.Struct, Generic[P], frozen=True, kw_only=True, tag_field="type", gc=False):
    """Fields every event carries, stamped by the Emitter, around its kind's payload."""

    run_id: Annotated[str, about("Identifier of the run, unique per log.")]
    seq: Annotated[int, about("1, 2, 3... per run, without gaps.")]
    ts: Annotated[float, about("Unix time when the event was emitted.", unit="s"), A_TIME]
    payload: Annotated[P, about("What this kind of event records: its payload type's fields.")]


class RunStarted(Envelope[RunStartedPayload], frozen=True, tag="run_started"):
    """The run began; carries the schema version and the config."""


class Rollout(Envelope[RolloutPayload], frozen=True, tag="rollout"):
    """A rollout was collected."""


class PPOUpdate(Envelope[PPOUpdatePayload], frozen=True, tag="ppo_update"):
    """A PPO update finished."""


class Anomaly(Envelope[AnomalyPayload], frozen=True, tag="anomaly"):
    """The trainer detected a problem."""


class Heartbeat(Envelope[HeartbeatPayload], frozen=True, tag="heartbeat"):
    """The trainer is alive."""


class RunFinished(Envelope[RunFinishedPayload], frozen=True, tag="run_finished"):
    """The run ended."""


Event: TypeAlias = RunStarted | Rollout | PPOUpdate | Anomaly | Heartbeat | RunFinished
"""The tagged union of every kind in schema 1."""

EVENT_TYPES: Final[tuple[type[Envelope[Any]], ...]] = get_args(Event)
"""The event classes, in the order of the union."""

EVENT_FOR_PAYLOAD: Final[dict[type[Payload], type[Envelope[Any]]]] = {
    bare_type(field.type): cls
    for cls in EVENT_TYPES
    for field in msgspec.structs.fields(cls)
    if field.name == "payload"
}
"""Which event class wraps which payload class."""


def kind_of(event_type: type[Envelope[Any]]) -> str:
    """The snake-case tag of an event class, e.g. ``ppo_update``."""
    tag = event_type.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


KINDS: Final[frozenset[str]] = frozenset(kind_of(t) for t in EVENT_TYPES)
"""Every tag this reader understands."""
