"""What the dashboard and the run table share as Textual apps: the stylesheet and title, the
callbacks a reading thread is given, its notices shown, the repaint after ``fg``, and the
objects startup made frozen out of the cycle collector.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

from textual.app import App
from textual.message import Message
from textual.worker import get_current_worker

from sanctum.formatting import visible
from sanctum.live.pacing import FeedCallbacks, Severity
from sanctum.tui.messages import ReaderNotice

Frame = TypeVar("Frame")


def freeze_startup() -> None:
    """Collect startup's garbage once, then freeze every object alive (the modules, the
    stylesheet, the widgets) out of the cycle collector, once per process: a full
    collection then walks only what was made since. A dashboard makes objects with every
    frame, so Python collects often: following a run at twenty updates a second, the
    collector took 63 ms of the dashboard's 0.68 s of CPU over 8 s, 31 ms of it one full
    collection over everything startup made; frozen, 35 ms and 5 ms. Frozen objects are
    still freed when their last reference goes; only a cycle among them would be kept."""
    if gc.get_freeze_count() == 0:
        gc.collect()
        gc.freeze()


class SanctumAppBase(App[None]):
    """A Sanctum app fed by one reading thread: the dashboard or the run table."""

    CSS_PATH = "sanctum.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012 (Textual declares it)
    """The screen's width class: the stylesheet gives a narrow screen (80x24) another layout."""
    TITLE = "Sanctum"
    ENABLE_COMMAND_PALETTE = False

    def __init__(self) -> None:
        super().__init__()
        self.notices: list[tuple[str, Severity]] = []
        """Every notice the reader posted, in order (tests read them)."""

    def on_mount(self) -> None:
        """Draw the whole screen again after SIGTSTP and SIGCONT (``fg``): the driver is
        back in the alternate screen, which the terminal shows blank, and Textual redraws
        only what changed since (nothing, for a finished run) until a key is pressed.
        Textual calls each class's ``on_mount`` along the MRO, so a subclass's own
        ``on_mount`` runs too, without calling this one. Then what startup made is frozen
        out of the cycle collector (see :func:`freeze_startup`)."""
        self.app_resume_signal.subscribe(self, lambda app: app.screen.refresh(layout=True))
        freeze_startup()

    def feed_callbacks(self, ready: Callable[[Frame], Message]) -> FeedCallbacks[Frame]:
        """The callbacks for a reading loop run by the current thread worker: each frame is
        posted as ``ready(frame)``, each notice as a :class:`ReaderNotice`, and the loop
        stops when the worker is cancelled."""
        worker = get_current_worker()

        def publish(frame: Frame) -> None:
            self.post_message(ready(frame))

        def notice(text: str, severity: Severity) -> None:
            self.post_message(ReaderNotice(text, severity))

        return FeedCallbacks(publish, notice, stopped=lambda: worker.is_cancelled)

    def on_reader_notice(self, message: ReaderNotice) -> None:
        self.notices.append((message.text, message.severity))
        # a notice names the log's path: text, never markup (a folder may be "x[/]y")
        self.notify(visible(message.text), markup=False, severity=message.severity, timeout=10)
        if message.severity == "error":
            self.reader_stopped(message.text)

    def reader_stopped(self, text: str) -> None:
        """The reader stopped on an unusable log (``text`` says why); the notice is shown."""
