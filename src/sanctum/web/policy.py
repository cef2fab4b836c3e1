"""What ``sanctum serve`` holds its server to, and where from: stdlib only.

The terminal a tab may ask for (at most :data:`MAX_COLUMNS` x :data:`MAX_ROWS`), the tabs
served at once (:data:`MAX_TABS`), how a tab's process is ended when its client goes, and
the origins whose pages may open the websocket (:func:`allowed_origins`: never the
request's own ``Host`` header). The command (:mod:`sanctum.cli.commands.serve`) reads
them to say its limits and to build its server; the server (:mod:`sanctum.web.server`)
enforces them. Both import this module; neither imports the other back.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Final
from urllib.parse import urlsplit

_WILDCARDS: Final = frozenset({"0.0.0.0", "::"})
_LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")

MAX_COLUMNS: Final = 500
MAX_ROWS: Final = 200
"""The largest terminal a tab may ask for (a 4K screen at a small font is ~480 x 135);
larger requests, at the start or in a resize, are clamped to it."""
DEFAULT_COLUMNS: Final = 80
DEFAULT_ROWS: Final = 24
MAX_TABS: Final = 8
"""Tabs served at once (each runs its own dashboard process); the next is refused."""
QUIT_SECONDS: Final = 2.0
"""After its client goes, a tab's process is asked to quit, then sent SIGTERM, then
SIGKILL, this many seconds apart."""
MAX_MESSAGE_BYTES: Final = 64 * 1024
"""The largest websocket message a client may send (keys, a resize, a ping)."""
STDERR_KEPT: Final = 64 * 1024
"""What a tab's process wrote to stderr is shown on the server's terminal, this much of it."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost)."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def server_url(host: str, port: int, this_machine: str) -> str:
    """The URL to open: ``this_machine`` stands in for a wildcard address (0.0.0.0, ::)."""
    name = this_machine if host in _WILDCARDS else host
    if ":" in name:
        name = f"[{name}]"
    return f"http://{name}:{port}"


def origin_key(url: str) -> str | None:
    """``url``'s web origin as ``scheme://host:port`` (lower case, default port filled
    in), comparable with an ``Origin`` header; None when it has none (``null``, not http)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".")
    if scheme not in ("http", "https") or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port or (443 if scheme == 'https' else 80)}"


def allowed_origins(host: str, port: int, url: str) -> frozenset[str]:
    """The origins whose pages may open the websocket: the URL ``serve`` prints (or
    ``--public-url``), ``http://HOST:PORT``, and on a loopback or wildcard host this
    machine's own names for it (127.0.0.1, localhost, [::1]). Never the request's own
    ``Host`` header, which a page on another site controls (DNS rebinding)."""
    urls = [url, server_url(host, port, socket.gethostname())]
    if is_loopback(host) or host in _WILDCARDS:
        urls += [f"http://{name}:{port}" for name in _LOOPBACK_NAMES]
    return frozenset(key for key in map(origin_key, urls) if key is not None)


def _clamp(value: int, most: int) -> int:
    return max(1, min(value, most))


def query_size(width: str | None, height: str | None) -> tuple[int, int]:
    """The terminal a tab starts with, from its URL's ``width`` and ``height``: clamped to
    MAX_COLUMNS x MAX_ROWS, 80 x 24 where missing or not a number."""
    return (
        _clamp(_to_int(width, DEFAULT_COLUMNS), MAX_COLUMNS),
        _clamp(_to_int(height, DEFAULT_ROWS), MAX_ROWS),
    )


def resize_size(width: object, height: object) -> tuple[int, int] | None:
    """The terminal a resize message asks for, clamped; None unless both are integers."""
    if type(width) is not int or type(height) is not int:  # not bool, not a float
        return None
    return _clamp(width, MAX_COLUMNS), _clamp(height, MAX_ROWS)


def _to_int(text: str | None, default: int) -> int:
    if text is None or not text.strip().isdigit() or len(text) > 9:
        return default
    return int(text)


def tabs_full_message(max_tabs: int) -> str:
    """What a tab past the cap shows in its terminal before it is closed."""
    return (
        f"sanctum serve: {max_tabs} tabs are open already (the most it serves at once); "
        "close one and reload this page.\r\n"
    )
