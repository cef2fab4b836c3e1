"""The writer: one ``os.write`` of a complete line per event on an ``O_APPEND`` descriptor,
so a crash loses nothing already emitted and a tail never sees half a line from a live
writer."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
import time
from pathlib import Path

import msgspec

from telemetry.codec import LineEncoder
from telemetry.eventlog.errors import EventLogError, LogInUse
from telemetry.events import Event
from telemetry.text import visible


class EventLogWriter:
    """A bus sink that appends each event to ``path`` as one flushed JSON line: on an
    Emitter's bus, the line its check encoded (:meth:`write_line`; a
    :class:`~telemetry.bus.LineSink`), else the event encoded here (:meth:`write`).

    The writer holds an exclusive lock on the file (``flock``) while it is open, so two
    writers can never interleave two runs in one log: the second gets :class:`LogInUse`.
    A write that fails part-way (a full disk) is taken back, so the log never ends in a
    torn line. ``fsync_every``: also ``fsync`` at most every that many seconds (None:
    never; the OS has every line the moment ``write`` returns, so only a machine crash
    can lose it). ``reserve``: bytes held on the same disk in a hidden file beside the log
    until :meth:`release_reserve` (or close), so the last line of a run still fits when
    the disk has filled.
    """

    def __init__(
        self, path: str | os.PathLike[str], fsync_every: float | None = None, reserve: int = 0
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.name = f"eventlog:{self.path}"
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._fd)
            raise LogInUse(
                f"{visible(str(self.path))}: another process is writing this event log; pick "
                "another run id (or wait for that run to end)"
            ) from None
        self._encoder = LineEncoder()
        self._lock = threading.Lock()
        self._fsync_every = fsync_every
        self._last_fsync = time.monotonic()
        self._reserve = self.path.with_name(f".{self.path.name}.reserve")
        if reserve and stat.S_ISREG(os.fstat(self._fd).st_mode):  # never beside a device
            self._hold_reserve(reserve)

    def _hold_reserve(self, size: int) -> None:
        try:  # a disk already too full for it: no reserve, and the log works as before
            self._reserve.write_bytes(bytes(size))
        except OSError:
            self.release_reserve()

    def release_reserve(self) -> None:
        """Give the reserved bytes back to the disk (for the run's last line)."""
        with contextlib.suppress(FileNotFoundError):
            self._reserve.unlink()

    def __call__(self, event: Event) -> None:
        self.write(event)

    @property
    def size(self) -> int:
        """Bytes in the file now."""
        assert self._fd is not None
        return os.fstat(self._fd).st_size

    def moved(self) -> bool:
        """Whether ``path`` no longer names the file being written (renamed or removed:
        the lines still go to the file, wherever it is now)."""
        if self._fd is None:
            return False
        try:
            here = os.stat(self.path)
        except FileNotFoundError:
            return True
        open_file = os.fstat(self._fd)
        return (here.st_dev, here.st_ino) != (open_file.st_dev, open_file.st_ino)

    def write(self, event: Event | msgspec.Struct) -> None:
        """Append ``event``; on return the whole line is in the file. If the write fails
        part-way, the part written is removed again and the error raised."""
        with self._lock:
            fd = self._fd
            if fd is None:
                raise self._closed()
            self._append(fd, self._encoder.encode(event))

    def write_line(self, line: bytes) -> None:
        """Append ``line``, one event already encoded (the line the Emitter checked), as
        :meth:`write` appends an event's."""
        with self._lock:
            fd = self._fd
            if fd is None:
                raise self._closed()
            self._append(fd, line)

    def _closed(self) -> EventLogError:
        """What writing to a closed writer raises."""
        return EventLogError(f"{visible(str(self.path))}: event log writer is closed")

    def _append(self, fd: int, line: bytes | bytearray) -> None:
        """Write ``line`` whole to ``fd`` (the caller holds the lock): one ``os.write``, and
        only after a short one (a full disk) the rest or the part taken back."""
        written = os.write(fd, line)  # raising here, it wrote nothing: nothing to take back
        if written != len(line):
            self._finish(fd, line, written)
        if self._fsync_every is not None:
            now = time.monotonic()
            if now - self._last_fsync >= self._fsync_every:
                os.fsync(fd)
                self._last_fsync = now

    @staticmethod
    def _finish(fd: int, line: bytes | bytearray, written: int) -> None:
        """After a short write of ``written`` bytes of ``line``: write the rest (a copy: no
        view outlives it), or on failure take back what was written and raise, so the log
        never ends in a torn line but at its last whole event."""
        try:
            while written < len(line):
                written += os.write(fd, line[written:])
        except OSError:
            os.ftruncate(fd, os.fstat(fd).st_size - written)
            raise

    def close(self) -> None:
        """Close the file (fsync first when fsync was asked for). Idempotent."""
        with self._lock:
            if self._fd is None:
                return
            if self._fsync_every is not None:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
        self.release_reserve()

    def __enter__(self) -> EventLogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
