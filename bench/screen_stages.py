"""Where the live dashboard's CPU goes, stage by stage, while runs are written.

    python bench/screen_stages.py [--runs 1] [--seconds 8] [--warmup 2]

The real ``sanctum`` follows ``--runs`` runs in a pseudo-terminal (120x36), each written at
20 updates/s as ``sanctum_bench.py``'s on-screen figures are (``bench/lib/screen.py``),
with the meter of ``bench/lib/stage_meter`` loaded into it: after ``--warmup`` seconds of
writing it measures ``--seconds`` seconds, then prints each stage's CPU seconds, its share
of the process's CPU and its share of a core (tail/read, fold, snapshot, verdict, widgets,
render/layout; the rest is the event loop, timers, the collector and the terminal's
writer thread), the frames drawn, and one JSON object on the last line.

The meter wraps methods by name, Textual's private ones among them: a Textual that moved
them reports no render/layout (its time falls into the rest).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from lib.screen import Terminal, Writer, _wait_drawn

RATE = 20.0
STAGES = ("tail/read", "fold", "snapshot", "verdict", "widgets", "render/layout")
METER = Path(__file__).parent / "lib" / "stage_meter"


def measure(runs: int, seconds: float, warmup: float) -> dict[str, Any]:
    """One window of the metered dashboard following ``runs`` runs."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "stages.json"
        os.environ["SANCTUM_STAGES_OUT"] = str(out)
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(METER), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        writers = [
            Writer(Path(tmp) / f"run-{i}" / "events.jsonl", f"bench-run-{i}", RATE)
            for i in range(runs)
        ]
        for writer in writers:
            writer.begin()
        argv = [sys.executable, "-m", "sanctum", *(str(w.path) for w in writers)]
        term = Terminal(argv, 120, 36)
        try:
            _wait_drawn(term, writers[0].start_update - 1)
            stop = threading.Event()
            total = int((warmup + seconds + 0.5) * RATE)
            threads = [threading.Thread(target=w.run, args=(total, stop)) for w in writers]
            for thread in threads:
                thread.start()
            time.sleep(warmup)
            os.kill(term.process.pid, signal.SIGUSR1)
            time.sleep(seconds)
            os.kill(term.process.pid, signal.SIGUSR2)
            deadline = time.perf_counter() + 5
            while not out.exists() and time.perf_counter() < deadline:
                time.sleep(0.05)
            for thread in threads:
                thread.join()
        finally:
            term.close()
            for writer in writers:
                writer.close()
        result: dict[str, Any] = json.loads(out.read_text())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    args = parser.parse_args()
    result = measure(args.runs, args.seconds, args.warmup)
    process, wall = result["process"], result["wall"]
    stages = {stage: result["stages"].get(stage, 0.0) for stage in STAGES}
    stages["rest"] = process - sum(stages.values())
    frames = result["calls"].get("widgets", 0)
    print(
        f"{args.runs} run(s) at {RATE:g} updates/s: {process:.3f} s CPU over {wall:.1f} s "
        f"= {process / wall:.1%} of a core, {frames} frames ({frames / wall:.1f}/s), "
        f"collector {result['collector']:.3f} s"
    )
    print(f"  {'stage':<16}{'CPU s':>8}{'share':>8}{'of a core':>11}")
    for stage, spent in stages.items():
        print(f"  {stage:<16}{spent:>8.3f}{spent / process:>8.0%}{spent / wall:>11.2%}")
    figures = {
        "runs": args.runs,
        "cpu_share": round(process / wall, 4),
        "frames_per_s": round(frames / wall, 2),
        "stages_cpu_seconds": {k: round(v, 4) for k, v in stages.items()},
        "seconds": round(wall, 2),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
