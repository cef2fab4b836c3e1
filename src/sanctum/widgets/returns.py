"""EpisodeReturnPanel: is the policy getting better? Mean return, its range, and its trend.

Fed only by rollouts that finished an episode; until one does, it says so instead of
showing a zero return.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from sanctum.renderables import ARROWS, format_count, format_value, sparkline
from sanctum.snapshot import SanctumSnapshot
from sanctum.widgets.base import SnapshotView


def returns_lines(snapshot: SanctumSnapshot, width: int) -> list[str]:
    """Mean return with its trend and range, a sparkline of the longer series, counts."""
    run = snapshot.run
    if run.episode_return is None:
        return ["no episode finished yet", f"episodes {format_count(run.episodes)}"]
    low, high = format_value(run.episode_return_min), format_value(run.episode_return_max)
    best = max(run.episode_return_series, default=run.episode_return)
    return [
        f"mean {format_value(run.episode_return)} {ARROWS[snapshot.return_direction]}"
        f"  ({low}…{high})",
        sparkline(run.episode_return_series, width),
        f"episodes {format_count(run.episodes)}  length {format_value(run.episode_length)}"
        f"  best {format_value(best)}",
    ]


class EpisodeReturnPanel(SnapshotView):
    """Return statistics of the finished episodes."""

    def on_mount(self) -> None:
        self.border_title = "Episode return"

    def render(self) -> RenderableType:
        if self.snapshot is None:
            return ""
        lines = returns_lines(self.snapshot, max(1, self.content_size.width))
        return Text("\n".join(lines[: max(1, self.content_size.height)]), no_wrap=True)
