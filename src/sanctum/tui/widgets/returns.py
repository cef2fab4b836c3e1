"""EpisodeReturnPanel: is the policy getting better? Mean return, its range, and its trend.

Fed only by rollouts that finished an episode; until one does, it says so instead of
showing a zero return. Where two figures do not fit on one line (80x24) the second takes a
line of its own, never a wrap that cuts a figure: the panel grows a line and the KL chart
above gives it up. Its lines are drawn as strips (no Rich layout), and a new update repaints
only the lines it changed: the panel is redrawn with every update.
"""

from __future__ import annotations

from functools import cached_property

from textual.strip import Strip

from sanctum.model.snapshot import SanctumSnapshot
from sanctum.text.panels import returns_lines, returns_title
from sanctum.tui.widgets.base import SnapshotView
from sanctum.tui.widgets.display import LineCache


class EpisodeReturnPanel(SnapshotView):
    """Return statistics of the finished episodes."""

    @cached_property
    def _picture(self) -> LineCache[str]:
        return LineCache.of_text()

    def on_mount(self) -> None:
        self.border_title = "Episode return"

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._picture.clear()

    def on_resize(self) -> None:
        self._picture.clear()

    def show(self, snapshot: SanctumSnapshot) -> None:
        title = returns_title(snapshot)
        if self.border_title != title:
            self.border_title = title
        drawn = self._picture.lines
        lines = self._lines(snapshot, max(1, self.content_size.width))
        if drawn is None or len(drawn) != len(lines):  # a line more or less: laid out again
            self._picture.clear()
            self.refresh(layout=True)
        else:
            self._picture.show(self, lines)

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        snapshot = self.snapshot
        return 1 if snapshot is None else len(self._lines(snapshot, max(1, width)))

    def render_line(self, y: int) -> Strip:
        return self._picture.line(self, y, self._drawn)

    def _drawn(self) -> list[str]:
        snapshot = self.snapshot
        if snapshot is None:
            return [""]
        return self._lines(snapshot, max(1, self.content_size.width))

    @staticmethod
    def _lines(snapshot: SanctumSnapshot, width: int) -> list[str]:
        return returns_lines(snapshot, width, line_width=width)
