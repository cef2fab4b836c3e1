"""The one way a widget gets data: a ``snapshot`` reactive holding a frozen SanctumSnapshot.

Widgets render what they are given and nothing else: no file I/O, no
aggregation, no thresholds of their own (they read ``snapshot.thresholds``). The reactive
skips the equality check (``always_update``) because comparing two snapshots field by
field would cost more than drawing them, and does not repaint by itself (``repaint=False``):
``show`` repaints what changed, so a container whose own look did not change (a border
around a table) is not drawn again with every update.
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from sanctum.formatting import visible_lines
from sanctum.model.snapshot import SanctumSnapshot


def plain(text: str) -> Text:
    """``text`` to put in a widget as it is: never read as markup (a run id or a failure
    reason such as ``KeyError: '[/]'`` must not style or break the screen), with control
    characters shown as escapes (its line breaks kept)."""
    return Text(visible_lines(text.split("\n")), end="")


class SnapshotView(Widget):
    """A widget that shows one :class:`SanctumSnapshot` at a time."""

    snapshot: reactive[SanctumSnapshot | None] = reactive(None, always_update=True, repaint=False)

    def watch_snapshot(self, snapshot: SanctumSnapshot | None) -> None:
        if snapshot is not None:
            self.show(snapshot)

    def show(self, snapshot: SanctumSnapshot) -> None:
        """Update children for ``snapshot``; widgets that only ``render`` just repaint."""
        self.refresh()


class KeyHints(Footer):
    """The footer of key hints, drawn whether or not the app has focus: Textual's own
    footer waits for focus, and a browser tab (``sanctum serve``) starts without it, so the
    keys would stay unlisted until the page is clicked."""

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose)
