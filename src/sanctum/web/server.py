"""The server behind ``sanctum serve``: textual-serve's, held to what a dashboard needs.

textual-serve (aiohttp) serves a page, and for each websocket runs one app process and
relays its terminal. This subclass keeps its page and relay and bounds the rest, to the
bounds :mod:`sanctum.web.policy` sets:

- every request must name one of those origins' hosts in its ``Host`` header (HTTP 403
  otherwise), so a page on another site whose name was rebound to this address (DNS
  rebinding) cannot read the dashboard's page either;
- the websocket is upgraded only for the page's own origin (``allowed_origins``): a page
  on another site, open in a browser that can reach the port, gets HTTP 403 before any
  process starts;
- the terminal a client asks for, at the start or in a resize, is clamped to
  ``MAX_COLUMNS`` x ``MAX_ROWS``;
- at most ``MAX_TABS`` tabs run at once; the next is told so in its terminal and closed
  (1013, try again later);
- a tab's process ends when its client goes, whatever it was doing: asked to quit, then
  SIGTERM, then SIGKILL, ``QUIT_SECONDS`` apart; its output is read to the end meanwhile,
  so a process blocked writing to a client that left cannot outlive it;
- a malformed message from a client is ignored, never a traceback; what a tab's process
  writes to stderr reaches the server's terminal escaped, its last 64 KiB only.

Imported only by the ``serve`` command's run, once the serve extra is known installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shlex
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from aiohttp import WSCloseCode, WSMsgType, hdrs, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager
from textual_serve.server import Server

from sanctum.formatting import visible, visible_lines
from sanctum.web.policy import (
    MAX_MESSAGE_BYTES,
    MAX_TABS,
    QUIT_SECONDS,
    STDERR_KEPT,
    origin_key,
    query_size,
    resize_size,
    tabs_full_message,
)

_POLL_SECONDS = 0.05
_SCHEMES = ("http", "https")
PAGE_FOLDER = Path(__file__).parent / "page"
"""The page each tab loads: textual-serve's, saying what it waits for until the dashboard
draws, and fetching nothing from other sites."""
_READY_LINES = 10
"""Lines a tab's process may print before textual's ``__GANGLION__`` (as textual-serve)."""


class TabProcess(AppService):
    """One tab's dashboard process: started without a shell, ended when its client goes."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        write_bytes: Callable[[bytes], Awaitable[None]],
        write_str: Callable[[str], Awaitable[None]],
        close: Callable[[], Awaitable[object]],
        download_manager: DownloadManager,
        quit_seconds: float = QUIT_SECONDS,
    ) -> None:
        super().__init__(
            shlex.join(argv),
            write_bytes=write_bytes,
            write_str=write_str,
            close=close,  # type: ignore[arg-type]  # aiohttp's close returns a bool
            download_manager=download_manager,
        )
        self.argv = list(argv)
        self.quit_seconds = quit_seconds
        self._client_gone = False

    @property
    def pid(self) -> int | None:
        """The process id, once started."""
        return None if self._process is None else self._process.pid

    async def _open_app_process(
        self, width: int = 80, height: int = 24
    ) -> asyncio.subprocess.Process:
        environment = self._build_environment(width=width, height=height)
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def stop(self) -> None:
        """End the process, whatever it is doing: quit, then SIGTERM, then SIGKILL."""
        task, process = self._task, self._process
        if task is None or process is None:
            return
        self._task = None
        self._client_gone = True
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.send_meta({"type": "quit"}), self.quit_seconds)
        for end in (process.terminate, process.kill):
            if await self._exited(self.quit_seconds):
                break
            with contextlib.suppress(ProcessLookupError):
                end()
        await self._exited(None)
        # the relay reads the process's output to its end, so the pipes close with it
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), self.quit_seconds)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        if self._stdin is not None:
            self._stdin.close()

    async def _exited(self, limit: float | None) -> bool:
        """Whether the process has exited, waiting up to ``limit`` seconds (None: until it
        has). The exit status is polled: ``Process.wait`` also waits for its pipes."""
        assert self._process is not None
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        while self._process.returncode is None:
            if deadline is not None and loop.time() >= deadline:
                return False
            await asyncio.sleep(_POLL_SECONDS)
        return True

    async def run(self) -> None:
        """Relay the process's packets to the client until its output ends; after the client
        has gone, read on and drop them."""
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        stdout, stderr = process.stdout, process.stderr
        tail = bytearray()

        async def read_stderr() -> None:
            while chunk := await stderr.read(4096):
                tail.extend(chunk)
                del tail[:-STDERR_KEPT]

        stderr_task = asyncio.create_task(read_stderr())
        try:
            if await self._started(stdout):
                with contextlib.suppress(asyncio.IncompleteReadError):
                    await self._relay(stdout)
            else:
                print("sanctum: a tab's dashboard did not start", file=sys.stderr, flush=True)
            while await stdout.read(65536):  # what is left, so the pipe closes
                pass
        except ConnectionError:
            pass
        finally:
            if not self._client_gone:  # the process ended on its own: so does the tab
                await self._close_client()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(stderr_task), self.quit_seconds)
            stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stderr_task
        if tail:
            text = tail.decode("utf-8", "replace")
            print(visible_lines(text.splitlines()), file=sys.stderr, flush=True)

    async def _started(self, stdout: asyncio.StreamReader) -> bool:
        for _ in range(_READY_LINES):
            line = await stdout.readline()
            if not line:
                return False
            if line == b"__GANGLION__\n":
                return True
        return False

    async def _relay(self, stdout: asyncio.StreamReader) -> None:
        handlers = {b"D": self.on_data, b"M": self.on_meta, b"P": self.on_packed}
        while True:
            header = await stdout.readexactly(5)
            payload = await stdout.readexactly(int.from_bytes(header[1:], "big"))
            handler = handlers.get(header[:1])
            if handler is None or self._client_gone:
                continue
            try:
                await handler(payload)
            except (ConnectionError, RuntimeError):  # the client went while we wrote
                self._client_gone = True

    async def _close_client(self) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self.remote_close()


