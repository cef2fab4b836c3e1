"""The one table of health rules (docs/design.md, section 6), overridable from a TOML file.

Every consumer (the banner, each widget, ``sanctum check``, ``sanctum summary``) reads the
same :class:`Thresholds`, so a threshold cannot disagree with itself across the product.
A TOML file overrides defaults per metric and may add a rule for any other PPO metric::

    stale_seconds = 20

    [approx_kl]
    warning = 0.01
    critical = 0.02

    [entropy]              # a new rule needs a direction
    direction = "below"
    warning = 0.1
    critical = 0.01

A rule judges a *statistic* of its metric: the value itself, the rolling median of the
last ``window`` judged values (for noisy metrics such as explained variance), or the jump
of the value over the median of the ``window`` values before it (for metrics whose scale
is the run's own, such as the pre-clip gradient norm). A level fires only once it held for
``persist`` consecutive judged updates, except past ``far``, where critical fires at once.

A bad file is refused with a :class:`ThresholdsError` naming the file, the table and the key.
Non-finite values are critical for every metric regardless of the table (see ``health``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal

from sanctum.formatting import KL_DECIMALS, NOT_MEASURED, format_ratio, format_value, visible
from sanctum.metrics import PPO_METRICS
from telemetry.events import KLMeasure
from telemetry.files import InputFileError, read_toml

Direction = Literal["above", "below"]
Statistic = Literal["value", "median", "jump", "shift", "start", "split", "high"]
STATISTICS: Final[tuple[str, ...]] = (
    "value", "median", "jump", "shift", "start", "split", "high"
)  # fmt: skip
_TOP_KEYS: Final = ("stale_seconds", "stall_seconds", "stall_pace")
"""Settings of the table as a whole (the rest of a thresholds file is [metric] tables)."""


class ThresholdsError(ValueError):
    """A thresholds file (or rule) is unusable; the message names file, table and key."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A metric is at warning past ``warning`` and critical past ``critical``.

    ``above``: worse when larger (strictly greater than the threshold fires); ``below``:
    worse when smaller (strictly less fires). A value exactly at a threshold is not past it.
    During the first ``warmup_updates`` updates (0-based index below it) the rule does not
    judge: the level is pending.
    """

    metric: str
    """Field of PPOUpdatePayload the rule reads."""
    label: str
    """Short name for banners and verdicts, e.g. ``KL``."""
    direction: Direction
    """``above`` or ``below``: which way is worse."""
    warning: float
    """Past this (strictly) the metric is at warning."""
    critical: float | None
    """Past this (strictly) the metric is critical. None (``critical = false`` in a
    thresholds file): the rule only warns, it never fails a run."""
    warmup_updates: int = 0
    """Updates with a 0-based index below this are not judged (pending)."""
    decimals: int = 3
    """Decimals to show values of this metric with."""
    statistic: Statistic = "value"
    """What is judged: the ``value``; the ``median`` of the last ``window`` judged values;
    the ``jump``, the value over the median of the ``window`` measured values before it; or
    the ``shift``, how far the value lies from that median, either way, in the metric's
    units (``abs(value - median)``); or the value relative to the ``start``, the median of
    the run's first ``window`` measured values (a gradual fall that no jump shows); or the
    ``split`` of the update's ``reward_components``: over the last ``window`` updates, how far
    one component rose while another fell (the smaller of the two moves, each the median of
    the later half of the window less that of the earlier half), in reward units; or the
    ``high``: the value over the largest the run measured before it, judged once ``window``
    values were measured (a new high by orders of magnitude: a loss whose healthy values
    swing by orders of magnitude from one update to the next, as a converged critic's do,
    still never goes far past its own record)."""
    window: int = 1
    """Updates in the rolling statistic (``median`` and ``jump``)."""
    persist: int = 1
    """Consecutive judged updates a level must hold before it fires."""
    far: float | None = None
    """Past this, the rule fires critical at once, whatever ``persist`` says."""
    min_return_spread: float | None = None
    """Judge only updates whose ``return_std`` is at least this share of ``|return_mean|``
    (when the update reports both): explained variance is noise when returns barely vary."""
    min_baseline: float | None = None
    """A jump is judged only while the median it is measured against is at least this: a
    policy whose normalised entropy already sits near 0 (MountainCar converging to a
    deterministic policy) has nothing left to collapse, and its dips are noise."""
    floor: float | None = None
    """A ``below`` jump rule's line in the metric's own units: a value under it is judged as
    itself wherever no jump is (no baseline yet, or one under ``min_baseline``), so a
    policy that collapsed in its first updates, before any healthy baseline formed, still
    fires. For a metric in [0, 1] such as normalised entropy the value is its share of the
    maximum (under 1e-5: deterministic to float precision)."""
    only_when_measured: bool = False
    """The metric exists only in some runs (a reference KL only when fine-tuning): the
    dashboard shows its row only in runs that measure it."""
    per: str | None = None
    """Judge the metric per unit of this other metric of the same update: value /
    max(other, ``per_floor``) (an absent other counts as ``per_floor``). The KL rule judges
    approx_kl per clip fraction: a policy that moves far while the clip bounds almost
    nothing is PPO's trust region gone, whatever the run's healthy KL is."""
    per_floor: float = 0.01
    """The smallest divisor ``per`` uses (a clip fraction of 0 counts as this)."""
    per_required: bool = False
    """An update without the ``per`` metric is not judged (a KL summed over a response's
    tokens says nothing per token without the response's length). No effect without ``per``."""
    span: int = 1
    """Judge the largest of the last ``span`` measured values: a critic-free run optimised
    ``span`` times per batch measures its ratio at 1 on the first pass of each batch, so
    only one update in ``span`` can show what the batch did."""
    rise_with: str | None = None
    """Critical only while this is the policy being paid for it: the rule's median rose at
    least ``rise`` above its lowest median so far, and the median of this other metric
    (over the same window) rose above what it was then. Otherwise the rule warns, and only
    after ``warmup_updates`` (which holds back only that warning: a confirmed rise is
    judged from the first median)."""
    rise: float = 0.25
    """How far above its lowest median the rule's median must have risen (``rise_with``)."""
    lost: bool = False
    """Once the metric was measured, ``span`` updates in a row without it are non-finite
    (critical): a reward that vanishes mid-run (TRL logs a NaN reward as no reward) is a
    fault, not a gap in the log."""

    def __post_init__(self) -> None:
        problem = _rule_problem(self)
        if problem is not None:
            key, message = problem
            raise ThresholdsError(f"[{self.metric}] {key}: {message}")

    def is_worse(self, value: float, than: float) -> bool:
        """Whether ``value`` is strictly worse than ``than`` in this rule's direction."""
        return self.worse_than(than)(value)

    def worse_than(self, than: float) -> Callable[[float], bool]:
        """A predicate: is a value strictly worse than ``than``? The one place the direction
        is read. It is a bound float comparison, so a scan can call it per value at C speed;
        NaN is never worse (comparisons with NaN are false: check finiteness first)."""
        bound = float(than)  # int.__lt__(float) would return NotImplemented, which is truthy
        return bound.__lt__ if self.direction == "above" else bound.__gt__

    def worst_of(self, values: Sequence[float]) -> float:
        """The worst of finite ``values`` (the largest for ``above``, smallest for ``below``)."""
        return max(values) if self.direction == "above" else min(values)

    @property
    def in_metric_units(self) -> bool:
        """Whether the lines are in the metric's own units (not a jump's ratio, not a
        quantity per another metric), so a chart of the metric can draw them."""
        return self.statistic in ("value", "median") and self.per is None

    def judged_column(
        self, values: Sequence[float | None], others: Sequence[float | None] | None
    ) -> Sequence[float | None]:
        """What the rule's statistic is computed from: ``values`` themselves, or each per
        unit of ``others`` (see ``per``). Absent and non-finite values stay as they are."""
        if self.per is None:
            return values
        floor, isfinite = self.per_floor, math.isfinite
        others = others if others is not None else [None] * len(values)
        return [
            v if v is None or not isfinite(v) else v / max(o if o is not None else 0.0, floor)
            for v, o in zip(values, others, strict=True)
        ]

    def format(self, value: float | None, absent: str = NOT_MEASURED) -> str:
        """A judged statistic as text: ``x12.3`` for a jump, ``12.3`` for a quantity per
        another metric, else the value at ``decimals`` (``NaN``/``+Inf`` spelled out; None
        is ``absent``)."""
        if value is not None and math.isfinite(value):
            if self.statistic in ("jump", "high"):
                return f"x{format_value(value, 1)}"
            if self.statistic == "shift":
                return f"±{format_value(value, 2)}"
            if self.per is not None:
                return format_ratio(value)
        return format_value(value, self.decimals, absent)

    @property
    def sign(self) -> str:
        """``>`` for a rule whose lines are crossed from below, ``<`` from above."""
        return ">" if self.direction == "above" else "<"

    def describe(self) -> str:
        """The rule in words, for tables and help, e.g. ``approx_kl > 0.02 / > 0.05, 2
        updates in a row (at once past 0.15)``."""
        sign = self.sign
        unit = "x" if self.statistic in ("jump", "high") else ""
        measure = self.metric
        if self.per is not None:
            measure = f"{self.metric} / {self.per} (at least {self.per_floor:g})"
        if self.span > 1:
            measure = f"max of each {self.span} {measure}"
        if self.statistic == "jump":
            subject = f"{measure} / median of previous {self.window}"
        elif self.statistic == "shift":
            subject = f"|{measure} - median of previous {self.window}|"
        elif self.statistic == "split":
            subject = f"reward_components: one rising while another falls, over {self.window}"
        elif self.statistic == "start":
            subject = f"{measure} / median of the run's first {self.window}"
        elif self.statistic == "high":
            subject = f"{measure} / largest before it (after {self.window})"
        else:
            subject = measure
            if self.statistic == "median":
                subject = f"median of {self.window} {measure}"
        bands = f"{sign} {self.warning:g}{unit} (warns only)"
        if self.critical is not None:
            bands = f"{sign} {self.warning:g}{unit} / {sign} {self.critical:g}{unit}"
        text = f"{subject} {bands}"
        if self.persist > 1:
            text += f", {self.persist} updates in a row"
        if self.far is not None:
            text += f" (at once {'past' if self.direction == 'above' else 'below'} {self.far:g})"
        if self.warmup_updates and self.rise_with is None:
            text += f", after {self.warmup_updates} updates"
        if self.min_return_spread is not None:
            text += ", when returns vary"
        if self.min_baseline is not None:
            text += f", while the median is at least {self.min_baseline:g}"
        if self.floor is not None:
            text += f"; without a jump to judge, a value under {self.floor:g} is judged as itself"
        if self.lost:
            text += f"; {self.metric} missing once measured is critical"
        if self.per_required and self.per is not None:
            text += f", only with {self.per}"
        if self.rise_with is not None:
            text += (
                f"; critical only after a rise of {self.rise:g} from its lowest median "
                f"while the median {self.rise_with} rose; without it, warns after "
                f"{self.warmup_updates} updates"
            )
        return text


def _rule_problem(rule: Rule) -> tuple[str, str] | None:
    """The first (key, problem) that makes ``rule`` unusable, or None."""
    if rule.metric not in PPO_METRICS:
        return "metric", f"unknown metric {rule.metric!r}"
    if rule.direction not in ("above", "below"):
        return "direction", f"must be 'above' or 'below', got {rule.direction!r}"
    for key in ("warning", "critical"):
        value = getattr(rule, key)
        if key == "critical" and value is None:
            continue
        if not _is_number(value) or not math.isfinite(value):
            hint = " (or false: the rule only warns)" if key == "critical" else ""
            return key, f"must be a finite number{hint}, got {value!r}"
    if rule.critical is not None and rule.is_worse(rule.warning, rule.critical):
        relation = "above" if rule.direction == "above" else "below"
        return "warning", (
            f"warning {rule.warning:g} is {relation} critical {rule.critical:g}; "
            f"for a rule that fires {rule.direction} its thresholds, warning comes first"
        )
    if not _is_int(rule.warmup_updates) or rule.warmup_updates < 0:
        return "warmup_updates", f"must be an integer >= 0, got {rule.warmup_updates!r}"
    if not _is_int(rule.decimals) or not 0 <= rule.decimals <= 12:
        return "decimals", f"must be an integer from 0 to 12, got {rule.decimals!r}"
    return _statistic_problem(rule)


def _statistic_problem(rule: Rule) -> tuple[str, str] | None:
    """The first problem with the statistic, persistence and gate keys, or None."""
    if rule.statistic not in STATISTICS:
        return "statistic", f"must be one of {', '.join(STATISTICS)}, got {rule.statistic!r}"
    for key in ("window", "persist"):
        value = getattr(rule, key)
        if not _is_int(value) or value < 1:
            return key, f"must be an integer >= 1, got {value!r}"
    if rule.statistic != "value" and rule.window < 2:
        return "window", f"a {rule.statistic} needs a window of at least 2, got {rule.window!r}"
    if rule.far is not None and rule.critical is None:
        return "far", "needs a critical line (the rule only warns: critical = false)"
    if rule.far is not None and (
        not _is_number(rule.far)
        or not math.isfinite(rule.far)
        or rule.is_worse(rule.critical, rule.far)  # type: ignore[arg-type]
    ):
        return (
            "far",
            f"must be a finite number at or past critical {rule.critical:g}, got {rule.far!r}",
        )
    low = rule.min_baseline
    if low is not None and (
        rule.statistic != "jump" or not _is_number(low) or not 0 < low < math.inf
    ):
        return "min_baseline", f"needs statistic = 'jump' and a finite number > 0, got {low!r}"
    floor = rule.floor
    if floor is not None and (
        rule.statistic != "jump"
        or rule.direction != "below"
        or not _is_number(floor)
        or not 0 < floor < math.inf
    ):
        return "floor", (
            f"needs statistic = 'jump', direction = 'below' and a finite number > 0, got {floor!r}"
        )
    spread = rule.min_return_spread
    if spread is not None and (not _is_number(spread) or not 0 <= spread < math.inf):
        return "min_return_spread", f"must be a finite number >= 0, got {spread!r}"
    if not isinstance(rule.label, str) or not rule.label or visible(rule.label) != rule.label:
        return "label", f"must be a non-empty string of visible characters, got {rule.label!r}"
    if not isinstance(rule.only_when_measured, bool):
        return "only_when_measured", f"must be true or false, got {rule.only_when_measured!r}"
    if rule.per is not None and (rule.per not in PPO_METRICS or rule.per == rule.metric):
        return "per", f"must name another ppo_update metric, got {rule.per!r}"
    if not _is_number(rule.per_floor) or not 0 < rule.per_floor < math.inf:
        return "per_floor", f"must be a finite number > 0, got {rule.per_floor!r}"
    return _run_problem(rule)


def _run_problem(rule: Rule) -> tuple[str, str] | None:
    """The first problem with the keys that fit a rule to a kind of run, or None."""
    if not isinstance(rule.lost, bool):
        return "lost", f"must be true or false, got {rule.lost!r}"
    if not isinstance(rule.per_required, bool):
        return "per_required", f"must be true or false, got {rule.per_required!r}"
    if not _is_int(rule.span) or rule.span < 1:
        return "span", f"must be an integer >= 1, got {rule.span!r}"
    if rule.rise_with is not None and (
        rule.rise_with not in PPO_METRICS
        or rule.rise_with == rule.metric
        or rule.statistic != "median"
    ):
        return "rise_with", (
            f"must name another ppo_update metric, on a median rule, got {rule.rise_with!r}"
        )
    if not _is_number(rule.rise) or not 0 <= rule.rise < math.inf:
        return "rise", f"must be a finite number >= 0, got {rule.rise!r}"
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
        for key in _TOP_KEYS:
            value = getattr(self, key)
            if not _is_number(value) or not 0 < value < math.inf:
                raise ThresholdsError(f"{key}: must be a finite number > 0, got {value!r}")
        object.__setattr__(self, "_by_metric", by_metric)

    def rule(self, metric: str) -> Rule | None:
        """The rule for ``metric``, or None when no rule judges it."""
        return self._by_metric.get(metric)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metrics that have a rule, in rule order."""
        return tuple(r.metric for r in self.rules)

    def for_run(self, facts: RunFacts) -> Thresholds:
        """The rules that fit the run ``run_started`` declares (see :class:`RunFacts`): the
        table itself for a PPO run with a critic that declares nothing more (the classic
        runs); for a language-model run the language-model forms of its rules
        (LANGUAGE_MODEL_RULES); without the rules its algorithm or action space makes
        meaningless."""
        rules = {r.metric: r for r in self.rules}
        if facts.language_model:
            for lm in LANGUAGE_MODEL_RULES:
                rules[lm.metric] = lm
            if "entropy_normalized" in rules:  # over a vocabulary: no trainer logs it
                rules["entropy_normalized"] = replace(
                    rules["entropy_normalized"], only_when_measured=True
                )
        if facts.action_space == "continuous":  # a density: no entropy over a set's size
            rules.pop("entropy_normalized", None)
        if facts.critic_free:
            rules.pop("explained_variance", None)  # no critic, no value to explain
            rules.pop("value_loss", None)
            epochs = facts.policy_epochs or 1
            kl = facts.kl or {}
            if epochs == 1 and "approx_kl" not in kl:  # the ratio is 1 by construction
                rules.pop("approx_kl", None)
                rules.pop("clip_fraction", None)
            elif epochs > 1 and "clip_fraction" in rules:
                rules["clip_fraction"] = replace(rules["clip_fraction"], span=epochs)
            if epochs > 1 and "reward_mean" in rules:  # rewards come once per batch
                rules["reward_mean"] = replace(rules["reward_mean"], span=epochs)
        ref = (facts.kl or {}).get("ref_kl")
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

SAME_CONCEPT: Final[Mapping[str, str]] = MappingProxyType(
    {
        "completion_truncated_frac": "max_length_rate",
        "clip_fraction": "clip_fraction_region",
        "approx_kl": "kl_final",
    }
)
"""A rule's metric -> the field that measures the same thing in runs that lack it: the rule
reads the other where its own is absent (one concept, one rule). Our token trainer's
``max_length_rate`` is the truncated share; verl's ``pg_clipfrac`` and TRL's
``clip_ratio/region_mean`` are the share clipped on either side. ``kl_final`` is
KL(pi_old || pi_new) after the update's last step, where ``approx_kl`` is measured before
each step: what a probe measures from outside a trainer that logs no KL
(``telemetry.integrations.probe``); it is the larger of the two on an update that moved."""


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What ``run_started`` declares that decides which rules fit a run."""

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
    rules=(
        Rule(
            "approx_kl",
            "KL",
            "above",
            5.0,
            20.0,
            decimals=KL_DECIMALS,
            statistic="median",
            window=5,
            per="clip_fraction",
        ),
        Rule(
            "clip_fraction",
            "Clip",
            "above",
            0.5,
            None,
            decimals=3,
            statistic="median",
            window=10,
        ),
        Rule("grad_norm", "Grad", "above", 100.0, 1000.0, statistic="jump", window=20, persist=2),
        Rule(
            "explained_variance",
            "EV",
            "below",
            -0.5,
            None,
            warmup_updates=10,
            decimals=3,
            statistic="median",
            window=10,
            persist=3,
            min_return_spread=0.05,
        ),
        Rule(
            "value_loss",
            "Value loss",
            "above",
            100.0,
            1000.0,
            decimals=3,
            statistic="high",
            window=5,
        ),
        Rule(
            "entropy_normalized",
            "Entropy",
            "below",
            0.1,
            0.01,
            decimals=3,
            statistic="jump",
            window=20,
            persist=2,
            min_baseline=0.05,
            floor=1e-5,
        ),
        Rule(
            "entropy",
            "Entropy shift",
            "above",
            2.0,
            4.0,
            decimals=3,
            statistic="shift",
            window=20,
            persist=2,
        ),
        Rule(
            "ref_kl",
            "RefKL",
            "above",
            0.6,
            1.0,
            decimals=KL_DECIMALS,
            persist=2,
            far=3.0,
            only_when_measured=True,
        ),
        Rule(
            "completion_truncated_frac",
            "Length",
            "above",
            0.25,
            0.5,
            decimals=2,
            persist=3,
            only_when_measured=True,
        ),
    ),
    stale_seconds=10.0,
    stall_seconds=120.0,
    stall_pace=10.0,
)
"""The rules as calibrated on real healthy and broken runs of three trainers (ours, SB3 with
its defaults and RL Zoo's tuned settings, CleanRL's structure) on eight environments
(``bench/health_calibration.py``; the README's health section has its figures, the tuned
and the held-out ones apart). Each healthy level that moves with a run's settings is judged
relative to the run: KL per clip fraction (a single-env zoo CartPole reaches 500 with single
updates at 10 nats, but in no healthy run does the policy move far while the clip bounds
nothing), pre-clip gradient norms and normalised entropy against their recent medians,
a Gaussian policy's entropy by its shift from its recent median. Clip fraction and
explained variance only warn: tuned healthy runs clip half their samples and keep critics
below 0 for hundreds of updates. The value loss is judged by how far it passes its own
record: a converged critic's loss falls near 0 and leaps back by orders of magnitude when an
episode fails (CartPole at 500), but no healthy run of the corpus took it past 6.5x the
largest before it (SB3, MountainCarContinuous), where rewards x1e4 take it thousands to
hundreds of millions of times past it at once. The reference KL and the length
rate are judged in their own units (fine-tuning and token-level runs)."""

