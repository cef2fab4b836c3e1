"""Validators of config fields: each returns None when a value is fine, else what is wrong.

A validator sees one value and describes the problem in words that follow the field name
(``must be finite and >= 0, got nan``); the config prefixes the name and collects every
message, so all problems are reported at once. (A "rule" is a health rule, in sanctum.)
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from typing import Any

Validator = Callable[[Any], str | None]


def number(
    low: float | None = None,
    high: float | None = None,
    *,
    strict_low: bool = False,
    optional: bool = False,
) -> Validator:
    """A finite float within [low, high] (``strict_low``: > low)."""
    if low is not None and high is not None:
        want = f"finite and in {'(' if strict_low else '['}{low:g}, {high:g}]"
    elif low is not None:
        want = f"finite and {'>' if strict_low else '>='} {low:g}"
    elif high is not None:
        want = f"finite and <= {high:g}"
    else:
        want = "finite"
    if optional:
        want += " (or none)"

    def rule(value: Any) -> str | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a number, got {value!r}"
        ok = math.isfinite(value)
        ok = ok and (low is None or (value > low if strict_low else value >= low))
        ok = ok and (high is None or value <= high)
        return None if ok else f"must be {want}, got {value!r}"

    return rule


def integer(low: int) -> Validator:
    def rule(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer >= {low}, got {value!r}"
        return None if value >= low else f"must be an integer >= {low}, got {value!r}"

    return rule


def choice(tp: Any) -> Validator:
    options = typing.get_args(tp)

    def rule(value: Any) -> str | None:
        if value in options and isinstance(value, str):
            return None
        return f"must be one of {', '.join(options)}, got {value!r}"

    return rule


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {value!r}"


def text(value: Any) -> str | None:
    ok = isinstance(value, str) and value
    return None if ok else f"must be a non-empty string, got {value!r}"


def sizes(value: Any) -> str | None:
    ok = isinstance(value, tuple) and len(value) > 0
    ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    return None if ok else f"must be a non-empty list of positive integers, got {value!r}"
