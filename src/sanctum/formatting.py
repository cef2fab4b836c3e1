"""How Sanctum spells numbers: one module for the dashboard and the text reports alike.

The dashboard's renderables, the event log panel, ``sanctum check`` and ``sanctum summary``
all format through :func:`format_value`, so one value reads the same everywhere: 4
significant digits (or a rule's fixed decimals), integers exactly, ``NaN``, ``+Inf`` and
``-Inf`` spelled out, and ``None`` as :data:`NOT_MEASURED`, never as zero. A table cell
with nothing is :data:`EMPTY_CELL`; a text table short of room may pass
``absent=SHORT_ABSENT`` and must say in its header what ``-`` means.
JSON output writes non-finite floats as the event log does ("NaN", "Infinity",
"-Infinity") and ``None`` as ``null``. Nothing here imports Rich or Textual.

Text from outside (run ids, reasons, file names, library errors) is shown through
:func:`telemetry.text.visible`, the project's one escaping function, re-exported here with
:func:`~telemetry.text.visible_lines` for the views that already import this module.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

import msgspec

from telemetry.codec import spell_nonfinite
from telemetry.events import PPOUpdatePayload, field_docs
from telemetry.text import json_visible, plural, visible, visible_lines

__all__ = [
    "EMPTY_CELL",
    "KL_QUANTITIES",
    "NOT_JUDGED",
    "NOT_MEASURED",
    "SHORT_ABSENT",
    "dumps",
    "format_anomaly",
    "format_count",
    "format_duration",
    "format_kl",
    "format_metric",
    "format_value",
    "plural",
    "visible",
    "visible_lines",
]

NOT_MEASURED: Final = "not measured"
"""Shown in words for a field the trainer did not report; never a zero."""
NOT_JUDGED: Final = "not judged"
"""Shown for a metric no rule judges, and how a rule's note begins when the rule does not
judge this run (``not judged: returns nearly constant``)."""
EMPTY_CELL: Final = "—"
"""A table cell or a count with nothing to show (not measured, not yet known)."""
SHORT_ABSENT: Final = "-"
"""Nothing, in a text report's narrow column whose header says what ``-`` means."""


FIXED_BELOW: Final = 1e6
"""Fixed decimals read well below this; a larger value is in 4 significant digits (a
gradient norm of 1e308 in fixed notation is a line of 300 digits)."""


