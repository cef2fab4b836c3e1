"""The one opener: regular files only, a size cap, bounded nesting, one-line errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from telemetry.files import InputFileError, bounded_lines, read_input, read_toml


def _error(path: str | Path, **kw: int) -> str:
    with pytest.raises(InputFileError) as info:
        read_toml(path, "thresholds file", **kw)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_special_files_are_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would hang forever
    assert _error(fifo).endswith("it is a pipe (FIFO)")
    assert _error("/dev/zero").endswith("it is a device")
    assert _error(tmp_path).endswith("it is a folder")
    assert _error(tmp_path / "missing.toml").endswith("no such thresholds file")


def test_size_cap_and_nesting(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text("a = 1\n" * 1000)
    assert "larger than the 1 KiB limit" in _error(big, max_bytes=1024)
    assert "not valid TOML" in _error(big)  # a key written twice
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000)
    assert "nested more than 16" in _error(deep)
    fine = tmp_path / "fine.toml"
    fine.write_text("[kl]\nwarn = 5\n")
    assert read_toml(fine, "thresholds file") == {"kl": {"warn": 5}}


def test_a_hostile_file_name_is_shown_escaped(tmp_path: Path) -> None:
    name = tmp_path / "\x1b]0;pwned\x07.toml"
    message = _error(name)
    assert "\x1b" not in message and "\\x1b]0;pwned\\x07" in message


def test_read_input_refuses_growth_past_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert read_input(path, "file", 10) == b"x" * 10
    with pytest.raises(InputFileError, match="larger than the 9 bytes limit"):
        read_input(path, "file", 9)


def test_bounded_lines_skips_a_line_past_the_limit_without_holding_it(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    path.write_bytes(b"ab\n" + b"x" * 10 + b"\n" + b"y" * 9 + b"\n" + b"z" * 11 + b"\ntail")
    with path.open("rb") as fh:
        assert list(bounded_lines(fh, 9)) == [b"ab\n", None, b"y" * 9 + b"\n", None, b"tail"]
