"""Telemetry cost per PPO update: emit + record, encode, read; TensorBoard side by side.

Run: python bench/telemetry_bench.py [--events 100000] [--repeats 5]
Prints one line per figure, then one JSON object on the last line. TensorBoard (the
`bench` extra; it needs torch) is timed in the same run on fewer updates, because at about
a millisecond per update 100k updates would take minutes; the figure is per update.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from lib.emit_path import full_payload, time_emit_record, time_encode
from telemetry import EventLogReader, PPOUpdatePayload


def time_read(path: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    count = sum(len(batch.events) for batch in EventLogReader(path).batches())
    return count / (time.perf_counter() - t0), count


def numeric_fields(payload: PPOUpdatePayload) -> dict[str, float]:
    return {
        k: float(v) for k, v in msgspec.structs.asdict(payload).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }  # fmt: skip


def tensorboard_timer() -> Callable[[int, Path], float] | None:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None

    def run(n: int, logdir: Path) -> float:
        writer = SummaryWriter(str(logdir))
        rows = [numeric_fields(full_payload(i)) for i in range(n)]
        t0 = time.perf_counter()
        for step, row in enumerate(rows):
            for key, value in row.items():
                writer.add_scalar(f"ppo/{key}", value, step)
        elapsed = time.perf_counter() - t0
        writer.close()
        return elapsed / n * 1e6

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tb-updates", type=int, default=2_000)
    args = parser.parse_args()
    tb = tensorboard_timer()
    emit, encode, read, tbs = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        for r in range(args.repeats):
            emit.append(time_emit_record(args.events, path))
            encode.append(time_encode(args.events))
            rate, count = time_read(path)
            assert count == args.events, f"read {count} of {args.events} events"
            read.append(rate)
            if tb is not None:
                tbs.append(tb(args.tb_updates, Path(tmp) / f"tb{r}"))
            print(
                f"run {r + 1}: emit+record {emit[-1]:.2f} us, encode {encode[-1]:.2f} us, "
                f"read {read[-1]:,.0f} events/s"
                + (f", tensorboard {tbs[-1]:.0f} us" if tbs else "")
            )
        bytes_per_event = path.stat().st_size / args.events
    result: dict[str, Any] = {
        "events": args.events,
        "repeats": args.repeats,
        "emit_record_us": round(statistics.median(emit), 3),
        "encode_us": round(statistics.median(encode), 3),
        "read_events_per_s": round(statistics.median(read)),
        "bytes_per_event": round(bytes_per_event, 1),
    }
    if tbs:
        result["tensorboard_us"] = round(statistics.median(tbs), 1)
        result["tensorboard_scalars_per_update"] = len(numeric_fields(full_payload(0)))
        result["ratio_vs_tensorboard"] = round(
            result["tensorboard_us"] / result["emit_record_us"], 1
        )
    for key, value in result.items():
        print(f"{key:>32}: {value}")
    assert all(math.isfinite(float(v)) for v in result.values())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
