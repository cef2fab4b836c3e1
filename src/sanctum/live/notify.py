"""Webhooks: each alert posted to where people look, from a worker thread.

A destination is a URL (the alert as JSON, :class:`~sanctum.model.alerts.Alert`'s fields),
``slack:URL`` (a Slack incoming webhook: ``{"text": ...}``, with ``&``, ``<`` and ``>``
escaped as Slack asks, so no text becomes a link or a mention) or ``discord:URL`` (a
Discord webhook: ``{"content": ...}`` with ``allowed_mentions`` parsing nothing and its
markdown escaped). Every text is the alert's escaped line.

Posting never holds up the reader: alerts go through a bounded queue to one thread, which
retries a 5xx, a 429 or a network error with doubling waits. A webhook that still fails is
reported once (by scheme and host: a webhook's path is its secret, and is never printed);
the watcher goes on. A server that never answers costs the thread its timeout per try.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

import msgspec

from sanctum.formatting import visible
from sanctum.model.alerts import Alert

Kind = Literal["json", "slack", "discord"]
NotifyLevel = Literal["warning", "critical"]

NOTIFY_TIMEOUT: Final = 10.0
"""Seconds a webhook has to answer one try."""
RETRIES: Final = 4
"""Tries after the first, for an answer worth retrying."""
BACKOFF: Final = 0.25
"""Seconds before the first retry; each next wait is twice as long."""
QUEUE_SIZE: Final = 256
"""Alerts waiting to be posted; past it an alert is dropped (and that said once)."""
DISCORD_LIMIT: Final = 2000
"""The most characters of a Discord message's content."""
_DISCORD_MARKUP: Final = str.maketrans({c: "\\" + c for c in "\\*_~`|>[]()#-"})


@dataclass(frozen=True, slots=True)
class Destination:
    """One ``--notify`` webhook."""

    kind: Kind
    url: str

    @property
    def shown(self) -> str:
        """``https://hooks.slack.com``: the scheme and host, all of the URL ever printed."""
        parts = urllib.parse.urlsplit(self.url)
        return visible(f"{parts.scheme}://{parts.hostname or ''}")

    def body(self, alert: Alert) -> bytes:
        """The JSON this destination is posted for ``alert``."""
        match self.kind:
            case "slack":
                text = alert.line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                document: object = {"text": text}
            case "discord":
                content = alert.line.translate(_DISCORD_MARKUP)[:DISCORD_LIMIT]
                document = {"content": content, "allowed_mentions": {"parse": []}}
            case _:
                document = msgspec.to_builtins(alert)
        return json.dumps(document, ensure_ascii=True, allow_nan=False).encode()


def destination(spec: str) -> Destination:
    """The destination ``--notify SPEC`` names; ValueError for anything but an http(s) URL,
    bare or after ``slack:`` or ``discord:``."""
    kind: Kind = "json"
    url = spec
    for prefix in ("slack", "discord"):
        if spec.startswith(prefix + ":"):
            kind, url = prefix, spec[len(prefix) + 1 :]
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http(s) URL, or slack:URL or discord:URL")
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


@dataclass
class Notifier:
    """Posts alerts to ``destinations`` from one worker thread (see the module docstring);
    ``say`` is the watcher's log (called from that thread too)."""

    destinations: Sequence[Destination]
    say: Callable[[str], None]
    timeout: float = NOTIFY_TIMEOUT
    retries: int = RETRIES
    backoff: float = BACKOFF
    _queue: queue.Queue[Alert | None] = field(init=False)
    _failed: set[Destination] = field(init=False, default_factory=set)
    _dropped: int = field(init=False, default=0)
    _thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self._queue = queue.Queue(QUEUE_SIZE)
        self._thread = threading.Thread(target=self._work, name="sanctum-notify", daemon=True)
        self._thread.start()

    def send(self, alert: Alert) -> None:
        """Queue ``alert`` for every destination; never blocks."""
        try:
            self._queue.put_nowait(alert)
        except queue.Full:
            self._dropped += 1
            if self._dropped == 1:
                self.say("sanctum: notify: too many alerts waiting; alerts are being dropped")

    def close(self, wait: float) -> None:
        """Post what is queued, for at most ``wait`` seconds; say what was left unsent."""
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=wait)
        self._thread.join(wait)
        if self._thread.is_alive():
            left = self._queue.qsize()
            self.say(f"sanctum: notify: gave up waiting for the webhooks ({left} alerts queued)")

    def _work(self) -> None:
        while (alert := self._queue.get()) is not None:
            for dest in self.destinations:
                self._post(dest, alert)

    def _post(self, dest: Destination, alert: Alert) -> None:
        body = dest.body(alert)
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            problem, again = self._try(dest, body)
            if not problem or not again:
                break
        if problem and dest not in self._failed:
            self._failed.add(dest)
            self.say(
                f"sanctum: notify {dest.shown}: {problem}; the watcher goes on (further "
                "failures of this webhook are not reported)"
            )

    def _try(self, dest: Destination, body: bytes) -> tuple[str, bool]:
        """One post: ("", _) when it was taken, else (why, whether to try again)."""
        request = urllib.request.Request(
            dest.url,
            data=body,
            headers={"Content-Type": "application/json", "User-Agent": "sanctum"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                answer.read()
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code}", exc.code >= 500 or exc.code == 429
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return visible(f"no answer ({type(exc).__name__}: {reason})"), True
        return "", False
