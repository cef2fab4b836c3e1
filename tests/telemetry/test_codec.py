"""The emit check (EventCheck): its null-free twin decode accepts exactly the events that
the full check (non-finite floats spelled out, then the reader's own decoder) accepts, and
hands the writer the same line.

Events are built with a random value in each field: mostly of the field's type, a few of
any type at all (bools in number fields, numbers in strings, NaN, huge ints, nested
structs of the wrong kind, values only ``.item()`` can write, values nothing can write).
"""

from __future__ import annotations

import math
import sys
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import telemetry.codec as codec
from telemetry.codec import (
    MAX_LINE_BYTES,
    EventCheck,
    LineEncoder,
    PayloadError,
    line_decoder,
    null_free_decoder,
)
from telemetry.events import (
    EVENT_FOR_PAYLOAD,
    EVENT_TYPES,
    AnomalyPayload,
    EarlyStop,
    Envelope,
    Event,
    HeartbeatPayload,
    KLMeasure,
    PPOUpdate,
    PPOUpdatePayload,
    RunStarted,
    TrainerInfo,
)


def wrap(payload: Any, **envelope: Any) -> Event:
    """``payload`` in its event, with ``envelope`` (run_id, seq, ts) or a plain one."""
    stamp = {"run_id": "r", "seq": 1, "ts": 1.0, **envelope}
    return EVENT_FOR_PAYLOAD[type(payload)](**stamp, payload=payload)  # type: ignore[call-arg, return-value]


class Scalar:
    """What a trainer hands over from numpy or torch: a number behind ``.item()``."""

    def __init__(self, value: object) -> None:
        self.value = value

    def item(self) -> object:
        return self.value


FLOATS = st.floats(allow_nan=True, allow_infinity=True)
INTS = st.integers(min_value=-(2**63), max_value=2**64 - 1)
SCALARS = st.one_of(
    FLOATS,
    INTS,
    st.booleans(),
    st.none(),
    st.text(max_size=8),
    st.sampled_from(["0.5", "NaN", "-Infinity", "1e400", "", "true", "null", "7"]),
)
ANY_VALUE = st.one_of(
    SCALARS,
    st.integers(min_value=2**64, max_value=2**70),  # too big to write
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 9)), SCALARS, max_size=3),
    st.builds(Scalar, SCALARS),
    st.just(object()),
    st.builds(TrainerInfo, name=st.text(max_size=4)),
    st.builds(KLMeasure, against=SCALARS, estimator=SCALARS, unit=SCALARS),
)


