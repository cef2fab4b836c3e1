"""``sanctum serve``'s websocket, driven for real: which pages may open it, the terminal a
client may ask for, the tab cap, and a tab's process ending with its client.

Most tests run the server in this process on an ephemeral port with a small stand-in for
the dashboard (it speaks textual's packet protocol and reports the terminal size it was
given), so what the server does is seen exactly; the last ones run ``sanctum serve`` itself
with the real dashboard.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sanctum.web.policy import (
    MAX_COLUMNS,
    MAX_ROWS,
    MAX_TABS,
    allowed_origins,
    origin_key,
    query_size,
    resize_size,
)
from tests import processes
from tests.sanctum.cli.commands.test_serve import free_port, wait_listening, write_finished_run

if TYPE_CHECKING:
    from collections.abc import Callable

    from aiohttp import ClientWebSocketResponse

    from sanctum.web.server import SanctumServer

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("textual_serve") is None,
        reason="textual-serve not installed (pip install 'sanctum-ppo[serve]')",
    ),
    pytest.mark.skipif(sys.platform != "linux", reason="reads processes from /proc (Linux)"),
]

LIMIT = 60.0
"""Seconds a test waits for the server or a process before failing (a hang guard)."""

STAND_IN = """
import json, os, signal, sys, time
out, inp = sys.stdout.buffer, sys.stdin.buffer
def send(kind, payload):
    out.write(kind + len(payload).to_bytes(4, "big") + payload)
    out.flush()
def size(width, height):
    send(b"D", json.dumps(["size", width, height]).encode())
out.write(b"__GANGLION__\\n")
size(int(os.environ["COLUMNS"]), int(os.environ["ROWS"]))
if sys.argv[1] == "crash":  # ends without a word, as a dashboard that crashed
    sys.stderr.write("boom \x1b[2J\\n")
    sys.exit(3)
if sys.argv[1] == "stubborn":  # deaf to quit and to SIGTERM: only SIGKILL ends it
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(60)
while len(head := inp.read(5)) == 5:
    payload = inp.read(int.from_bytes(head[1:], "big"))
    meta = json.loads(payload) if head[:1] == b"M" else {}
    if meta.get("type") == "resize":
        size(meta["width"], meta["height"])
    if meta.get("type") == "quit":
        break
"""
"""A tab's process in textual's protocol: says it started, reports its terminal size at
the start and on each resize, and quits when asked (``stubborn``: never)."""


@contextlib.asynccontextmanager
async def running(
    tmp_path: Path,
    mode: str = "polite",
    *,
    max_tabs: int = MAX_TABS,
    public_url: str | None = None,
) -> AsyncIterator[tuple[SanctumServer, int]]:
    """The server of ``sanctum serve`` in this event loop, on an ephemeral port of
    127.0.0.1, each tab running the stand-in."""
    from aiohttp import web

    from sanctum.web.server import SanctumServer

    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN, encoding="utf-8")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    url = public_url or f"http://127.0.0.1:{port}"
    server = SanctumServer(
        [sys.executable, str(script), mode],
        host="127.0.0.1",
        port=port,
        title="test",
        public_url=url,
        origins=allowed_origins("127.0.0.1", port, url),
        max_tabs=max_tabs,
        quit_seconds=0.5,
    )
    runner = web.AppRunner(await server._make_app())
    await runner.setup()
    await web.SockSite(runner, listener).start()
    try:
        yield server, port
    finally:
        await runner.cleanup()


def tab_pids(server: SanctumServer) -> list[int]:
    return [tab.pid for tab in server.tabs.values() if tab.pid is not None]


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def eventually(ready: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + LIMIT
    while not ready():
        assert time.monotonic() < deadline, f"never saw {what}"
        await asyncio.sleep(0.05)


async def next_size(ws: ClientWebSocketResponse) -> list[object]:
    """The next terminal size the stand-in reports."""
    from aiohttp import WSMsgType

    while True:
        message = await asyncio.wait_for(ws.receive(), LIMIT)
        assert message.type == WSMsgType.BINARY, message
        packet = json.loads(message.data)
        if packet[0] == "size":
            return list(packet[1:])


async def raw_upgrade(
    port: int, query: str = "", origin: str | None = None
) -> tuple[bytes, asyncio.StreamReader, asyncio.StreamWriter]:
    """A websocket handshake by hand: the status line, and the open connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET /ws{query} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), LIMIT)
    return head.split(b"\r\n", 1)[0], reader, writer


# -- origins ----------------------------------------------------------------------------


