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

from telemetry import EarlyStop, Emitter, EventBus, EventLogReader, EventLogWriter, PPOUpdatePayload
from telemetry.codec import LineEncoder
from telemetry.events import PPOUpdate


def full_payload(i: int) -> PPOUpdatePayload:
    """A ppo_update with every field set, as our trainer emits it."""
    return PPOUpdatePayload(
        update=i, global_step=512 * (i + 1), approx_kl=0.0123, approx_kl_max=0.0311,
        kl_final=0.0142, clip_fraction=0.131, clip_fraction_lower=0.004, ratio_mean=1.0012,
        ratio_min=0.71, ratio_max=1.43, entropy=0.612, entropy_coef=0.01, policy_loss=-0.0123,
        value_loss=12.5, kl_penalty=0.0, total_loss=6.2, kl_coef=0.0, explained_variance=0.82,
        grad_norm=0.91, grad_norm_max=1.7, learning_rate=2.4e-4, advantage_mean=0.02,
        advantage_std=3.1, return_mean=41.2, value_mean=39.9, epochs_completed=4,
        minibatches_completed=15, minibatches_planned=16, early_stopped=True,
        early_stop_reason="approx_kl 0.0311 > max_kl 0.0300 at epoch 3 minibatch 3 "
        "(minibatch not applied)",
        early_stop=EarlyStop(epoch=3, minibatch=3, kl=0.0311, threshold=0.03,
                             scope="minibatch", applied=False),
        skipped_steps=0, nonfinite_ratios=0, update_seconds=0.0412,
    )  # fmt: skip


def time_emit_record(n: int, path: Path) -> float:
    path.unlink(missing_ok=True)
    payloads = [full_payload(i) for i in range(n)]
    bus = EventBus()
    writer = EventLogWriter(path)
    bus.subscribe(writer)
    emitter = Emitter(bus, "bench")
    t0 = time.perf_counter()
    for payload in payloads:
        emitter.emit(payload)
    elapsed = time.perf_counter() - t0
    writer.close()
    return elapsed / n * 1e6


def time_encode(n: int) -> float:
    encoder = LineEncoder()
    events = [
        PPOUpdate(run_id="bench", seq=i + 1, ts=1.7e9, payload=full_payload(i)) for i in range(n)
    ]
    t0 = time.perf_counter()
    for event in events:
        encoder.encode(event)
    return (time.perf_counter() - t0) / n * 1e6


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