class SanctumServer(Server):
    """textual-serve's server with the origin check, the size and tab caps, and tabs that
    end with their client (see the module's docstring)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        host: str,
        port: int,
        title: str,
        public_url: str,
        origins: frozenset[str],
        max_tabs: int = MAX_TABS,
        quit_seconds: float = QUIT_SECONDS,
    ) -> None:
        super().__init__(
            shlex.join(argv),
            host=host,
            port=port,
            title=title,
            public_url=public_url,
            templates_path=PAGE_FOLDER,
        )
        self.argv = list(argv)
        self.origins = origins
        self.max_tabs = max_tabs
        self.quit_seconds = quit_seconds
        self.tabs: dict[web.WebSocketResponse, TabProcess] = {}
        self._open = 0
        """Tabs admitted and not yet ended (their process included)."""

    def initialize_logging(self) -> None:
        """aiohttp's and textual-serve's complaints (a malformed request, a client gone) as
        one escaped line each, never a traceback; no access log (``serve`` prints its own
        lines, and a request's headers never reach the terminal)."""
        for name in ("aiohttp", "textual-serve"):
            logger = logging.getLogger(name)
            logger.handlers[:] = [_OneLine()]
            logger.setLevel(logging.WARNING)
            logger.propagate = False

    async def on_startup(self, app: web.Application) -> None:
        """No banner: ``serve`` prints its own lines."""

    async def on_shutdown(self, app: web.Application) -> None:
        """Close every tab, so each handler ends its process before the server stops."""
        for websocket in list(self.tabs):
            with contextlib.suppress(ConnectionError, RuntimeError):
                await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"server stopped")

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._check_host)
        app.on_cleanup.append(_collect)  # after the tabs' handlers have ended
        return app

    @web.middleware
    async def _check_host(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Serve only a request addressed to one of the page's own origins."""
        host = request.headers.get(hdrs.HOST, "")
        if not any(origin_key(f"{scheme}://{host}") in self.origins for scheme in _SCHEMES):
            raise web.HTTPForbidden(
                text=f"sanctum serve: refused a request for host {visible(host)!s}: this "
                "server answers only for the address it printed (give --public-url for "
                "another)\n"
            )
        return await handler(request)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is not None and origin_key(origin) not in self.origins:
            raise web.HTTPForbidden(
                text=f"sanctum serve: refused a websocket from {visible(origin)}: only the "
                "page it serves may connect (give --public-url for another address)\n"
            )
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE_BYTES)
        if self._open >= self.max_tabs:
            await websocket.prepare(request)
            with contextlib.suppress(ConnectionError, RuntimeError):
                await websocket.send_bytes(tabs_full_message(self.max_tabs).encode())
            await websocket.close(
                code=WSCloseCode.TRY_AGAIN_LATER,
                message=f"sanctum serve: {self.max_tabs} tabs open already".encode(),
            )
            return websocket
        self._open += 1
        try:
            await self._run_tab(request, websocket)
        finally:
            self._open -= 1
        return websocket

    async def _run_tab(self, request: web.Request, websocket: web.WebSocketResponse) -> None:
        width, height = query_size(request.query.get("width"), request.query.get("height"))
        tab = TabProcess(
            self.argv,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=websocket.close,
            download_manager=self.download_manager,
            quit_seconds=self.quit_seconds,
        )
        await websocket.prepare(request)  # a bad handshake: aiohttp answers 400, no tab
        self.tabs[websocket] = tab
        try:
            await tab.start(width, height)
            await _process_messages(websocket, tab)
        except asyncio.CancelledError:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await websocket.close()
        except Exception as exc:  # noqa: BLE001 - a tab that cannot start: one line, no traceback
            print(f"sanctum: a tab ended: {visible(str(exc))}", file=sys.stderr, flush=True)
            with contextlib.suppress(ConnectionError, RuntimeError):
                await websocket.close(code=WSCloseCode.INTERNAL_ERROR)
        finally:
            await tab.stop()
            del self.tabs[websocket]


