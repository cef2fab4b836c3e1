"""``sanctum rollouts``: which records it picks, and what it says when there are none."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.reports.once import read_snapshot
from sanctum.reports.rollouts_view import RolloutsError, render, select
from sanctum.text.rollouts import answer_line, no_figures_text
from telemetry.rollouts import RolloutRecord
from tests.sanctum.recorded import RECORDED


def record(id: int, reward_final: float) -> RolloutRecord:
    fields = {f.name for f in msgspec.structs.fields(RolloutRecord)}
    values: dict[str, object] = {
        "id": id, "input_ids": [1], "generated_ids": [2], "terminated_by": "answer",
        "num_generated": 1, "digit_probs": [[1.0]], "digit_pred": [0], "digit_true": [0],
        "reward_full": 0.0, "partial_scale": 0.5, "keep_prob": [0.5], "applied_mask": [True],
        "applied_count": 1, "correct_count": 0, "reward_partial": 0.0, "length_penalty": 0.0,
        "reward_final": reward_final, "actions": [2], "logp_old": [-0.1], "entropy": [0.5],
        "values": [0.1],
    }  # fmt: skip
    assert set(values) == fields
    return msgspec.convert(values, RolloutRecord)


def test_worst_picks_the_lowest_and_among_ties_the_latest() -> None:
    records = [record(0, 0.0), record(1, 0.5), record(2, 0.0), record(3, 1.0), record(4, 0.0)]
    chosen, count, skipped = select(records, last=None, worst=2)
    assert [r.id for r in chosen] == [4, 2] and (count, skipped) == (5, 0)
    chosen, _, _ = select(records, last=None, worst=4)
    assert [r.id for r in chosen] == [4, 2, 0, 1]


def test_last_keeps_file_order() -> None:
    records = [record(i, 0.1 * i) for i in range(5)]
    assert [r.id for r in select(records, last=2, worst=None)[0]] == [3, 4]


def test_a_missing_folder_and_a_run_without_records_are_told_apart(tmp_path: Path) -> None:
    with pytest.raises(RolloutsError, match="no such run folder"):
        render(tmp_path / "nope", tmp_path / "nope" / "events.jsonl", None, 1)
    with pytest.raises(RolloutsError, match="only token-level PPO runs write them"):
        render(tmp_path, tmp_path / "events.jsonl", None, 1)


def test_the_answer_line_says_what_applied_marks_and_a_missing_update_why() -> None:
    line = answer_line(record(1, 0.0))
    assert "applied x (x: scored)" in line and "correct 0/1" in line
    snapshot = read_snapshot(RECORDED / "tokens-s1" / "events.jsonl", DEFAULT_THRESHOLDS)
    kept = snapshot.series_updates
    assert no_figures_text(snapshot, kept[-1] + 5) == "its figures are not read yet"
    assert no_figures_text(snapshot, kept[0] - 1).startswith(f"older than the last {len(kept)}")
    assert no_figures_text(None, 3) == "its figures are not read yet"
