"""The keys of ``run_started.config`` the contract gives a meaning, and one typed reading of them.

``run_started.config`` is the trainer's configuration, written whole: most of its keys are
the trainer's own, shown and compared but never interpreted. A few mean the same in every
log, whoever wrote it: the KL threshold of an early stop and the estimators the KL fields
are measured with, the steps planned, where a resumed run starts, the token names, and what
a reader of another tool's log says of it (where it came from, what it could not read, why
no end is recorded). Each such key is a constant here, the one spelling writers put into a
config and readers read.

Readers read them through :meth:`RunConfig.from_config`. A log is untrusted, so the reading
never raises: an absent key, a key it does not know and a value of the wrong shape (a
string for a number, ``true`` for a count, a number past a float's range) all read as not
declared. Each field's meaning is its ``Meta.description`` (``telemetry.events.field_docs``
reads it), as the contract's other fields carry theirs. Depends on msgspec only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Final

import msgspec
from msgspec import UNSET, UnsetType

MAX_KL: Final = "max_kl"
KL_ESTIMATOR: Final = "kl_estimator"
REF_KL_LOSS_ESTIMATOR: Final = "ref_kl_loss_estimator"
REF_KL_REWARD_ESTIMATOR: Final = "ref_kl_reward_estimator"
EARLY_STOP_SCOPE: Final = "early_stop_scope"
CLIP_RANGE: Final = "clip_range"
CLIP_RANGE_VF: Final = "clip_range_vf"
MAX_GRAD_NORM: Final = "max_grad_norm"
TOTAL_STEPS: Final = "total_steps"
TOTAL_TIMESTEPS: Final = "total_timesteps"
"""Stable-Baselines3's name for :data:`TOTAL_STEPS`, read where a config has no ``total_steps``."""
SEED: Final = "seed"
RUN_ID: Final = "run_id"
RUN_DIR: Final = "run_dir"
RESUMED_FROM: Final = "resumed_from"
RESUMED_UPDATE: Final = "update"
"""The key inside ``resumed_from`` holding the update index the resumed run starts at."""
DEVICE_USED: Final = "device_used"
MEASURED_BY: Final = "measured_by"
VOCAB: Final = "vocab"
ROLLOUTS_PER_UPDATE: Final = "rollouts_per_update"
SOURCE: Final = "source"
SOURCE_UNREAD: Final = "source_unread"
OUTCOME_UNKNOWN: Final = "outcome_unknown"
NO_RUN_FINISHED: Final = "no_run_finished"

PER_RUN_KEYS: Final = (SEED, RESUMED_FROM, RUN_ID, RUN_DIR)
"""Keys in which runs of one configuration may differ: the seed, and what only names or
places one run (seed groups and the learning gate's notes leave them out)."""
SOURCE_UNREAD_KEPT: Final = 100
"""Entries of ``source_unread`` kept (a hostile config may hold millions)."""
END_SUFFIX: Final = "_end"


def changed_to(key: str) -> str:
    """The key holding a setting's last value when it changed during the run (``key`` holds
    its first): an SB3 schedule's value at the end, a TensorBoard setting tag's last one."""
    return key + END_SUFFIX


def _meaning(description: str, unit: str | None = None) -> msgspec.Meta:
    """A field's definition (and unit), as the contract's fields carry theirs."""
    return msgspec.Meta(description=description, extra={"unit": unit} if unit else {})


Estimator = str | None | UnsetType
"""A KL estimator setting as a config holds it: its name; None, written as ``null`` (no
estimator: the field's bound is not known); or UNSET, not declared (absent, or not a name)."""


