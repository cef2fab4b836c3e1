"""Sanctum figures: replay throughput, summary time, memory, and live tail latency.

    python bench/sanctum_bench.py [--events 1000000] [--tail-samples 40] [--screen-only]
        [--screen-seconds 10] [--screen-warmup 2] [--screen-repeats 3] [--verl-only]

Generates realistic logs (per update: a rollout and a ppo_update with every field set,
an early stop now and then, a heartbeat every 50 updates) through the real writer, then
measures each figure in a fresh subprocess so ``ru_maxrss`` is that figure's own peak:

- replay_events_per_s: reader + aggregator over the 1M-event log, one snapshot per batch
  (as the dashboard does);
- summary_seconds_1m: ``sanctum summary`` of that log, in process (scan + document);
  ``*_cpu_*`` figures give the same in process CPU time, which other load does not inflate;
- reader_cpu_seconds_1m: the reader alone over the 1M-event log (every line decoded into
  its event, nothing folded); summary_over_reader_cpu and replay_over_reader_cpu: the
  summary's and the replay's CPU time over it (what judging costs over decoding);
- peak_rss_mb_100k / peak_rss_mb_1m: peak RSS of the replay at 100k and 1M events
  (flat = the reader is bounded and the aggregator keeps bounded history);
- tail_latency_ms_median / _p95: one line appended to a live log while SanctumApp runs
  headless (``run_test``), until ``app.snapshot`` contains that event;
- verl_tail_latency_ms_median / _max and verl_within_1s: the same with a verl ``file``
  logger's log (``{"step": N, "data": {...}}`` lines, as ``sanctum x.jsonl`` follows a
  verl job), one training record appended at a time, some after a second of silence;
  ``--verl-only`` measures these alone;
- screen_latency_ms_median / _p95 and dashboard_cpu_share: the real ``sanctum`` command in a
  pseudo-terminal (120x36) while a writer appends 20 updates/s: from an update's line
  flushed to the terminal receiving its ``update N``, and the dashboard process's CPU time
  over wall time (1.0 = a core), after ``--screen-warmup`` seconds of writing (2: the steady
  cost, not the first seconds of a dashboard that just started); ``*_10_runs``: ``sanctum``
  following ten such runs at once (bench/lib/screen.py says how). Each is the median of
  ``--screen-repeats`` measurements (3): the CPU share of one measurement varies by about
  a tenth between runs here; ``dashboard_cpu_share_range`` gives the lowest and highest.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lib.payloads import STEPS, ppo_update, rollout, started_updates
from lib.screen import measure
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.aggregator import SanctumAggregator
from sanctum.reports.summary import build_summary
from telemetry.bus import Emitter, EventBus
from telemetry.codec import encode_line
from telemetry.eventlog import EventLogReader, EventLogWriter, ReadBatch
from telemetry.events import (
    HeartbeatPayload,
    PPOUpdate,
    RunFinishedPayload,
    RunStartedPayload,
    TrainerInfo,
)
from telemetry.integrations.verl import STEP_SECONDS, VERL_KEYS

RATE = 20.0
"""Updates per second each run is written at for the on-screen figures (a fast trainer)."""


def generate(path: Path, events: int) -> None:
    """A finished run of ``events`` events written through the real writer."""
    clock = iter(range(1_700_000_000, 1_800_000_000))
    with EventLogWriter(path) as writer:
        bus = EventBus()
        bus.subscribe(writer)
        emitter = Emitter(bus, "bench-run", clock=lambda: float(next(clock)))
        emitter.emit(
            RunStartedPayload(
                trainer=TrainerInfo(name="bench"),
                env_id="CartPole-v1",
                config={"max_kl": 0.03, "total_steps": events * STEPS},
            )
        )
        written, u = 1, 0
        while written < events - 1:
            emitter.emit(rollout(u))
            emitter.emit(ppo_update(u))
            written += 2
            if u % 50 == 49 and written < events - 1:
                emitter.emit(HeartbeatPayload(global_step=(u + 1) * STEPS))
                written += 1
            u += 1
        emitter.emit(RunFinishedPayload(status="completed", updates=u))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def worker_replay(path: Path) -> dict[str, Any]:
    """Reader + aggregator, one snapshot per batch, as the dashboard's feed does."""
    t0, c0 = time.perf_counter(), time.process_time()
    agg = SanctumAggregator(DEFAULT_THRESHOLDS)
    reader = EventLogReader(path)
    events = batches = 0
    for batch in reader.batches():
        agg.handle_batch(batch)
        snap = agg.snapshot(time.time())
        events += len(batch.events)
        batches += 1
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert snap.run.status == "completed", snap.run.status
    return {
        "events": events,
        "batches": batches,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "events_per_s": events / seconds,
        "peak_rss_mb": peak_rss_mb(),
    }


