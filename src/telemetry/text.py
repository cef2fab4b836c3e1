"""Text from outside, made safe to show: the one escaping function of the project.

Every string that did not come from our own code (a run id or a reason in a log, a file
or folder name, a checkpoint's values, a third-party library's error message) is shown
through :func:`visible` before it reaches a terminal, a text report, the dashboard or an
XML file, and through :func:`json_visible` in a JSON document. Which characters are hidden
is decided by Unicode category, not by a hand-kept list, so no code point is forgotten:

- ``Cc`` controls: C0 (``ESC`` starts the terminal commands that retitle or clear it),
  ``DEL`` and the C1 block;
- ``Cf`` format characters: bidi marks and isolates (text that reads differently from what
  it is), zero-width characters, the soft hyphen, U+061C, U+2060-2064, the tag characters
  of the U+E0000 block, the byte-order mark;
- ``Cs`` surrogates (a lone one cannot even be written as UTF-8), ``Co`` private use;
- ``Cn``: non-characters (U+FFFE, U+FFFF, U+FDD0-U+FDEF, the last two of every plane, not
  allowed in XML) and code points this Python's Unicode tables do not know;
- ``Zl`` and ``Zp``: the line and paragraph separators, which break a line where none is.

Each is written as a Python-style escape (``\\x1b``, ``\\u202e``, ``\\U000e0001``), so it is
seen, never obeyed. The rest, every letter, mark, symbol and space of every script, is
unchanged. Standard library only (``telemetry`` imports nothing heavier).
"""

from __future__ import annotations

import unicodedata
from typing import Final

HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""The Unicode general categories :func:`visible` escapes, every code point in them."""


def is_hidden(char: str) -> bool:
    """True when ``char`` (one code point) must be shown escaped."""
    return unicodedata.category(char) in HIDDEN_CATEGORIES


def escape_char(char: str) -> str:
    """The escape that shows ``char``: ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` from outside, safe to show anywhere: each hidden character (see the module
    docstring) written as an escape, the rest unchanged."""
    if text.isprintable():  # fast path: isprintable() is False for every hidden category
        return text
    return "".join(escape_char(c) if is_hidden(c) else c for c in text)


def visible_lines(lines: list[str]) -> str:
    """Lines of a text report joined by newlines, each made :func:`visible` (the report's
    own newlines are the only control characters it keeps)."""
    return "\n".join(visible(line) for line in lines)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON spells a code point beyond the BMP as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_visible(json_text: str) -> str:
    """A JSON document's text with every hidden character written as a JSON ``\\u``
    escape: the same strings to a JSON reader, nothing a terminal acts on, and valid
    UTF-8 even for a lone surrogate. Newlines and indentation outside strings are the
    document's own (a JSON encoder escapes every control character inside a string)."""
    if json_text.isprintable():
        return json_text
    return "".join(_json_escape(c) if c not in "\n\t\r" and is_hidden(c) else c for c in json_text)


def plural(count: int, word: str) -> str:
    """``1 update``, ``3 updates``: how every count is written, by ``ppo`` and ``sanctum``."""
    return f"{count} {word}{'' if count == 1 else 's'}"