class _OneLine(logging.Handler):
    """A log record as ``sanctum: serve: MESSAGE (ExceptionType)`` on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = visible(record.getMessage())
        except Exception:  # noqa: BLE001 - a record that cannot be formatted: say that much
            text = "a log record that could not be formatted"
        if record.exc_info and record.exc_info[0] is not None:
            text += f" ({record.exc_info[0].__name__})"
        print(f"sanctum: serve: {text}", file=sys.stderr, flush=True)


async def _process_messages(websocket: web.WebSocketResponse, tab: TabProcess) -> None:
    """The client's messages to the tab, until the client goes: keys, resizes (clamped),
    pings, focus; anything else, malformed or not, is ignored."""
    async for message in websocket:
        if message.type != WSMsgType.TEXT:
            continue
        try:
            envelope = json.loads(message.data)
        except ValueError:
            continue
        if not isinstance(envelope, list) or not envelope:
            continue
        kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
        if kind == "stdin" and isinstance(data, str):
            await tab.send_bytes(data.encode("utf-8", "replace"))
        elif kind == "resize" and isinstance(data, dict):
            size = resize_size(data.get("width"), data.get("height"))
            if size is not None:
                await tab.set_terminal_size(*size)
        elif kind == "ping":
            await websocket.send_json(["pong", data])
        elif kind == "blur":
            await tab.blur()
        elif kind == "focus":
            await tab.focus()


async def _collect(app: object) -> None:
    """Collect the tabs' ended dashboard processes while the event loop still runs: their
    transports, collected only after it closed, reported "Event loop is closed"."""
    import gc

    gc.collect()
