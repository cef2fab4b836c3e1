"""Validators of config fields: each returns None when a value is fine, else what is wrong.

A validator sees one value and describes the problem in words that follow the field name
(``must be finite and >= 0, got nan``); :func:`validate` prefixes the name, adds the checks
that involve two fields, and collects every message, so all problems are reported at once.
(A "rule" is a health rule, in sanctum.)
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ppo.config.limits import MAX_ASYNC_ENVS
from ppo.core.kl_control import KL_COEF_MAX, KL_COEF_MIN

if TYPE_CHECKING:
    from ppo.config import PPOConfig

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


def integer(low: int, high: int | None = None) -> Validator:
    """An integer in [low, high] (``high`` None: no upper bound)."""
    want = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"

    def rule(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be {want}, got {_short(value)}"
        ok = value >= low and (high is None or value <= high)
        return None if ok else f"must be {want}, got {value!r}"

    return rule


def _short(value: Any) -> str:
    """``repr(value)``, cut to a readable length (a checkpoint may hold a whole tensor)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({type(value).__name__})"


def choice(tp: Any) -> Validator:
    """One of the names of a Literal; names that are another name plus ``+`` (the
    straight-through KL estimators) are summarised rather than listed twice."""
    options = typing.get_args(tp)
    base = [o for o in options if not (o.endswith("+") and o[:-1] in options)]
    listed = ", ".join(base)
    if len(base) < len(options):
        listed += " (each also with '+': straight-through)"

    def rule(value: Any) -> str | None:
        if value in options and isinstance(value, str):
            return None
        return f"must be one of {listed}, got {value!r}"

    return rule


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, got {value!r}"


def text(value: Any) -> str | None:
    ok = isinstance(value, str) and value
    return None if ok else f"must be a non-empty string, got {value!r}"


def text_or_none(value: Any) -> str | None:
    return None if value is None else text(value)


def probabilities(value: Any) -> str | None:
    ok = isinstance(value, tuple) and len(value) > 0
    ok = ok and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0 for v in value
    )
    return None if ok else f"must be a non-empty list of numbers in [0, 1], got {value!r}"


def sizes(value: Any) -> str | None:
    ok = isinstance(value, tuple) and len(value) > 0
    ok = ok and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    return None if ok else f"must be a non-empty list of positive integers, got {value!r}"


def _cross_field(config: PPOConfig) -> list[tuple[str, str]]:
    """Checks that involve two fields; each is reported at the first field's position."""
    problems: list[tuple[str, str]] = []
    if config.vector_env == "async" and config.num_envs > MAX_ASYNC_ENVS:
        problems.append(
            (
                "num_envs",
                f"num_envs must be <= {MAX_ASYNC_ENVS} with vector_env = 'async' (one process "
                f"per environment), got {config.num_envs!r}",
            )
        )
    batch = config.num_envs * config.num_steps
    if config.num_minibatches > batch:
        problems.append(
            (
                "num_minibatches",
                f"num_minibatches must be <= num_envs * num_steps ({batch}), "
                f"got {config.num_minibatches!r}",
            )
        )
    problems += _reference_problems(config)
    coef = config.kl_penalty_coefficient
    if config.kl_target is not None and not KL_COEF_MIN <= coef <= KL_COEF_MAX:
        problems.append(
            (
                "kl_target",
                f"kl_target needs kl_penalty_coefficient in [{KL_COEF_MIN:g}, "
                f"{KL_COEF_MAX:g}] to adapt from, got {coef!r}",
            )
        )
    return problems


def _reference_problems(config: PPOConfig) -> list[tuple[str, str]]:
    """A controller needs something to control, and a coefficient it can scale."""
    if config.ref_kl_target is None:
        return []
    if config.ref_kl_loss_coef == 0.0 and not config.ref_kl_in_reward:
        return [("ref_kl_target", "ref_kl_target needs ref_kl_loss_coef > 0 or ref_kl_in_reward")]
    scaled = [("ref_kl_loss_coef", config.ref_kl_loss_coef)] if config.ref_kl_loss_coef else []
    if config.ref_kl_in_reward:
        scaled.append(("ref_kl_reward_coef", config.ref_kl_reward_coef))
    return [
        (
            name,
            f"{name} must be in [{KL_COEF_MIN:g}, {KL_COEF_MAX:g}] for ref_kl_target to "
            f"adapt it, got {value!r}",
        )
        for name, value in scaled
        if not KL_COEF_MIN <= value <= KL_COEF_MAX
    ]


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


def validate(config: PPOConfig) -> list[str]:
    """Every problem with ``config``, in field order (empty when valid); cross-field checks
    assume each field is well-typed, so they run only when every field is."""
    return field_problems(config) or in_field_order(config, _cross_field(config))
