"""The return curve a learning gate reads from a log."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from sanctum.reports.return_curve import read_curve
from tests.sanctum.logs import RunLog, append_after_each_read, write_run


def test_a_growing_file_is_read_as_it_was_when_reading_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_run(tmp_path / "events.jsonl", updates=5, finish=None)
    writer = RunLog(path)
    writer.emitter._seq = itertools.count(12)
    reads = append_after_each_read(monkeypatch, writer, first_update=5)
    curve = read_curve(path, "run-test")
    writer.close()
    assert [p.step for p in curve] == [512 * (u + 1) for u in range(5)]
    assert len(reads) <= 2
