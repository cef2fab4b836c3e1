"""How Sanctum spells numbers: one module for the dashboard and the text reports alike.

The dashboard's renderables, the event log panel, ``sanctum check`` and ``sanctum summary``
all format through :func:`format_value`, so one value reads the same everywhere: 4
significant digits (or a rule's fixed decimals), integers exactly, ``NaN``, ``+Inf`` and
``-Inf`` spelled out, and ``None`` as :data:`NOT_MEASURED`, never as zero. A text table
short of room may pass ``absent="-"`` and must say in its header what ``-`` means.
JSON output writes non-finite floats as the event log does ("NaN", "Infinity",
"-Infinity") and ``None`` as ``null``. Nothing here imports Rich or Textual.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

import msgspec

from telemetry.codec import spell_nonfinite

NOT_MEASURED: Final = "not measured"
"""Shown for a field the trainer did not report; never a zero."""


_UNICODE_HIDDEN: Final = "\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff"
_HIDDEN: Final = re.compile(f"[\x00-\x1f{_UNICODE_HIDDEN}]")
"""Characters a log may hold that must never reach a terminal or an XML file as they are:
C0 and C1 controls (ESC starts terminal commands that retitle or clear it), invisible and
direction-changing characters (which can make text read differently from what it is), and
lone surrogates (which cannot even be written as UTF-8)."""
_HIDDEN_IN_JSON: Final = re.compile(f"[{_UNICODE_HIDDEN}]")
"""The same without C0 controls: the JSON encoder escapes those inside strings already,
and outside strings the only ones are the document's own newlines."""


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` from a log, safe to show: each hidden or control character written as an
    escape (``\\x1b``, ``\\u202e``), so it is seen, never obeyed; the rest unchanged."""
    return _HIDDEN.sub(_escaped, text)


def visible_lines(lines: list[str]) -> str:
    """Lines of a text report joined by newlines, every line made :func:`visible` (the
    report's own newlines are the only control characters it keeps)."""
    return "\n".join(visible(line) for line in lines)


def format_value(
    value: float | None, decimals: int | None = None, absent: str = NOT_MEASURED
) -> str:
    """``value`` for a human: fixed ``decimals`` when given (3 significant digits for a
    value they would round to zero), else 4 significant digits.

    ``None`` is ``absent`` (:data:`NOT_MEASURED` unless a table says otherwise); an integer
    (a step or update count) is exact; non-finite values read ``NaN``, ``+Inf``, ``-Inf``.
    """
    if value is None:
        return absent
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if decimals is not None:
        fixed = f"{value:.{decimals}f}"
        if value != 0 and float(fixed) == 0:  # never a zero for a value that is not:
            return _significant(value, digits=3)  # a healthy KL of 1.4e-05 stays readable
        return fixed
    return _significant(value, digits=4)


def _significant(value: float, digits: int) -> str:
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if 1e-3 <= magnitude < 1e6:
        exponent = math.floor(math.log10(magnitude))
        return f"{value:.{max(0, digits - 1 - exponent)}f}"
    return f"{value:.{digits - 2}e}"


def format_count(count: int | None) -> str:
    """An integer with thousands separators; ``None`` is ``—``."""
    return "—" if count is None else f"{count:,}"


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


def plural(count: int, word: str) -> str:
    """``1 update``, ``3 updates``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def dumps(document: dict[str, Any]) -> str:
    """Strict JSON text of ``document``: NaN/Inf never silently become ``null``, and hidden
    characters from a log are ``\\uXXXX`` escapes (the same string to a JSON reader, but
    nothing a terminal acts on)."""
    text = msgspec.json.format(msgspec.json.encode(spell_nonfinite(document)), indent=2).decode()
    return _HIDDEN_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
