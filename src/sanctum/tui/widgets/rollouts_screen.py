"""RolloutsScreen (``r``): a token-level run's worst and best rollouts beside its health.

For runs that write ``rollouts.jsonl`` (token-level PPO): for one update (the latest in
the file, until ``[``/``]`` step to an earlier or later one; ``end`` follows the latest
again) the rollouts with the lowest and the highest ``reward_final``, as many of each as
the screen fits: each with its prompt and completion tokens, the answer against the
truth, every term of its reward, and per generated token the log-prob it was sampled
with, the sampling entropy and the critic's value. Above them, the dashboard's own
verdict and the rules that fired (the same snapshot the dashboard shows: there is one
verdict), and the ruled figures the trainer reported for that update. The file is read by
a :class:`~sanctum.live.rollouts_feed.RolloutsFeed` in a thread worker, only what was
appended since the last read, once a second while the screen is open, so a live run's
new updates appear. ``escape`` (or ``r``) returns to the dashboard.

:class:`RolloutsKey` is the ``r`` key of a run's dashboard, one home for both places that
show one: the one-run app and a run opened from the run table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Final, Protocol

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from sanctum.formatting import visible
from sanctum.health.levels import Level
from sanctum.live.pacing import TICK_SECONDS
from sanctum.live.rollouts_feed import RolloutsFeed
from sanctum.model.rollouts import (
    PER_SIDE_KEPT,
    RolloutsFrame,
    UpdateSamples,
)
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.text.rollouts import (
    STEP_ROWS,
    answer_line,
    figures_at,
    file_line,
    health_line,
    no_figures_text,
    prompt_line,
    reward_line,
    step_columns,
    update_line,
)
from sanctum.tui.widgets.base import KeyHints, SnapshotView, plain
from sanctum.tui.widgets.display import ComponentStyles, set_text
from telemetry.rollouts import ROLLOUTS_FILE
from telemetry.run_config import RunConfig

STEP_BLOCKS: Final = 3
"""Rows of per-step columns shown per rollout at most; longer completions say how many
tokens are left out (``sanctum rollouts`` prints every token)."""


class HealthStrip(SnapshotView):
    """The dashboard's verdict, the rules that fired, and the figures of the shown update
    (each coloured by its band from the stylesheet, as the health panel's table is)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"health-strip--{level.value}" for level in Level}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.update_shown: int | None = None
        self._component = ComponentStyles(self)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._component.clear()

    def render(self) -> Text:
        return Text("\n", end="").join(self._lines(max(1, self.content_size.width)))

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return len(self._lines(max(1, width)))

    def _lines(self, width: int) -> list[Text]:
        """The verdict line wrapped at spaces, then the figures packed into lines of
        ``width`` cells, never a figure split or cut (the strip grows a line instead)."""
        head = Text(health_line(self.snapshot), style="bold", end="")
        lines = list(head.wrap(self.app.console, width, overflow="fold"))
        if self.update_shown is None:
            return lines
        line = Text(f"update {self.update_shown}:", style="dim", end="")
        if not (shown := figures_at(self.snapshot, self.update_shown)):
            line.append(f" {no_figures_text(self.snapshot, self.update_shown)}", style="dim")
        for i, (figure, level) in enumerate(shown):
            gap = " " if i == 0 else "  "
            if line and cell_len(line.plain + gap + figure) > width:
                lines.append(line)
                line, gap = Text(end=""), ""
            line.append(gap + figure, style=self._component(f"health-strip--{level.value}"))
        lines.append(line)
        for text in lines:  # a figure wider than the strip: folded, never cut
            text.end = ""
        return [
            part for text in lines for part in text.wrap(self.app.console, width, overflow="fold")
        ]


def _steps_block(columns: list[tuple[str, str, str, str]], width: int) -> list[Text]:
    """The per-step table, a column per token, wrapped in blocks to ``width`` cells."""
    label = max(map(len, STEP_ROWS)) + 1
    lines: list[Text] = []
    start = 0
    while start < len(columns) and len(lines) < STEP_BLOCKS * len(STEP_ROWS):
        used, end = label, start
        while end < len(columns):
            wide = max(cell_len(c) for c in columns[end]) + 1
            if end > start and used + wide > width:
                break
            used += wide
            end += 1
        block = columns[start:end]
        widths = [max(cell_len(c) for c in col) for col in block]
        for row, name in enumerate(STEP_ROWS):
            line = Text(name.ljust(label), style="dim", end="")
            for col, w in zip(block, widths, strict=True):
                cell = col[row]
                line.append(
                    " " * (w - cell_len(cell)) + cell + " ", style="bold" if row == 0 else ""
                )
            lines.append(line)
        start = end
    if start < len(columns):
        lines.append(Text(f"… {len(columns) - start} more tokens", style="dim", end=""))
    return lines


def samples_text(
    samples: UpdateSamples, per_side: int, vocab: Sequence[str] | None, width: int
) -> Text:
    """The ``per_side`` worst and best rollouts of ``samples``, as text (never markup)."""
    out = Text(end="")
    sides = (("worst", samples.worst, "bold red"), ("best", samples.best, "bold green"))
    shown: set[int] = set()
    for name, records, style in sides:
        chosen = [r for r in records if id(r) not in shown][:per_side]
        if out:
            out.append("\n")
        out.append(f"{name} {len(chosen)} by reward_final", style=style)
        for r in chosen:
            shown.add(id(r))
            out.append("\n")
            out.append(visible(prompt_line(r, vocab)), style="bold")
            out.append("\n")
            out.append(plain(f"  {reward_line(r)}\n  {answer_line(r)}"))
            limit = max(1, width) * STEP_BLOCKS
            for line in _steps_block(step_columns(r, vocab, limit), width):
                out.append("\n")
                out.append(line)
    return out


class RolloutsScreen(Screen[None]):
    """The worst and best rollouts of one update, and the keys that choose the update."""

    DEFAULT_CSS = """
    RolloutsScreen { layout: vertical; }
    #rollouts-head { height: auto; background: $panel; padding: 0 1; }
    HealthStrip { height: auto; padding: 0 1; background: $boost; }
    #rollouts-body { height: 1fr; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,r", "close", "Back", key_display="esc"),
        Binding("left_square_bracket", "step(-1)", "Update", key_display="[]"),
        Binding("right_square_bracket", "step(1)", "Update", show=False),
        Binding("end", "latest", "Latest"),
    ]

    def __init__(self, feed: RolloutsFeed, snapshot: SanctumSnapshot | None) -> None:
        super().__init__(id="rollouts-screen")
        self.feed = feed
        self._first = snapshot
        self.vocab = None if snapshot is None else RunConfig.from_config(snapshot.run.config).vocab
        self.frame: RolloutsFrame | None = None
        """The newest frame read (None before the first read ends)."""
        self.chosen: int | None = None
        """The update shown; None: the latest (an update no longer kept: the oldest kept)."""
        self._reading = False

    def compose(self) -> ComposeResult:
        yield Static(id="rollouts-head")
        yield HealthStrip(id="rollouts-health")
        with VerticalScroll(id="rollouts-body"):
            yield Static(id="rollouts-samples")
        yield KeyHints()

    def on_mount(self) -> None:
        self.query_one(HealthStrip).snapshot = self._first
        self.set_interval(TICK_SECONDS, self._poll)
        self._poll()

    def _poll(self) -> None:
        if not self._reading:
            self._reading = True
            self._read()

    @work(thread=True, exclusive=True, name="sanctum-rollouts", group="rollouts")
    def _read(self) -> None:
        frame = self.feed.read()
        self.app.call_from_thread(self._took, frame)

    def _took(self, frame: RolloutsFrame) -> None:
        self._reading = False
        self.frame = frame
        if self.is_attached:
            self._draw()
            if frame.reading:  # a long file: read on at once
                self._poll()

    @property
    def shown(self) -> UpdateSamples | None:
        """The update on screen."""
        frame = self.frame
        if frame is None or not frame.updates:
            return None
        if self.chosen is None:
            return frame.updates[-1]
        return next(
            (u for u in frame.updates if u.update is not None and u.update >= self.chosen),
            frame.updates[-1],
        )

    def _fitting(self, samples: UpdateSamples, width: int) -> Text:
        """As many rollouts of each end as fit the body's height (at least one each)."""
        height = self.query_one("#rollouts-body").content_size.height
        for n in range(PER_SIDE_KEPT, 0, -1):
            text = samples_text(samples, n, self.vocab, width)
            if n == 1 or len(text.wrap(self.app.console, width)) <= height:
                return text
        raise AssertionError("unreachable")

    def _draw(self) -> None:
        frame = self.frame
        head = self.query_one("#rollouts-head", Static)
        body = self.query_one("#rollouts-samples", Static)
        strip = self.query_one(HealthStrip)
        if frame is None:
            set_text(head, plain(f"reading {self.feed.path}…"))
            return
        lines = [file_line(self.feed.path, frame)]
        if frame.problem is not None:
            lines.append(frame.problem)
        samples = self.shown
        if samples is None:
            set_text(head, plain("\n".join(lines)))
            set_text(body, plain("no rollouts in the file yet"))
            strip.update_shown = None
            strip.refresh(layout=True)
            return
        index = frame.updates.index(samples)
        lines.append(update_line(samples, index, frame))
        set_text(head, plain("\n".join(lines)))
        strip.update_shown = samples.update
        strip.refresh(layout=True)
        width = max(20, body.content_size.width or self.size.width - 2)
        body.update(self._fitting(samples, width))

    def on_resize(self) -> None:
        self.call_after_refresh(self._draw)

    def action_close(self) -> None:
        """Back to the dashboard."""
        self.dismiss()

    def action_step(self, steps: int) -> None:
        """Show an earlier (-1) or later (1) update; past the latest, follow the latest."""
        frame, shown = self.frame, self.shown
        if frame is None or shown is None:
            return
        last = len(frame.updates) - 1
        at = max(0, frame.updates.index(shown) + steps)
        self.chosen = None if at >= last else frame.updates[at].update
        self._draw()

    def action_latest(self) -> None:
        """Follow the latest update again."""
        self.chosen = None
        self._draw()


class RolloutsOpener:
    """Opens the rollouts screen of one run folder, keeping its feed between openings (what
    was read is not read again). The key is offered (in the footer) only while the folder
    has ``rollouts.jsonl``; pressed without it, it gives a one-line notice."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / ROLLOUTS_FILE
        self.feed: RolloutsFeed | None = None
        self.offered = self.available()
        """Whether the key is offered: the file was there at the last look (a look a tick,
        :meth:`appeared`; the footer's checks read this, not the file system)."""

    def available(self) -> bool:
        """The run folder has a rollouts file (a FIFO too: the screen says it cannot read it)."""
        return self.path.exists()

    def appeared(self) -> bool:
        """The file appeared (or went) since the last look: the offered keys change."""
        now = self.available()
        changed, self.offered = now != self.offered, now
        return changed

    def open(self, app: App[Any], snapshot: SanctumSnapshot | None) -> None:
        """Push the screen over ``app``'s dashboard, showing ``snapshot``'s health."""
        if not self.available():
            self.notice(app)
            return
        config = None if snapshot is None else RunConfig.from_config(snapshot.run.config)
        per_update = None if config is None else config.rollouts_per_update
        if self.feed is None or self.feed.per_update != per_update:
            self.feed = RolloutsFeed(self.run_dir, per_update)
        app.push_screen(RolloutsScreen(self.feed, snapshot))

    def notice(self, app: App[Any]) -> None:
        """Say, in one line, that this run has no rollouts to show."""
        app.notify(
            f"No rollouts: {visible(str(self.path))} does not exist (token-level runs write it).",
            markup=False,
        )


ROLLOUTS_BINDINGS: Final[tuple[BindingType, ...]] = (
    Binding("r", "rollouts", "Rollouts"),  # offered for a run with rollouts.jsonl,
    Binding("r", "no_rollouts", show=False),  # else a notice says there are none
)
"""The ``r`` key of a run's dashboard: the bindings of a :class:`RolloutsKey`."""


class RunDashboard(Protocol):
    """What :class:`RolloutsKey` needs of the app or screen that shows a run's dashboard."""

    rollouts: RolloutsOpener

    @property
    def app(self) -> App[Any]: ...

    @property
    def shown(self) -> SanctumSnapshot | None:
        """The snapshot the dashboard shows (the rollouts screen's health starts there)."""

    def covered(self) -> bool:
        """Another screen (a chart, a dialog, the help) is over the dashboard."""

    def refresh_bindings(self) -> None: ...


class RolloutsKey:
    """``r`` on a run's dashboard: the rollouts screen over it, offered in the footer only
    while the run folder has rollouts.jsonl, else a notice. Mixed into the app or screen of
    the dashboard (a :class:`RunDashboard`, which lists :data:`ROLLOUTS_BINDINGS`); nothing
    happens while another screen is over the dashboard."""

    def action_rollouts(self: RunDashboard) -> None:
        """Open the worst and best rollouts of a token-level run over its dashboard."""
        if not self.covered():
            self.rollouts.open(self.app, self.shown)

    def action_no_rollouts(self: RunDashboard) -> None:
        """``r`` for a run folder without rollouts.jsonl: a notice."""
        if not self.covered():
            self.rollouts.notice(self.app)

    def check_action(
        self: RunDashboard, action: str, parameters: tuple[object, ...]
    ) -> bool | None:
        """``r`` opens the rollouts screen only while the run folder has rollouts.jsonl."""
        return self.rollouts.offered if action == "rollouts" else True

    def watch_rollouts(self: RunDashboard) -> None:
        """Offer ``r`` once the file appears (a token-level trainer's first rollouts), and
        no longer once it is gone; called once a tick."""
        if self.rollouts.appeared():
            self.refresh_bindings()
