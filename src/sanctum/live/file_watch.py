"""Whether a followed log may hold news, told by one ``stat`` instead of a read.

A reading loop looks at its log every few milliseconds while a trainer writes, and far
more often than anything is written. A read of a log with nothing new still opens it,
checks it is the same file and closes it (about 0.1 ms); a ``stat`` costs a few
microseconds. So a loop reads only when the file differs from how it was when a read last
found nothing: another size, modification or change time, or another file at the path (a
replaced or recreated log), or a file where there was none, or none where there was one.
Any of these reads again, so nothing a read would report (an append, a truncation, a
replacement, a partial line growing) is missed; a read that moved the reader's offset
without an event (blank lines, part of a too-long line) does not count as finding
nothing, since the next read goes on from there.
"""

from __future__ import annotations

import os
from pathlib import Path

Look = tuple[int, int, int, int, int] | None
"""What one ``stat`` says of a file: device, inode, size, modification and change time in
nanoseconds; None when there is no file to look at."""


def look(path: Path) -> Look:
    """The file at ``path`` as a ``stat`` sees it now."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class FileWatch:
    """The look of one log when a read last found nothing in it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._quiet: Look | tuple[()] = ()
        """The look before the last read that found nothing; ``()`` until there was one."""

    def before_read(self) -> tuple[bool, Look]:
        """(whether to read now, the look to hand to :meth:`after_read`)."""
        now = look(self.path)
        return now != self._quiet, now

    def after_read(self, seen: Look, found: bool) -> None:
        """A read that began after ``seen`` was taken found news (``found``) or nothing:
        until the file looks different from ``seen``, reading again would find nothing."""
        self._quiet = () if found else seen