def format_value(
    value: float | None, decimals: int | None = None, absent: str = NOT_MEASURED
) -> str:
    """``value`` for a human: fixed ``decimals`` when given (3 significant digits for a
    value they would round to zero, 4 for one of :data:`FIXED_BELOW` or more), else 4
    significant digits.

    ``None`` is ``absent`` (:data:`NOT_MEASURED` unless a table says otherwise); an integer
    (a step or update count) is exact; non-finite values read ``NaN``, ``+Inf``, ``-Inf``.
    """
    if value is None:
        return absent
    if isinstance(value, int) and not isinstance(value, bool):
        return integer_text(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if decimals is not None and abs(value) < FIXED_BELOW:
        fixed = f"{value:.{decimals}f}"
        if value != 0 and float(fixed) == 0:  # never a zero for a value that is not:
            return _significant(value, digits=3)  # a healthy KL of 1.4e-05 stays readable
        return fixed
    return _significant(value, digits=4)


LONGEST_INTEGER: Final = 20
"""Digits an integer is shown with in full (a count or a step: int64 has 19)."""


def integer_text(value: int) -> str:
    """An integer exactly, or, past :data:`LONGEST_INTEGER` digits (a log may hold a
    400-digit one where a count belongs), its sign and how many digits it has."""
    text = str(value)  # the reader holds no integer over Python's 4,300-digit limit
    digits = len(text) - (value < 0)
    if digits <= LONGEST_INTEGER:
        return text
    return f"{'-' if value < 0 else ''}<an integer of {digits} digits>"


def format_ratio(value: float | None, absent: str = NOT_MEASURED) -> str:
    """A quantity per another (KL per clip fraction): always 3 significant digits, ``1.60``,
    ``0.00860``, ``1.80e-13``, ``0``, so the figure keeps one form as it moves."""
    if value is None or not math.isfinite(value):
        return format_value(value, None, absent)
    return _significant(value, digits=3)


def format_range(low: float | None, high: float | None, absent: str = NOT_MEASURED) -> str:
    """``37.0…163.0``: a range at one precision, 4 significant digits of its larger end
    (two ends at two precisions, ``37.00…163.0``, read as if they were measured apart).
    Ends past that fixed form (non-finite, 1e4 or more, under 1e-3) are each spelled by
    :func:`format_value`."""
    ends = [v for v in (low, high) if v is not None and math.isfinite(v)]
    largest = max((abs(v) for v in ends), default=math.nan)
    if len(ends) < 2 or not 1e-3 <= largest < FIXED_BELOW:
        return f"{format_value(low, None, absent)}…{format_value(high, None, absent)}"
    places = max(0, 3 - math.floor(math.log10(largest)))
    return f"{low:.{places}f}…{high:.{places}f}"


KL_DECIMALS: Final = 4
"""Decimals of a KL figure when no KL rule sets them."""


def format_kl(value: float | None, decimals: int | None = None, absent: str = NOT_MEASURED) -> str:
    """Every KL figure shown (``approx_kl``, its max and final, the reference KL), in the
    banner, the panel, the run table and the reports: at the KL rule's ``decimals``
    (:data:`KL_DECIMALS` without one), 3 significant digits for a value they would round
    to zero. One format for the quantity, so one KL never reads 0.001 in one place and
    0.0009 or 0.001180 in another."""
    places = KL_DECIMALS if decimals is None else decimals
    if value is not None and 0 < abs(value) < 10.0 ** (1 - places):  # < 2 digits fixed:
        return _significant(value, digits=3)  # 6.0e-04, never 0.0006 beside 6.00e-04
    return format_value(value, places, absent)


KL_QUANTITIES: Final = frozenset(
    d.name for d in field_docs(PPOUpdatePayload) if d.facts.get("estimator") is not None
)
"""The metrics that are a KL (approx_kl, approx_kl_max, kl_final, ref_kl ...): those whose
contract definition names the estimator that measures them. Shown by :func:`format_kl`."""


def format_metric(
    metric: str, value: float | None, decimals: int | None = None, absent: str = NOT_MEASURED
) -> str:
    """A value of ``metric`` wherever it is shown (summary, diff, ``--once``, the panel, the
    chart screen's list): the format is the metric's, chosen here once, a KL by
    :func:`format_kl` (at the KL rule's ``decimals`` when given), anything else by
    :func:`format_value` at 4 significant digits."""
    if metric in KL_QUANTITIES:
        return format_kl(value, decimals, absent)
    return format_value(value, None, absent)


def _significant(value: float, digits: int) -> str:
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    magnitude = abs(float(f"{value:.{digits - 1}e}"))  # rounded first: 0.99996 is 1.000
    if 1e-3 <= magnitude < 1e6:
        exponent = math.floor(math.log10(magnitude))
        return f"{value:.{max(0, digits - 1 - exponent)}f}"
    return f"{value:.{digits - 2}e}"


def format_count(count: int | None) -> str:
    """An integer with thousands separators; ``None`` is :data:`EMPTY_CELL`."""
    return EMPTY_CELL if count is None else f"{count:,}"


STEP_WORD: Final = "step"
"""What one ``global_step`` is called when the run names no unit (an environment step)."""


def step_word(unit: str | None) -> str:
    """What the run's ``global_step`` counts, as a plural noun: ``steps`` (environment steps)
    when it declares no ``run_started.step_unit``, else that unit, made visible (from the
    log: its control characters shown escaped)."""
    return STEP_WORD + "s" if unit is None else visible(unit)


def steps_count(count: int | str, unit: str | None) -> str:
    """``12,345 steps``, ``1 step``, ``6144 / 10240 tokens``: a count of ``global_step``
    (an int, or text the caller formatted) and what it counts, one home for the pair (a
    declared unit is a plural noun, and stays one)."""
    if unit is None and isinstance(count, int):
        return plural(count, STEP_WORD)
    return f"{count} {step_word(unit)}"


def steps_rate(rate: str, unit: str | None, short: bool = False) -> str:
    """``2,345 tokens/s``: a rate of ``global_step`` (formatted by the caller); ``short``:
    the banner's ``2,345 sps`` when the run names no unit."""
    if unit is None and short:
        return f"{rate} sps"
    return f"{rate} {step_word(unit)}/s"


def format_duration(seconds: float | None) -> str:
    """``m:ss`` below an hour, ``h:mm:ss`` above; ``None`` or non-finite is ``--:--``."""
    if seconds is None or not math.isfinite(seconds):
        return "--:--"
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_anomaly(metric: str, value: float | None, message: str) -> str:
    """``grad_norm = +Inf: optimizer step skipped``; an anomaly without a value omits it."""
    shown = "" if value is None else f" = {format_value(value)}"
    return f"{metric}{shown}: {message}"


def dumps(document: dict[str, Any]) -> str:
    """Strict JSON text of ``document``: NaN/Inf never silently become ``null``, and hidden
    characters from a log (:mod:`telemetry.text`) are ``\\uXXXX`` escapes: the same string
    to a JSON reader, nothing a terminal acts on, and valid UTF-8 even for a lone surrogate
    (which a log's ``"\\ud800"`` decodes to)."""
    plain = msgspec.to_builtins(spell_nonfinite(document))
    return json_visible(json.dumps(plain, ensure_ascii=False, indent=2, allow_nan=False))
