"""The one table of health rules (DESIGN.md section 6), overridable from a TOML file.

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

A bad file is refused with a :class:`ThresholdsError` naming the file, the table and the key.
Non-finite values are critical for every metric regardless of the table (see ``health``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from sanctum.metrics import PPO_METRICS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 needs the tomli backport
    import tomli as tomllib

Direction = Literal["above", "below"]


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
    critical: float
    """Past this (strictly) the metric is critical."""
    warmup_updates: int = 0
    """Updates with a 0-based index below this are not judged (pending)."""
    decimals: int = 3
    """Decimals to show values of this metric with."""

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

    def describe(self) -> str:
        """``approx_kl > 0.015 / > 0.03`` — the thresholds in words, for tables and help."""
        sign = ">" if self.direction == "above" else "<"
        text = f"{self.metric} {sign} {self.warning:g} / {sign} {self.critical:g}"
        if self.warmup_updates:
            text += f" after {self.warmup_updates} updates"
        return text


def _rule_problem(rule: Rule) -> tuple[str, str] | None:
    """The first (key, problem) that makes ``rule`` unusable, or None."""
    if rule.metric not in PPO_METRICS:
        return "metric", f"unknown metric {rule.metric!r}"
    if rule.direction not in ("above", "below"):
        return "direction", f"must be 'above' or 'below', got {rule.direction!r}"
    for key in ("warning", "critical"):
        value = getattr(rule, key)
        if not _is_number(value) or not math.isfinite(value):
            return key, f"must be a finite number, got {value!r}"
    if rule.is_worse(rule.warning, rule.critical):
        relation = "above" if rule.direction == "above" else "below"
        return "warning", (
            f"warning {rule.warning:g} is {relation} critical {rule.critical:g}; "
            f"for a rule that fires {rule.direction} its thresholds, warning comes first"
        )
    if not _is_int(rule.warmup_updates) or rule.warmup_updates < 0:
        return "warmup_updates", f"must be an integer >= 0, got {rule.warmup_updates!r}"
    if not _is_int(rule.decimals) or not 0 <= rule.decimals <= 12:
        return "decimals", f"must be an integer from 0 to 12, got {rule.decimals!r}"
    if not isinstance(rule.label, str) or not rule.label:
        return "label", f"must be a non-empty string, got {rule.label!r}"
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
    _by_metric: Mapping[str, Rule] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_metric: dict[str, Rule] = {}
        for r in self.rules:
            if r.metric in by_metric:
                raise ThresholdsError(f"rules: more than one rule for the metric {r.metric}")
            by_metric[r.metric] = r
        if not _is_number(self.stale_seconds) or not self.stale_seconds > 0:
            raise ThresholdsError(
                f"stale_seconds: must be a number > 0, got {self.stale_seconds!r}"
            )
        object.__setattr__(self, "_by_metric", by_metric)

    def rule(self, metric: str) -> Rule | None:
        """The rule for ``metric``, or None when no rule judges it."""
        return self._by_metric.get(metric)

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metrics that have a rule, in rule order."""
        return tuple(r.metric for r in self.rules)


DEFAULT_THRESHOLDS: Final = Thresholds(
    rules=(
        Rule("approx_kl", "KL", "above", 0.015, 0.03, decimals=4),
        Rule("clip_fraction", "Clip", "above", 0.25, 0.30, decimals=3),
        Rule("grad_norm", "Grad", "above", 5.0, 10.0, decimals=2),
        Rule("explained_variance", "EV", "below", 0.3, 0.0, warmup_updates=10, decimals=3),
    ),
    stale_seconds=10.0,
)
"""DESIGN.md section 6."""

_RULE_KEYS: Final = ("label", "direction", "warning", "critical", "warmup_updates", "decimals")
_TOP_KEYS: Final = ("stale_seconds",)


def load_thresholds(path: Path | None, base: Thresholds = DEFAULT_THRESHOLDS) -> Thresholds:
    """``base`` with the overrides of the TOML file at ``path``; ``base`` itself for None."""
    if path is None:
        return base
    try:
        with open(path, "rb") as fh:
            document = tomllib.load(fh)
    except OSError as exc:
        raise ThresholdsError(f"{path}: cannot read thresholds file: {exc.strerror}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ThresholdsError(f"{path}: not valid TOML: {exc}") from exc
    try:
        return thresholds_from_mapping(document, base)
    except ThresholdsError as exc:
        raise ThresholdsError(f"{path}: {exc}") from exc


def thresholds_from_mapping(document: Mapping[str, Any], base: Thresholds) -> Thresholds:
    """Apply a parsed TOML document to ``base``; errors name the table and the key."""
    rules = list(base.rules)
    stale = base.stale_seconds
    for key, value in document.items():
        if key in _TOP_KEYS:
            stale = value
        elif isinstance(value, dict):
            rules = _apply_table(rules, key, value)
        elif key in PPO_METRICS:
            raise ThresholdsError(f"{key}: must be a table like [{key}], got {value!r}")
        else:
            raise ThresholdsError(
                f"{key}: unknown key; expected {', '.join(_TOP_KEYS)} or a [metric] table"
            )
    return Thresholds(rules=tuple(rules), stale_seconds=stale)


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


def _without(table: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k != "label"}