LANGUAGE_MODEL_RULES: Final = (
    Rule(
        "completion_truncated_frac",
        "Length",
        "above",
        0.9,
        0.95,
        warmup_updates=10,
        decimals=2,
        statistic="median",
        window=5,
        persist=2,
        rise_with="reward_mean",
        rise=0.25,
        only_when_measured=True,
    ),
    Rule(
        "entropy",
        "Entropy fall",
        "below",
        0.3,
        None,
        decimals=3,
        statistic="start",
        window=10,
        persist=3,
    ),
    Rule(
        "reward_zero_std_frac",
        "Equal rewards",
        "above",
        0.5,
        0.8,
        decimals=2,
        statistic="median",
        window=10,
        persist=3,
        only_when_measured=True,
    ),
    Rule(
        "reward_mean",
        "Reward",
        "above",
        0.2,
        None,
        decimals=3,
        statistic="split",
        window=20,
        persist=3,
        only_when_measured=True,
        lost=True,
    ),
    Rule(
        "reward_std",
        "Reward std",
        "below",
        0.1,
        None,
        decimals=3,
        statistic="start",
        window=10,
        persist=5,
        only_when_measured=True,
    ),
)
"""The forms of the rules for language-model runs (:meth:`Thresholds.for_run`), by metric:
each replaces the table's rule of its metric, or joins the table. The truncated share: an
untrained model's first completions run to the cap (a warm-up), and responses running to
the cap are the padding hack only while the reward pays for them (critical needs both to
rise; the share alone warns). Entropy by its fall from the run's start (a gradual
collapse shows no jump). GRPO learns nothing from a group whose rewards are all equal:
most groups so for a sustained window is critical; the reward's spread collapsing
relative to its start warns, and so do reward components moving apart (one rising while
another falls: the policy trades one objective for another); a reward that vanishes once
measured (a NaN reward that TRL logs as none) is critical."""

