"""The fold behind the rollouts screen: records grouped by update, the worst and best of
each kept, memory bounded however many updates the file holds."""

from __future__ import annotations

from pathlib import Path

import msgspec

from sanctum.model.rollouts import (
    PER_SIDE_KEPT,
    UPDATES_KEPT,
    RolloutsBook,
)
from telemetry.rollouts import RolloutRecord, SkippedRecord, iter_records
from telemetry.run_config import RunConfig

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "recorded" / "tokens-s1"


def recorded() -> list[RolloutRecord]:
    items = list(iter_records(RECORDED / "rollouts.jsonl"))
    assert all(isinstance(r, RolloutRecord) for r in items)
    return items  # type: ignore[return-value]


def test_each_update_keeps_its_lowest_and_highest_rewards() -> None:
    book = RolloutsBook(12)
    book.add(recorded())
    frame = book.frame()
    assert [u.update for u in frame.updates] == [0, 1, 2] and frame.records == 36
    for u in frame.updates:
        rs = [r for r in recorded() if r.id // 12 == u.update]
        low = sorted(rs, key=lambda r: (r.reward_final, -r.id))[:PER_SIDE_KEPT]
        high = sorted(rs, key=lambda r: (-r.reward_final, -r.id))[:PER_SIDE_KEPT]
        assert [r.id for r in u.worst] == [r.id for r in low]
        assert [r.id for r in u.best] == [r.id for r in high]
        assert u.count == 12
        assert abs(u.reward_mean - sum(r.reward_final for r in rs) / 12) < 1e-12


def test_older_updates_are_dropped_past_the_limit_and_counted() -> None:
    template = recorded()[0]
    book = RolloutsBook(1)
    book.add(_with_id(template, i) for i in range(UPDATES_KEPT + 7))
    book.add([_with_id(template, 2)])  # an update older than those kept: left out
    book.add([SkippedRecord(9, "bad")])
    frame = book.frame()
    assert len(frame.updates) == UPDATES_KEPT and frame.dropped_updates == 7
    assert frame.updates[0].update == 7 and frame.updates[-1].update == UPDATES_KEPT + 6
    assert (frame.records, frame.skipped) == (UPDATES_KEPT + 8, 1)


def _with_id(r: RolloutRecord, i: int) -> RolloutRecord:
    return msgspec.structs.replace(r, id=i)


def test_a_config_without_usable_figures_groups_nothing_and_names_no_tokens() -> None:
    read = RunConfig.from_config
    assert read({"rollouts_per_update": 12}).rollouts_per_update == 12
    for bad in (0, -3, True, "12", 1.5, None):
        assert read({"rollouts_per_update": bad}).rollouts_per_update is None
    assert read({"vocab": ["a", "[b]"]}).vocab == ("a", "[b]")
    assert read({"vocab": ["a", 3]}).vocab is None and read({}).vocab is None
    book = RolloutsBook(None)
    book.add(recorded())
    (only,) = book.frame().updates
    assert only.update is None and only.count == 36
