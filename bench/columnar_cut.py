"""Would a columnar (numpy) judge bring ``summary`` near its reader? The cut of decoded
updates into one column per metric, two ways, beside the reader's own decode of them.

    python bench/columnar_cut.py [--updates 200000]

The log is ``sanctum_bench.py``'s (every field of every update set, a rollout per update)
and every update is read back by the real reader first; then, CPU time per update, each
reader batch cut on its own as the aggregator cuts it:

- ``decode``: the reader's decode of the log, per update (its rollout included);
- ``cut_tuples``: what the aggregator does, ``metric_columns`` (each payload as a tuple,
  transposed: one tuple per metric);
- ``cut_numpy``: each payload's metric values into one float64 array of updates x
  metrics (the least a numpy judge must do first; this log has no ``None`` to map);
- ``stats_numpy``: every metric's smallest, largest, final value and finite count over
  that array (what ``HealthJudge``'s statistics compute, vectorised).

The cut is a C-level pass over 58 values per update either way; numpy's statistics are
cheap, but converting the decoded floats into an array costs more than the tuple cut it
would replace. Needs numpy (not a dependency of sanctum: the bench says so and stops).
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from sanctum.metrics import PPO_METRIC_POSITIONS
from sanctum.model.state import metric_columns
from sanctum_bench import generate
from telemetry.eventlog import EventLogReader
from telemetry.events import PPOUpdate, PPOUpdatePayload

T = TypeVar("T")


def cpu(run: Callable[[], T]) -> tuple[float, T]:
    """CPU seconds of ``run()``, and what it returned."""
    start = time.process_time()
    result = run()
    return time.process_time() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--updates", type=int, default=200_000)
    args = parser.parse_args()
    try:
        import numpy as np
    except ImportError:
        raise SystemExit("columnar_cut.py needs numpy: pip install numpy") from None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.jsonl"
        generate(path, 2 * args.updates)
        decode, batches = cpu(lambda: list(EventLogReader(path).batches()))
    per_batch: list[list[PPOUpdatePayload]] = [
        [e.payload for e in b.events if isinstance(e, PPOUpdate)] for b in batches
    ]
    n = sum(map(len, per_batch))
    row = itemgetter(*PPO_METRIC_POSITIONS)
    as_tuple = msgspec.structs.astuple
    figures: dict[str, Any] = {"updates": n, "batches": len(per_batch)}
    seconds = {"decode": decode}
    seconds["cut_tuples"], _ = cpu(lambda: [metric_columns(b) for b in per_batch])
    seconds["cut_numpy"], tables = cpu(
        lambda: [np.array([row(as_tuple(p)) for p in b], dtype=np.float64) for b in per_batch]
    )
    seconds["stats_numpy"], _ = cpu(
        lambda: [(t.min(0), t.max(0), t[-1], np.isfinite(t).sum(0)) for t in tables if len(t)]
    )
    for name, spent in seconds.items():
        us = spent / n * 1e6
        print(f"{name:<12} {us:7.3f} us per update  {spent / decode:5.2f}x the decode")
        figures[f"{name}_us"] = round(us, 3)
        figures[f"{name}_over_decode"] = round(spent / decode, 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
