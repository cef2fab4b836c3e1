"""``sanctum serve``: the same dashboard in a browser, one dashboard process per tab.

textual-serve runs a command for each browser connection and relays its terminal over a
websocket; this module builds that command (``python -m sanctum watch RUN``, so the
browser shows exactly what the terminal shows), checks the run and where it may listen,
says where to point a browser, and starts the server of :mod:`sanctum.web.server` held to
the bounds of :mod:`sanctum.web.policy`: the websocket only from the page's own origin, a
terminal of at most ``MAX_COLUMNS`` x ``MAX_ROWS``, at most ``MAX_TABS`` tabs, and a tab's
process ended when its client goes. The server has no authentication: on a loopback address (the
default) only this machine reaches it; bound anywhere else, anyone who can reach the port
sees the run and drives a dashboard process, so it says so every time. Everything that can
be wrong (the run, the thresholds file, the host, a port in use, the missing extra) is
reported before the server starts.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final

from sanctum.cli.command import Command, thresholds_file
from sanctum.exits import EXIT_OK
from sanctum.formatting import visible, visible_lines
from sanctum.health.thresholds_toml import resolve_thresholds
from sanctum.reports.scan import no_run_started, not_a_run
from sanctum.run_files import UsageError, resolve_run
from sanctum.web.policy import (
    MAX_COLUMNS,
    MAX_ROWS,
    MAX_TABS,
    allowed_origins,
    is_loopback,
    server_url,
)
from telemetry.eventlog import MAX_LINE_BYTES, open_reader
from telemetry.events import RunStarted
from telemetry.files import open_input

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds
    from sanctum.web.server import SanctumServer

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8000
INSTALL_HINT: Final = "pip install 'sanctum-ppo[serve]'"
RUN_PROBE_BYTES: Final = 1024 * 1024
"""How much of RUN is read before serving, to find its ``run_started``."""


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


HELP: Final = "the dashboard in a browser (needs the serve extra)"
DESCRIPTION: Final = (
    "Serve the dashboard of RUN over HTTP: each browser tab runs its own "
    "dashboard. Without RUN, the newest run under ./runs when the server starts. There "
    "is no authentication: keep the default loopback host and reach a remote machine "
    "through an SSH tunnel."
)
LIMITS: Final = (
    f"Limits: at most {MAX_TABS} tabs at once (the next is told so and closed); "
    f"a terminal of at most {MAX_COLUMNS}x{MAX_ROWS}; the websocket only from the page's "
    "own address (http://HOST:PORT, on loopback also 127.0.0.1, localhost and [::1]) "
    "or --public-url; a tab's dashboard ends when its tab closes."
)


def _add_arguments(serve: argparse.ArgumentParser) -> None:
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


def dashboard_command(
    events: Path, thresholds: Path | None, python: str, fail_on: str | None = None
) -> list[str]:
    """The command each browser tab runs (no shell): the terminal dashboard of ``events``,
    with the same ``--thresholds`` and ``--fail-on`` (so it gives the run the same verdict)."""
    words = [python, "-m", "sanctum", "watch", str(events.absolute())]
    if thresholds is not None:
        words += ["--thresholds", str(resolve_thresholds(thresholds).absolute())]
    if fail_on is not None:
        words += ["--fail-on", fail_on]
    return words


def check_run(events: Path) -> None:
    """Refuse, before anything listens, a RUN that is not the event log of a run: missing,
    not a regular file (a folder, a FIFO, a device), unreadable, or with no ``run_started``
    among the lines of its first MiB. A log with no complete line yet, shorter than a line
    may be and begun as a JSON object (or empty), is served (a run about to start: the
    dashboard waits for its first line); a partial first line that is not the start of an
    object (a note without a newline, a binary file) is refused.
    Raises EventLogError, InputFileError or UsageError."""
    reader = open_reader(events)
    batch = reader.read_new(RUN_PROBE_BYTES)  # the reader's own checks: regular files only
    if any(isinstance(event, RunStarted) for event in batch.events):
        return
    if reader.line_no:
        probed = reader.offset < reader.size  # only the first MiB was read
        raise UsageError(no_run_started(events, reader.line_no, reader.skipped, probed))
    if reader.size >= MAX_LINE_BYTES:
        found = f"no complete line in its first {MAX_LINE_BYTES // 1024**2} MiB"
    elif _begins_as_an_object(events):
        return
    else:
        found = "its first line does not begin as a JSON object"
    raise UsageError(not_a_run(events, found))


def _begins_as_an_object(events: Path) -> bool:
    """Whether the file's first bytes, past white space, are nothing yet or ``{``."""
    with open_input(events, "event log") as fh:
        head = fh.read(RUN_PROBE_BYTES).lstrip()
    return head[:1] in (b"", b"{")


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
    """Serve the dashboard of ``events`` until Ctrl+C; raise UsageError (or EventLogError)
    when it cannot, before anything listens."""
    server_class = _server_class()
    check_run(events)
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
        origins=allowed_origins(host, port, url),
    )
    print(visible_lines(announcement(events, url, host)), flush=True)
    try:
        server.serve()
    except KeyboardInterrupt:  # before the server's own handler was in place
        pass
    except OSError as exc:  # another process took the port after the probe
        raise UsageError(_bind_message(host, port, exc)) from None
    return EXIT_OK


def _server_class() -> type[SanctumServer]:
    """The server of :mod:`sanctum.web.server` (textual-serve's, bounded)."""
    try:
        import aiohttp  # noqa: F401
        import textual_serve.server  # noqa: F401
    except ImportError:
        raise UsageError(f"serving in a browser needs textual-serve: {INSTALL_HINT}") from None
    from sanctum.web.server import SanctumServer

    return SanctumServer


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    """Each tab's dashboard judges with the same options: the files, not the parsed table."""
    return serve(
        resolve_run(args.run),
        thresholds_file(args),
        args.host,
        args.port,
        args.public_url,
        getattr(args, "fail_on", None),  # SUPPRESS: absent
    )


COMMAND = Command("serve", HELP, _add_arguments, _run, description=DESCRIPTION, epilog=LIMITS)
