"""``RecordsTail``: rollouts.jsonl read on from where the last read stopped, a torn last line
left for later, a replaced file read again from the start, the same records as
``iter_records``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from telemetry.files import InputFileError, InputFileMissing
from telemetry.rollouts import RecordsTail, RolloutRecord, SkippedRecord, iter_records

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "tokens-s1"


def lines() -> list[bytes]:
    return (RECORDED / "rollouts.jsonl").read_bytes().splitlines(keepends=True)


def ids(items: list[RolloutRecord | SkippedRecord]) -> list[int | str]:
    return [i.id if isinstance(i, RolloutRecord) else f"skip {i.line_no}" for i in items]


def test_each_read_decodes_only_what_was_appended(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    every = lines()
    tail = RecordsTail(path)
    with pytest.raises(InputFileMissing):
        tail.read_new()
    path.write_bytes(b"".join(every[:3]) + b"not json\n" + every[3][:50])  # torn last line
    first = tail.read_new()
    assert ids(first.items) == [0, 1, 2, "skip 4"] and not first.reset
    with path.open("ab") as fh:
        fh.write(every[3][50:] + every[4])
    second = tail.read_new()
    assert ids(second.items) == [3, 4] and tail.lines == 6
    assert tail.read_new().items == []
    assert ids(first.items + second.items) == ids(list(iter_records(path)))


def test_a_read_is_bounded_and_says_more_remains(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    path.write_bytes(b"".join(lines()))
    tail = RecordsTail(path)
    got: list[RolloutRecord | SkippedRecord] = []
    reads = 0
    while True:
        read = tail.read_new(max_bytes=len(lines()[0]) * 5)
        got += read.items
        reads += 1
        if not read.more:
            break
    assert reads > 5 and ids(got) == list(range(36))


def test_a_replaced_or_truncated_file_is_read_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    every = lines()
    path.write_bytes(b"".join(every[:4]))
    tail = RecordsTail(path)
    assert len(tail.read_new().items) == 4
    path.write_bytes(every[0])  # truncated
    again = tail.read_new()
    assert again.reset and ids(again.items) == [0]
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b"".join(every[10:12]))
    os.replace(replacement, path)
    third = tail.read_new()
    assert third.reset and ids(third.items) == [10, 11]


def test_a_fifo_is_refused_without_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.jsonl"
    os.mkfifo(path)
    with pytest.raises(InputFileError, match="it is a pipe"):
        RecordsTail(path).read_new()
