"""Formatting shared by ``check`` and ``summary``: numbers, plurals and JSON values.

Non-finite numbers are shown as such (``NaN``, ``Inf``) and written to JSON as the strings
"NaN", "Infinity", "-Infinity", the event log's own convention; ``None`` is "not measured",
printed as ``-`` and written as ``null``, never as zero.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

_JSON_NONFINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def fmt(value: float | None, decimals: int | None = None) -> str:
    """``-`` for not measured, ``NaN``/``Inf``/``-Inf``, else fixed or 4 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    return f"{value:.{decimals}f}" if decimals is not None else f"{value:.4g}"


def plural(count: int, word: str) -> str:
    """``1 update``, ``3 updates``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def to_json(value: float | None) -> float | str | None:
    """A number as JSON allows it: non-finite floats become their contract strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else _JSON_NONFINITE[value]
    return value


def jsonable(value: Any) -> Any:
    """``value`` with every non-finite float inside dicts, lists and tuples spelled out."""
    if isinstance(value, float):
        return to_json(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def dumps(document: dict[str, Any]) -> str:
    """Strict JSON text of ``document``: NaN/Inf never silently become ``null``."""
    return msgspec.json.format(msgspec.json.encode(jsonable(document)), indent=2).decode()
