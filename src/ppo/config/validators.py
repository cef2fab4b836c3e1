"""Validators of config fields: each returns None when a value is fine, else what is wrong.

A validator sees one value and describes the problem in words that follow the field name
(``must be finite and >= 0, got nan``); :func:`field_problems` prefixes the name and
collects every message, so all problems are reported at once. Each also says what it allows
(``allowed``: ``[0, 1]``, ``> 0 or none``), the words ``ppo config`` lists, so a bound is
written once. They know no config: the checks that involve two fields belong to the config
that has them. (A "rule" is a health rule, in sanctum.)
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Validator:
    """A field's check: calling it with a value gives None (fine) or what is wrong."""

    allowed: str
    """What the field accepts, in words (``[0, 1]``, ``> 0 or none``, ``true or false``)."""
    check: Callable[[Any], str | None]

    def __call__(self, value: Any) -> str | None:
        return self.check(value)


def number(
    low: float | None = None,
    high: float | None = None,
    *,
    strict_low: bool = False,
    optional: bool = False,
) -> Validator:
    """A finite float within [low, high] (``strict_low``: > low)."""
    if low is not None and high is not None:
        bound = f"{'(' if strict_low else '['}{low:g}, {high:g}]"
    elif low is not None:
        bound = f"{'>' if strict_low else '>='} {low:g}"
    elif high is not None:
        bound = f"<= {high:g}"
    else:
        bound = ""
    want = f"finite and {'in ' if low is not None and high is not None else ''}{bound}"
    want = want if bound else "finite"
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

    allowed = bound or "any finite number"
    return Validator(f"{allowed} or none" if optional else allowed, rule)


positive = number(0, strict_low=True)
"""A finite number > 0 (a rate, a scale, a bound, a duration)."""
positive_or_none = number(0, strict_low=True, optional=True)
"""A finite number > 0, or none (the setting is off)."""
non_negative = number(0)
"""A finite number >= 0 (a coefficient, 0 meaning off)."""


def integer(low: int, high: int | None = None) -> Validator:
    """An integer in [low, high] (``high`` None: no upper bound)."""
    bound = f">= {low}" if high is None else f"[{low}, {high}]"
    want = f"an integer {'' if high is None else 'in '}{bound}"

    def rule(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be {want}, got {_short(value)}"
        ok = value >= low and (high is None or value <= high)
        return None if ok else f"must be {want}, got {value!r}"

    return Validator(bound, rule)


def _short(value: Any) -> str:
    """``repr(value)``, cut to a readable length (a checkpoint may hold a whole tensor)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({type(value).__name__})"


def choice(options: Iterable[str], listed: str | None = None) -> Validator:
    """One of ``options``; the message lists ``listed`` (default: every option)."""
    names = tuple(options)
    shown = listed if listed is not None else ", ".join(names)

    def rule(value: Any) -> str | None:
        if value in names and isinstance(value, str):
            return None
        return f"must be one of {shown}, got {value!r}"

    return Validator(f"one of {shown}", rule)


def literal(tp: Any) -> Validator:
    """One of the names of a ``Literal`` type."""
    return choice(typing.get_args(tp))


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {value!r}"


boolean = Validator("true or false", _boolean)


def of_type(tp: Any) -> Validator | None:
    """The validator an annotation implies, where it says all there is to check: ``bool``
    is :data:`boolean`, a ``Literal`` is :func:`literal` of its names; None for any other
    type (its field must name a validator)."""
    if tp is bool:
        return boolean
    if typing.get_origin(tp) is typing.Literal:
        return literal(tp)
    return None


def _text(value: Any) -> str | None:
    ok = isinstance(value, str) and value
    return None if ok else f"must be a non-empty string, got {value!r}"


text = Validator("not empty", _text)
text_or_none = Validator("not empty, or none", lambda v: None if v is None else _text(v))


def _probabilities(value: Any) -> str | None:
    ok = isinstance(value, tuple) and len(value) > 0
    ok = ok and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0 for v in value
    )
    return None if ok else f"must be a non-empty list of numbers in [0, 1], got {value!r}"


probabilities = Validator("a non-empty list of numbers in [0, 1]", _probabilities)


def _texts(value: Any) -> str | None:
    ok = isinstance(value, tuple) and len(value) > 0
    ok = ok and all(isinstance(v, str) and v for v in value)
    return None if ok else f"must be a non-empty list of non-empty strings, got {_short(value)}"


texts = Validator("a non-empty list of non-empty strings", _texts)


def sizes(max_len: int, max_value: int) -> Validator:
    """A non-empty list of at most ``max_len`` integers in [1, ``max_value``]."""
    want = f"a list of 1 to {max_len} integers in [1, {max_value}]"

    def rule(value: Any) -> str | None:
        ok = isinstance(value, tuple) and 0 < len(value) <= max_len
        ok = ok and all(
            isinstance(v, int) and not isinstance(v, bool) and 0 < v <= max_value for v in value
        )
        return None if ok else f"must be {want}, got {_short(value)}"

    return Validator(f"1 to {max_len} integers in [1, {max_value}]", rule)


def field_problems(config: Any) -> list[str]:
    """What each field's own validator says of a config dataclass, in field order."""
    found: list[str] = []
    for f in dataclasses.fields(config):
        message = f.metadata["validator"](getattr(config, f.name))
        if message is not None:
            found.append(f"{f.name} {message}")
    return found


def in_field_order(config: Any, problems: list[tuple[str, str]]) -> list[str]:
    """Cross-field ``(field, message)`` problems sorted by their field's position."""
    order = {f.name: i for i, f in enumerate(dataclasses.fields(config))}
    return [message for name, message in sorted(problems, key=lambda p: order[p[0]])]
