"""Webhook destinations: where ``--notify`` posts, and what each is posted for an alert.

A destination is a URL (the alert as JSON, :class:`~sanctum.model.alerts.Alert`'s fields),
``slack:URL`` (a Slack incoming webhook: ``{"text": ...}``, with ``&``, ``<`` and ``>``
escaped as Slack asks, so no text becomes a link or a mention) or ``discord:URL`` (a
Discord webhook: ``{"content": ...}`` with ``allowed_mentions`` parsing nothing and its
markdown escaped). Every text is the alert's escaped line.

Only the scheme and host of a destination are ever printed: a webhook's path is its
secret. Light to import (``sanctum watch`` parses ``--notify`` with it); the posting
thread is :mod:`sanctum.live.notifier`.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

import msgspec

from sanctum.formatting import visible

if TYPE_CHECKING:
    from sanctum.model.alerts import Alert

Kind = Literal["json", "slack", "discord"]
NotifyLevel = Literal["warning", "critical"]

NOTIFY_TIMEOUT: Final = 10.0
"""Seconds a webhook has to answer one try."""
DISCORD_LIMIT: Final = 2000
"""The most characters of a Discord message's content."""
_DISCORD_MARKUP: Final = str.maketrans({c: "\\" + c for c in "\\*_~`|<>[]()#-"})


@dataclass(frozen=True, slots=True)
class Destination:
    """One ``--notify`` webhook."""

    kind: Kind
    url: str = field(repr=False)
    """The whole URL: a secret (a repr or a traceback never shows it)."""

    @property
    def shown(self) -> str:
        """``https://hooks.slack.com``: the scheme, host and port, all of the URL ever
        printed (its path, query and any user or password are secrets)."""
        parts = urllib.parse.urlsplit(self.url)
        port = "" if parts.port is None else f":{parts.port}"
        return visible(f"{parts.scheme}://{parts.hostname or ''}{port}")

    def body(self, alert: Alert) -> bytes:
        """The JSON this destination is posted for ``alert``."""
        match self.kind:
            case "slack":  # plain text: no markup, no link or mention, no preview
                text = alert.line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                document: object = {
                    "text": text,
                    "mrkdwn": False,
                    "unfurl_links": False,
                    "unfurl_media": False,
                }
            case "discord":  # markdown escaped, no mention parsed, embeds suppressed (4)
                content = alert.line.translate(_DISCORD_MARKUP)[:DISCORD_LIMIT]
                document = {"content": content, "allowed_mentions": {"parse": []}, "flags": 4}
            case _:  # the record as alerts.jsonl holds it: a NaN or Inf value is null
                return msgspec.json.encode(alert)
        return json.dumps(document, ensure_ascii=True).encode()


def destination(spec: str) -> Destination:
    """The destination ``--notify SPEC`` names; ValueError for anything but an http(s) URL,
    bare or after ``slack:`` or ``discord:``."""
    kind: Kind = "json"
    url = spec
    for prefix in ("slack", "discord"):
        if spec.startswith(prefix + ":"):
            kind, url = prefix, spec[len(prefix) + 1 :]
    parts = urllib.parse.urlsplit(url)
    try:
        parts.port  # noqa: B018 (read to refuse a port that is not a number)
    except ValueError:
        raise ValueError("the URL's port is not a number") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http(s) URL, or slack:URL or discord:URL")
    if any(c.isspace() for c in url) or visible(url) != url:  # a hidden character
        raise ValueError("the URL holds a space or a control character")
    return Destination(kind, url)


def wanted(level: NotifyLevel) -> Callable[[Alert], bool]:
    """Which alerts ``--notify-level`` sends: every change at ``warning``; at ``critical``
    a FAIL and the recovery after it (a WARN, and its recovery, are left out)."""
    failed: set[str] = set()

    def keep(alert: Alert) -> bool:
        if level == "warning":
            return True
        if alert.verdict == "FAIL":
            failed.add(alert.path)
            return True
        if alert.path in failed and alert.change == "recovered":
            failed.discard(alert.path)
            return True
        return False

    return keep