class RunConfig(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The known keys of one ``run_started.config``, each read as its meaning asks (a field
    left at its default: not declared). Field names are the keys."""

    max_kl: Annotated[
        float | None,
        _meaning(
            "The KL to the old policy past which an update stops early (sanctum-ppo's "
            "setting; SB3's 1.5 x target_kl, CleanRL's target_kl); absent, or not a positive "
            "finite number: no early stop.",
            unit="nats",
        ),
    ] = None
    kl_estimator: Annotated[
        Estimator,
        _meaning(
            "The estimator approx_kl, approx_kl_max and kl_final are measured with (k1, k3, "
            "...; null: not known)."
        ),
    ] = UNSET
    ref_kl_loss_estimator: Annotated[
        Estimator,
        _meaning("The estimator of the KL to the reference in the loss (ref_kl)."),
    ] = UNSET
    ref_kl_reward_estimator: Annotated[
        Estimator,
        _meaning("The estimator of the KL to the reference taken from the reward."),
    ] = UNSET
    early_stop_scope: Annotated[
        str | None,
        _meaning(
            "Where the max_kl check stops an update: minibatch (before the step that "
            "would cross it; SB3) or epoch (after the epoch; CleanRL)."
        ),
    ] = None
    clip_range: Annotated[
        float | None, _meaning("The ratio clip: r is kept in [1 - clip_range, 1 + clip_range].")
    ] = None
    clip_range_vf: Annotated[
        float | None,
        _meaning("The value clip around the old value prediction (absent: no value clip)."),
    ] = None
    max_grad_norm: Annotated[
        float | None,
        _meaning("The global gradient norm each step is clipped to (absent: not clipped)."),
    ] = None
    total_steps: Annotated[
        int | None,
        _meaning(
            "The steps the run plans to train for, all environments together (total_steps, "
            "else SB3's total_timesteps; a whole number of at least 1).",
            unit="steps",
        ),
    ] = None
    seed: Annotated[int | None, _meaning("The run's seed, where run_started.seed has none.")] = None
    resumed_from: Annotated[
        int | None,
        _meaning(
            "The update index a resumed run's count starts at (resumed_from.update, as ppo "
            "train --resume and the verl reader write it); absent: the run starts at 0."
        ),
    ] = None
    device_used: Annotated[
        str | None, _meaning("The torch device the policy trained on (cpu, cuda).")
    ] = None
    measured_by: Annotated[
        str | None,
        _meaning(
            "What measured the update figures from outside the trainer (UpdateProbe: the "
            "trainer logs none of its own)."
        ),
    ] = None
    vocab: Annotated[
        tuple[str, ...] | None,
        _meaning("The names of a language-model run's tokens, by id (a list of strings)."),
    ] = None
    rollouts_per_update: Annotated[
        int | None,
        _meaning("Rollout records an update of a language-model run writes (at least 1)."),
    ] = None
    source: Annotated[
        str | None,
        _meaning(
            "The reader that made this log from another tool's log (tensorboard, verl); "
            "absent: the trainer wrote it."
        ),
    ] = None
    source_unread: Annotated[
        tuple[str, ...],
        _meaning(
            "What an import could not read of its source, a line each (the first "
            "SOURCE_UNREAD_KEPT, then a count); a value of another shape is itself one "
            "such line. sanctum check fails such a run unless --allow-skipped."
        ),
    ] = ()
    outcome_unknown: Annotated[
        str | None,
        _meaning(
            "Why an import writes no run_finished (its source does not say how the run "
            "ended), and how to record it: every view says outcome not recorded."
        ),
    ] = None
    no_run_finished: Annotated[
        str | None,
        _meaning(
            "Why the log never holds a run_finished (verl's file logger records no end): "
            "the run is judged as it stands."
        ),
    ] = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RunConfig:
        """The known keys of ``config`` as their meanings read them; never raises."""
        get = config.get
        resumed = get(RESUMED_FROM)
        return cls(
            max_kl=_threshold(get(MAX_KL)),
            kl_estimator=_estimator(config, KL_ESTIMATOR),
            ref_kl_loss_estimator=_estimator(config, REF_KL_LOSS_ESTIMATOR),
            ref_kl_reward_estimator=_estimator(config, REF_KL_REWARD_ESTIMATOR),
            early_stop_scope=_text(get(EARLY_STOP_SCOPE)),
            clip_range=_number(get(CLIP_RANGE)),
            clip_range_vf=_number(get(CLIP_RANGE_VF)),
            max_grad_norm=_number(get(MAX_GRAD_NORM)),
            total_steps=_whole(get(TOTAL_STEPS), 1) or _whole(get(TOTAL_TIMESTEPS), 1),
            seed=_whole(get(SEED), None),
            resumed_from=_whole(resumed.get(RESUMED_UPDATE), 0)
            if isinstance(resumed, Mapping)
            else None,
            device_used=_text(get(DEVICE_USED)),
            measured_by=_text(get(MEASURED_BY)),
            vocab=_texts(get(VOCAB)),
            rollouts_per_update=_whole(get(ROLLOUTS_PER_UPDATE), 1),
            source=_text(get(SOURCE)),
            source_unread=_unread(get(SOURCE_UNREAD)),
            outcome_unknown=_text(get(OUTCOME_UNKNOWN)),
            no_run_finished=_text(get(NO_RUN_FINISHED)),
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _texts(value: object) -> tuple[str, ...] | None:
    """A list of strings as a tuple; None for anything else."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _whole(value: object, least: int | None) -> int | None:
    """An integer (never a bool) of at least ``least`` (None: any)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if least is None or value >= least else None
    return None


def _number(value: object) -> float | None:
    """A finite number (never a bool) as a float; a number past a float's range is none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _threshold(value: object) -> float | None:
    """A positive finite number as a float (a threshold that is on)."""
    number = _number(value)
    return number if number is not None and number > 0 else None


def _estimator(config: Mapping[str, Any], key: str) -> Estimator:
    """The estimator ``config`` names under ``key``: a name, None for ``null``, UNSET when
    absent or not a name (a number, a list: a log may hold anything)."""
    value = config.get(key, UNSET)
    return value if value is None or isinstance(value, str) else UNSET


def _unread(value: object) -> tuple[str, ...]:
    """``source_unread``'s lines (at most :data:`SOURCE_UNREAD_KEPT`, then a count); a value
    of another shape as one line saying so: it is itself a loss no gate can vouch for."""
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(x, str) for x in value[:SOURCE_UNREAD_KEPT]):
        more = len(value) - SOURCE_UNREAD_KEPT
        return tuple(value[:SOURCE_UNREAD_KEPT]) + ((f"... and {more} more",) if more > 0 else ())
    return (f"config.{SOURCE_UNREAD} is not a list of lines ({type(value).__name__})",)
