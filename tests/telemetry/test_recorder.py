"""Recorder: run_started on enter, run_finished with the right status on exit."""

from __future__ import annotations

import itertools
import json
import math
import os
import socket
from pathlib import Path

import msgspec
import pytest

from telemetry import (
    AnomalyPayload,
    EarlyStop,
    EventLogWriter,
    KLMeasure,
    PayloadError,
    PPOUpdate,
    PPOUpdatePayload,
    Recorder,
    RolloutPayload,
    RunFinished,
    RunStarted,
    SinkError,
    TrainerInfo,
    read_events,
)
from telemetry.recorder import FINISH_RESERVE


def _finished(path: Path) -> RunFinished:
    last = read_events(path).events[-1]
    assert isinstance(last, RunFinished)
    return last


def test_default_layout_and_completed_run(tmp_path: Path) -> None:
    with Recorder(run_dir=tmp_path, env_id="CartPole-v1", seed=3, config={"max_kl": 0.03}) as rec:
        rec.emit(RolloutPayload(update=0, global_step=512, episodes=2, episode_return_mean=20.0))
        rec.emit(
            PPOUpdatePayload(
                update=0, global_step=512, approx_kl=0.01, clip_fraction=0.1, early_stopped=False
            )
        )
    assert rec.path == tmp_path / rec.run_id / "events.jsonl"
    assert rec.run_id.startswith("CartPole-v1-")
    events = read_events(rec.path).events
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.payload.env_id == "CartPole-v1" and started.payload.seed == 3
    assert started.payload.config == {"max_kl": 0.03}
    assert started.payload.pid == os.getpid() and started.payload.host
    finished = _finished(rec.path)
    assert finished.payload.status == "completed" and finished.payload.reason is None
    assert (finished.payload.global_step, finished.payload.updates) == (512, 1)
    assert [e.seq for e in events] == [1, 2, 3, 4]


