"""CPU time of one emit + record of a realistic ``ppo_update`` (every field set), and of
reading one event back: CPU time, not wall time, so two trees compared on a loaded machine
still compare (run each side in its own process, interleaved, and take medians).

Run: python bench/emit_cost.py [--events 20000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from lib.payloads import ppo_update
from telemetry.eventlog import EventLogReader
from telemetry.recorder import Recorder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    payloads = [ppo_update(u) for u in range(args.events)]
    with tempfile.TemporaryDirectory() as folder:
        with Recorder(run_dir=folder, run_id="emit-cost") as rec:
            start = time.process_time()
            for payload in payloads:
                rec.emit(payload)
            emit = (time.process_time() - start) / len(payloads) * 1e6
        start = time.process_time()
        read = sum(len(batch.events) for batch in EventLogReader(rec.path).batches())
        per_read = (time.process_time() - start) / read * 1e6
    print(f"emit + record: {emit:.2f} us CPU per event; read: {per_read:.2f} us CPU per event")
    print(json.dumps({"emit_cpu_us": round(emit, 2), "read_cpu_us": round(per_read, 2)}))


if __name__ == "__main__":
    main()
