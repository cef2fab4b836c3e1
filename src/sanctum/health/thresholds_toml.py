"""The health rules from a TOML file: a thresholds file overrides the table it is given.

A file overrides defaults per metric and may add a rule for any other PPO metric::

    stale_seconds = 20

    [approx_kl]
    warning = 0.01
    critical = 0.02

    [entropy]              # a new rule needs a direction
    direction = "below"
    warning = 0.1
    critical = 0.01

A bad file is refused with a :class:`~sanctum.health.rule.ThresholdsError` naming the file,
the table and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from sanctum.health.rule import Rule, ThresholdsError
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, TOP_KEYS, Thresholds
from sanctum.metrics import PPO_METRICS
from telemetry.files import InputFileError, read_toml

_RULE_KEYS: Final = tuple(f.name for f in fields(Rule) if f.name != "metric")
_OFF_KEYS: Final = ("critical", "far", "per", "rise_with")
"""Keys a thresholds file may turn off with ``false``."""


PRESETS: Final = {"spec": "spec.toml"}
"""Thresholds files shipped with sanctum, by name (``--thresholds spec``: the
specification's fixed KL lines, warning 0.015 and critical 0.03 nats)."""


def resolve_thresholds(path: Path) -> Path:
    """The file ``--thresholds`` names: a shipped preset's (:data:`PRESETS`) for its bare
    name when no file of that name is here, else ``path`` itself."""
    name = str(path)
    if name in PRESETS and not path.exists():
        return Path(str(resources.files("sanctum.health") / "presets" / PRESETS[name]))
    return path


def load_thresholds(path: Path | None, base: Thresholds = DEFAULT_THRESHOLDS) -> Thresholds:
    """``base`` with the overrides of the TOML file at ``path`` (or of the preset it names:
    :func:`resolve_thresholds`); ``base`` itself for None."""
    if path is None:
        return base
    path = resolve_thresholds(path)
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
    top = {key: getattr(base, key) for key in TOP_KEYS}
    overrides = dict(base.overrides)
    for key, value in document.items():
        if key in TOP_KEYS:
            top[key] = value
        elif isinstance(value, dict):
            rules = _apply_table(rules, key, value)
            overrides[key] = {**overrides.get(key, {}), **_turned_off(value)}
        elif key in PPO_METRICS:
            raise ThresholdsError(f"{key}: must be a table like [{key}], got {value!r}")
        else:
            raise ThresholdsError(
                f"{key}: unknown key; expected {', '.join(TOP_KEYS)} or a [metric] table"
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