def test_exception_records_failed_with_summary_and_propagates(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with pytest.raises(ValueError, match="loss exploded"), Recorder(path=path):
        raise ValueError("loss exploded")
    finished = _finished(path)
    assert finished.payload.status == "failed"
    assert finished.payload.reason == "ValueError: loss exploded"


def test_keyboard_interrupt_records_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with pytest.raises(KeyboardInterrupt), Recorder(path=path):
        raise KeyboardInterrupt
    assert _finished(path).payload.status == "interrupted"


def test_explicit_finish_is_final(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with Recorder(path=path) as rec:
        rec.finish("interrupted", "stop requested from the dashboard")
    events = read_events(path).events
    assert sum(isinstance(e, RunFinished) for e in events) == 1
    assert _finished(path).payload.reason == "stop requested from the dashboard"


def test_fsync_option_writes_the_same_lines(tmp_path: Path) -> None:
    with Recorder(path=tmp_path / "a.jsonl", run_id="r", fsync_every=0.0) as rec:
        rec.emit(RolloutPayload(update=0, global_step=1))
    assert len(read_events(tmp_path / "a.jsonl").events) == 3


def test_disk_full_is_a_sink_error_naming_the_file() -> None:
    # /dev/full accepts open() and fails every write with ENOSPC, like a full disk.
    rec = Recorder(path="/dev/full", run_id="r")
    with pytest.raises(SinkError, match=r"eventlog:/dev/full.*No space left on device"):
        rec.start()
    assert not Path("/dev/.full.reserve").exists()  # a device gets no file beside it


def test_room_for_run_finished_is_held_beside_the_log_until_the_run_ends(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    reserve = tmp_path / ".e.jsonl.reserve"
    with Recorder(path=path) as rec:
        assert reserve.stat().st_size == FINISH_RESERVE
        rec.emit(RolloutPayload(update=0, global_step=1))
    assert not reserve.exists() and _finished(path).payload.status == "completed"


def test_closed_writer_refuses_and_says_so(tmp_path: Path) -> None:
    writer = EventLogWriter(tmp_path / "e.jsonl")
    writer.close()
    writer.close()  # idempotent
    with Recorder(path=tmp_path / "other.jsonl") as rec:
        unsubscribe = rec.bus.subscribe(writer)
        with pytest.raises(SinkError, match="writer is closed"):
            rec.emit(RolloutPayload(update=0, global_step=1))
        unsubscribe()
    assert len(read_events(tmp_path / "other.jsonl").events) == 3  # the good sink kept all


def test_emit_outside_the_run_is_an_error_not_a_silent_drop(tmp_path: Path) -> None:
    rec = Recorder(path=tmp_path / "e.jsonl")
    with pytest.raises(RuntimeError, match=r"RolloutPayload\) on a recorder that is not started"):
        rec.emit(RolloutPayload(update=0, global_step=1))
    with rec:
        pass
    with pytest.raises(RuntimeError, match="that is finished"):
        rec.emit(RolloutPayload(update=0, global_step=1))


def test_an_existing_log_is_never_appended_to_by_accident(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with Recorder(path=path, run_id="first"):
        pass
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="an event log is already there"):
        Recorder(path=path, run_id="second").start()
    assert path.read_bytes() == before
    with Recorder(path=path, run_id="second", append=True):
        pass
    assert [e.run_id for e in read_events(path).events] == ["first"] * 2 + ["second"] * 2


def test_a_payload_without_approx_kl_or_clip_fraction_is_recorded_and_read(tmp_path: Path) -> None:
    kl = {"ref_kl": KLMeasure(against="reference", estimator="k3", unit="token")}
    with Recorder(path=tmp_path / "e.jsonl", algorithm="grpo", kl=kl, policy_epochs=1) as rec:
        rec.emit(
            PPOUpdatePayload(
                update=0,
                global_step=64,
                approx_kl=None,  # what a TrainerCallback writes for GRPO
                ref_kl=0.002,
                reward_mean=0.4,
                reward_std=0.1,
                reward_zero_std_frac=0.25,
                reward_components={"format": 0.5, "accuracy": 0.3},
                completion_length_mean=41.5,
                completion_truncated_frac=0.0,
                tokens=2656,
                early_stopped=False,
            )
        )
    batch = read_events(rec.path)
    assert batch.skipped_count == 0
    started, update, _ = batch.events
    assert isinstance(started, RunStarted) and isinstance(update, PPOUpdate)
    assert (started.payload.algorithm, started.payload.kl, started.payload.policy_epochs) == (
        "grpo",
        kl,
        1,
    )
    assert update.payload.approx_kl is None and update.payload.clip_fraction is None
    assert update.payload.reward_components == {"format": 0.5, "accuracy": 0.3}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"approx_kl": "x"}, "ppo_update.approx_kl: expected float, got str"),
        ({"update": 1.5}, "ppo_update.update: expected int, got float"),
        ({"clip_fraction": True}, "ppo_update.clip_fraction: expected float, got bool"),
        ({"reward_components": {"format": "x"}}, "ppo_update.reward_components[...]: expected"),
        ({"tokens": object()}, "ppo_update.tokens: cannot be written"),
    ],
)
def test_emit_refuses_what_the_reader_would_skip_naming_the_field(
    tmp_path: Path, fields: dict[str, object], message: str
) -> None:
    good = PPOUpdatePayload(update=0, global_step=64, early_stopped=False)
    bad = msgspec.structs.replace(good, **fields)
    with Recorder(path=tmp_path / "e.jsonl") as rec:
        rec.emit(good)
        with pytest.raises(PayloadError) as refused:
            rec.emit(bad)
        rec.emit(msgspec.structs.replace(good, update=1))
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)
    batch = read_events(rec.path)
    assert batch.skipped_count == 0  # nothing bad reached the log, and no seq was taken
    assert [e.seq for e in batch.events] == [1, 2, 3, 4]


