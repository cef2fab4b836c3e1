"""The rule table in force: its rules, the stale and stall limits, and its form for a run.

Every consumer (the banner, each widget, ``sanctum check``, ``sanctum summary``) reads the
same :class:`Thresholds`, so a threshold cannot disagree with itself across the product.
A run is judged by the form of the table that fits what its ``run_started`` declares
(:class:`RunKind`, :meth:`Thresholds.for_run`): the language-model forms of its rules,
without the rules its algorithm or action space makes meaningless. The calibrated rules are
:mod:`sanctum.health.calibrated`'s; a TOML file overrides them
(:mod:`sanctum.health.thresholds_toml`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from sanctum.health.calibrated import DEFAULT_RULES, LANGUAGE_MODEL_RULES
from sanctum.health.rule import Rule, ThresholdsError, is_number
from telemetry.events import KLMeasure

TOP_KEYS: Final = ("stale_seconds", "stall_seconds", "stall_pace")
"""Settings of the table as a whole (the rest of a thresholds file is [metric] tables)."""


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The rule table in force: rules in display and verdict order, and the stale limit."""

    rules: tuple[Rule, ...]
    """Rules, in the order verdicts name them."""
    stale_seconds: float = 10.0
    """A running log with no event for longer than this is STALE (banner only)."""
    stall_seconds: float = 120.0
    """The stall limit's floor: no silence this long or shorter is a stall."""
    stall_pace: float = 10.0
    """No event for longer than this many times the run's own pace (the median of its
    recent intervals between updates and heartbeats), and longer than ``stall_seconds``,
    while the run is unfinished is a stall: critical. A run is silent for 10x its pace when
    it has stalled; the 120 s floor lets a fast run take one slow step (a 70 s checkpoint
    or evaluation) without failing. No stall is judged before a run has a pace."""
    overrides: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )
    """What a thresholds file set, per metric: applied again to the form of a rule that
    :meth:`for_run` picks for a run, so a file tunes every form of its rule."""
    _by_metric: Mapping[str, Rule] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_metric: dict[str, Rule] = {}
        for r in self.rules:
            if r.metric in by_metric:
                raise ThresholdsError(f"rules: more than one rule for the metric {r.metric}")
            by_metric[r.metric] = r
        for key in TOP_KEYS:
            value = getattr(self, key)
            if not is_number(value) or not 0 < value < math.inf:
                raise ThresholdsError(f"{key}: must be a finite number > 0, got {value!r}")
        object.__setattr__(self, "_by_metric", by_metric)

    def rule(self, metric: str) -> Rule | None:
        """The rule for ``metric``, or None when no rule judges it."""
        return self._by_metric.get(metric)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metrics that have a rule, in rule order."""
        return tuple(r.metric for r in self.rules)

    def for_run(self, kind: RunKind) -> Thresholds:
        """The rules that fit the run ``run_started`` declares (see :class:`RunKind`): the
        table itself for a PPO run with a critic that declares nothing more (the classic
        runs); for a language-model run the language-model forms of its rules
        (LANGUAGE_MODEL_RULES); without the rules its algorithm or action space makes
        meaningless."""
        rules = {r.metric: r for r in self.rules}
        if kind.language_model:
            for lm in LANGUAGE_MODEL_RULES:
                rules[lm.metric] = lm
            if "entropy_normalized" in rules:  # over a vocabulary: no trainer logs it
                rules["entropy_normalized"] = replace(
                    rules["entropy_normalized"], only_when_measured=True
                )
        if kind.action_space == "continuous":  # a density: no entropy over a set's size
            rules.pop("entropy_normalized", None)
        if kind.critic_free:
            rules.pop("explained_variance", None)  # no critic, no value to explain
            rules.pop("value_loss", None)
            epochs = kind.policy_epochs or 1
            kl = kind.kl or {}
            if epochs == 1 and "approx_kl" not in kl:  # the ratio is 1 by construction
                rules.pop("approx_kl", None)
                rules.pop("clip_fraction", None)
            elif epochs > 1 and "clip_fraction" in rules:
                rules["clip_fraction"] = replace(rules["clip_fraction"], span=epochs)
            if epochs > 1 and "reward_mean" in rules:  # rewards come once per batch
                rules["reward_mean"] = replace(rules["reward_mean"], span=epochs)
        ref = (kind.kl or {}).get("ref_kl")
        if ref is not None and ref.unit == "sequence" and "ref_kl" in rules:
            rules["ref_kl"] = replace(
                rules["ref_kl"], per="completion_length_mean", per_floor=1.0, per_required=True
            )
        for metric, table in self.overrides.items():
            if metric in rules and rules[metric] is not self._by_metric.get(metric):
                rules[metric] = replace(rules[metric], **table)
        if list(rules.values()) == list(self.rules):
            return self
        return replace(self, rules=tuple(rules.values()))


CRITIC_ALGORITHMS: Final = frozenset({"ppo", "vapo", "vc_ppo"})
"""Algorithms (``run_started.algorithm``) that train a critic; any other is critic-free
(grpo, dr_grpo, rloo, reinforce++, remax, gspo, dapo...)."""


@dataclass(frozen=True, slots=True)
class RunKind:
    """The kind of run ``run_started`` declares: what decides which rules fit it (its
    algorithm, what its KL fields measure, its policy epochs and action space)."""

    algorithm: str = "ppo"
    kl: Mapping[str, KLMeasure] | None = None
    """What each KL field measures (schema 1.5); None: not declared (a classic run)."""
    policy_epochs: int | None = None
    action_space: str | None = None
    """``discrete``, ``continuous`` (no ``entropy_normalized``: the Entropy rule does not
    apply; Entropy shift judges the entropy), or None: not declared."""

    @property
    def critic_free(self) -> bool:
        """The algorithm trains no critic (no explained variance to judge)."""
        return self.algorithm not in CRITIC_ALGORITHMS

    @property
    def language_model(self) -> bool:
        """A run of the language-model contract: a critic-free algorithm, or a run that
        declares what its KL fields measure (the TRL, verl and OpenRLHF readers do; the
        classic trainers declare nothing)."""
        return self.critic_free or self.kl is not None


DEFAULT_THRESHOLDS: Final = Thresholds(
    rules=DEFAULT_RULES,
    stale_seconds=10.0,
    stall_seconds=120.0,
    stall_pace=10.0,
)
"""The calibrated rules (:data:`~sanctum.health.calibrated.DEFAULT_RULES`) with the
default stale and stall limits: the table every command judges by unless told otherwise."""
