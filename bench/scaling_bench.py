"""Steps per second with 1 and 2 processes (``ppo train --nproc``) and with each kind of
vector env (``vector_env`` = sync, async, envpool), same job, same total steps.

    python bench/scaling_bench.py                  # CartPole-v1 and Pendulum-v1, 3 repeats
    python bench/scaling_bench.py --steps 65536 --repeats 5 --kinds sync envpool

EnvPool is measured when its extra is installed (``pip install -e ".[envpool]"``) and
skipped with a line saying so otherwise.
Each measurement is a real ``ppo train --headless`` run; steps per second is the job's
total steps over the wall time of its updates, read from the run's last ``rollout`` event
(start-up and rendezvous are excluded). Scaling efficiency = sps(2) / (2 x sps(1)) and a
kind's speed against ``sync`` (``vs_sync``, one process) are ratios of medians of runs
measured in this same process, so they travel between machines. The last line printed
is one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ENVS = {
    "CartPole-v1": [],
    "Pendulum-v1": ["--set", "num_steps=256", "--set", "num_minibatches=8"],
}
"""Environment -> settings beyond the defaults (Pendulum: shards that divide evenly)."""


KINDS = ("sync", "async", "envpool")


def steps_per_second(env: str, kind: str, nproc: int, steps: int, run_dir: Path, tag: str) -> float:
    """Run one job and return the steps per second its last rollout event reports."""
    command = [
        sys.executable, "-m", "ppo", "train", "--headless", "--env", env,
        "--total-steps", str(steps), "--nproc", str(nproc), "--set", "num_envs=4",
        "--set", f"vector_env={kind}", "--run-dir", str(run_dir), "--run-id", tag, *ENVS[env],
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    last = None
    with (run_dir / tag / "events.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            event = json.loads(line)
            if event["type"] == "rollout":
                last = event["payload"]["steps_per_second"]
    assert last is not None, "no rollout event"
    return float(last)


def measure(env: str, kind: str, args: argparse.Namespace, run_dir: Path) -> dict[str, float]:
    sps: dict[int, list[float]] = {1: [], 2: []}
    for repeat in range(args.repeats):
        for nproc in (1, 2):
            tag = f"{env}-{kind}-{nproc}-{repeat}"
            sps[nproc].append(steps_per_second(env, kind, nproc, args.steps, run_dir, tag))
    one, two = statistics.median(sps[1]), statistics.median(sps[2])
    efficiency = two / (2 * one)
    speed = f"1 process {one:,.0f} steps/s, 2 processes {two:,.0f} steps/s"
    print(f"{env} {kind}: {speed} (x{two / one:.2f}); efficiency {efficiency:.2f}", flush=True)
    return {
        "sps_1": round(one),
        "sps_2": round(two),
        "speedup": round(two / one, 3),
        "efficiency": round(efficiency, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=65_536, help="total steps per job")
    parser.add_argument("--repeats", type=int, default=3, help="runs per configuration")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    args = parser.parse_args()
    kinds = list(args.kinds)
    if "envpool" in kinds and importlib.util.find_spec("envpool") is None:
        print("envpool: not installed (pip install -e '.[envpool]'), not measured")
        kinds.remove("envpool")
    result: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for env in ENVS:
            result[env] = {kind: measure(env, kind, args, Path(tmp)) for kind in kinds}
            if "sync" in result[env]:
                base = result[env]["sync"]["sps_1"]
                for figures in result[env].values():
                    figures["vs_sync"] = round(figures["sps_1"] / base, 3)
    print(json.dumps({"steps": args.steps, "repeats": args.repeats, "envs": result}))


if __name__ == "__main__":
    main()