_RULE_KEYS: Final = tuple(f.name for f in fields(Rule) if f.name != "metric")
_OFF_KEYS: Final = ("critical", "far", "per", "rise_with")
"""Keys a thresholds file may turn off with ``false``."""


def load_thresholds(path: Path | None, base: Thresholds = DEFAULT_THRESHOLDS) -> Thresholds:
    """``base`` with the overrides of the TOML file at ``path``; ``base`` itself for None."""
    if path is None:
        return base
    try:  # the one opener: a regular file, 1 MiB at most, nested 16 deep at most
        document = read_toml(path, "thresholds file")
    except InputFileError as exc:
        raise ThresholdsError(str(exc)) from None
    try:
        return thresholds_from_mapping(document, base)
    except ThresholdsError as exc:
        raise ThresholdsError(f"{path}: {exc}") from exc


def thresholds_from_mapping(document: Mapping[str, Any], base: Thresholds) -> Thresholds:
    """Apply a parsed TOML document to ``base``; errors name the table and the key."""
    rules = list(base.rules)
    top = {key: getattr(base, key) for key in _TOP_KEYS}
    overrides = dict(base.overrides)
    for key, value in document.items():
        if key in _TOP_KEYS:
            top[key] = value
        elif isinstance(value, dict):
            rules = _apply_table(rules, key, value)
            overrides[key] = {**overrides.get(key, {}), **_turned_off(value)}
        elif key in PPO_METRICS:
            raise ThresholdsError(f"{key}: must be a table like [{key}], got {value!r}")
        else:
            raise ThresholdsError(
                f"{key}: unknown key; expected {', '.join(_TOP_KEYS)} or a [metric] table"
            )
    return Thresholds(rules=tuple(rules), overrides=MappingProxyType(overrides), **top)


