"""Schema 1 round trips: every kind, every field, non-finite floats."""

from __future__ import annotations

import math
from pathlib import Path
from typing import get_args

import msgspec
import pytest

from telemetry.codec import encode_line
from telemetry.eventlog import EventLogWriter, read_events
from telemetry.events import (
    EVENT_FOR_PAYLOAD,
    EVENT_TYPES,
    FACT_KEYS,
    KINDS,
    EarlyStop,
    Envelope,
    Event,
    PPOUpdate,
    PPOUpdatePayload,
    TrainerInfo,
    field_docs,
    kind_of,
)
from tests.telemetry.factories import all_full_events, full_event


def test_every_kind_in_the_union_is_covered() -> None:
    assert set(EVENT_TYPES) == set(get_args(Event))
    assert len(EVENT_FOR_PAYLOAD) == len(EVENT_TYPES)
    assert {kind_of(t) for t in EVENT_TYPES} == KINDS
    assert KINDS == {"run_started", "rollout", "ppo_update", "anomaly", "heartbeat", "run_finished"}


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=kind_of)
def test_full_event_round_trips_through_a_file(tmp_path: Path, event_type: type) -> None:
    event = full_event(event_type)
    payload_fields = msgspec.structs.asdict(event.payload)  # type: ignore[attr-defined]
    assert all(v is not None for v in payload_fields.values()), "factory left a field unset"
    with EventLogWriter(tmp_path / "events.jsonl") as writer:
        writer(event)
    batch = read_events(tmp_path / "events.jsonl")
    assert batch.events == [event]
    assert batch.skipped == []


def test_all_kinds_in_one_file_keep_order(tmp_path: Path) -> None:
    events = all_full_events()
    with EventLogWriter(tmp_path / "e.jsonl") as writer:
        for event in events:
            writer(event)
    assert read_events(tmp_path / "e.jsonl").events == events


def test_lines_are_strict_json_with_snake_case_tags() -> None:
    for event in all_full_events():
        line = encode_line(event)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        obj = msgspec.json.decode(line)
        assert obj["type"] == kind_of(type(event))
        assert {"run_id", "seq", "ts", "payload"} <= obj.keys()


@pytest.mark.parametrize(
    ("value", "spelled"),
    [(math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")],
)
def test_nonfinite_floats_round_trip_as_strings(tmp_path: Path, value: float, spelled: str) -> None:
    payload = PPOUpdatePayload(
        update=3,
        global_step=99,
        approx_kl=value,
        clip_fraction=0.1,
        early_stopped=False,
        grad_norm=value,
        entropy=0.5,
    )
    event = PPOUpdate(run_id="r", seq=1, ts=1.0, payload=payload)
    line = encode_line(event)
    obj = msgspec.json.decode(line)  # strict JSON: a bare NaN token would not parse
    assert obj["payload"]["approx_kl"] == spelled
    assert obj["payload"]["grad_norm"] == spelled
    assert "kl_final" not in obj["payload"]  # not measured stays absent, never a number
    with EventLogWriter(tmp_path / "e.jsonl") as writer:
        writer(event)
    (back,) = read_events(tmp_path / "e.jsonl").events
    assert isinstance(back, PPOUpdate)
    got = back.payload.approx_kl
    assert (math.isnan(got) and math.isnan(value)) or got == value
    assert back.payload.kl_final is None
    assert back.payload.entropy == 0.5


def test_absent_optional_fields_decode_as_not_measured(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(
        '{"type":"ppo_update","run_id":"r","seq":1,"ts":1.0,"payload":'
        '{"update":0,"global_step":8,"approx_kl":0.01,"clip_fraction":0.1,"early_stopped":false,'
        '"explained_variance":null}}\n'
    )
    (event,) = read_events(path).events
    assert isinstance(event, PPOUpdate)
    assert event.payload.explained_variance is None
    assert event.payload.grad_norm is None


CONTRACT_STRUCTS = (*EVENT_FOR_PAYLOAD, Envelope, TrainerInfo, EarlyStop)


@pytest.mark.parametrize("struct", CONTRACT_STRUCTS, ids=lambda s: s.__name__)
def test_every_contract_field_carries_its_definition_in_the_vocabulary(struct: type) -> None:
    for doc in field_docs(struct):
        assert doc.description.endswith("."), f"{struct.__name__}.{doc.name} has no definition"
        assert set(doc.facts) <= set(FACT_KEYS), f"{struct.__name__}.{doc.name}: {doc.facts}"
        low, high = doc.facts.get("min"), doc.facts.get("max")
        assert low is None or high is None or low < high


def test_a_field_s_definition_reaches_the_json_schema() -> None:
    properties = msgspec.json.schema(PPOUpdatePayload)["$defs"]["PPOUpdatePayload"]["properties"]
    for doc in field_docs(PPOUpdatePayload):
        assert properties[doc.name]["description"] == doc.description


@pytest.mark.parametrize(
    ("scope", "applied", "tail"),
    [
        ("minibatch", False, "(minibatch not applied)"),
        ("minibatch", True, "(minibatch applied)"),
        ("epoch", True, "(epoch mean, minibatch applied)"),
    ],
)
def test_early_stop_reason_text_is_deterministic(scope: str, applied: bool, tail: str) -> None:
    stop = EarlyStop(epoch=2, minibatch=3, kl=0.04123, threshold=0.03, scope=scope, applied=applied)  # type: ignore[arg-type]
    assert stop.describe() == f"approx_kl 0.0412 > max_kl 0.0300 at epoch 2 minibatch 3 {tail}"


def test_numpy_scalars_from_other_trainers_are_recorded_as_numbers(tmp_path: Path) -> None:
    import numpy as np

    payload = PPOUpdatePayload(
        update=np.int64(2),
        global_step=np.int64(512),
        approx_kl=np.float32(0.5),
        clip_fraction=np.float64(np.nan),
        early_stopped=np.bool_(True),
    )
    with EventLogWriter(tmp_path / "e.jsonl") as writer:
        writer(PPOUpdate(run_id="r", seq=1, ts=1.0, payload=payload))
    (back,) = read_events(tmp_path / "e.jsonl").events
    assert isinstance(back, PPOUpdate)
    assert (back.payload.update, back.payload.global_step) == (2, 512)
    assert back.payload.approx_kl == 0.5
    assert math.isnan(back.payload.clip_fraction)
    assert back.payload.early_stopped is True


def test_an_object_that_cannot_be_a_number_is_refused_by_name() -> None:
    payload = PPOUpdatePayload(
        update=0,
        global_step=1,
        approx_kl=object(),
        clip_fraction=0.1,
        early_stopped=False,  # type: ignore[arg-type]
    )
    with pytest.raises(TypeError, match="cannot encode a object in an event"):
        encode_line(PPOUpdate(run_id="r", seq=1, ts=1.0, payload=payload))
