"""StatusBanner: the two lines that answer "is my run alive, and is it healthy?".

Top line: connection state, run id, environment, latest update, elapsed time. Bottom
line: the run's verdict (``sanctum check``'s; while the run is unfinished, its verdict so
far after the verdict at the latest update: ``now OK · run FAIL: KL 22x``, so a spike
that has passed stays in sight), KL (3 decimals, trend arrow, ``!`` past warning),
progress and throughput. A banner too narrow for its bottom line (80x24) gives way before
it cuts: the progress bar first, then the step total, the step count and the verdict at
the latest update; the run's verdict, KL and the rate stay. Colours come from CSS classes
named after the connection state and the health level, so the stylesheet, not this code,
decides what red means. When the dashboard runs its own trainer (``ppo train``), what the
log cannot say is shown here too: the trainer process died (TRAINER DOWN, its exit code
and last stderr line), or it is being stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Label, Static

from sanctum.charts.glyphs import progress_bar
from sanctum.live.trainer_process import TrainerExit
from sanctum.metrics import KL_METRIC
from sanctum.model.snapshot import Connection, SanctumSnapshot
from sanctum.text.panels import (
    clock_text,
    connection_text,
    kl_text,
    now_verdict_text,
    run_text,
    run_verdict_text,
    steps_text,
)
from sanctum.tui.widgets.base import SnapshotView, plain
from sanctum.tui.widgets.display import (
    LEVEL_CLASSES,
    level_class,
    set_one_class,
    set_text,
)

CONNECTION_CLASSES = (*(f"connection-{c.value}" for c in Connection), "connection-down")


def trainer_down_text(ended: TrainerExit) -> tuple[str, str]:
    """Connection and run labels for a trainer that died: ``✖ TRAINER DOWN``, why."""
    last = ended.stderr_tail[-1] if ended.stderr_tail else "nothing on stderr"
    return "✖ TRAINER DOWN", f"{ended.describe()}: {last}"


def outer_width(label: Static, text: str) -> int:
    """Cells ``label`` takes on its line showing ``text``: the text, padding and margin."""
    return cell_len(text) + label.styles.gutter.width + label.styles.margin.width


class ProgressText(Static):
    """A text progress bar that fills whatever width the layout gives it; repainted only
    when what it draws changes (the fraction moves with every update, the bar rarely)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"progress--done", "progress--todo"}
    fraction: reactive[float | None] = reactive(None, repaint=False)

    def _parts(self, fraction: float | None) -> tuple[str, str]:
        """The bar and the percentage ``fraction`` draws at the current width."""
        if fraction is None:
            return "", ""
        percent = f" {fraction:4.0%}"
        return progress_bar(fraction, max(0, self.size.width - len(percent))), percent

    def watch_fraction(self, old: float | None, new: float | None) -> None:
        if self._parts(old) != self._parts(new):
            self.refresh()

    def on_resize(self) -> None:
        self.refresh()

    def render(self) -> Text:
        bar, percent = self._parts(self.fraction)
        done = bar.rstrip("░")
        return Text.assemble(
            (done, self.get_component_rich_style("progress--done")),
            (bar[len(done) :], self.get_component_rich_style("progress--todo")),
            percent,
        )


