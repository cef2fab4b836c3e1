"""The PPO metrics Sanctum tracks, derived from the event contract rather than spelled out;
the ones it features (the KL), and the window of a run's final return.

Every numeric field of :class:`telemetry.events.PPOUpdatePayload` except the two indices
(``update``, ``global_step``) is a metric. Deriving the list means a field appended to the
contract appears in state, health, check and summary without touching any of them.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Collection
from typing import Final

import msgspec

from telemetry import returns
from telemetry.events import PPOUpdatePayload, bare_type, field_docs

_INDEX_FIELDS: Final = frozenset({"update", "global_step"})
_FIELDS: Final = msgspec.structs.fields(PPOUpdatePayload)


def _numeric_base(annotation: object) -> type | None:
    """``float`` or ``int`` for those types (bounded ones too: ``Annotated[int, Meta(...)]``)
    and their ``| None`` forms, else None (bool too)."""
    annotation = bare_type(annotation)
    if annotation is float or annotation is int:
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _numeric_base(members[0]) if len(members) == 1 else None
    return None


_NUMERIC: Final = [
    (i, f, _numeric_base(bare_type(f.type)))
    for i, f in enumerate(_FIELDS)
    if f.name not in _INDEX_FIELDS and _numeric_base(bare_type(f.type)) is not None
]

PPO_METRICS: Final[tuple[str, ...]] = tuple(f.name for _, f, _ in _NUMERIC)
"""Metric names, in contract order."""

PPO_METRIC_POSITIONS: Final[tuple[int, ...]] = tuple(i for i, _, _ in _NUMERIC)
"""Each metric's position in ``msgspec.structs.astuple(payload)``, aligned with PPO_METRICS."""

FLOAT_METRICS: Final[frozenset[str]] = frozenset(f.name for _, f, t in _NUMERIC if t is float)
"""Metrics that can be non-finite (integer counters cannot)."""

SHORT_NAMES: Final[dict[str, str]] = {
    "clip_fraction_lower": "clip_frac_lower",
    "clip_fraction_region": "clip_frac_region",
    "minibatches_completed": "minibatches_done",
    "minibatches_planned": "minibatches_plan",
    "ref_kl_reward_penalty": "ref_kl_penalty",
    "max_new_tokens_rate": "max_tokens_rate",
    "reward_zero_std_frac": "reward_0std_frac",
    "completion_length_mean": "length_mean",
    "completion_length_min": "length_min",
    "completion_length_max": "length_max",
    "completion_truncated_frac": "truncated_frac",
}
"""The name a metric's row shows where the full name does not fit (the health panel's
name column): every metric longer than that column has one here."""


RUNS_OF: Final[dict[str, str]] = {
    d.name: d.facts["runs"] for d in field_docs(PPOUpdatePayload) if "runs" in d.facts
}
"""The metrics only some runs can have, and which (the contract's ``runs`` fact: a
language model's rewards and completions, a fine-tuning run's reference KL)."""


def can_have(metric: str, measured: Collection[str]) -> bool:
    """Whether a run that measured ``measured`` is of a kind that can have ``metric``: any
    run for most; for one only some runs have (:data:`RUNS_OF`), a run that measured
    another of its kind (a CartPole run has no completion lengths to miss)."""
    kind = RUNS_OF.get(metric)
    return kind is None or any(RUNS_OF.get(m) == kind for m in measured)


def short_name(metric: str) -> str:
    """The name a narrow column shows for ``metric``: its short form, else the name."""
    return SHORT_NAMES.get(metric, metric)


KL_METRIC: Final = "approx_kl"
"""The metric the banner, the KL chart and the run table feature."""

REF_KL_METRIC: Final = "ref_kl"
"""The KL to the frozen reference policy, charted beside KL_METRIC when a run has it."""

FINAL_EPISODES: Final = returns.FINAL_EPISODES
"""Episodes a run's final (and initial) return is the mean of, at least: defined with the
contract (:mod:`telemetry.returns`), so ``ppo train``'s own final figure uses the same window.
``diff``, the learning gate and their help read it here."""
