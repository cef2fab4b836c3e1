"""What ``sanctum diff`` and the learning gate of ``sanctum check`` share: a run loaded for
comparison, and what makes two runs comparable at all.

A loaded run is the same :class:`~sanctum.reports.scan.LogScan` that ``check`` and ``summary`` read
(one fold, one rule table) plus the return curve of its rollouts. Two runs of different
environments, or written under different major schemas, do not measure the same thing:
``diff`` still shows them, with a warning, and the gate refuses them (exit 2).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sanctum.health.thresholds import Thresholds
from sanctum.model.state import RunState
from sanctum.reports.check import refuse_several_runs
from sanctum.reports.return_curve import ReturnPoint, read_curve
from sanctum.reports.scan import LogScan, scan_log

KEY_ABSENT: Final = "(absent)"
"""A config key one run's ``run_started.config`` does not have, in text output."""


@dataclass(frozen=True, slots=True)
class LoadedRun:
    """One run's scan and its return curve."""

    scan: LogScan
    curve: tuple[ReturnPoint, ...]

    @property
    def run(self) -> RunState:
        return self.scan.aggregator.run

    @property
    def path(self) -> Path:
        return self.scan.path

    @property
    def name(self) -> str:
        """The run id (a scan always has one: a log without ``run_started`` is refused)."""
        return self.run.run_id or str(self.path)


def load_run(path: Path, thresholds: Thresholds, one_run: bool = False) -> LoadedRun:
    """Scan the log at ``path`` and read its return curve; ``one_run``: refuse a log that
    holds several runs (exit 2), as ``check`` does. Raises EventLogError when unusable."""
    scan = scan_log(path, thresholds)
    if one_run:
        refuse_several_runs(scan)
    return LoadedRun(scan, read_curve(path, scan.run_id or ""))


@dataclass(frozen=True, slots=True)
class ConfigDifference:
    """A ``run_started.config`` key whose value differs between two runs."""

    key: str
    a: Any
    b: Any
    only_in: str | None
    """``a`` or ``b`` when the other run's config lacks the key; None when both have it."""


def config_differences(
    a: Mapping[str, Any], b: Mapping[str, Any], ignore: tuple[str, ...] = ()
) -> list[ConfigDifference]:
    """The keys whose values differ, in ``a``'s order then ``b``'s new keys (pure)."""
    found: list[ConfigDifference] = []
    for key in [*a, *(k for k in b if k not in a)]:
        if key in ignore or (key in a and key in b and _same(a[key], b[key])):
            continue
        only_in = None if key in a and key in b else ("a" if key in a else "b")
        found.append(ConfigDifference(key, a.get(key), b.get(key), only_in))
    return found


def _same(x: Any, y: Any) -> bool:
    """Equal as JSON values (1 and 1.0 are the same number; True and 1 are not)."""
    if isinstance(x, bool) or isinstance(y, bool):
        return x is y
    return bool(x == y)


def config_value(value: Any, present: bool = True) -> str:
    """A config value as JSON text (``null``, ``[64, 64]``), or :data:`KEY_ABSENT`."""
    if not present:
        return KEY_ABSENT
    return json.dumps(value, sort_keys=True, default=str)


def incomparable(a: RunState, b: RunState) -> list[str]:
    """Why two runs do not measure the same thing: another environment, another major
    schema (empty when they are comparable)."""
    reasons = []
    if a.env_id != b.env_id:
        reasons.append(f"env {a.env_id} vs {b.env_id}")
    if a.schema != b.schema:
        reasons.append(f"schema {a.schema} vs {b.schema}")
    return reasons
