"""``sanctum serve``: the same dashboard in a browser, one dashboard process per tab.

textual-serve runs a command for each browser connection and relays its terminal over a
websocket; this module only builds that command (``python -m sanctum watch RUN``, so the
browser shows exactly what the terminal shows), checks where it may listen, and says where
to point a browser. The server has no authentication: on a loopback address (the default)
only this machine reaches it; bound anywhere else, anyone who can reach the port sees the
run and drives a dashboard process, so it says so every time. Everything that can be
wrong (the run, the thresholds file, the host, a port in use, the missing extra) is
reported before the server starts.
"""

from __future__ import annotations

import argparse
import errno
import gc
import ipaddress
import shlex
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from sanctum.exits import EXIT_OK
from sanctum.formatting import visible, visible_lines
from sanctum.runs import UsageError

if TYPE_CHECKING:
    from textual_serve.server import Server

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000
INSTALL_HINT: Final = "pip install 'sanctum-ppo[serve]'"
_WILDCARDS: Final = frozenset({"0.0.0.0", "::"})


def port_number(text: str) -> int:
    """argparse type of ``--port``: a TCP port, 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be between 1 and 65535, got {text!r}")
    return value


def host_name(text: str) -> str:
    """argparse type of ``--host``: a host name or an address, without scheme or port."""
    if not text or any(c.isspace() or c in "/@" for c in text):
        raise argparse.ArgumentTypeError(f"must be a host name or an address, got {text!r}")
    if ":" in text and not _is_ip(text):
        raise argparse.ArgumentTypeError(
            f"must be a host name or an address, got {text!r} (give the port with --port)"
        )
    return text


def public_url(text: str) -> str:
    """argparse type of ``--public-url``: an http(s) URL."""
    if not text.startswith(("http://", "https://")) or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"must be an http:// or https:// URL, got {text!r}")
    return text.rstrip("/")


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """The ``serve`` subcommand's arguments."""
    serve = sub.add_parser(
        "serve",
        prog="sanctum serve",
        parents=[common],
        help="the dashboard in a browser (needs the serve extra)",
        description="Serve the dashboard of RUN over HTTP: each browser tab runs its own "
        "dashboard. Without RUN, the newest run under ./runs when the server starts. There "
        "is no authentication: keep the default loopback host and reach a remote machine "
        "through an SSH tunnel.",
    )
    serve.add_argument("run", nargs="?", metavar="RUN")
    serve.add_argument(
        "--host",
        type=host_name,
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only)",
    )
    serve.add_argument(
        "--port", type=port_number, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}"
    )
    serve.add_argument(
        "--public-url",
        type=public_url,
        metavar="URL",
        help="the address browsers use, when it differs from http://HOST:PORT (a proxy, a "
        "tunnel to another port)",
    )


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


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


def dashboard_command(
    events: Path, thresholds: Path | None, python: str, fail_on: str | None = None
) -> str:
    """The shell command each browser tab runs: the terminal dashboard of ``events``, with
    the same ``--thresholds`` and ``--fail-on`` (so it gives the run the same verdict)."""
    words = [python, "-m", "sanctum", "watch", str(events.absolute())]
    if thresholds is not None:
        words += ["--thresholds", str(thresholds.absolute())]
    if fail_on is not None:
        words += ["--fail-on", fail_on]
    return shlex.join(words)


def announcement(events: Path, url: str, host: str) -> list[str]:
    """What ``serve`` prints before it starts: the URL and, off loopback, the warning."""
    lines = [
        f"sanctum: serving the dashboard of {visible(str(events))} at {url}",
        "Press Ctrl+C to stop.",
    ]
    if not is_loopback(host):
        lines.append(
            f"sanctum: warning: no authentication: bound to {host}, so anyone who can reach "
            "this port sees the run and can drive the dashboard; bind to 127.0.0.1 and use "
            "an SSH tunnel to keep it private"
        )
    return lines


def bind_problem(host: str, port: int) -> str | None:
    """Why the server could not listen on host:port, or None: tried before it starts."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot serve on {host}: {exc.strerror}"
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                return _bind_message(host, port, exc)
    return None


def _bind_message(host: str, port: int, exc: OSError) -> str:
    reason = {
        errno.EADDRINUSE: "the port is in use; pick another with --port",
        errno.EACCES: "permission denied (ports below 1024 need privileges)",
        errno.EADDRNOTAVAIL: "not an address of this machine",
    }.get(exc.errno or 0, exc.strerror or str(exc))
    return f"cannot serve on {host}:{port}: {reason}"


def serve(
    events: Path,
    thresholds: Path | None,
    host: str,
    port: int,
    url: str | None = None,
    fail_on: str | None = None,
) -> int:
    """Serve the dashboard of ``events`` until Ctrl+C; raise UsageError when it cannot."""
    server_class = _server_class()
    problem = bind_problem(host, port)
    if problem is not None:
        raise UsageError(problem)
    url = url or server_url(host, port, socket.gethostname())
    server = server_class(
        dashboard_command(events, thresholds, sys.executable, fail_on),
        host=host,
        port=port,
        title=f"sanctum: {visible(str(events))}",
        public_url=url,
    )
    print(visible_lines(announcement(events, url, host)), flush=True)
    try:
        server.serve()
    except KeyboardInterrupt:  # before the server's own handler was in place
        pass
    except OSError as exc:  # another process took the port after the probe
        raise UsageError(_bind_message(host, port, exc)) from None
    return EXIT_OK


async def _collect(app: object) -> None:
    """Collect the tabs' ended dashboard processes while the event loop still runs: their
    transports, collected only after it closed, reported "Event loop is closed"."""
    gc.collect()


def _server_class() -> type[Server]:
    """textual-serve's Server, without its banner (``serve`` prints its own lines)."""
    try:
        from aiohttp import web
        from textual_serve.server import Server
    except ImportError:
        raise UsageError(f"serving in a browser needs textual-serve: {INSTALL_HINT}") from None

    class QuietServer(Server):
        async def on_startup(self, app: object) -> None:
            return None

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.on_cleanup.append(_collect)  # after the tabs' handlers have ended
            return app

    return QuietServer