class StatusBanner(SnapshotView):
    """Connection, run, verdict, KL, progress and speed, in two lines."""

    paused: reactive[bool] = reactive(False)
    """The display is frozen (reading goes on); shown as a marker."""
    problem: reactive[str | None] = reactive(None)
    """Why the log cannot be read at all; replaces the run line for good."""
    trainer_down: reactive[TrainerExit | None] = reactive(None)
    """The dashboard's own trainer process died; overrides the connection state."""
    stopping: reactive[bool] = reactive(False)
    """The dashboard asked its trainer to stop and waits for it; shown as a marker."""

    def __init__(
        self, path: Path, replay_speed: float | None = None, *, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.path = path
        self.replay_speed = replay_speed

    def compose(self) -> ComposeResult:
        with Horizontal(classes="banner-line"):
            yield Label(id="connection")
            yield Label(id="run")
            yield Label("⏸ PAUSED", id="paused")
            yield Label("⏹ STOPPING: saving a checkpoint…", id="stopping")
            yield Label(id="clock")
        with Horizontal(classes="banner-line"):
            yield Label(id="now-verdict")
            yield Label(id="verdict")
            yield Label(id="kl")
            yield ProgressText(id="progress")
            yield Label(id="steps")

    def watch_paused(self, paused: bool) -> None:
        self.query_one("#paused", Label).display = paused

    def watch_stopping(self, stopping: bool) -> None:
        self.query_one("#stopping", Label).display = stopping

    def watch_trainer_down(self, ended: TrainerExit | None) -> None:
        if ended is not None:
            connection, why = trainer_down_text(ended)
            self._set_connection(connection, "connection-down")
            self._set_run(why, problem=True)

    def watch_problem(self, problem: str | None) -> None:
        run = self.query_one("#run", Label)
        run.set_class(problem is not None, "problem")
        if problem is not None:
            set_text(run, plain(problem))

    def show(self, snapshot: SanctumSnapshot) -> None:
        if self.trainer_down is None:
            self._set_connection(
                connection_text(snapshot), f"connection-{snapshot.connection.value}"
            )
            if self.problem is None:
                self._set_run(run_text(snapshot, self.path))
        set_text(self.query_one("#clock", Label), clock_text(snapshot, self.replay_speed))
        now = self.query_one("#now-verdict", Label)
        now_text = now_verdict_text(snapshot)
        verdict = self.query_one("#verdict", Label)
        verdict_text = f" {run_verdict_text(snapshot)} "
        kl = self.query_one("#kl", Label)
        kl_line = kl_text(snapshot)
        progress = self.query_one("#progress", ProgressText)
        steps = self.query_one("#steps", Label)
        room = (  # for the steps and the verdict now: what the rest needs is kept
            self.size.width
            - outer_width(verdict, verdict_text)
            - outer_width(kl, kl_line)
            - outer_width(progress, "")
        )
        if now_text is not None:
            now_text = f"{now_text} ·"
            shortest = outer_width(steps, steps_text(snapshot, 0))
            if self.size.width and outer_width(now, now_text) + shortest > room:
                now_text = None  # the run's verdict stays; this one gives way
            else:
                room -= outer_width(now, now_text)
        if now.display != (now_text is not None):  # a layout only when it comes or goes
            now.display = now_text is not None
        if now_text is not None:
            set_text(now, plain(now_text))
            set_one_class(now, LEVEL_CLASSES, level_class(snapshot.health.worst))
        set_text(verdict, plain(verdict_text))
        set_one_class(verdict, LEVEL_CLASSES, level_class(snapshot.run_verdict.level))
        set_text(kl, kl_line)
        set_one_class(kl, LEVEL_CLASSES, level_class(snapshot.metric(KL_METRIC).level))
        progress.fraction = snapshot.run.progress
        width = room - steps.styles.gutter.width - steps.styles.margin.width
        text = steps_text(snapshot, width if self.size.width else None)
        if cell_len(text) < steps.content_size.width:  # a shorter form: its room goes back
            steps.update(plain(text), layout=True)
        else:  # as text, never markup: the unit is the log's
            set_text(steps, plain(text))

    def on_resize(self) -> None:
        if self.snapshot is not None:
            self.show(self.snapshot)

    def _set_connection(self, text: str, css_class: str) -> None:
        connection = self.query_one("#connection", Label)
        set_text(connection, plain(text))
        set_one_class(connection, CONNECTION_CLASSES, css_class)

    def _set_run(self, text: str, *, problem: bool = False) -> None:
        run = self.query_one("#run", Label)
        set_text(run, plain(text))
        run.set_class(problem, "problem")
