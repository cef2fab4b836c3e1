"""The one opener for every file the project reads whole: thresholds, maps, configs,
checkpoints, TensorBoard event files, rollouts, supervisor notes.

An input file is hostile until read. :func:`open_input` opens a *regular file* only
(``O_NONBLOCK``: a FIFO cannot hang the open; a device, a socket or a folder is refused
before a byte is read), and :func:`read_input` reads it whole only when it is no larger
than the cap its format allows (``/dev/zero`` or a 10 GB "config" is one line, not an
exhausted machine). :func:`read_toml` adds bounded nesting. Every failure is an
:class:`InputFileError` whose message is one line naming the file, what it was meant to be,
and the problem, with the file name shown escaped (:func:`telemetry.text.visible`).

Event logs are streamed, not read whole: ``telemetry.eventlog.reader`` opens them the same
way (regular files only) and bounds its memory by the line limit instead.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Iterator
from typing import IO, Any, Final

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 needs the tomli backport
    import tomli as tomllib

from telemetry.text import visible

KIB: Final = 1024
MIB: Final = 1024 * KIB

TOML_MAX_BYTES: Final = 1 * MIB
"""A thresholds file, a TensorBoard map or a training config: a few KB in practice."""
TOML_MAX_DEPTH: Final = 16
"""Tables and arrays nested deeper than this are refused (ours nest 3 deep)."""


_PIECE: Final = 1 * MIB
"""How much of a line :func:`bounded_lines` reads at a time."""


class InputFileError(Exception):
    """A file that cannot be used as input; ``str()`` is one line naming it and why."""


class InputFileMissing(InputFileError):
    """The file does not exist (a reader that follows a log may wait for it)."""


def describe(path: str | os.PathLike[str]) -> str:
    """``path`` as a message shows it: escaped, never raw."""
    return visible(os.fspath(path))


def file_kind(mode: int, other: str) -> str:
    """What a file of ``mode`` (``st_mode``) is, in the words of a message: a folder, a file,
    a pipe, a device, a socket; ``other`` for any other kind."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return other


def open_input_fd(path: str | os.PathLike[str], what: str) -> tuple[int, os.stat_result]:
    """Open ``path`` for reading as ``what``: a regular file only, or InputFileError
    (InputFileMissing when it does not exist). Returns the raw descriptor, in blocking
    mode, and its ``fstat``; the caller closes it. For readers that ``pread`` (the event
    log reader); everything else uses :func:`open_input`."""
    name = describe(path)
    try:  # O_NONBLOCK: opening a FIFO without a writer would wait forever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputFileMissing(f"{name}: no such {what}") from None
    except IsADirectoryError:
        raise InputFileError(f"{name}: cannot read {what}: it is a folder") from None
    except OSError as exc:
        raise InputFileError(
            f"{name}: cannot read {what}: {visible(exc.strerror or str(exc))}"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputFileError(
                f"{name}: cannot read {what}: it is {file_kind(st.st_mode, 'not a regular file')}"
            )
        os.set_blocking(fd, True)
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def open_input(path: str | os.PathLike[str], what: str) -> io.BufferedReader:
    """Open ``path`` for reading as ``what`` (``"thresholds file"``): a regular file only.

    Raises InputFileError (missing, unreadable, a folder, a FIFO, a device). The caller
    closes the returned file.
    """
    fd, _ = open_input_fd(path, what)
    try:
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | os.PathLike[str], what: str, max_bytes: int) -> bytes:
    """The whole of ``path`` (a regular file of at most ``max_bytes``) as bytes.

    Raises InputFileError naming the file and the cap when it is larger (checked on the
    open file and again while reading, so a file that grows in between is caught too).
    """
    name = describe(path)
    with open_input(path, what) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise InputFileError(
                f"{name}: {what} is {size} bytes, larger than the {_size(max_bytes)} limit"
            )
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InputFileError(
                f"{name}: cannot read {what}: {visible(exc.strerror or str(exc))}"
            ) from None
    if len(data) > max_bytes:
        raise InputFileError(f"{name}: {what} is larger than the {_size(max_bytes)} limit")
    return data


def read_toml(
    path: str | os.PathLike[str],
    what: str,
    max_bytes: int = TOML_MAX_BYTES,
    max_depth: int = TOML_MAX_DEPTH,
) -> dict[str, Any]:
    """``path`` parsed as TOML: a regular UTF-8 file of at most ``max_bytes``, nested at
    most ``max_depth`` tables or arrays deep. Raises InputFileError, one line."""
    name = describe(path)
    data = read_input(path, what, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{name}: {what} is not UTF-8 text (byte {exc.start})") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputFileError(f"{name}: {what} is not valid TOML: {visible(str(exc))}") from None
    except RecursionError:
        raise InputFileError(
            f"{name}: {what} is nested more than {max_depth} tables or arrays deep"
        ) from None
    if _depth(document) > max_depth:
        raise InputFileError(
            f"{name}: {what} is nested more than {max_depth} tables or arrays deep"
        )
    return document


def _depth(value: object, level: int = 0) -> int:
    """How deeply ``value`` nests (stops counting a little past any sane limit)."""
    if level > 64:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def _size(n: int) -> str:
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB} MiB"
    if n >= KIB and n % KIB == 0:
        return f"{n // KIB} KiB"
    return f"{n} bytes"


def bounded_lines(fh: IO[bytes], max_line_bytes: int) -> Iterator[bytes | bytearray | None]:
    """Each line of ``fh`` with its newline (the last one may lack it), or None for a line
    longer than ``max_line_bytes`` (newline not counted). A line is read in pieces of
    :data:`_PIECE`; one past the limit is read past and never held whole, and a long line
    is handed over as the buffer it was read into (no copy): memory stays within the
    limit plus one piece whatever the file holds."""
    while piece := fh.readline(_PIECE):
        if piece.endswith(b"\n") or len(piece) < _PIECE:  # the common case: one read
            yield piece if len(piece) - piece.endswith(b"\n") <= max_line_bytes else None
            continue
        line: bytearray | None = bytearray(piece)
        del piece
        while more := fh.readline(_PIECE):
            if line is not None:
                line += more
                if len(line) - line.endswith(b"\n") > max_line_bytes:
                    line = None  # let it go before reading on
            if more.endswith(b"\n"):
                break
        yield line


def regular_file_size(path: str | os.PathLike[str], what: str) -> int:
    """The size of ``path`` after checking it is a regular, readable file (for inputs a
    library opens itself, such as a checkpoint for ``torch.load``)."""
    with open_input(path, what) as fh:
        return os.fstat(fh.fileno()).st_size


__all__ = [
    "TOML_MAX_BYTES",
    "TOML_MAX_DEPTH",
    "InputFileError",
    "InputFileMissing",
    "bounded_lines",
    "describe",
    "open_input",
    "open_input_fd",
    "read_input",
    "read_toml",
    "regular_file_size",
]