def test_origins_compare_by_scheme_host_and_port() -> None:
    assert origin_key("HTTP://LocalHost:8000") == "http://localhost:8000"
    assert origin_key("https://box.example/sanctum") == "https://box.example:443"
    assert origin_key("http://[::1]:9000") == "http://[::1]:9000"
    assert origin_key("null") is None and origin_key("file://") is None
    assert origin_key("http://box:99999") is None
    assert allowed_origins("127.0.0.1", 8000, "http://127.0.0.1:8000") == {
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "http://[::1]:8000",
    }
    assert "https://box.example:443" in allowed_origins(
        "127.0.0.1", 8000, "https://box.example/sanctum"
    )
    assert allowed_origins("10.0.0.5", 8000, "http://10.0.0.5:8000") == {"http://10.0.0.5:8000"}


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:{port}",
        "http://localhost:{port}",
        "http://[::1]:{port}",
        "https://sanctum.example",  # --public-url
        None,  # a client that is not a browser (browsers always send one)
    ],
)
async def test_the_page_own_origin_may_open_the_websocket(
    origin: str | None, tmp_path: Path
) -> None:
    async with running(tmp_path, public_url="https://sanctum.example/") as (server, port):
        status, _, writer = await raw_upgrade(port, "", origin and origin.format(port=port))
        assert status == b"HTTP/1.1 101 Switching Protocols"
        await eventually(lambda: tab_pids(server), "the tab's process")
        writer.close()


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "http://evil.example:{port}",  # a rebound name for 127.0.0.1: still not our page
        "http://127.0.0.1:{other}",
        "https://127.0.0.1:{port}",
        "null",  # a sandboxed frame or a file:// page
    ],
)
async def test_any_other_origin_is_refused_before_the_upgrade(origin: str, tmp_path: Path) -> None:
    async with running(tmp_path) as (server, port):
        foreign = origin.format(port=port, other=port + 1)
        status, reader, writer = await raw_upgrade(port, "", foreign)
        assert status == b"HTTP/1.1 403 Forbidden"
        body = await asyncio.wait_for(reader.readuntil(b"\n"), LIMIT)  # one line
        assert b"only the page it serves may connect" in body
        assert server.tabs == {} and server._open == 0
        writer.close()


async def page_status(port: int, host: str) -> bytes:
    """The status line of ``GET /`` sent to 127.0.0.1:``port`` naming ``host``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n"), LIMIT)
    writer.close()
    return head.strip()


async def test_the_page_is_served_only_for_its_own_host(tmp_path: Path) -> None:
    """A name rebound to 127.0.0.1 (DNS rebinding) reaches the port but names another host:
    the page, which holds the run's path in its title, is refused to it."""
    async with running(tmp_path, public_url="https://sanctum.example/") as (_, port):
        for own in (f"127.0.0.1:{port}", f"localhost:{port}", "sanctum.example"):
            assert await page_status(port, own) == b"HTTP/1.1 200 OK", own
        for foreign in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}", ""):
            assert await page_status(port, foreign) == b"HTTP/1.1 403 Forbidden", foreign


async def test_the_page_says_what_it_waits_for_and_fetches_nothing_from_other_sites(
    tmp_path: Path,
) -> None:
    """Until the dashboard draws, the page's box names the run and says the dashboard is
    starting; the page loads nothing from another site (an offline screenshot would wait)."""
    from aiohttp import ClientSession

    async with (
        running(tmp_path) as (_, port),
        ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}/") as response,
    ):
        assert response.status == 200
        page = await response.text()
    assert "Starting the dashboard: it replaces this box as soon as it" in page
    assert "<div>test</div>" in page  # the server's title: the run
    assert "googleapis" not in page and "Textual Application" not in page


# -- sizes ------------------------------------------------------------------------------


def test_sizes_are_clamped() -> None:
    assert (MAX_COLUMNS, MAX_ROWS) == (500, 200)
    assert query_size("10000", "10000") == (500, 200)
    assert query_size("120", "40") == (120, 40)
    assert query_size(None, "x") == (80, 24)
    assert query_size("-5", "0") == (80, 1)
    assert query_size("9" * 400, "1e9") == (80, 24)
    assert resize_size(10_000, 10_000) == (500, 200)
    assert resize_size(0, -3) == (1, 1)
    assert resize_size(True, 10) is None and resize_size(80.5, 24) is None
    assert resize_size("80", 24) is None


async def test_a_tab_gets_at_most_the_capped_terminal_at_the_start_and_on_resize(
    tmp_path: Path,
) -> None:
    import aiohttp

    async with running(tmp_path) as (_, port), aiohttp.ClientSession() as session:
        url = f"http://127.0.0.1:{port}/ws?width=10000&height=10000"
        async with session.ws_connect(url, origin=f"http://127.0.0.1:{port}") as ws:
            assert await next_size(ws) == [MAX_COLUMNS, MAX_ROWS]
            await ws.send_str(json.dumps(["resize", {"width": 10000, "height": 99999}]))
            assert await next_size(ws) == [MAX_COLUMNS, MAX_ROWS]
            for junk in ("not json", "{}", "[]", '["resize", {"width": "x", "height": 2}]'):
                await ws.send_str(junk)  # ignored, the tab goes on
            await ws.send_str(json.dumps(["stdin", {"not": "text"}]))
            await ws.send_str(json.dumps(["resize", {"width": 120, "height": 40}]))
            assert await next_size(ws) == [120, 40]


