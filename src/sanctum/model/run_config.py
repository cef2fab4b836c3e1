"""What Sanctum reads of ``run_started.config``: the one place its keys are read.

A run's config is the trainer's own (any keys, any values, from outside): each reader here
takes one key and gives a value only when it has the shape the key promises, so a config
of another shape reads as "not declared", never as a crash or a wrong figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

NO_END: Final = "no_run_finished"
"""``run_started.config`` key where a reader of another tool's log says why that log never
holds a ``run_finished`` (verl's file logger records no end): the finish row says so and
judges the log as it stands (the source cannot say more; every other row still judges what
it does say: lines it could not read, lost steps, the rules)."""

OUTCOME_UNKNOWN: Final = "outcome_unknown"
"""``run_started.config`` key where an import whose source does not say how the run ended
(a TensorBoard log holds no end of run) says so, and how to record it: the import writes
no ``run_finished`` of its own invention, every view says "outcome not recorded", and the
finish row fails as an unfinished run does (``check --allow-unfinished`` accepts it); a
log that never grows is never live."""
SOURCE_UNREAD: Final = "source_unread"
"""``run_started.config`` key where an import lists what it could not read of its source
(one line each); ``sanctum check`` fails such a run unless ``--allow-skipped``."""
SOURCE_UNREAD_KEPT: Final = 100
"""Entries of ``source_unread`` kept (a hostile config may hold millions)."""
TOTAL_STEPS_KEYS: Final = ("total_steps", "total_timesteps")
"""``run_started.config`` keys that may declare the planned environment steps."""


def source_unread_of(config: Mapping[str, Any]) -> tuple[str, ...]:
    """What an import says it could not read of its source (``config.source_unread``): its
    lines; a value of another shape is itself a loss the gate cannot vouch for."""
    value = config.get(SOURCE_UNREAD)
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(x, str) for x in value[:SOURCE_UNREAD_KEPT]):
        more = len(value) - SOURCE_UNREAD_KEPT
        return tuple(value[:SOURCE_UNREAD_KEPT]) + ((f"... and {more} more",) if more > 0 else ())
    return (f"config.{SOURCE_UNREAD} is not a list of lines ({type(value).__name__})",)


def resumed_from_update(config: Mapping[str, Any]) -> int | None:
    """Where a resumed run's update count starts (``config.resumed_from.update``, as
    ``ppo train --resume`` records it); None when the run records no resume (its updates
    start at 0) or records one without a usable update index."""
    resumed = config.get("resumed_from")
    update = resumed.get("update") if isinstance(resumed, Mapping) else None
    if isinstance(update, int) and not isinstance(update, bool) and update >= 0:
        return update
    return None


def total_steps_of(config: Mapping[str, Any]) -> int | None:
    """Planned environment steps declared in ``config``, when it declares them."""
    for key in TOTAL_STEPS_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def max_kl_of(config: Mapping[str, Any]) -> float | None:
    """``max_kl`` from ``config`` when it is a positive finite number (early stop enabled)."""
    value = config.get("max_kl")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def outcome_unknown_of(config: Mapping[str, Any]) -> str | None:
    """Why an import cannot say how its run ended (:data:`OUTCOME_UNKNOWN`); None when
    the config does not say so in words."""
    why = config.get(OUTCOME_UNKNOWN)
    return why if isinstance(why, str) else None


def outcome_unknown_declared(config: Mapping[str, Any]) -> bool:
    """Whether the config carries :data:`OUTCOME_UNKNOWN` at all, whatever its value: the
    log of an import, written once and whole, never a live run."""
    return OUTCOME_UNKNOWN in config


def no_end_of(config: Mapping[str, Any]) -> str | None:
    """Why the log never holds a ``run_finished`` (:data:`NO_END`); None when the config
    does not say so in words."""
    why = config.get(NO_END)
    return why if isinstance(why, str) else None
