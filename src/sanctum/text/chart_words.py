"""What the zoomable chart says in words: the cursor's reading, the window, the legend.

Pure functions of the snapshot and the view (no Textual), so the chart screen only shows
them. A bar's colour and the cursor's band come from the one rule table through
:func:`sanctum.health.levels.band_of`, for a rule that judges each value. A rule that judges a
rolling median or a jump over the run's own median has no band for one raw value: its
bars are coloured as an unruled metric's (critical only when non-finite) and the legend
says what the rule judges instead. A band is where a value lies, not a fired level: a
rule with ``persist`` fires only after that many updates in a row (the health panel and
the banner say when it did).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sanctum.charts.glyphs import CRITICAL_LINE, WARNING_LINE
from sanctum.charts.scale import Scale, rule_lines
from sanctum.charts.window import Window
from sanctum.formatting import NOT_JUDGED, format_metric, format_value, plural
from sanctum.health.levels import Level, band_of
from sanctum.health.rule import Rule
from sanctum.model.snapshot import SanctumSnapshot


def band_words(rule: Rule | None, value: float, level: Level) -> str:
    """``warning band (> 0.04)``, ``critical: non-finite``, ``healthy`` ... for a value."""
    if not math.isfinite(value):
        return "critical: non-finite"
    if rule is None or rule.statistic != "value" or rule.per is not None:
        return ""
    if level is Level.PENDING:
        return f"warm-up (judged from update {rule.warmup_updates})"
    if level is Level.CRITICAL:
        return (
            f"critical band ({rule.sign} {rule.critical:g})"
            if rule.critical is not None
            else "critical"
        )
    if level is Level.WARNING:
        return f"warning band ({rule.sign} {rule.warning:g})"
    return "healthy band"


def reading(rule: Rule | None, metric: str, update: int, value: float | None) -> str:
    """The cursor's reading: ``update 57 · approx_kl 0.0523 · warning band (> 0.04)``."""
    if value is None:
        return f"update {update} · {metric} not measured"
    decimals = None if rule is None else rule.decimals
    text = f"update {update} · {metric} {format_value(value, decimals)}"
    words = band_words(rule, value, band_of(rule, value, update))
    return f"{text} · {words}" if words else text


def range_text(first: int, last: int, run_updates: int) -> str:
    """``updates 40..79 of 120``: the updates a chart draws, of all the run's."""
    return f"updates {first}..{last} of {run_updates}"


def drawn_text(updates: Sequence[int], run_updates: int) -> str:
    """What a chart that draws the newest ``updates`` shows: ``59 updates`` when that is
    every update of the run, else ``updates 26..59 of 60`` (it hides the older ones)."""
    if not updates:
        return "no update yet"
    if len(updates) >= run_updates:
        return plural(len(updates), "update")
    return range_text(updates[0], updates[-1], run_updates)


def span_text(window: Window, updates: Sequence[int], run_updates: int) -> str:
    """``updates 40..79 of 120``; ``(last 600 kept)`` when the series holds fewer."""
    if window.count == 0:
        return "no update yet"
    text = range_text(updates[window.start], updates[window.stop - 1], run_updates)
    if run_updates > len(updates):
        text += f" (last {len(updates)} kept)"
    return text


def _line_words(name: str, mark: str, value: float, scale: Scale) -> str:
    fraction = scale.fraction(value)
    where = " (above the axis)" if fraction > 1 else " (below the axis)" if fraction < 0 else ""
    return f"{mark} {name} {value:g}{where}"


def legend(
    rule: Rule | None,
    scale: Scale,
    values: Sequence[float | None],
    per: int,
    note: str | None = None,
) -> str:
    """Why the rule does not judge the metric (``note``, the health panel's, when it says
    ``not judged: ...``) first, then the lines, the marks present in ``values`` and, when a
    column draws ``per`` > 1 updates, how to read its envelope; joined with two spaces."""
    parts: list[str] = []
    if rule is not None and note is not None and note.startswith(NOT_JUDGED):
        parts.append(f"{rule.label} {note}")
    warning, critical = rule_lines(rule)
    if warning is not None:
        parts.append(_line_words("warning", WARNING_LINE, warning, scale))
    if critical is not None:
        parts.append(_line_words("critical", CRITICAL_LINE, critical, scale))
    if rule is not None and rule.per is not None:
        parts.append(f"{rule.label} judges {rule.metric} per {rule.per}, not these values")
    elif rule is not None and rule.statistic == "median":
        parts.append(f"{rule.label} judges the median of {rule.window} updates")
    elif rule is not None and rule.statistic == "shift":
        parts.append(f"{rule.label} judges the shift from the median of {rule.window}")
    elif rule is not None and rule.statistic == "jump":
        parts.append(f"{rule.label} judges the jump over the median of {rule.window}")
    elif rule is not None and rule.statistic == "high":
        parts.append(f"{rule.label} judges each value over the largest before it")
    shown = [v for v in values if v is not None]
    if any(math.isnan(v) for v in shown):
        parts.append("× NaN")
    if any(v == math.inf for v in shown):
        parts.append("▲ +Inf")
    if any(v == -math.inf or (scale.log and v <= 0) for v in shown):
        parts.append("▼ -Inf" if not scale.log else "▼ -Inf or ≤ 0")
    if per > 1:
        parts.append(f"{plural(per, 'update')} a column: solid to the lowest, faint to the highest")
    return "  ".join(parts)


def metric_order(snapshot: SanctumSnapshot) -> tuple[str, ...]:
    """Every metric of the snapshot: those with a rule first (rule order), then the rest
    in contract order."""
    ruled = tuple(m for m in snapshot.thresholds.metrics if m in snapshot.metrics)
    return ruled + tuple(m for m in snapshot.metrics if m not in ruled)


def choice_text(snapshot: SanctumSnapshot, metric: str) -> str:
    """One line of the metric list: the name and the latest value (or not measured)."""
    value = snapshot.metric(metric).value
    measured = any(v is not None for v in snapshot.metric(metric).series)
    shown = format_metric(metric, value)
    return f"{metric:<24} {shown if measured else 'not measured'}"
