"""CPU time of the commands a user types most, each over that of ``python -c pass`` started
the same way in the same round: ``ppo --help``, ``ppo config``, ``sanctum --help`` and
``sanctum check`` of a 10-update log. CPU time (user + system of the child, from
``getrusage``), not wall time, and ratios within one round, so the figures travel between
machines and hold on a loaded one; the median over rounds is reported.

Targets (issue [F]): ``ppo --help`` and ``ppo config`` at most 3x ``python -c pass``;
``sanctum check`` of a small log at most 4x.

Run: python bench/cli_startup.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from lib.payloads import ppo_update
from telemetry.testing import LogBuilder

UPDATES = 10
"""Updates in the log ``sanctum check`` reads."""


def _child_cpu(command: list[str]) -> float:
    """User + system CPU seconds of ``command`` run to its end (output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _small_log(folder: Path) -> Path:
    path = folder / "events.jsonl"
    log = LogBuilder(path, run_id="cli-startup")
    log.start(env_id="CartPole-v1")
    for u in range(UPDATES):
        log.emit(ppo_update(u))
    log.finish()
    log.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="paired rounds (default: 7)")
    args = parser.parse_args()
    python = [sys.executable]
    with tempfile.TemporaryDirectory() as folder:
        log = _small_log(Path(folder))
        commands = {
            "ppo_help": [*python, "-m", "ppo", "--help"],
            "ppo_config": [*python, "-m", "ppo", "config"],
            "sanctum_help": [*python, "-m", "sanctum", "--help"],
            "sanctum_check": [*python, "-m", "sanctum", "check", str(log)],
        }
        ratios: dict[str, list[float]] = {name: [] for name in commands}
        seconds: dict[str, list[float]] = {name: [] for name in ["python_pass", *commands]}
        for _ in range(args.rounds):
            baseline = _child_cpu([*python, "-c", "pass"])
            seconds["python_pass"].append(baseline)
            for name, command in commands.items():
                cpu = _child_cpu(command)
                seconds[name].append(cpu)
                ratios[name].append(cpu / baseline)
    for name, values in seconds.items():
        ratio = "" if name == "python_pass" else f"  ({statistics.median(ratios[name]):.2f}x)"
        print(f"{name:>14}: {statistics.median(values) * 1000:7.1f} ms CPU{ratio}")
    result = {f"{name}_cpu_ratio": round(statistics.median(r), 2) for name, r in ratios.items()}
    result["python_pass_cpu_ms"] = round(statistics.median(seconds["python_pass"]) * 1000, 1)
    result["rounds"] = args.rounds
    print(json.dumps(result))


if __name__ == "__main__":
    main()