def worker_reader(path: Path) -> dict[str, Any]:
    """The reader alone over the log: every line decoded into its event, nothing folded
    (the denominator of ``summary_over_reader_cpu`` and ``replay_over_reader_cpu``)."""
    t0, c0 = time.perf_counter(), time.process_time()
    events = sum(len(batch.events) for batch in EventLogReader(path).batches())
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"events": events, "seconds": seconds, "cpu_seconds": cpu, "peak_rss_mb": peak_rss_mb()}


def worker_summary(path: Path) -> dict[str, Any]:
    t0, c0 = time.perf_counter(), time.process_time()
    doc = build_summary(path, DEFAULT_THRESHOLDS)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "events": doc["run"]["events"],
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_rss_mb": peak_rss_mb(),
    }


def worker_hot_path(updates: int = 200_000) -> dict[str, Any]:
    """handle() of a run's decoded ppo_update alone (after its run_started), microseconds
    per event; then a snapshot after each new update, milliseconds."""
    start, events = started_updates(updates)
    agg = SanctumAggregator(DEFAULT_THRESHOLDS)
    agg.handle(start)
    t0 = time.perf_counter()
    for event in events:
        agg.handle(event)
    per_event = (time.perf_counter() - t0) / updates
    agg.snapshot(0.0)  # judges the updates handled above: once, not a frame's cost
    last, snapshot_seconds = events[-1], 0.0
    for i in range(1, 201):  # a frame: one more update folded, then its snapshot
        update = ppo_update(last.payload.update + i)
        agg.handle_batch(
            ReadBatch([PPOUpdate(run_id="r", seq=last.seq + i, ts=last.ts + i, payload=update)])
        )
        t0 = time.perf_counter()
        agg.snapshot(last.ts + i)
        snapshot_seconds += time.perf_counter() - t0
    return {"handle_ppo_update_us": per_event * 1e6, "snapshot_ms": snapshot_seconds / 200 * 1e3}


async def tail_latency(samples: int, verl_log: bool = False) -> list[float]:
    """ms from appending one line to the app's snapshot holding that update: a
    ``ppo_update`` to an event log, or with ``verl_log`` a training record to a verl
    ``file`` logger's log (every few lines after a second of silence)."""
    from sanctum.tui.app import SanctumApp

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        if verl_log:
            path.write_bytes(b"".join(verl_line(step) for step in range(1, 1001)))
        else:
            generate(path, 1001)
        app = SanctumApp(path, DEFAULT_THRESHOLDS)
        latencies: list[float] = []
        async with app.run_test(size=(120, 36)) as pilot:
            await _until(pilot, lambda: app.snapshot is not None)
            with path.open("ab", buffering=0) as fh:
                for i in range(samples):
                    update = 10_000 + i
                    line = verl_line(update + 1) if verl_log else event_line(update, 2001 + i)
                    pause = 1.0 if verl_log and i % 8 == 7 else 0.0
                    await pilot.pause(pause + 0.01 + (i % 7) * 0.013)  # vary the phase
                    t0 = time.perf_counter()
                    fh.write(line)
                    await _until(
                        pilot,
                        lambda u=update: app.snapshot is not None and app.snapshot.update == u,
                    )
                    latencies.append((time.perf_counter() - t0) * 1e3)
    return latencies


def event_line(update: int, seq: int) -> bytes:
    """Update ``update``'s ``ppo_update`` as the writer writes it."""
    event = PPOUpdate(run_id="bench-run", seq=seq, ts=time.time(), payload=ppo_update(update))
    return encode_line(event)


def verl_line(step: int) -> bytes:
    """Training step ``step``'s record as verl's ``file`` logger writes it: every key we
    read, a value drifting per step, and the step's time."""
    data: dict[str, Any] = {row.key: 0.1 + 0.001 * (step % 97) for row in VERL_KEYS}
    data.update({"training/global_step": step, STEP_SECONDS: 0.05})
    return json.dumps({"step": step, "data": data}, separators=(",", ":")).encode() + b"\n"


def verl_figures(samples: int) -> dict[str, Any]:
    """The verl tail latency: median, max, and whether every line showed within 1 s."""
    latencies = asyncio.run(tail_latency(samples, verl_log=True))
    return {
        "verl_tail_latency_ms_median": round(statistics.median(latencies), 1),
        "verl_tail_latency_ms_max": round(max(latencies), 1),
        "verl_tail_samples": len(latencies),
        "verl_within_1s": max(latencies) < 1000.0,
    }


