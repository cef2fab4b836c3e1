"""On-screen latency and CPU of ``sanctum`` in a real pseudo-terminal, while runs are written.

Each followed run gets a writer thread that appends one rollout and one ``ppo_update`` per
update at a fixed rate through the real writer, as a trainer does. The dashboard is the
real ``sanctum`` command in a pseudo-terminal of a fixed size; its output is read as the
terminal would receive it. An update counts as on screen when the terminal has been sent
``update N`` (the banner's clock: ``update 42  0:12``) for it or a later update, so
latency is from the append (flushed to the file) to the bytes that draw it. A run table
(several runs) shows ``u42`` in the run's row instead; the probe looks for either.

CPU share is the dashboard process's user + system CPU time over the measured window
divided by the window's wall time (1.0 = one full core), read with psutil.

The window opens after ``warmup`` seconds of writing (2 s by default): the steady cost of
following a run, not the first seconds of a dashboard that has just started, when its
panels grow to their widths (each growth lays the screen out again, about 10 ms) and
Python runs code paths for the first time. Latencies are taken in the window only.
``warmup=0`` measures from the first update written, as this probe did before.
"""

from __future__ import annotations

import fcntl
import math
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from lib.payloads import ppo_update, rollout
from telemetry.bus import Emitter, EventBus
from telemetry.eventlog import EventLogWriter
from telemetry.events import RunStartedPayload, TrainerInfo

WARMUP_SECONDS = 2.0
"""Seconds of writing before the measured window opens."""
UPDATE_MARK = re.compile(rb"(?:update |\bu)(\d+)\b")


@dataclass
class Writer:
    """Appends updates to one run's log at ``rate`` per second from a thread."""

    path: Path
    run_id: str
    rate: float
    start_update: int = 1000
    appended: dict[int, float] = field(default_factory=dict)
    """Update index -> ``perf_counter`` right after its line was flushed."""

    def begin(self) -> None:
        """Write ``run_started`` and a first update, so the dashboard opens on a live run."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = EventLogWriter(self.path)
        bus = EventBus()
        bus.subscribe(self._writer)
        self._emitter = Emitter(bus, self.run_id)
        self._emitter.emit(
            RunStartedPayload(
                trainer=TrainerInfo(name="bench"),
                env_id="CartPole-v1",
                config={"max_kl": 0.03, "total_steps": 10_000_000},
            )
        )
        self._emit(self.start_update - 1)

    def _emit(self, u: int) -> None:
        self._emitter.emit(rollout(u))
        self._emitter.emit(ppo_update(u))
        self.appended[u] = time.perf_counter()

    def run(self, updates: int, stop: threading.Event) -> None:
        """Append ``updates`` updates at the rate, on a fixed schedule (no drift)."""
        t0 = time.perf_counter()
        for i in range(updates):
            if stop.is_set():
                return
            delay = t0 + i / self.rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            self._emit(self.start_update + i)

    def close(self) -> None:
        self._writer.close()


class Terminal:
    """A child process in a pseudo-terminal of ``cols`` x ``rows``; output read in a thread."""

    def __init__(self, argv: list[str], cols: int, rows: int) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
        self.process = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self.master = master
        self.shown: dict[str, int] = {}
        self.seen_at: list[tuple[float, int]] = []
        """(perf_counter, highest update index drawn so far), one per new highest."""
        self.bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        highest = -1
        tail = b""
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            now = time.perf_counter()
            self.bytes += len(chunk)
            data = tail + chunk
            tail = data[-32:]
            for match in UPDATE_MARK.finditer(data):
                value = int(match.group(1))
                if value > highest:
                    highest = value
                    self.seen_at.append((now, value))

    def first_seen(self, update: int) -> float | None:
        """When an update ``>= update`` was first drawn."""
        for at, value in self.seen_at:
            if value >= update:
                return at
        return None

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._stop.set()
        self._thread.join(2)
        os.close(self.master)


def measure(
    runs: int,
    rate: float,
    seconds: float,
    cols: int = 120,
    rows: int = 36,
    extra: tuple[str, ...] = (),
    warmup: float = WARMUP_SECONDS,
) -> dict[str, float]:
    """Follow ``runs`` live runs, each written at ``rate`` updates/s for ``warmup`` and then
    ``seconds`` (the measured window), with ``sanctum RUN... *extra`` (e.g.
    ``("--refresh", "0.25")``)."""
    import statistics
    from tempfile import TemporaryDirectory

    import psutil

    with TemporaryDirectory() as tmp:
        writers = [
            Writer(Path(tmp) / f"run-{i}" / "events.jsonl", f"bench-run-{i}", rate)
            for i in range(runs)
        ]
        for writer in writers:
            writer.begin()
        targets = [str(w.path) for w in writers]
        term = Terminal([sys.executable, "-m", "sanctum", *targets, *extra], cols, rows)
        try:
            _wait_drawn(term, writers[0].start_update - 1)
            proc = psutil.Process(term.process.pid)
            stop = threading.Event()
            total = int((warmup + seconds) * rate)
            threads = [threading.Thread(target=w.run, args=(total, stop)) for w in writers]
            for thread in threads:
                thread.start()
            time.sleep(warmup)
            cpu0, t0 = proc.cpu_times(), time.perf_counter()
            first = writers[0].start_update + int(warmup * rate)
            for thread in threads:
                thread.join()
            cpu1, t1 = proc.cpu_times(), time.perf_counter()
            time.sleep(0.5)  # let the last redraw arrive
        finally:
            term.close()
            for writer in writers:
                writer.close()
        latencies = _latencies(term, writers[0], first)
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    return {
        "screen_latency_ms_median": round(statistics.median(latencies), 1),
        "screen_latency_ms_p95": round(statistics.quantiles(latencies, n=20)[-1], 1)
        if len(latencies) > 1
        else math.nan,
        "dashboard_cpu_share": round(cpu / (t1 - t0), 3),
        "updates_per_second": rate,
        "runs": runs,
        "samples": len(latencies),
    }


def _wait_drawn(term: Terminal, update: int, timeout: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout
    while term.first_seen(update) is None:
        if time.perf_counter() > deadline or term.process.poll() is not None:
            raise RuntimeError(f"the dashboard did not draw update {update} within {timeout} s")
        time.sleep(0.02)


def _latencies(term: Terminal, writer: Writer, first: int) -> list[float]:
    """Append-to-screen times of the updates from ``first`` on, in ms."""
    out = []
    for update, appended in writer.appended.items():
        if update < first:
            continue
        seen = term.first_seen(update)
        if seen is not None:
            out.append(max(0.0, seen - appended) * 1e3)
    return out or [math.nan, math.nan]