def values_of(annotation: Any) -> st.SearchStrategy[Any]:
    """Values a correct trainer puts in a field of this type."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return values_of(args[0])
    if origin in (Union, type(int | None)):
        return st.one_of(*(values_of(arg) for arg in args))
    if annotation is type(None):
        return st.none()
    if annotation is float:
        return st.one_of(FLOATS, INTS, st.builds(Scalar, FLOATS))
    if annotation is int:
        return INTS
    if annotation is bool:
        return st.booleans()
    if annotation is str:
        return st.text(max_size=12)
    if origin is Literal:
        return st.sampled_from(args)
    if origin is dict:
        return st.dictionaries(st.text(max_size=4), values_of(args[1]), max_size=3)
    if annotation is Any:
        return SCALARS
    assert isinstance(annotation, type) and issubclass(annotation, msgspec.Struct)
    return structs(annotation)


ODD = st.sampled_from([0, 0, 0, 1, 2])
"""How many fields of a struct hold any value at all: most structs are right."""


def structs(struct: type[msgspec.Struct]) -> st.SearchStrategy[Any]:
    """A ``struct`` whose fields hold right values, but a few (:data:`ODD`) any value."""
    fields = msgspec.structs.fields(struct)
    right = {f.name: values_of(f.type) for f in fields}
    required = [f.name for f in fields if f.required]
    optional = [f.name for f in fields if not f.required]

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        chosen = draw(st.lists(st.sampled_from(optional), max_size=8)) if optional else []
        names = [*required, *chosen]  # the others left at their default: not measured
        count = draw(ODD)
        odd = draw(st.lists(st.sampled_from(names), min_size=count, max_size=count))
        return struct(**{name: draw(ANY_VALUE if name in odd else right[name]) for name in names})

    return build()


PAYLOADS = {payload: structs(payload) for payload in EVENT_FOR_PAYLOAD}
ENVELOPE = {"run_id": st.text(max_size=8), "seq": st.integers(1, 2**40), "ts": st.floats(0, 2e9)}


@st.composite
def events(draw: st.DrawFn) -> Event:
    """An event of any kind (a few of its envelope's fields may hold any value too)."""
    payload = draw(st.sampled_from(list(PAYLOADS)).flatmap(PAYLOADS.__getitem__))
    count = draw(ODD)
    odd = draw(st.lists(st.sampled_from(list(ENVELOPE)), min_size=count, max_size=count))
    envelope = {k: draw(ANY_VALUE if k in odd else right) for k, right in ENVELOPE.items()}
    return wrap(payload, **envelope)


def full_check(event: Event) -> bytes | None:
    """The line the reader would read, by the full way; None if it would not read it."""
    try:
        line = bytes(LineEncoder().encode(event))
        line_decoder().decode(line)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None
    return line


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(event=events())
def test_the_check_takes_exactly_what_the_full_check_takes_and_writes_its_line(
    event: Event,
) -> None:
    expected = full_check(event)
    try:
        line = EventCheck()(event)
    except PayloadError:
        assert expected is None
    else:
        assert expected is not None
        assert line == expected


@pytest.mark.parametrize("kind", [t for t in EVENT_TYPES if t is not RunStarted])
def test_every_kind_but_run_started_is_checked_by_its_null_free_twin(
    kind: type[Envelope[Any]],
) -> None:
    assert null_free_decoder(kind) is not None


def test_run_started_writes_its_nulls_so_it_has_no_twin() -> None:
    assert null_free_decoder(RunStarted) is None  # its config holds Any, its None is written


@pytest.mark.parametrize(
    ("payload", "spelled"),
    [
        (PPOUpdatePayload(update=0, global_step=1, early_stopped=False, entropy=math.nan), b"NaN"),
        (
            PPOUpdatePayload(
                update=0,
                global_step=1,
                early_stopped=True,
                early_stop=EarlyStop(
                    epoch=0, minibatch=0, kl=math.inf, threshold=0.1, scope="epoch", applied=True
                ),
            ),
            b"Infinity",
        ),
        (
            PPOUpdatePayload(
                update=0, global_step=1, early_stopped=False, reward_components={"a": -math.inf}
            ),
            b"-Infinity",
        ),
        (AnomalyPayload(severity="warning", metric="m", message="x", value=math.nan), b"NaN"),
    ],
)
def test_a_non_finite_float_anywhere_is_spelled_out_in_the_checked_line(
    payload: Any, spelled: bytes
) -> None:
    line = EventCheck()(wrap(payload))
    assert b'"' + spelled + b'"' in line and b"null" not in line


def test_a_bool_in_a_number_field_is_refused_by_the_twin_too() -> None:
    twin = null_free_decoder(PPOUpdate)
    assert twin is not None
    event = wrap(PPOUpdatePayload(update=True, global_step=1, early_stopped=False))
    with pytest.raises(msgspec.ValidationError):
        twin.decode(msgspec.json.encode(event))
    with pytest.raises(PayloadError, match=r"^ppo_update\.update: expected int, got bool"):
        EventCheck()(event)


def test_a_line_past_the_reader_limit_is_refused_though_its_twin_reads_it() -> None:
    def anomaly(length: int) -> Event:
        return wrap(AnomalyPayload(severity="warning", metric="m", message="x" * length))

    check = EventCheck()
    check(anomaly(MAX_LINE_BYTES - 200))
    with pytest.raises(PayloadError, match=r"^anomaly: its line of \d+ bytes is longer than"):
        check(anomaly(MAX_LINE_BYTES))


@pytest.mark.parametrize("ts", [math.nan, math.inf, -math.inf, -1.0])
def test_a_time_that_is_not_one_is_refused_at_emit_and_not_read(ts: float) -> None:
    event = wrap(HeartbeatPayload(global_step=1), ts=ts)
    with pytest.raises(
        PayloadError, match=r"^heartbeat: Expected `float` (>=|<=) .* - at `\$\.ts`"
    ):
        EventCheck()(event)
    with pytest.raises(msgspec.ValidationError, match=r"\$\.ts"):
        line_decoder().decode(LineEncoder().encode(event))


@pytest.mark.parametrize("ts", [0.0, 1_700_000_000.123456, 2.0**63, sys.float_info.max])
def test_every_time_from_0_on_is_written_and_read(ts: float) -> None:
    event = wrap(HeartbeatPayload(global_step=1), ts=ts)
    assert line_decoder().decode(EventCheck()(event)).ts == ts


_ROLLOUT = (
    b'{"type":"rollout","run_id":"r","seq":1,"ts":1.0,"payload":{"update":0,"global_step":8}}'
)
_UPDATE = (
    b'{"type":"ppo_update","run_id":"r","seq":2,"ts":1.0,'
    b'"payload":{"update":0,"global_step":8,"early_stopped":false}}'
)


@pytest.mark.parametrize(
    "mark",
    [
        b'"early_stopped":false',  # as a writer spells it
        b'"early_stopped" : false',  # spaced
        b'"early\\u005fstopped":false',  # the name in escapes
        b'"severity":"critical"',  # an anomaly's mark
        b'"approx_kl":0.1,"early_stopped":true,"early_stopped":false',  # twice
    ],
)
@pytest.mark.parametrize("piece", [3, 16, 1 << 20])  # the UTF-8 check looks piecewise
def test_a_chunk_with_a_rollout_of_another_kind_is_refused_however_the_mark_is_spelled(
    mark: bytes, piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codec, "_PIECE", piece)
    forged = _ROLLOUT.replace(b'"global_step":8', b'"global_step":8,' + mark).replace(
        b'"seq":1', b'"seq":3'
    )
    chunk = b"\n".join([_ROLLOUT, _UPDATE, forged]) + b"\n"
    with pytest.raises(msgspec.ValidationError):
        codec.line_decoder().decode_lines(chunk)
    assert len(codec.line_decoder().decode_lines(b"\n".join([_ROLLOUT, _UPDATE]) + b"\n")) == 2


@pytest.mark.parametrize("piece", [1, 2, 5, 1 << 20])
def test_utf8_is_checked_across_the_pieces_of_a_chunk(
    piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codec, "_PIECE", piece)
    good = _ROLLOUT.replace(b'"r"', '"r\u00e9\u4e2d"'.encode())  # two- and three-byte
    assert len(codec.line_decoder().decode_lines(memoryview(bytearray(good + b"\n")))) == 1
    for bad in (good.replace("é".encode(), b"\xc3"), good + b"\xe4\xb8"):
        with pytest.raises(UnicodeDecodeError):
            codec.line_decoder().decode_lines(memoryview(bytearray(bad + b"\n")))