async def _until(pilot: Any, condition: Any, timeout: float = 10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the app did not show the appended event within 10 s")
        await asyncio.sleep(0.001)


def in_subprocess(kind: str, path: Path | None = None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", kind] + ([str(path)] if path else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tail-samples", type=int, default=40)
    parser.add_argument(
        "--screen-seconds", type=float, default=10.0, help="length of each on-screen measurement"
    )
    parser.add_argument(
        "--screen-warmup",
        type=float,
        default=2.0,
        help="seconds of writing before each on-screen measurement (0: from the first update)",
    )
    parser.add_argument(
        "--screen-repeats",
        type=int,
        default=3,
        help="on-screen measurements of each kind; the figures are their medians",
    )
    parser.add_argument(
        "--screen-only", action="store_true", help="only the on-screen latency and CPU figures"
    )
    parser.add_argument(
        "--verl-only", action="store_true", help="only the verl log's tail latency figures"
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        fn = {"replay": worker_replay, "summary": worker_summary, "reader": worker_reader}.get(kind)
        print(json.dumps(fn(Path(rest[0])) if fn else worker_hot_path()))
        return
    figures: dict[str, Any] = {}
    if args.verl_only:
        print(json.dumps(verl_figures(args.tail_samples)))
        return
    if not args.screen_only:
        figures.update(offline_figures(args.events))
        latencies = asyncio.run(tail_latency(args.tail_samples))
        figures.update(
            tail_latency_ms_median=round(statistics.median(latencies), 1),
            tail_latency_ms_p95=round(statistics.quantiles(latencies, n=20)[-1], 1),
            tail_samples=len(latencies),
        )
        figures.update(verl_figures(args.tail_samples))
    figures.update(screen_figures(args.screen_seconds, args.screen_warmup, args.screen_repeats))
    print(json.dumps(figures))


def screen_figures(seconds: float, warmup: float, repeats: int) -> dict[str, Any]:
    """The real ``sanctum`` in a pseudo-terminal: one run, then ten, at 20 updates/s each;
    every figure the median of ``repeats`` measurements."""

    def medians(runs: int) -> dict[str, Any]:
        rows = [measure(runs, RATE, seconds, warmup=warmup) for _ in range(max(repeats, 1))]
        print(f"screen, {runs} run(s): {rows}", file=sys.stderr)
        cpu = [row["dashboard_cpu_share"] for row in rows]
        return {key: statistics.median(row[key] for row in rows) for key in rows[0]} | {
            "cpu_range": [min(cpu), max(cpu)]
        }

    one, ten = medians(1), medians(10)
    return {
        "screen_latency_ms_median": one["screen_latency_ms_median"],
        "screen_latency_ms_p95": one["screen_latency_ms_p95"],
        "dashboard_cpu_share": one["dashboard_cpu_share"],
        "dashboard_cpu_share_range": one["cpu_range"],
        "screen_latency_ms_median_10_runs": ten["screen_latency_ms_median"],
        "screen_latency_ms_p95_10_runs": ten["screen_latency_ms_p95"],
        "dashboard_cpu_share_10_runs": ten["dashboard_cpu_share"],
        "dashboard_cpu_share_range_10_runs": ten["cpu_range"],
        "screen_updates_per_second_per_run": RATE,
        "screen_warmup_seconds": warmup,
        "screen_repeats": max(repeats, 1),
    }


def offline_figures(events: int) -> dict[str, Any]:
    """Replay, summary, memory and the aggregator's hot path, each in a fresh process."""
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "100k.jsonl", Path(tmp) / "1m.jsonl"
        for path, n in ((small, events // 10), (big, events)):
            t0 = time.perf_counter()
            generate(path, n)
            print(
                f"generated {n} events, {path.stat().st_size / 1e6:.0f} MB, "
                f"{time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
        r_small, r_big = in_subprocess("replay", small), in_subprocess("replay", big)
        s_big, read_big = in_subprocess("summary", big), in_subprocess("reader", big)
        hot = in_subprocess("hot")
        print(
            f"replay 100k: {r_small}\nreplay 1m: {r_big}\nsummary 1m: {s_big}\n"
            f"reader 1m: {read_big}\nhot: {hot}",
            file=sys.stderr,
        )
        reader_cpu = read_big["cpu_seconds"]
        figures.update(
            reader_events_per_cpu_s=round(read_big["events"] / reader_cpu),
            reader_cpu_seconds_1m=round(reader_cpu, 2),
            summary_over_reader_cpu=round(s_big["cpu_seconds"] / reader_cpu, 2),
            replay_over_reader_cpu=round(r_big["cpu_seconds"] / reader_cpu, 2),
            replay_events_per_s=round(r_big["events_per_s"]),
            replay_events_per_cpu_s=round(r_big["events"] / r_big["cpu_seconds"]),
            summary_seconds_1m=round(s_big["seconds"], 2),
            summary_cpu_seconds_1m=round(s_big["cpu_seconds"], 2),
            peak_rss_mb_100k=round(r_small["peak_rss_mb"], 1),
            peak_rss_mb_1m=round(r_big["peak_rss_mb"], 1),
            summary_peak_rss_mb_1m=round(s_big["peak_rss_mb"], 1),
            handle_ppo_update_us=round(hot["handle_ppo_update_us"], 2),
            snapshot_ms=round(hot["snapshot_ms"], 3),
        )
    return figures


if __name__ == "__main__":
    main()