def test_emit_refuses_a_bad_nested_or_enum_value(tmp_path: Path) -> None:
    with Recorder(path=tmp_path / "e.jsonl") as rec:
        kl: object = "big"
        stop = EarlyStop(epoch=0, minibatch=1, kl=kl, threshold=0.03, scope="epoch", applied=True)  # type: ignore[arg-type]
        with pytest.raises(PayloadError, match=r"^ppo_update\.early_stop\.kl: expected float"):
            rec.emit(PPOUpdatePayload(update=0, global_step=1, early_stopped=True, early_stop=stop))
        with pytest.raises(PayloadError, match=r"^anomaly\.severity: invalid enum value 'bad'"):
            rec.emit(AnomalyPayload(severity="bad", metric="m", message="x"))  # type: ignore[arg-type]
    assert read_events(rec.path).skipped_count == 0


def test_emit_takes_what_the_reader_takes_though_spelled_otherwise(tmp_path: Path) -> None:
    """The reader takes NaN and int keys written as strings; a number in a string it refuses
    (as the shipped schema does), so emit refuses it too, naming the field."""
    payload = PPOUpdatePayload(
        update=0,
        global_step=1,
        entropy=math.nan,
        reward_components={1: math.inf},  # type: ignore[dict-item]
        early_stopped=False,
    )
    with Recorder(path=tmp_path / "e.jsonl") as rec:
        rec.emit(payload)
        quoted = msgspec.structs.replace(payload, update=1, approx_kl="0.5")  # type: ignore[arg-type]
        with pytest.raises(PayloadError, match=r"approx_kl"):
            rec.emit(quoted)
    update = read_events(rec.path).events[1]
    assert isinstance(update, PPOUpdate)
    assert math.isnan(update.payload.entropy or 0.0)
    assert update.payload.reward_components == {"1": math.inf}


def test_the_run_declares_what_its_global_step_counts(tmp_path: Path) -> None:
    with Recorder(path=tmp_path / "tokens.jsonl", step_unit="tokens"):
        pass
    with Recorder(path=tmp_path / "env.jsonl"):
        pass
    units = []
    for name in ("tokens.jsonl", "env.jsonl"):
        started = read_events(tmp_path / name).events[0]
        assert isinstance(started, RunStarted)
        units.append(started.payload.step_unit)
    assert units == ["tokens", None]  # None: environment steps


def test_a_run_started_line_without_a_step_unit_reads_as_environment_steps() -> None:
    line = (
        b'{"type":"run_started","run_id":"r","seq":1,"ts":1.0,"payload":{"schema":1,'
        b'"trainer":{"name":"old"},"schema_minor":5}}'
    )
    started = msgspec.json.decode(line, type=RunStarted)
    assert started.payload.step_unit is None


@pytest.mark.parametrize("unit", ["", "x" * 33])
def test_a_step_unit_empty_or_past_32_characters_is_refused(tmp_path: Path, unit: str) -> None:
    rec = Recorder(path=tmp_path / "e.jsonl", step_unit=unit)
    with pytest.raises(PayloadError, match=r"^run_started\.step_unit: expected str of length"):
        rec.start()


def test_the_action_space_is_read_from_a_gymnasium_space_or_named(tmp_path: Path) -> None:
    gym = pytest.importorskip("gymnasium", reason="needs gymnasium (the [test] extra)")
    spaces = gym.spaces
    cases = [
        (spaces.Discrete(3), "discrete"),
        (spaces.MultiDiscrete([2, 3]), "discrete"),
        (spaces.MultiBinary(4), "discrete"),
        (spaces.Box(-1.0, 1.0, (2,)), "continuous"),
        (spaces.Dict({"a": spaces.Discrete(2)}), None),  # mixed: not declared
        ("continuous", "continuous"),
        (None, None),
    ]
    for i, (space, declared) in enumerate(cases):
        with Recorder(path=tmp_path / f"{i}.jsonl", action_space=space) as rec:
            pass
        started = read_events(rec.path).events[0].payload
        assert started.action_space == declared, space
    with pytest.raises(ValueError, match="action_space must be 'discrete' or 'continuous'"):
        Recorder(path=tmp_path / "typo.jsonl", action_space="continous")
    assert not (tmp_path / "typo.jsonl").exists()


