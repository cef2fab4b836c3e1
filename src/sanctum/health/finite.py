"""Where the non-finite rule looks: every measurement a log carries, read off the contract.

Every float of every payload kind is a measurement, nested ones included (the values of a
dict of floats such as ``ppo_update.reward_components``, the floats of a struct such as
``ppo_update.early_stop``), and NaN or Inf in any of them is critical. Which fields hold a
float is read from the payload types (``msgspec.structs.fields``), never listed, so a field
appended to the contract is covered. Two rules leave fields out:

- the ``ppo_update`` metrics (:data:`~sanctum.metrics.PPO_METRICS`) are judged column by
  column by :class:`~sanctum.health.judge.HealthJudge`, so they are not walked again here;
- ``anomaly.value`` is the trainer's report of a value it caught (its definition says it
  may be non-finite): the anomaly's severity judges it.

A field is named by its kind and path, ``rollout.episode_return_mean``,
``ppo_update.reward_components.format`` (a dict's key is part of the path; a list's items
share their list's path).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, Final, get_args

import msgspec

from sanctum.metrics import PPO_METRICS
from telemetry.events import (
    EVENT_FOR_PAYLOAD,
    AnomalyPayload,
    Payload,
    PPOUpdatePayload,
    bare_type,
    kind_of,
)

_JUDGED_ELSEWHERE: Final[dict[type[Payload], frozenset[str]]] = {
    PPOUpdatePayload: frozenset(PPO_METRICS),
    AnomalyPayload: frozenset({"value"}),
}
"""Float fields this module does not walk, by the two rules of the module docstring."""


@functools.cache
def float_fields(struct: type[msgspec.Struct]) -> tuple[str, ...]:
    """The fields of ``struct`` whose type holds a float, at any depth, in contract order."""
    return tuple(f.name for f in msgspec.structs.fields(struct) if _holds_float(f.type))


def _holds_float(annotation: Any) -> bool:
    """Whether a value of ``annotation`` can hold a float (``Any``: free form, no)."""
    bare = bare_type(annotation)
    if bare is float:
        return True
    if isinstance(bare, type) and issubclass(bare, msgspec.Struct):
        return bool(float_fields(bare))
    return any(_holds_float(arg) for arg in get_args(bare))  # unions, dicts, lists


WALKED: Final[dict[type[Payload], tuple[str, ...]]] = {
    payload: tuple(
        name for name in float_fields(payload) if name not in _JUDGED_ELSEWHERE.get(payload, ())
    )
    for payload in EVENT_FOR_PAYLOAD
}
"""The fields of each payload kind this module walks for NaN and Inf."""

_PATHS: Final[dict[type[Payload], tuple[tuple[str, str], ...]]] = {
    payload: tuple((name, f"{kind_of(event)}.{name}") for name in WALKED[payload])
    for payload, event in EVENT_FOR_PAYLOAD.items()
}
"""(field, path) of each walked field of each payload kind."""

_UPDATE_GETTERS: Final = tuple((name, attrgetter(name)) for name in WALKED[PPOUpdatePayload])


def nonfinite_paths(payload: Payload) -> list[str]:
    """The paths of every NaN or Inf in the walked fields of ``payload`` (empty: none)."""
    found: list[str] = []
    for name, path in _PATHS[type(payload)]:
        value = getattr(payload, name)
        if value is not None and not (type(value) is float and value - value == 0.0):
            _walk(value, path, found)
    return found


def update_paths(payloads: Sequence[PPOUpdatePayload]) -> list[tuple[int, list[str]]]:
    """(update, paths) of each update in ``payloads`` holding a NaN or Inf in a walked
    field; field by field, and only the updates where the field holds something."""
    found: dict[int, list[str]] = {}
    for name, get in _UPDATE_GETTERS:
        column = tuple(map(get, payloads))
        if not any(column):  # absent, or an empty dict or list: nothing to walk
            continue
        path = f"ppo_update.{name}"
        for i, value in enumerate(column):
            if value:
                bad: list[str] = []
                _walk(value, path, bad)
                if bad:
                    found.setdefault(i, []).extend(bad)
    return [(payloads[i].update, found[i]) for i in sorted(found)]


def _walk(value: object, path: str, found: list[str]) -> None:
    """Append ``path`` for each non-finite float in ``value`` (a float, or a dict, list or
    struct holding floats; integers, strings and the like hold none)."""
    if type(value) is float:
        if value - value != 0.0:  # NaN or infinite
            found.append(path)
    elif isinstance(value, dict):
        if _finite_sum(value.values()):
            return
        for key, item in value.items():
            _walk(item, f"{path}.{key}", found)
    elif isinstance(value, list | tuple):
        for item in value:
            _walk(item, path, found)
    elif isinstance(value, msgspec.Struct):
        for name in float_fields(type(value)):
            _walk(getattr(value, name), f"{path}.{name}", found)


def _finite_sum(items: Iterable[object]) -> bool:
    """Whether ``items`` are numbers whose sum is finite, so that none is NaN or Inf (one
    sum in C, where the walk would visit each; a sum that overflows is walked)."""
    try:
        total = sum(items)  # type: ignore[arg-type]
    except TypeError:  # not all numbers: walked one by one
        return False
    return bool(total - total == 0.0)
