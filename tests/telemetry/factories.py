"""Build events with every field set to a distinct, non-default value, from the schema itself."""

from __future__ import annotations

import itertools
from typing import Any

import msgspec
import msgspec.inspect as mi

from telemetry.events import EVENT_TYPES, SCHEMA_MAJOR, Envelope, Event, RunStartedPayload


class _Distinct:
    """Hands out values that differ from each other and from every field's default."""

    def __init__(self) -> None:
        self._n = itertools.count(7)

    def value(self, t: mi.Type, default: Any = msgspec.NODEFAULT) -> Any:
        n = next(self._n)
        match t:
            case mi.Metadata(type=inner):  # a field's about(...): its definition, not a type
                return self.value(inner, default)
            case mi.UnionType(types=types):
                return self.value(next(x for x in types if not isinstance(x, mi.NoneType)))
            case mi.BoolType():
                return default is not True
            case mi.IntType():
                return n
            case mi.FloatType():
                return n + 0.25
            case mi.StrType():
                return f"value-{n}"
            case mi.LiteralType(values=values):
                return next(v for v in reversed(values) if v != default)
            case mi.DictType(value_type=mi.AnyType()):
                return {f"key{n}": n, "nested": {"lr": 0.5}}
            case mi.DictType(value_type=inner):  # a typed map: its values typed too
                return {f"key{n}": self.value(inner)}
            case mi.StructType():
                return self.struct(t)
        raise TypeError(f"no distinct-value rule for {t!r}")

    def struct(self, t: mi.StructType) -> Any:
        fields = {f.name: self.value(f.type, f.default) for f in t.fields}
        return t.cls(**fields)


def full_event(event_type: type[Envelope[Any]], seq: int = 1) -> Event:
    """An event of ``event_type`` whose payload sets every field to a non-default value."""
    info = mi.type_info(event_type)
    assert isinstance(info, mi.StructType)
    payload_type = next(f.type for f in info.fields if f.name == "payload")
    if isinstance(payload_type, mi.Metadata):  # the envelope's definition of the field
        payload_type = payload_type.type
    assert isinstance(payload_type, mi.StructType)
    payload = _Distinct().struct(payload_type)
    if isinstance(payload, RunStartedPayload):  # the one field whose value a reader checks
        payload = msgspec.structs.replace(payload, schema=SCHEMA_MAJOR)
    event: Event = event_type(run_id="run-a", seq=seq, ts=1_700_000_000.5 + seq, payload=payload)  # type: ignore[call-arg,assignment]
    return event


def all_full_events() -> list[Event]:
    """One full event of every kind in the union, seq 1, 2, 3..."""
    return [full_event(t, seq) for seq, t in enumerate(EVENT_TYPES, start=1)]
