"""TimelinePanel: the notable events of the run, newest at the bottom: start, early stops with their
reasons, anomalies, skipped lines, resets and the finish (and, under ``ppo train``, the
last stderr lines of a trainer process that died).

Times are shown relative to the start of the run (``+m:ss``), or as the update index when
the entry belongs to one, so the panel reads the same in any time zone and in a replay.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.text import Text

from sanctum.formatting import plural
from sanctum.health.levels import Level
from sanctum.model.snapshot import SanctumSnapshot, TimelineEntry
from sanctum.text.panels import entry_text
from sanctum.text.run_table import fit_middle
from sanctum.tui.widgets.base import SnapshotView


class TimelinePanel(SnapshotView):
    """The notable events that fit, newest last; colour by the entry's level."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline--warning",
        "timeline--critical",
        "timeline--healthy",
    }

    def on_mount(self) -> None:
        self.border_title = "Timeline"

    _drawn: tuple[TimelineEntry, ...] | None = None

    def show(self, snapshot: SanctumSnapshot) -> None:
        if snapshot.timeline is self._drawn or snapshot.timeline == self._drawn:
            return  # most updates add nothing notable: no redraw
        self._drawn = snapshot.timeline
        count = len(snapshot.timeline)
        self.border_subtitle = plural(count, "event") if count else ""
        self.refresh()

    def render(self) -> RenderableType:
        snapshot = self.snapshot
        if snapshot is None or not snapshot.timeline:
            return Text("nothing notable yet", style="dim")
        rows = max(1, self.content_size.height)
        text = Text(no_wrap=True, overflow="ellipsis")
        for index, entry in enumerate(snapshot.timeline[-rows:]):
            if index:
                text.append("\n")
            style = "" if entry.level is Level.PENDING else f"timeline--{entry.level.value}"
            line = entry_text(entry, snapshot.run.started_ts)
            if entry.kind == "waiting":  # a path: its end (the run and the file) stays
                line = fit_middle(line, max(1, self.content_size.width))
            text.append(line, self.get_component_rich_style(style) if style else "")
        return text
