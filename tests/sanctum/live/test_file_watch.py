"""A followed log is read again only when a stat says it changed since a read found nothing."""

from __future__ import annotations

import os
from pathlib import Path

from sanctum.live.file_watch import FileWatch


def quiet(watch: FileWatch) -> bool:
    """Whether the watch would skip a read now; records an empty read when it would not."""
    read, seen = watch.before_read()
    if read:
        watch.after_read(seen, found=False)
    return not read


def test_unchanged_after_an_empty_read_is_not_read_again(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"a\n")
    watch = FileWatch(path)
    assert not quiet(watch), "the first look reads"
    assert quiet(watch), "nothing changed since a read found nothing"
    assert quiet(watch)


def test_a_read_that_found_news_is_followed_by_another(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"a\n")
    watch = FileWatch(path)
    _, seen = watch.before_read()
    watch.after_read(seen, found=True)  # a bounded read may have left more behind
    assert watch.before_read()[0]


def test_every_change_a_read_would_report_reads_again(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"a\n")
    watch = FileWatch(path)
    quiet(watch)
    with path.open("ab") as f:  # an append
        f.write(b"b\n")
    assert not quiet(watch)
    path.write_bytes(b"c\n")  # truncated and rewritten
    assert not quiet(watch)
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"d\n")
    os.utime(other, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    os.replace(other, path)  # another file of the same size and time: another inode
    assert not quiet(watch)
    path.unlink()  # gone
    assert not quiet(watch)
    assert quiet(watch), "still gone"
    path.write_bytes(b"")  # back, empty
    assert not quiet(watch)
