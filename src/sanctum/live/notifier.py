"""Posting alerts to webhooks from a worker thread, so that posting never holds up reading.

Alerts go through a bounded queue to one thread, which posts each to every
:class:`~sanctum.live.notify.Destination` and retries a 5xx, a 429 or a network error with
doubling waits. A webhook that still fails is reported once (by scheme and host only); the
watcher goes on. A server that never answers costs the thread its timeout per try, never
the reader. Standard library only (``urllib.request``).
"""

from __future__ import annotations

import contextlib
import http.client
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from sanctum.formatting import visible
from sanctum.live.notify import NOTIFY_TIMEOUT, Destination
from sanctum.model.alerts import Alert

RETRIES: Final = 4
"""Tries after the first, for an answer worth retrying."""
BACKOFF: Final = 0.25
"""Seconds before the first retry; each next wait is twice as long."""
QUEUE_SIZE: Final = 256
"""Alerts waiting to be posted; past it an alert is dropped (and that said once)."""


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

    @property
    def patience(self) -> float:
        """The longest one alert can take to post, every retry included: how long a
        finished watcher waits for the last alerts."""
        return (self.retries + 1) * self.timeout + self.backoff * float(2**self.retries - 1)

    def close(self, wait: float) -> None:
        """Post what is queued, for at most ``wait`` seconds; say what was left unsent."""
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=wait)
        self._thread.join(wait)
        if self._thread.is_alive():
            left = self._queue.qsize()
            self.say(
                f"sanctum: notify: gave up waiting for the webhooks ({left} alerts not posted)"
            )

    def _work(self) -> None:
        while (alert := self._queue.get()) is not None:
            for dest in self.destinations:
                try:
                    self._post(dest, alert)
                except Exception as exc:  # noqa: BLE001 (one alert's failure, never the thread's)
                    self._failing(dest, f"could not post ({type(exc).__name__})")

    def _post(self, dest: Destination, alert: Alert) -> None:
        body = dest.body(alert)
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            problem, again = self._try(dest, body)
            if not problem or not again:
                break
        if problem:
            self._failing(dest, problem)

    def _failing(self, dest: Destination, problem: str) -> None:
        """Say once that ``dest`` fails (by its scheme, host and port only)."""
        if dest not in self._failed:
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
            exc.close()
            return f"HTTP {exc.code}", exc.code >= 500 or exc.code == 429
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            return visible(f"no answer ({type(exc).__name__}: {reason})"), True
        except (http.client.HTTPException, ValueError) as exc:  # a garbled answer: its
            return f"a bad answer ({type(exc).__name__})", True  # text may hold the URL
        return "", False
