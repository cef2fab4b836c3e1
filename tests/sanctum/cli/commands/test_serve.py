"""``sanctum serve``: what it serves, where, what it warns about, what it refuses, and the
dashboard drawn in a real headless Chromium (skipped, saying why, without Chromium)."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sanctum.cli import build_parser, main
from sanctum.cli.commands.serve import (
    DEFAULT_HOST,
    announcement,
    bind_problem,
    dashboard_command,
    host_name,
    port_number,
    public_url,
)
from sanctum.web.policy import is_loopback, server_url
from tests import processes
from tests.sanctum.chromium import CHROMIUM
from tests.sanctum.logs import RunLog

HAS_TEXTUAL_SERVE = importlib.util.find_spec("textual_serve") is not None
NO_TEXTUAL_SERVE = "textual-serve not installed (pip install 'sanctum-ppo[serve]')"


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on 127.0.0.1 that another socket is listening on."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


def test_defaults_bind_to_loopback_port_8000() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.run, args.host, args.port, args.public_url) == (None, "127.0.0.1", 8000, None)
    assert DEFAULT_HOST == "127.0.0.1" and is_loopback(DEFAULT_HOST)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("::1", True),
        ("localhost", True),
        ("LOCALHOST.", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("gpu-box.example.org", False),
    ],
)
def test_which_hosts_are_this_machine_only(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_the_url_to_open() -> None:
    assert server_url("127.0.0.1", 8000, "box") == "http://127.0.0.1:8000"
    assert server_url("::1", 9000, "box") == "http://[::1]:9000"
    assert server_url("0.0.0.0", 8000, "box.lan") == "http://box.lan:8000"
    assert server_url("::", 8000, "box.lan") == "http://box.lan:8000"


def test_loopback_prints_the_url_and_no_warning() -> None:
    lines = announcement(Path("runs/a/events.jsonl"), "http://127.0.0.1:8000", "127.0.0.1")
    assert lines == [
        "sanctum: serving the dashboard of runs/a/events.jsonl at http://127.0.0.1:8000",
        "Press Ctrl+C to stop.",
    ]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "gpu-box"])
def test_any_other_host_is_warned_that_there_is_no_authentication(host: str) -> None:
    lines = announcement(Path("runs/a/events.jsonl"), "http://gpu-box:8000", host)
    assert lines[-1] == (
        f"sanctum: warning: no authentication: bound to {host}, so anyone who can reach this "
        "port sees the run and can drive the dashboard; bind to 127.0.0.1 and use an SSH "
        "tunnel to keep it private"
    )


def test_each_tab_runs_the_terminal_dashboard_with_the_same_thresholds(tmp_path: Path) -> None:
    events = tmp_path / "run 'a' $HOME" / "events.jsonl"
    toml = tmp_path / "my rules.toml"
    command = dashboard_command(events, toml, "/opt/py thon/bin/python")
    assert command == [
        "/opt/py thon/bin/python",
        "-m",
        "sanctum",
        "watch",
        str(events),
        "--thresholds",
        str(toml),
    ]
    relative = dashboard_command(Path("runs/a/events.jsonl"), None, "python")
    assert relative[-1] == str(Path.cwd() / "runs/a/events.jsonl")  # tabs may start elsewhere
    strict = dashboard_command(events, None, "python", "warning")
    assert strict[-2:] == ["--fail-on", "warning"]  # the same verdict as check --fail-on


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("0", "must be between 1 and 65535, got '0'"),
        ("65536", "must be between 1 and 65535, got '65536'"),
        ("http", "must be a port number, got 'http'"),
    ],
)
def test_bad_ports(text: str, error: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=f"^{error}$"):
        port_number(text)


@pytest.mark.parametrize("text", ["", "http://box", "box:8000", "my box", "user@box"])
def test_bad_hosts(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="must be a host name or an address"):
        host_name(text)
    assert port_number("1") == 1 and port_number("65535") == 65535
    assert host_name("::1") == "::1" and host_name("gpu-box.lan") == "gpu-box.lan"


def test_public_url_is_the_address_browsers_use() -> None:
    assert public_url("https://box.example/sanctum/") == "https://box.example/sanctum"
    for bad in ("box:8000", "ftp://box", "http://my box"):
        with pytest.raises(argparse.ArgumentTypeError, match="must be an http:// or https://"):
            public_url(bad)


def test_a_port_in_use_is_found_before_the_server_starts(listening: int) -> None:
    assert bind_problem("127.0.0.1", listening) == (
        f"cannot serve on 127.0.0.1:{listening}: the port is in use; pick another with --port"
    )
    assert bind_problem("192.0.2.1", 8000) == (  # TEST-NET-1: no machine's own address
        "cannot serve on 192.0.2.1:8000: not an address of this machine"
    )


@pytest.mark.parametrize("option", [["--port", "0"], ["--host", "http://box"]])
def test_cli_bad_options_exit_2(
    option: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", str(tmp_path), *option])
    assert exit_info.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .startswith(f"sanctum serve: error: argument {option[0]}: must be ")
    )


@pytest.mark.skipif(not HAS_TEXTUAL_SERVE, reason=NO_TEXTUAL_SERVE)
def test_cli_port_in_use_is_one_line_and_exit_2(
    listening: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_finished_run(tmp_path)
    assert main(["serve", str(run), "--port", str(listening)]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"sanctum: error: cannot serve on 127.0.0.1:{listening}: the port is in use; "
        "pick another with --port\n"
    )
    assert captured.out == ""  # no URL for a server that never started


def test_cli_no_run_and_bad_thresholds_exit_2_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.startswith("sanctum: error: no run under runs/")
    toml = tmp_path / "bad.toml"
    toml.write_text("[approx_kl]\nwarnign = 0.01\n", encoding="utf-8")
    assert main(["serve", str(tmp_path), "--thresholds", str(toml)]) == 2
    assert "bad.toml" in capsys.readouterr().err


def test_cli_without_the_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "textual_serve", None)  # None: "not installed"
    monkeypatch.setitem(sys.modules, "textual_serve.server", None)
    assert main(["serve", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "sanctum: error: serving in a browser needs textual-serve: "
        "pip install 'sanctum-ppo[serve]'\n"
    )


def write_finished_run(folder: Path) -> Path:
    """A completed run of 12 healthy updates (KL 0.005) with its own run id."""
    log = RunLog(folder / "events.jsonl", run_id="browser-run-7")
    log.start()
    for update in range(12):
        log.update(update)
    log.finish()
    log.close()
    return folder


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_listening(port: int, server: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        assert server.poll() is None, f"sanctum serve exited with {server.returncode}"
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"sanctum serve is not listening on port {port}")


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header (and proof that it is one)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def live_processes(group: int) -> list[int]:
    """Processes of process group ``group`` that are still running (not zombies)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended while we looked
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


