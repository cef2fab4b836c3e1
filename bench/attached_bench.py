"""What watching costs training: steps per second headless, with the dashboard, without telemetry.

The same CartPole run (default config, ``--total-steps``, 100k by default) is trained in
three ways, alternated round-robin (the order rotates each round so drift on a shared
machine spreads over all modes), and the median of the rounds is reported:

- ``headless``: ``python -m ppo train --headless``, which records the event log.
- ``attached``: exactly what ``ppo train`` does on a terminal (``sanctum.watch_process``): the
  same headless trainer as a child process, and in this process the SanctumApp tailing its
  log under Textual's headless driver (``run_async(headless=True)``: composed, laid out and
  rendered, only not written to a terminal). The dashboard's own CPU time is measured too:
  on two cores it must leave the trainer its core.
- ``no_telemetry``: ``ppo train --headless`` in a child whose ``ppo.run.trainer.Recorder`` is
  replaced by :class:`NullRecorder`, which builds no event and writes nothing (the trainer
  has no switch for it; payloads are still built, as they are the trainer's own statistics).

Steps per second is the trainer's own figure in every mode: environment steps over the
training loop's wall time (start-up and torch import excluded), as of the last rollout.
The last line printed is one JSON object with ``sps_headless``, ``sps_attached``,
``sps_no_telemetry``, ``attached_ratio`` (attached / headless) and ``telemetry_ratio``
(headless / no telemetry), plus the dashboard's CPU share.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = ("headless", "attached", "no_telemetry")
SPS_FILE = "null_recorder_sps.json"


def last_rollout_sps(events: Path) -> float:
    """The trainer's steps per second as of its last rollout event."""
    from telemetry.eventlog import read_events
    from telemetry.events import Rollout

    rollouts = [e for e in read_events(events).events if isinstance(e, Rollout)]
    sps = rollouts[-1].payload.steps_per_second
    assert sps is not None, f"{events}: the last rollout has no steps_per_second"
    return sps


def train_args(steps: int, run_dir: Path, run_id: str) -> list[str]:
    return ["--total-steps", str(steps), "--run-dir", str(run_dir), "--run-id", run_id]


def run_headless(steps: int, run_dir: Path, run_id: str) -> dict[str, float]:
    command = [
        sys.executable,
        "-m",
        "ppo",
        "train",
        "--headless",
        *train_args(steps, run_dir, run_id),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return {"sps": last_rollout_sps(run_dir / run_id / "events.jsonl")}


def run_no_telemetry(steps: int, run_dir: Path, run_id: str) -> dict[str, float]:
    command = [
        sys.executable,
        __file__,
        "--null-recorder-child",
        *train_args(steps, run_dir, run_id),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    assert not (run_dir / run_id / "events.jsonl").exists(), "telemetry was not off"
    return {"sps": json.loads((run_dir / run_id / SPS_FILE).read_text())["steps_per_second"]}


def run_attached(steps: int, run_dir: Path, run_id: str) -> dict[str, float]:
    from ppo.cli import build_parser
    from ppo.cli.attach import STDERR_FILE, STDOUT_FILE, child_command
    from sanctum.tui.attached import AttachedProcess
    from telemetry.recorder import EVENTS_FILE

    args = build_parser().parse_args(["train", "--tui", *train_args(steps, run_dir, run_id)])
    run_path = run_dir / run_id
    run = AttachedProcess.start(
        child_command(args, run_id),
        run_path / EVENTS_FILE,
        stdout_path=run_path / STDOUT_FILE,
        stderr_path=run_path / STDERR_FILE,
    )
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(watch_until_finished(run.app))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert run.process.process.wait(60) == 0, "the trainer failed"
    return {"sps": last_rollout_sps(run.app.path), "dashboard_cpu_share": cpu / wall}


async def watch_until_finished(app: Any) -> None:
    """Run the app as ``ppo train`` would, headless, and close it once the run has ended."""
    from sanctum.model.snapshot import Connection

    ended = (Connection.FINISHED, Connection.FAILED, Connection.INTERRUPTED)
    task = asyncio.create_task(app.run_async(headless=True, size=(120, 36)))
    while not task.done():
        if app.snapshot is not None and app.snapshot.connection in ended:
            app.exit()
        await asyncio.sleep(0.1)
    await task


def null_recorder_child(argv: list[str]) -> int:
    """``ppo train --headless ARGV`` with a Recorder that records nothing."""
    import ppo.run.trainer
    from ppo.cli import main
    from telemetry import Recorder, RolloutPayload

    class NullRecorder(Recorder):
        """Keeps the Recorder's interface and counters; builds and writes no event."""

        last_sps: float | None = None

        def start(self) -> None:
            self.run_dir.mkdir(parents=True, exist_ok=True)  # checkpoints still go here

        def emit(self, payload: Any) -> Any:  # type: ignore[override]
            if isinstance(payload, RolloutPayload):
                self.last_sps = payload.steps_per_second
            return None

        def finish(self, status: Any, reason: str | None = None) -> None:
            sps = {"steps_per_second": self.last_sps, "status": status}
            (self.run_dir / SPS_FILE).write_text(json.dumps(sps))

    ppo.run.trainer.Recorder = NullRecorder  # type: ignore[misc]
    return main(["train", "--headless", *argv])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3, help="runs per mode (median taken)")
    parser.add_argument("--null-recorder-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--run-id", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.null_recorder_child:
        sys.exit(null_recorder_child(train_args(args.total_steps, args.run_dir, args.run_id)))
    runners = {"headless": run_headless, "attached": run_attached, "no_telemetry": run_no_telemetry}
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="attached-bench-") as tmp:
        for round_ in range(args.rounds):
            order = MODES[round_ % 3 :] + MODES[: round_ % 3]
            for mode in order:
                figures = runners[mode](args.total_steps, Path(tmp), f"{mode}-{round_}")
                results[mode].append(figures)
                extra = "".join(f"  {k} {v:.3f}" for k, v in figures.items() if k != "sps")
                print(
                    f"round {round_ + 1} {mode:<13} {figures['sps']:>9,.0f} sps{extra}", flush=True
                )
    sps = {mode: statistics.median(r["sps"] for r in results[mode]) for mode in MODES}
    summary = {
        "total_steps": args.total_steps,
        "rounds": args.rounds,
        "sps_headless": round(sps["headless"], 1),
        "sps_attached": round(sps["attached"], 1),
        "sps_no_telemetry": round(sps["no_telemetry"], 1),
        "attached_ratio": round(sps["attached"] / sps["headless"], 4),
        "telemetry_ratio": round(sps["headless"] / sps["no_telemetry"], 4),
        "dashboard_cpu_share": round(
            statistics.median(r["dashboard_cpu_share"] for r in results["attached"]), 3
        ),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
