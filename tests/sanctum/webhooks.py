"""A real local webhook for the alert tests: ``http.server`` in a thread, on a free port.

It records every body it accepted, answers the statuses it is given in order (then 200),
and with ``hang`` holds every request unanswered until the test ends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECRET_PATH = "/services/T000/B000/s3cr3t-token"
"""A webhook's path, its secret: never printed."""


@dataclass
class Webhook:
    """What the server saw, and how it answers."""

    url: str
    statuses: list[int] = field(default_factory=list)
    """The next answers, in order; 200 once they run out."""
    hang: bool = False
    requests: int = 0
    accepted: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


@contextmanager
def webhook(statuses: list[int] | None = None, hang: bool = False) -> Iterator[Webhook]:
    """A webhook server for the duration of the block."""
    hook = Webhook("", list(statuses or []), hang)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                hook.requests += 1
                status = hook.statuses.pop(0) if hook.statuses else 200
            if hook.hang:
                hook.release.wait()
                return
            if status == 200:
                with lock:
                    hook.accepted.append(json.loads(body))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    hook.url = f"http://127.0.0.1:{server.server_address[1]}{SECRET_PATH}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        hook.release.set()
        server.shutdown()
        server.server_close()
