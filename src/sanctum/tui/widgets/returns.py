"""EpisodeReturnPanel: is the policy getting better? Mean return, its range, and its trend.

Fed only by rollouts that finished an episode; until one does, it says so instead of
showing a zero return. Where two figures do not fit on one line (80x24) the second takes a
line of its own, never a wrap that cuts a figure: the panel grows a line and the KL chart
above gives it up.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from sanctum.text.panels import returns_lines, returns_title
from sanctum.tui.widgets.base import SnapshotView


class EpisodeReturnPanel(SnapshotView):
    """Return statistics of the finished episodes."""

    def on_mount(self) -> None:
        self.border_title = "Episode return"

    def render(self) -> RenderableType:
        if self.snapshot is None:
            return ""
        title = returns_title(self.snapshot)
        if self.border_title != title:
            self.border_title = title
        width = max(1, self.content_size.width)
        return Text("\n".join(returns_lines(self.snapshot, width, line_width=width)))