# -- a tab's process ends with its client ------------------------------------------------


@pytest.mark.parametrize("mode", ["polite", "stubborn"])
async def test_a_tab_process_ends_when_its_client_vanishes(mode: str, tmp_path: Path) -> None:
    """The client drops the connection without a word (a closed laptop lid, a killed
    browser) after asking for a 10000x10000 terminal; its process ends, even one that
    heeds neither quit nor SIGTERM."""
    async with running(tmp_path, mode) as (server, port):
        status, reader, writer = await raw_upgrade(port, "?width=10000&height=10000")
        assert status == b"HTTP/1.1 101 Switching Protocols"
        await eventually(lambda: tab_pids(server), "the tab's process")
        (pid,) = tab_pids(server)
        await asyncio.wait_for(reader.readexactly(2), LIMIT)  # its first frame arrives
        writer.transport.abort()  # no close frame: the TCP connection just goes
        await eventually(lambda: not alive(pid), f"the tab's process ({mode}) end")
        await eventually(lambda: server._open == 0, "the tab counted as closed")


async def test_a_tab_whose_process_ends_is_closed(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A dashboard that exits without saying so (a crash) closes its tab, instead of
    leaving a frozen page counted against the cap; its stderr reaches the server's
    terminal escaped."""
    import aiohttp

    async with running(tmp_path, "crash") as (server, port), aiohttp.ClientSession() as session:
        ws = await session.ws_connect(f"http://127.0.0.1:{port}/ws")
        assert await next_size(ws) == [80, 24]
        closing = await asyncio.wait_for(ws.receive(), LIMIT)
        assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        await eventually(lambda: server._open == 0, "the tab counted as closed")
        await ws.close()
    assert "boom \\x1b[2J" in capfd.readouterr().err


# -- the tab cap ----------------------------------------------------------------------------


async def test_tabs_past_the_cap_are_told_and_closed(tmp_path: Path) -> None:
    import aiohttp

    async with running(tmp_path, max_tabs=2) as (server, port), aiohttp.ClientSession() as session:
        url, origin = f"http://127.0.0.1:{port}/ws", f"http://127.0.0.1:{port}"
        first = await session.ws_connect(url, origin=origin)
        second = await session.ws_connect(url, origin=origin)
        await next_size(first), await next_size(second)
        third = await session.ws_connect(url, origin=origin)
        told = await asyncio.wait_for(third.receive(), LIMIT)
        assert told.data == (
            b"sanctum serve: 2 tabs are open already (the most it serves at once); "
            b"close one and reload this page.\r\n"
        )
        await asyncio.wait_for(third.receive(), LIMIT)  # the close
        assert third.close_code == 1013  # try again later
        assert len(tab_pids(server)) == 2  # no process was started for it
        await first.close()
        await eventually(lambda: server._open == 1, "the first tab closed")
        fourth = await session.ws_connect(url, origin=origin)
        assert await next_size(fourth) == [80, 24]
        await second.close(), await fourth.close()


# -- the real ``sanctum serve`` -----------------------------------------------------------


def children(pid: int) -> list[int]:
    """Running child processes of ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def environment(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    pairs = (item.decode("utf-8", "replace").split("=", 1) for item in raw if b"=" in item)
    return dict(pairs)


@contextlib.contextmanager
def serve_process(*args: str | int | Path) -> Iterator[subprocess.Popen[bytes]]:
    server = processes.popen(
        [sys.executable, "-m", "sanctum", "serve", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield server
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate()


async def test_sanctum_serve_refuses_strangers_caps_the_terminal_and_ends_a_vanished_tab(
    tmp_path: Path,
) -> None:
    """The real command and dashboard: a foreign page is refused, a 10000x10000 tab gets a
    500x200 dashboard, whose process ends when the tab's connection drops; Ctrl+C then
    stops the server, exit 0, nothing left behind."""
    run = write_finished_run(tmp_path / "run")
    port = free_port()
    with serve_process(run, "--port", port) as server:
        await asyncio.to_thread(wait_listening, port, server, time.monotonic() + LIMIT)
        status, _, writer = await raw_upgrade(port, "", "http://evil.example")
        assert status == b"HTTP/1.1 403 Forbidden"
        writer.close()
        assert children(server.pid) == []
        status, reader, writer = await raw_upgrade(
            port, "?width=10000&height=10000", f"http://localhost:{port}"
        )
        assert status == b"HTTP/1.1 101 Switching Protocols"
        await eventually(lambda: children(server.pid), "the tab's dashboard")
        (pid,) = children(server.pid)
        size = environment(pid)
        assert (size["COLUMNS"], size["ROWS"]) == (str(MAX_COLUMNS), str(MAX_ROWS))
        await asyncio.wait_for(reader.readexactly(2), LIMIT)  # the dashboard draws
        writer.transport.abort()
        await eventually(lambda: not alive(pid), "the dashboard's end")
        server.send_signal(signal.SIGINT)
        out, err = await asyncio.to_thread(server.communicate, timeout=LIMIT)
    assert server.returncode == 0, err
    assert b"Traceback" not in out + err


BAD_RUNS = [
    "missing",
    "fifo",
    "folder",
    "device",
    "not a log",
    "a note without a newline",
    "binary",
    "one endless line",
    "thresholds missing",
    "thresholds folder",
]


@pytest.mark.parametrize("case", BAD_RUNS)
def test_a_bad_run_or_thresholds_file_is_one_line_and_exit_2_before_listening(
    case: str, tmp_path: Path
) -> None:
    run = write_finished_run(tmp_path / "run") / "events.jsonl"
    thresholds: list[str] = []
    if case == "missing":
        run = tmp_path / "nowhere" / "events.jsonl"
    elif case == "fifo":
        run = tmp_path / "pipe.jsonl"
        os.mkfifo(run)
    elif case == "folder":
        run = tmp_path / "folder.jsonl"
        run.mkdir()
    elif case == "device":
        run = Path(os.devnull)
    elif case == "one endless line":
        run = tmp_path / "endless.jsonl"
        run.write_bytes(b"x" * (17 * 1024 * 1024))  # past the 16 MiB line limit
    elif case == "not a log":
        run = tmp_path / "notes.txt"
        run.write_text("dear diary\nnothing to see\n", encoding="utf-8")
    elif case == "a note without a newline":  # no complete line: not a run about to start
        run = tmp_path / "note.txt"
        run.write_text("dear diary", encoding="utf-8")
    elif case == "binary":
        run = tmp_path / "image.png"
        run.write_bytes(b"\x89PNG\r\x1a\x00\x00\x00\rIHDR")
    elif case == "thresholds missing":
        thresholds = ["--thresholds", str(tmp_path / "none.toml")]
    elif case == "thresholds folder":
        thresholds = ["--thresholds", str(tmp_path)]
    port = free_port()
    done = processes.run(
        [sys.executable, "-m", "sanctum", "serve", str(run), "--port", str(port), *thresholds],
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # no URL: nothing ever listened
    (line,) = done.stderr.splitlines()
    assert line.startswith("sanctum: error: ") and "Traceback" not in done.stderr


JUNK_REQUESTS = [
    b"\x1b]0;pwned\x07\x1b[2J not http\r\n\r\n",
    b"GET /\x1b[2J HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /ws?width=99999999999999999999 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
    b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",  # no key: no handshake
    b"GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: \x1b]0;pwned\x07\r\n\r\n",
]


async def test_malformed_requests_get_an_http_error_and_the_server_terminal_no_traceback(
    tmp_path: Path,
) -> None:
    run = write_finished_run(tmp_path / "run")
    port = free_port()
    with serve_process(run, "--port", port) as server:
        await asyncio.to_thread(wait_listening, port, server, time.monotonic() + LIMIT)
        for request in JUNK_REQUESTS:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            status = await asyncio.wait_for(reader.readline(), LIMIT)
            assert status.startswith((b"HTTP/1.0 4", b"HTTP/1.1 4", b"HTTP/1.1 200")), status
            writer.close()
        assert children(server.pid) == []  # no tab for a request that is not one
        server.send_signal(signal.SIGINT)
        out, err = await asyncio.to_thread(server.communicate, timeout=LIMIT)
    assert server.returncode == 0
    assert b"Traceback" not in err and b"\x1b" not in out + err
    assert all(line.startswith(b"sanctum: ") for line in err.splitlines()), err


def test_a_log_not_written_yet_is_served(tmp_path: Path) -> None:
    """An empty log (a run about to start) is served: the dashboard waits for its lines."""
    run = tmp_path / "run" / "events.jsonl"
    run.parent.mkdir()
    run.touch()
    port = free_port()
    with serve_process(run, "--port", port) as server:
        wait_listening(port, server, time.monotonic() + LIMIT)
        server.send_signal(signal.SIGINT)
        assert server.wait(LIMIT) == 0