@contextlib.contextmanager
def serving(*args: str | int | Path, output: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``sanctum serve ARGS`` in its own process group (as a shell's job), killed at the end."""
    from tests.sanctum.chromium import stop_group

    with output.open("wb") as out:
        server = processes.popen(
            [sys.executable, "-m", "sanctum", "serve", *map(str, args)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield server
    finally:
        stop_group(server)


DOM = (
    "[document.body.className, document.querySelector('#terminal').className,"
    " window.innerWidth, window.innerHeight]"
)
"""textual-serve's marks that the app's bytes arrived, and the viewport's size."""


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (apt install chromium)")
@pytest.mark.skipif(sys.platform != "linux", reason="reads processes from /proc (Linux)")
@pytest.mark.skipif(not HAS_TEXTUAL_SERVE, reason=NO_TEXTUAL_SERVE)
async def test_the_dashboard_draws_in_headless_chromium(tmp_path: Path) -> None:
    """A real browser on ``sanctum serve``: the terminal in the page shows the dashboard of
    the run, under the thresholds given to serve; Ctrl+C then stops it all, exit 0."""
    from tests.sanctum.chromium import chromium_page

    run = write_finished_run(tmp_path / "run 'a' $HOME")  # the shell command quotes it
    strict = tmp_path / "strict.toml"  # KL 0.005 is critical under these: FAIL, not OK
    strict.write_text("[approx_kl]\nwarning = 0.002\ncritical = 0.004\n", encoding="utf-8")
    port, output = free_port(), tmp_path / "serve.out"
    with serving(run, "--port", port, "--thresholds", strict, output=output) as server:
        wait_listening(port, server, time.monotonic() + 60)
        async with chromium_page(tmp_path / "profile", time.monotonic() + 60) as page:
            blank = await page.screenshot(tmp_path / "blank.png")
            await page.call("Page.navigate", url=f"http://127.0.0.1:{port}/")
            wanted = ("FINISHED", "browser-run-7", "FAIL: KL", "Health", "Timeline")
            text = await page.screen_text(wanted, time.monotonic() + 60)
            dom = await page.evaluate(DOM)
            png = await page.screenshot(tmp_path / "dashboard.png")
            assert len(live_processes(server.pid)) >= 2  # the server and the tab's dashboard
            os.killpg(server.pid, signal.SIGINT)  # Ctrl+C in the server's terminal
            assert server.wait(timeout=60) == 0
        lines = text.splitlines()
        assert "FINISHED" in lines[0] and "browser-run-7" in lines[0], text
        assert lines[1].lstrip().startswith("FAIL: KL"), text
        assert "-first-byte" in dom[0] and "-connected" in dom[1]
        assert png_size(png) == (dom[2], dom[3]) == png_size(blank)
        assert len(png) > 10 * len(blank)  # a drawn dashboard, not an empty page
        served = output.read_text(encoding="utf-8")
        assert served.startswith(
            f"sanctum: serving the dashboard of {run / 'events.jsonl'} at "
            f"http://127.0.0.1:{port}\nPress Ctrl+C to stop.\n"
        )
        assert "Traceback" not in served and "warning" not in served
        deadline = time.monotonic() + 30
        while live_processes(server.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live_processes(server.pid) == []  # no dashboard left behind


def test_help_states_the_tab_cap_the_size_cap_and_the_origin_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "at most 8 tabs at once" in text
    assert "a terminal of at most 500x200" in text
    assert "the websocket only from the page's own address" in text
