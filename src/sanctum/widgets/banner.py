"""StatusBanner: the two lines that answer "is my run alive, and is it healthy?".

Top line: connection state, run id, environment, latest update, elapsed time. Bottom
line: the verdict of the one rule table, KL (3 decimals, trend arrow, ``!`` past warning),
progress and throughput. Colours come from CSS classes named after the connection state
and the health level, so the stylesheet, not this code, decides what red means. When the
dashboard runs its own trainer (``ppo train``), what the log cannot say is shown here too:
the trainer process died (TRAINER DOWN, its exit code and last stderr line), or it is
being stopped.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Label, Static

from sanctum.health import Level
from sanctum.renderables import (
    ARROWS,
    format_count,
    format_duration,
    format_value,
    progress_bar,
)
from sanctum.snapshot import Connection, SanctumSnapshot
from sanctum.supervisor import TrainerExit
from sanctum.widgets.base import SnapshotView, plain
from sanctum.widgets.display import (
    BANNER_KL_DECIMALS,
    KL_METRIC,
    LEVEL_CLASSES,
    level_class,
    set_one_class,
)

CONNECTION_MARK = {
    Connection.WAITING: "◌",
    Connection.LIVE: "●",
    Connection.STALE: "◐",
    Connection.FINISHED: "■",
    Connection.FAILED: "✖",
    Connection.INTERRUPTED: "■",
}
CONNECTION_CLASSES = (*(f"connection-{c.value}" for c in Connection), "connection-down")


def connection_text(snapshot: SanctumSnapshot) -> str:
    """``● LIVE``, ``◐ STALE · silent 0:42``, ``✖ FAILED``..."""
    state = snapshot.connection
    text = f"{CONNECTION_MARK[state]} {state.value.upper()}"
    last = snapshot.run.last_event_ts
    if state is Connection.STALE and last is not None:
        text += f" · silent {format_duration(snapshot.now - last)}"
    return text


def trainer_down_text(ended: TrainerExit) -> tuple[str, str]:
    """Connection and run labels for a trainer that died: ``✖ TRAINER DOWN``, why."""
    last = ended.stderr_tail[-1] if ended.stderr_tail else "nothing on stderr"
    return "✖ TRAINER DOWN", f"{ended.describe()}: {last}"


def run_text(snapshot: SanctumSnapshot, path: Path) -> str:
    """Run id and environment; while waiting, which file is awaited; after a failure, why."""
    run = snapshot.run
    if snapshot.connection is Connection.WAITING:
        return f"waiting for {path}…"
    parts = [run.run_id or "(no run id)"]
    if run.env_id:
        parts.append(run.env_id)
    if run.reason and snapshot.connection in (Connection.FAILED, Connection.INTERRUPTED):
        parts.append(run.reason)
    return "  ".join(parts)


def clock_text(snapshot: SanctumSnapshot, replay_speed: float | None = None) -> str:
    """``update 42  3:12``: the latest update index and the elapsed time (run time in a
    replay, which says so: ``replay ×4  update 42  3:12``)."""
    update = "update —" if snapshot.update is None else f"update {snapshot.update}"
    text = f"{update}  {format_duration(snapshot.run.elapsed(snapshot.now))}"
    return text if replay_speed is None else f"replay ×{replay_speed:g}  {text}"


def kl_text(snapshot: SanctumSnapshot) -> str:
    """``KL 0.041↑!``: value, trend arrow, and ``!`` once KL is at warning or worse."""
    metric = snapshot.metric(KL_METRIC)
    if metric.value is None:
        return "KL —"
    alarm = "!" if metric.level >= Level.WARNING else ""
    arrow = ARROWS[metric.direction].strip()
    return f"KL {format_value(metric.value, BANNER_KL_DECIMALS)}{arrow}{alarm}"


def steps_text(snapshot: SanctumSnapshot) -> str:
    """``12,345/100,000 steps  2,345 sps`` (total and rate only when known)."""
    run = snapshot.run
    if run.global_step is None and run.total_steps is None:
        return ""
    steps = format_count(run.global_step)
    if run.total_steps is not None:
        steps += f"/{format_count(run.total_steps)}"
    rate = run.steps_per_second
    sps = "" if rate is None or not math.isfinite(rate) else f"  {rate:,.0f} sps"
    return f"{steps} steps{sps}"


class ProgressText(Static):
    """A text progress bar that fills whatever width the layout gives it."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"progress--done", "progress--todo"}
    fraction: reactive[float | None] = reactive(None)

    def render(self) -> Text:
        if self.fraction is None:
            return Text("")
        percent = f" {self.fraction:4.0%}"
        bar = progress_bar(self.fraction, max(0, self.size.width - len(percent)))
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
            run.update(plain(problem))

    def show(self, snapshot: SanctumSnapshot) -> None:
        if self.trainer_down is None:
            self._set_connection(
                connection_text(snapshot), f"connection-{snapshot.connection.value}"
            )
            if self.problem is None:
                self._set_run(run_text(snapshot, self.path))
        self.query_one("#clock", Label).update(clock_text(snapshot, self.replay_speed))
        verdict = self.query_one("#verdict", Label)
        verdict.update(plain(f" {snapshot.verdict} "))
        set_one_class(verdict, LEVEL_CLASSES, level_class(snapshot.health.worst))
        kl = self.query_one("#kl", Label)
        kl.update(kl_text(snapshot))
        set_one_class(kl, LEVEL_CLASSES, level_class(snapshot.metric(KL_METRIC).level))
        self.query_one("#progress", ProgressText).fraction = snapshot.run.progress
        self.query_one("#steps", Label).update(steps_text(snapshot))

    def _set_connection(self, text: str, css_class: str) -> None:
        connection = self.query_one("#connection", Label)
        connection.update(plain(text))
        set_one_class(connection, CONNECTION_CLASSES, css_class)

    def _set_run(self, text: str, *, problem: bool = False) -> None:
        run = self.query_one("#run", Label)
        run.update(plain(text))
        run.set_class(problem, "problem")
