"""Display settings shared by the widgets: which metric is featured, how levels look.

One home for what more than one widget needs to agree on, so the banner, the health panel
and the KL chart cannot drift apart: the featured metric, the banner's decimals for it,
and the ``level-*`` CSS classes (the stylesheet decides what each level looks like).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Generic, TypeVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.dom import DOMNode
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from sanctum.health.levels import Level

Spans = list[tuple[str, "Style | str"]]
"""One line as styled spans of text (``""``: the widget's own style)."""
LEVEL_CLASSES: Final = tuple(f"level-{level.value}" for level in Level)
"""The CSS class of each level."""


def level_class(level: Level) -> str:
    """``level-critical`` ... for ``level``."""
    return f"level-{level.value}"


def set_one_class(node: DOMNode, family: tuple[str, ...], name: str) -> None:
    """Give ``node`` exactly one class of ``family``: ``name``."""
    node.remove_class(*(c for c in family if c != name))
    node.add_class(name)


def _extent(content: object) -> tuple[int, int]:
    """(widest line in cells, lines) of a label's text."""
    lines = (content.plain if isinstance(content, Text) else str(content)).split("\n")
    return max(map(cell_len, lines)), len(lines)


def set_text(label: Static, content: str | Text) -> None:
    """Show ``content`` in ``label``, cheaply: nothing when it is unchanged, and the screen
    is laid out again only when the text no longer fits the label's width or its number
    of lines changed. A narrower text keeps the label's width until the next layout. A
    layout of this screen costs more than drawing it, and most updates only change digits.
    """
    old = label.content
    if type(old) is type(content) and old == content:
        return
    width, height = _extent(content)
    grows = width > label.content_size.width or height != _extent(old)[1]
    label.update(content, layout=grows or not label.is_mounted)


def _over(base: Style, style: Style | str) -> Style:
    return base + (Style.parse(style) if isinstance(style, str) else style)


def strips(lines: list[Spans], width: int, base: Style, as_text: bool = False) -> list[Strip]:
    """``lines`` as strips exactly ``width`` cells wide over the widget's ``base`` style:
    what a widget that draws with ``render_line`` returns, without Rich's text layout
    (a big chart or table redrawn several times a second spends most of a frame there).
    With ``as_text``, the blank after a line has the widget's background alone, no colour,
    as Textual pads a text the widget renders."""
    pad = Style(bgcolor=base.bgcolor) if as_text else base
    return [
        Strip(
            [
                Segment(text, base + Style.parse(style) if isinstance(style, str) else base + style)
                for text, style in line
            ]
        )
        .extend_cell_length(width, pad)
        .crop(0, width)
        for line in lines
    ]


class ComponentStyles:
    """A widget's ``--component`` styles, looked up once until its styles change (a lookup
    walks the stylesheet; a frame of a big widget would make hundreds)."""

    def __init__(self, widget: Widget) -> None:
        self.widget = widget
        self._styles: dict[str, Style] = {}

    def __call__(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self._styles[name] = self.widget.get_component_rich_style(name)
        return style

    def clear(self) -> None:
        """Forget them: call from the widget's ``notify_style_update`` (theme, CSS)."""
        self._styles.clear()


Line = TypeVar("Line")
"""What a widget compares to find a changed line: styled spans, or spans with style keys."""


def _as_is(lines: list[Spans]) -> list[Spans]:
    return lines


def _spans_of_text(lines: list[str]) -> list[Spans]:
    return [[(line, "")] for line in lines]


class LineCache(Generic[Line]):
    """What a strip-drawn widget shows, line by line, so a new picture repaints only the
    lines it changed (a live chart or table changes a few lines per update; repainting a
    line costs Textual as much as drawing it). ``paint`` turns lines into styled spans;
    lines are compared before it, so only changed lines are painted."""

    def __init__(self, paint: Callable[[list[Line]], list[Spans]], text: bool = False) -> None:
        self.paint = paint
        self.text = text
        """Lines of text: padded as Textual pads a text (see :func:`strips`)."""
        self.lines: list[Line] | None = None
        self.strips: list[Strip] | None = None
        self.width = 0

    @classmethod
    def of_spans(cls) -> LineCache[Spans]:
        """A cache of lines that are styled spans already."""
        return LineCache(_as_is)

    @classmethod
    def of_text(cls) -> LineCache[str]:
        """A cache of lines of plain text, in the widget's own style."""
        return LineCache(_spans_of_text, text=True)

    def clear(self) -> None:
        """Forget the picture: the next :meth:`line` draws it all (resize, new styles)."""
        self.lines = self.strips = None

    def show(self, widget: Widget, lines: list[Line]) -> None:
        """Take ``lines`` as the new picture and mark the changed lines for a repaint (all
        of them when the picture's shape changed)."""
        width = widget.content_size.width
        old, drawn = self.lines, self.strips
        if old is None or drawn is None or len(old) != len(lines) or width != self.width:
            self.clear()  # drawn again, whole, when the widget next paints
            widget.refresh()
            return
        changed = [y for y, (was, now) in enumerate(zip(old, lines, strict=True)) if was != now]
        new = strips(self.paint([lines[y] for y in changed]), width, widget.rich_style, self.text)
        for y, strip in zip(changed, new, strict=True):
            drawn[y] = strip
        self.lines = lines
        if changed:
            widget.refresh(*(Region(0, y, width, 1) for y in changed))

    def line(self, widget: Widget, y: int, draw: Callable[[], list[Line]]) -> Strip:
        """Line ``y`` as a strip, drawing the whole picture with ``draw`` when there is none."""
        if self.strips is None:
            self.width = widget.content_size.width
            if self.lines is None:
                self.lines = draw()
            self.strips = strips(
                self.paint(self.lines), max(1, self.width), widget.rich_style, self.text
            )
        if y < len(self.strips):
            return self.strips[y]
        # under a text, a blank as wide as the widget, as Textual draws one
        return Strip.blank(self.width if self.text else 0, widget.rich_style)
