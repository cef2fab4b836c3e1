"""What both reading loops share with their UI: the pace of frames, the callbacks, the handshake.

A loop (:class:`~sanctum.live.snapshot_feed.SnapshotFeed` for one run,
:class:`~sanctum.live.board_feed.RunsFeed` for the run table) runs in a thread and hands its
owner one frozen frame at a time through :class:`FeedCallbacks`; it posts the next only once
the owner has taken the last (the UI is *free*), and naps on a wake-up the owner can set.
No Textual here: the owner is any object with these callables.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

REFRESH_SECONDS = 0.15
"""Time between two frames of a dashboard (one run or many): the trade between latency and
CPU, a frame a slot. One run's frames fall on the trainer's lines (``SnapshotFeed.taken``),
one a slot on average, up to ``FRAME_BURST`` in a row (:class:`FrameBudget`): at twenty
updates a second it gets about seven frames, not twenty. The run table draws on the slot
alone. bench/sanctum_bench.py measures the latency and the CPU this costs, and the README
gives its figures."""
TICK_SECONDS = 1.0
"""Longest time between two frames while nothing is written: STALE shows on time."""
POLL_INTERVAL = 0.02
"""Seconds between looks at a file with nothing new: bounds the tail latency."""

FRAME_BURST = 2.0
"""Frames a dashboard may draw in a row, as lines arrive (see :class:`FrameBudget`)."""


class FrameBudget:
    """When the next frame may be drawn: one a ``seconds`` on average, up to ``burst`` in
    a row (a token bucket). A slot after every frame spaces frames evenly, and lines wait
    for a slot whatever the trainer's pace; with two frames in a row allowed, frames fall
    on lines as they arrive while the budget lasts, and a line that finds none is drawn
    with the next. A budget above half the trainer's rate draws most lines as they arrive:
    at 20 updates a second and ``seconds`` 0.09 an update is on screen in 22 ms median at
    12% of a core; at the default 0.15, in 61 ms median and 117 ms p95 at 7%, where a slot
    after every frame gave 71 and 160 ms (bench/sanctum_bench.py's probe)."""

    def __init__(self, seconds: float, burst: float = FRAME_BURST) -> None:
        self.seconds = seconds
        self.burst = max(1.0, burst)
        self._credit = self.burst
        self._at: float | None = None

    def spend(self, now: float) -> float:
        """A frame is drawn at ``now``: seconds until the next may be (0: at once)."""
        if self.seconds <= 0:
            return 0.0
        credit = self._credit
        if self._at is not None:
            credit = min(self.burst, credit + (now - self._at) / self.seconds)
        self._credit, self._at = max(0.0, credit - 1), now
        return max(0.0, 1 - self._credit) * self.seconds


Severity = Literal["information", "warning", "error"]
"""How loud a notice from a reading loop is (Textual's notification severities)."""

Frame = TypeVar("Frame")


@dataclass(frozen=True)
class FeedCallbacks(Generic[Frame]):
    """How a loop talks to its owner; every callable must be safe from another thread."""

    publish: Callable[[Frame], None]
    """Receives a new frame (a snapshot, a board); the owner calls the loop's ``taken``
    once it used it."""
    notice: Callable[[str, Severity], None]
    """Receives one line for a human: a file was reset, or cannot be read at all."""
    stopped: Callable[[], bool]
    """True once the loop should end (the app is closing)."""


class Handshake:
    """The loop's side of the handshake: whether the UI is free for the next frame, and a
    wake-up that cuts a nap short."""

    def __init__(self) -> None:
        self._ui_free = threading.Event()
        self._ui_free.set()
        self._wake = threading.Event()

    def wake(self) -> None:
        """Wake the loop now (it sees at once that ``stopped`` turned true, or a request)."""
        self._wake.set()

    def _nap(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when the owner wakes the loop meanwhile."""
        self._wake.wait(seconds)
        self._wake.clear()