def _apply_table(rules: list[Rule], metric: str, table: Mapping[str, Any]) -> list[Rule]:
    if metric not in PPO_METRICS:
        raise ThresholdsError(
            f"[{metric}]: unknown metric; expected a ppo_update metric such as "
            f"{', '.join(PPO_METRICS[:4])}..."
        )
    for key in table:
        if key not in _RULE_KEYS:
            raise ThresholdsError(
                f"[{metric}] {key}: unknown key; expected one of {', '.join(_RULE_KEYS)}"
            )
    table = _turned_off(table)
    existing = next((i for i, r in enumerate(rules) if r.metric == metric), None)
    if existing is not None:
        rules[existing] = replace(rules[existing], **table)
        return rules
    missing = [k for k in ("direction", "warning", "critical") if k not in table]
    if missing:
        raise ThresholdsError(
            f"[{metric}] {missing[0]}: required for a new rule (no default rule for {metric})"
        )
    return [*rules, Rule(metric=metric, label=table.get("label", metric), **_without(table))]


def _turned_off(table: Mapping[str, Any]) -> dict[str, Any]:
    """TOML has no null: false is "none" (no critical line, no far line, judged on its own,
    critical without a companion's rise)."""
    return {k: None if v is False and k in _OFF_KEYS else v for k, v in table.items()}


def _without(table: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k != "label"}
