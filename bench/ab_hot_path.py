"""The hot paths of two source trees side by side, interleaved: ``emit_record_us`` and
``encode_us`` (as ``telemetry_bench.py`` measures them: a full ``ppo_update`` emitted
through the bus into the event log's writer, and encoded alone) and
``handle_ppo_update_us`` (as ``sanctum_bench.py`` does: the aggregator's ``handle`` of
decoded ``ppo_update`` events), plus the emit path stage by stage (``lib.emit_path``).

    python bench/ab_hot_path.py --a /path/to/old/checkout [--b .] [--rounds 7]
        [--events 50000] [--updates 100000]

Each round runs one fresh process per tree with ``PYTHONPATH=<tree>/src`` (this tree's
``bench/lib`` times both, so the method is the same), in A-B order on even rounds and B-A
on odd ones, so a machine that gets busier or quieter during the run loads both sides
alike; the medians over rounds are compared, and each headline's ratio round by round
(its range, and in how many rounds b was above a) says whether a gap is more than noise.
Wall time is what ``telemetry_bench.py`` reports; ``*_cpu_us`` is the same loop's process
CPU time, which another process's load inflates less. Prints each round, the medians and
``b / a``, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent

HEADLINE = ("emit_record_us", "encode_us", "handle_ppo_update_us")
"""The figures the A/B judges (b at or below a is the goal)."""


def _timed(run: Any, *args: Any) -> tuple[float, float]:
    """``run(*args)``'s wall microseconds per item as it reports them, and the process CPU
    time over the call scaled by the same ratio (CPU per item, setup included in neither)."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    per_item = run(*args)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return per_item, per_item * cpu / wall


def _handle_us(updates: int) -> tuple[float, float]:
    """``SanctumAggregator.handle`` of a run's ``updates`` decoded ``ppo_update`` events
    (after its ``run_started``, not timed), as ``sanctum_bench`` times them: wall and
    CPU microseconds per event (the aggregator imported from where the tree keeps it)."""
    from lib.payloads import started_updates

    try:
        from sanctum.health.thresholds import DEFAULT_THRESHOLDS
        from sanctum.model.aggregator import SanctumAggregator
    except ImportError:  # the layout before sanctum's packages
        from sanctum.aggregator import SanctumAggregator  # type: ignore[import-not-found,no-redef]
        from sanctum.thresholds import DEFAULT_THRESHOLDS  # type: ignore[import-not-found,no-redef]

    start, events = started_updates(updates)
    agg = SanctumAggregator(DEFAULT_THRESHOLDS)
    agg.handle(start)
    cpu0, t0 = time.process_time(), time.perf_counter()
    for event in events:
        agg.handle(event)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return wall / updates * 1e6, cpu / updates * 1e6


def worker(events: int, updates: int) -> dict[str, Any]:
    """One side's figures, in this process (whose ``PYTHONPATH`` names the tree)."""
    import telemetry
    from lib.emit_path import time_emit_record, time_encode, time_stages

    figures: dict[str, Any] = {"telemetry": str(Path(telemetry.__file__).parents[1])}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        emit, emit_cpu = _timed(time_emit_record, events, path)
        encode, encode_cpu = _timed(time_encode, events)
        stages = time_stages(events, path)
    handle, handle_cpu = _handle_us(updates)
    figures |= {
        "emit_record_us": emit,
        "encode_us": encode,
        "handle_ppo_update_us": handle,
        "emit_record_cpu_us": emit_cpu,
        "encode_cpu_us": encode_cpu,
        "handle_ppo_update_cpu_us": handle_cpu,
    }
    figures |= {f"stage_{name}_us": us for name, us in stages.items()}
    return figures


def run_side(tree: Path, events: int, updates: int) -> dict[str, Any]:
    """The figures of ``tree`` from a fresh process that imports its ``src``."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker"]
    command += ["--events", str(events), "--updates", str(updates)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    if Path(figures["telemetry"]).resolve() != (tree / "src").resolve():
        raise SystemExit(f"{tree}: imported telemetry from {figures['telemetry']} instead")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, help="the tree to compare against (a checkout)")
    parser.add_argument("--b", type=Path, default=BENCH.parent, help="default: this tree")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--events", type=int, default=50_000, help="emits and encodes")
    parser.add_argument("--updates", type=int, default=100_000, help="handle() calls")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.events, args.updates)))
        return
    if args.a is None:
        parser.error("--a is required: the checkout to compare against")
    trees = {"a": args.a.resolve(), "b": args.b.resolve()}
    rounds: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    for r in range(args.rounds):
        for side in ("a", "b") if r % 2 == 0 else ("b", "a"):
            rounds[side].append(run_side(trees[side], args.events, args.updates))
        line = "  ".join(
            f"{name} {rounds['a'][-1][name]:.2f}/{rounds['b'][-1][name]:.2f}" for name in HEADLINE
        )
        print(f"round {r + 1} (a/b): {line}", flush=True)
    names = [name for name in rounds["b"][0] if name.endswith("_us")]
    result: dict[str, Any] = {"a": str(trees["a"]), "b": str(trees["b"]), "rounds": args.rounds}
    print(f"{'figure':>28} {'median a':>9} {'median b':>9} {'b / a':>6}")
    for name in names:
        med = {
            side: statistics.median(fig[name] for fig in rounds[side])
            for side in ("a", "b")
            if name in rounds[side][0]
        }
        ratio = med["b"] / med["a"] if len(med) == 2 else None
        a_text = f"{med['a']:9.3f}" if "a" in med else f"{'-':>9}"
        print(f"{name:>28} {a_text} {med['b']:9.3f} " + (f"{ratio:6.3f}" if ratio else ""))
        result[name] = {side: round(value, 3) for side, value in med.items()}
        if ratio is not None:
            result[name]["b_over_a"] = round(ratio, 3)
    print("b / a round by round (each round's pair, run back to back):")
    for name in HEADLINE:
        paired = sorted(b[name] / a[name] for a, b in zip(rounds["a"], rounds["b"], strict=True))
        above = sum(r > 1 for r in paired)
        print(
            f"{name:>28} {paired[0]:.3f} .. {paired[-1]:.3f}, above 1 in {above} of {len(paired)}"
        )
        result[name]["b_over_a_range"] = [round(paired[0], 3), round(paired[-1], 3)]
    b_emit, b_encode = result["emit_record_us"]["b"], result["encode_us"]["b"]
    result["emit_over_encode_b"] = round(b_emit / b_encode, 2)
    print(f"emit_record_us / encode_us (b): {result['emit_over_encode_b']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