GOLDEN: str = (
    '{"type":"run_started","run_id":"golden","seq":1,"ts":1700000000.5,"payload":{"schema":1,'
    '"trainer":{"name":"sanctum-ppo","version":"1.2"},"env_id":"CartPole-v1","seed":7,'
    '"config":{"max_kl":0.03,"kl_estimator":"k3","total_steps":2048,"resumed_from":'
    '{"update":3},"vocab":["a","b"],"nan_setting":"NaN","nested":{"inf":"-Infinity",'
    '"list":[1,2.5,null]}},"host":HOST,"pid":PID,"schema_minor":7,"world_size":1,'
    '"algorithm":"ppo","kl":{"approx_kl":{"against":"old_policy","estimator":"k3",'
    '"unit":"token"}},"policy_epochs":4,"step_unit":"steps","action_space":"discrete"}}\n'
    '{"type":"rollout","run_id":"golden","seq":2,"ts":1700000001.0,"payload":{"update":0,'
    '"global_step":512,"episodes":2,"episode_return_mean":20.0}}\n'
    '{"type":"ppo_update","run_id":"golden","seq":3,"ts":1700000001.5,"payload":{"update":0,'
    '"global_step":512,"approx_kl":0.01,"clip_fraction":0.1,"early_stopped":false}}\n'
    '{"type":"ppo_update","run_id":"golden","seq":4,"ts":1700000002.0,"payload":{"update":1,'
    '"global_step":1024,"approx_kl":0.02,"entropy":"NaN","early_stopped":false,'
    '"reward_components":{"x":"Infinity"}}}\n'
    '{"type":"run_finished","run_id":"golden","seq":5,"ts":1700000003.0,"payload":'
    '{"status":"completed","global_step":1024,"updates":2,"duration_seconds":2.5}}\n'
)
"""A Recorder's log, byte for byte: run_started's config with a nested object and
non-finite floats (spelled out), an update checked by its null-free twin and one that
holds a NaN (checked the full way)."""


def test_a_recorded_log_is_written_byte_for_byte_as_before(tmp_path: Path) -> None:
    ticks = itertools.count()
    config = {
        "max_kl": 0.03,
        "kl_estimator": "k3",
        "total_steps": 2048,
        "resumed_from": {"update": 3},
        "vocab": ["a", "b"],
        "nan_setting": math.nan,
        "nested": {"inf": -math.inf, "list": [1, 2.5, None]},
    }
    with Recorder(
        path=tmp_path / "golden.jsonl",
        run_id="golden",
        env_id="CartPole-v1",
        seed=7,
        config=config,
        trainer=TrainerInfo(name="sanctum-ppo", version="1.2"),
        clock=lambda: 1_700_000_000.0 + 0.5 * next(ticks),
        kl={"approx_kl": KLMeasure(against="old_policy", estimator="k3", unit="token")},
        policy_epochs=4,
        step_unit="steps",
        action_space="discrete",
    ) as rec:
        rec.emit(RolloutPayload(update=0, global_step=512, episodes=2, episode_return_mean=20.0))
        rec.emit(
            PPOUpdatePayload(
                update=0, global_step=512, approx_kl=0.01, clip_fraction=0.1, early_stopped=False
            )
        )
        rec.emit(
            PPOUpdatePayload(
                update=1,
                global_step=1024,
                approx_kl=0.02,
                entropy=math.nan,
                early_stopped=False,
                reward_components={"x": math.inf},
            )
        )
    expected = GOLDEN.replace("HOST", json.dumps(socket.gethostname())).replace(
        "PID", str(os.getpid())
    )
    assert rec.path.read_text() == expected
