"""verl's file logger lines, written as verl writes them, read as a run's events."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from telemetry.eventlog import (
    EventLogError,
    EventLogReader,
    VerlLogReader,
    open_reader,
    read_events,
)
from telemetry.events import (
    Heartbeat,
    KLMeasure,
    PPOUpdate,
    PPOUpdatePayload,
    RunStarted,
    field_docs,
)
from telemetry.integrations import verl
from tests.sanctum.logs import write_run
from tests.telemetry.integrations.verl_logs import (
    FileLogger,
    dumps,
    grpo_step,
    ppo_step,
    write_verl_run,
)


def read_all(reader: EventLogReader) -> tuple[list[object], list[object]]:
    events: list[object] = []
    skipped: list[object] = []
    for batch in reader.batches():
        events.extend(batch.events)
        skipped.extend(batch.skipped)
    return events, skipped


def test_a_grpo_record_becomes_an_update_with_verls_keys_on_the_contracts_fields() -> None:
    data = grpo_step(3, **{"actor/pg_clipfrac_lower": 0.004})
    p = verl.update_payload(3, data)
    assert (p.update, p.global_step) == (2, 3)
    assert p.approx_kl == data["actor/ppo_kl"]
    assert p.clip_fraction_region == data["actor/pg_clipfrac"]
    assert p.clip_fraction is None  # abs(r - 1) > clip_range: verl does not log it
    assert p.clip_fraction_lower == 0.004
    assert p.entropy == data["actor/entropy"]
    assert p.grad_norm == data["actor/grad_norm"]
    assert p.policy_loss == data["actor/pg_loss"]
    assert p.ref_kl == data["actor/kl_loss"]
    assert p.ref_kl_coef == data["actor/kl_coef"]
    assert p.learning_rate == data["actor/lr"]
    assert p.return_mean == data["critic/returns/mean"]
    assert p.update_seconds == data["timing_s/update_actor"]
    assert p.reward_mean == data["critic/score/mean"]
    assert (p.completion_length_mean, p.completion_length_min, p.completion_length_max) == (
        data["response_length/mean"],
        data["response_length/min"],
        data["response_length/max"],
    )
    assert p.completion_truncated_frac == data["response_length/clip_ratio"]
    assert p.tokens is None and p.logprob_gap is None  # verl's differ from ours
    assert p.value_loss is None and p.explained_variance is None  # no critic in GRPO


def test_every_row_of_the_table_names_a_contract_field() -> None:
    fields = {d.name for d in field_docs(PPOUpdatePayload)}
    assert {row.field for row in verl.VERL_KEYS} <= fields


def test_a_ppo_record_carries_the_critic_and_the_algorithm_says_which() -> None:
    p = verl.update_payload(1, ppo_step(1))
    assert (p.value_loss, p.explained_variance, p.value_mean) == (0.05, 0.3, 0.15)
    assert verl.run_started_payload(1, ppo_step(1)).algorithm == "ppo"
    assert verl.run_started_payload(1, grpo_step(1)).algorithm == "grpo"


def test_the_run_declares_that_its_global_step_counts_training_steps() -> None:
    assert verl.run_started_payload(1, grpo_step(1)).step_unit == "training steps"


def test_the_run_declares_verls_kl_fields() -> None:
    kl = verl.run_started_payload(1, grpo_step(1)).kl
    assert kl == {
        "approx_kl": KLMeasure(against="old_policy", estimator="k1", unit="token"),
        "ref_kl": KLMeasure(against="reference", estimator="unknown", unit="token"),
    }


def test_the_kl_penalty_in_the_reward_is_recorded_as_coef_times_kl() -> None:
    data = grpo_step(1, **{"actor/reward_kl_penalty": 0.02, "actor/reward_kl_penalty_coeff": 0.5})
    p = verl.update_payload(1, data)
    assert p.ref_kl_reward_coef == 0.5
    assert p.ref_kl_reward_penalty == pytest.approx(0.01)


def test_orjsons_null_is_a_nonfinite_value() -> None:
    line = dumps({"step": 4, "data": grpo_step(4, **{"actor/grad_norm": float("nan")})})
    assert b'"actor/grad_norm":null' in line  # what orjson writes for NaN
    record = verl.update_payload(4, grpo_step(4, **{"actor/grad_norm": None}))
    assert record.grad_norm is not None and math.isnan(record.grad_norm)


def test_a_value_that_is_not_a_number_is_refused_naming_the_key() -> None:
    with pytest.raises(verl.VerlRecordError, match="actor/entropy: str where a number"):
        verl.update_payload(1, grpo_step(1, **{"actor/entropy": "high"}))


def test_the_run_id_is_the_experiment_name_or_a_stable_hash() -> None:
    assert verl.run_id_of("qwen2_7b_grpo.jsonl") == "qwen2_7b_grpo"
    odd = verl.run_id_of("a b\x1b[31m.jsonl")
    assert odd.startswith("verl-") and odd == verl.run_id_of("a b\x1b[31m.jsonl")


def test_a_verl_file_reads_as_one_run_in_order_with_synthesised_envelopes(tmp_path: Path) -> None:
    path = write_verl_run(tmp_path / "exp.jsonl", 5)
    reader = open_reader(path)
    assert isinstance(reader, VerlLogReader)
    events, skipped = read_all(reader)
    assert not skipped
    start, *updates = events
    assert isinstance(start, RunStarted)
    assert start.run_id == "exp" and start.payload.trainer.name == "verl"
    assert start.payload.config["source"] == "verl"
    assert start.payload.config["kl_estimator"] == "k1"
    assert "no_run_finished" in start.payload.config
    assert all(isinstance(e, PPOUpdate) for e in updates)
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]  # type: ignore[attr-defined]
    assert [e.payload.update for e in updates] == [0, 1, 2, 3, 4]  # type: ignore[attr-defined]
    stamps = [e.ts for e in events]  # type: ignore[attr-defined]
    assert stamps == sorted(stamps)
    assert stamps[-1] == os.stat(path).st_mtime  # the last line was written then
    assert stamps[-1] - stamps[-2] == pytest.approx(grpo_step(5)["timing_s/step"])


def test_a_line_that_is_not_a_record_is_skipped_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "exp.jsonl"
    logger = FileLogger(path)
    logger.log(grpo_step(1), step=1)
    logger.fp.write(b"Traceback (most recent call last):\n")
    logger.fp.write(b'{"step": 3}\n')  # no data
    logger.log(grpo_step(4, **{"actor/ppo_kl": [0.1]}), step=4)  # not a number
    logger.log(grpo_step(5), step=5)
    logger.finish()
    events, skipped = read_all(open_reader(path))
    lines = [(s.line_no, s.kind) for s in skipped]  # type: ignore[attr-defined]
    assert lines == [(2, "malformed"), (3, "malformed"), (4, "malformed")]
    assert "not a verl file logger record" in skipped[0].detail  # type: ignore[attr-defined]
    assert "actor/ppo_kl" in skipped[2].detail  # type: ignore[attr-defined]
    assert [type(e).__name__ for e in events] == ["RunStarted", "PPOUpdate", "PPOUpdate"]


def test_a_torn_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "exp.jsonl"
    with FileLogger(path) as logger:
        logger.log(grpo_step(1), step=1)
        line = dumps({"step": 2, "data": grpo_step(2)}) + b"\n"
        logger.fp.write(line[:40])
        reader = open_reader(path)
        batch = reader.read_new()
        assert len(batch.events) == 2 and batch.tail == (2, 40)
        logger.fp.write(line[40:])
        batch = reader.read_new()
        assert [e.payload.update for e in batch.events] == [1]  # type: ignore[union-attr]
        assert batch.tail == (0, 0)


def test_validation_before_training_is_no_event_and_after_it_a_heartbeat(tmp_path: Path) -> None:
    path = tmp_path / "exp.jsonl"
    logger = FileLogger(path)
    logger.log({"val-core/gsm8k/reward/mean@1": 0.1}, step=0)  # val_before_train
    logger.log(grpo_step(1), step=1)
    logger.log({"val-core/gsm8k/reward/mean@1": 0.3}, step=1)
    logger.finish()
    events, skipped = read_all(open_reader(path))
    assert not skipped
    assert [type(e) for e in events] == [RunStarted, PPOUpdate, Heartbeat]
    assert [e.seq for e in events] == [1, 2, 3]


def test_a_job_started_again_truncates_the_file_and_the_run_starts_over(tmp_path: Path) -> None:
    path = write_verl_run(tmp_path / "exp.jsonl", 3)
    reader = open_reader(path)
    read_all(reader)
    logger = FileLogger(path)  # verl opens "wb": the file starts over, from a checkpoint
    logger.log(grpo_step(3), step=3)
    logger.finish()
    batch = reader.read_new()
    assert batch.reset is not None
    start, update = batch.events
    assert isinstance(start, RunStarted) and start.seq == 1
    assert start.payload.config["resumed_from"] == {"update": 2}
    assert isinstance(update, PPOUpdate) and update.payload.update == 2


def test_a_file_not_there_yet_is_told_by_its_first_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.jsonl"
    reader = open_reader(path)
    assert isinstance(reader, VerlLogReader)  # undecided until a line is there
    with FileLogger(path) as logger:
        logger.log(grpo_step(1), step=1)
        events, _ = read_all(reader)
    assert [type(e) for e in events] == [RunStarted, PPOUpdate]


def test_an_event_log_gets_the_event_log_reader_and_reads_the_same(tmp_path: Path) -> None:
    path = write_run(tmp_path / "events.jsonl", updates=5)
    reader = open_reader(path)
    assert type(reader) is EventLogReader
    assert read_all(reader)[0] == read_events(path).events


def test_an_event_log_not_there_yet_reads_as_the_event_log_reader_reads_it(
    tmp_path: Path,
) -> None:
    source = write_run(tmp_path / "source.jsonl", updates=5)
    path = tmp_path / "events.jsonl"
    reader = open_reader(path)
    path.write_bytes(source.read_bytes())
    assert read_all(reader)[0] == read_events(source).events


def test_telling_a_fifo_never_blocks_and_reading_it_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "exp.jsonl"
    os.mkfifo(path)
    reader = open_reader(path)  # no writer at the other end: an open would block
    with pytest.raises(EventLogError, match="it is a pipe"):
        reader.read_new()


def test_a_file_read_in_several_batches_is_stamped_as_when_read_whole(tmp_path: Path) -> None:
    path = write_verl_run(tmp_path / "exp.jsonl", 9)
    whole = [e.ts for e in read_all(open_reader(path))[0]]  # type: ignore[attr-defined]
    pieces = [
        e.ts  # type: ignore[attr-defined]
        for batch in open_reader(path).batches(max_bytes=3000)  # two lines or so a batch
        for e in batch.events
    ]
    assert pieces == pytest.approx(whole)
    assert pieces[-1] == pytest.approx(os.stat(path).st_mtime)
