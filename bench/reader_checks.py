"""CPU cost of the reader's checks beside msgspec's decode (the line is UTF-8; a rollout or
heartbeat carries no other kind's mark): decode of one chunk by the reader's
``LineDecoder`` over msgspec's plain decoder of the same types, on three mixes of a
generated log (every kind; rollouts and updates; updates only). A ratio in one process, so
it travels across machines; medians of interleaved rounds.

Run: python bench/reader_checks.py [--events 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from sanctum_bench import generate
from telemetry.codec import MAX_LINE_BYTES, line_decoder
from telemetry.events import Event

MIXES: dict[str, Callable[[bytes], bool]] = {
    "every_kind": lambda line: b'"run_started"' not in line,
    "rollouts_and_updates": lambda line: b'"rollout"' in line or b'"ppo_update"' in line,
    "updates_only": lambda line: b'"ppo_update"' in line,
}


def cpu_ms(work: Callable[[], object], repeats: int = 5) -> float:
    """The median CPU milliseconds of ``work``."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e3


def ratio(
    checked: Callable[[memoryview], object], plain: Callable[[memoryview], object], view: memoryview
) -> float:
    """CPU time of ``checked`` over ``plain`` on ``view``."""
    return cpu_ms(lambda: checked(view)) / cpu_ms(lambda: plain(view))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        generate(path, args.events)
        lines = path.read_bytes()[: MAX_LINE_BYTES // 2].split(b"\n")[:-1]
    plain, checked = msgspec.json.Decoder(Event, strict=False), line_decoder()
    figures: dict[str, float] = {}
    for mix, keep in MIXES.items():
        view = memoryview(bytearray(b"\n".join(line for line in lines if keep(line)) + b"\n"))
        ratios = [ratio(checked.decode_lines, plain.decode_lines, view) for _ in range(args.rounds)]
        figures[f"{mix}_ratio"] = round(statistics.median(ratios), 2)
        print(
            f"{mix}: {view.nbytes / 1e6:.1f} MB, checked / plain decode CPU time "
            f"{figures[f'{mix}_ratio']} (rounds {min(ratios):.2f}..{max(ratios):.2f})"
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
