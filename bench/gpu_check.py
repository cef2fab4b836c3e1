"""ONE prepared check for a machine with a GPU, every path that needs one:

- classic: a short CartPole run with ``device = "cuda"`` judged by ``sanctum check``, the
  same run on the CPU beside it (steps per second of each), and the CUDA run's checkpoint
  resumed with ``device = "cpu"``;
- token-level: GRPO on CUDA in fp32 and in bf16;
- NCCL: with 2 GPUs or more, ``ppo train --nproc 2`` on CUDA (one GPU per rank), whose ranks
  must take the same decisions and end with the same weights, judged by ``sanctum check``;
  with fewer, it says it skipped that.

    PYTHONPATH=src:bench python bench/gpu_check.py      # a few minutes on one GPU

Each line printed is one check; the last line is one JSON object with every figure.
Without CUDA it says so and exits 0 with ``"skipped": "no CUDA device"``; otherwise exit 0
when every check that ran passed, 1 otherwise.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from lib import EXAMPLES
from ppo.cli import main as ppo_main
from sanctum.cli import main as sanctum_main
from telemetry import PPOUpdate, Rollout, RunStarted, read_events
from telemetry.returns import FINAL_EPISODES, final_return

SRC = Path(__file__).resolve().parents[1] / "src"
CLASSIC = ["--env", "CartPole-v1", "--total-steps", "60000"]
"""About 120 updates of CleanRL's CartPole defaults: enough to learn and to be judged."""
SHORT = [
    "--set", "updates=10", "--set", "rollouts_per_update=256", "--set", "group_size=8",
    "--set", "warm_start_steps=200",
]  # fmt: skip


def quiet(call: Any, *args: Any) -> int:
    """``call(*args)`` with its standard output swallowed (its errors still show)."""
    with contextlib.redirect_stdout(io.StringIO()):
        code: int = call(*args)
    return code


def judged(run: Path) -> bool:
    """Whether ``sanctum check`` passes the run."""
    return quiet(sanctum_main, ["check", str(run)]) == 0


def started(run: Path) -> RunStarted:
    first = read_events(run / "events.jsonl").events[0]
    assert isinstance(first, RunStarted)
    return first


def classic_figures(run: Path) -> dict[str, Any]:
    """What a classic run recorded: its device, speed, final return, and sanctum's verdict."""
    events = read_events(run / "events.jsonl").events
    rollouts = [e.payload for e in events if isinstance(e, Rollout)]
    recent = [(r.episodes, r.episode_return_mean) for r in rollouts if r.episodes]
    return {
        "device_used": started(run).payload.config.get("device_used"),
        "steps_per_s": round(rollouts[-1].steps_per_second or 0.0),
        "final_return": final_return(recent[-FINAL_EPISODES:]),
        "sanctum_check": "pass" if judged(run) else "fail",
    }


def classic_run(folder: Path, device: str) -> dict[str, Any]:
    """A short CartPole run on ``device``, judged by sanctum check."""
    run_id = f"classic-{device}"
    argv = ["train", "--headless", *CLASSIC, "--set", f"device={device}"]
    code = quiet(ppo_main, [*argv, "--run-dir", str(folder), "--run-id", run_id])
    if code != 0:
        return {"passed": False, "exit": code}
    row = classic_figures(folder / run_id)
    row["passed"] = row["device_used"] == device and row["sanctum_check"] == "pass"
    return row


def classic_resumed_on_cpu(folder: Path, source: str = "classic-cuda") -> dict[str, Any]:
    """The CUDA run's checkpoint resumed with device = "cpu" for a few more updates."""
    argv = ["train", "--headless", "--resume", str(folder / source)]
    more = ["--total-steps", "62976", "--set", "device=cpu"]
    code = quiet(ppo_main, [*argv, *more, "--run-dir", str(folder), "--run-id", "resumed-cpu"])
    if code != 0:
        return {"passed": False, "exit": code}
    config = started(folder / "resumed-cpu").payload.config
    updates = [
        e for e in read_events(folder / "resumed-cpu" / "events.jsonl").events
        if isinstance(e, PPOUpdate)
    ]  # fmt: skip
    return {
        "passed": config.get("device_used") == "cpu" and len(updates) > 0,
        "device_used": config.get("device_used"),
        "resumed_from_update": config["resumed_from"]["update"],
        "updates": len(updates),
    }


def token_run(folder: Path, precision: str) -> dict[str, Any]:
    """A short GRPO run on CUDA: its exit code, the device it recorded, tokens/s."""
    run_id = f"grpo-{precision}"
    argv = ["train", "--config", str(EXAMPLES / "token_grpo.toml"), "--headless"]
    extra = ["--set", "device=cuda", "--set", f"precision={precision}"]
    t0 = time.perf_counter()
    code = quiet(ppo_main, [*argv, "--run-dir", str(folder), "--run-id", run_id, *SHORT, *extra])
    seconds = time.perf_counter() - t0
    if code != 0:
        return {"passed": False, "exit": code}
    events = read_events(folder / run_id / "events.jsonl").events
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    tokens = sum(u.tokens or 0 for u in updates)
    used = started(folder / run_id).payload.config.get("device_used")
    return {
        "passed": used == "cuda",
        "exit": code,
        "device_used": used,
        "tokens": tokens,
        "tokens_per_s": round(tokens / seconds),
        "reward_first": updates[0].reward_mean,
        "reward_last": updates[-1].reward_mean,
    }


def agreed(run: Path, rank: int) -> list[dict[str, Any]]:
    """A rank's trace lines without what differs by rank (its number, its pid)."""
    lines = (run / "ranks" / f"rank{rank}.jsonl").read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(x).items() if k not in ("rank", "pid")} for x in lines]


def nccl_run(folder: Path, device: str = "cuda") -> dict[str, Any]:
    """``ppo train --nproc 2`` on CUDA: NCCL, one GPU per rank; the ranks must agree on every
    decision and on their weights (``device = "cpu"``: the same over gloo)."""
    command = [sys.executable, "-m", "ppo", "train", "--headless", "--nproc", "2", *CLASSIC]
    extra = ["--set", f"device={device}", "--set", "rank_trace=true", "--set", "max_kl=0.003"]
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [*command, *extra, "--run-dir", str(folder), "--run-id", "nccl"],
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, "PYTHONPATH": path},
        check=False,
    )
    if done.returncode != 0:
        return {"passed": False, "exit": done.returncode, "stderr": done.stderr[-400:]}
    run = folder / "nccl"
    first = agreed(run, 0)
    row = classic_figures(run)
    row["ranks_agree"] = same = first == agreed(run, 1) and len(first) > 0
    row["early_stops"] = sum(x["early_stop"] is not None for x in first)
    row["passed"] = same and row["device_used"] == device and row["sanctum_check"] == "pass"
    return row


def main() -> int:
    figures: dict[str, object] = {
        "cuda": torch.cuda.is_available(),
        "gpus": torch.cuda.device_count(),
        "device_name": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch": torch.__version__,
    }
    if not torch.cuda.is_available():
        print("no CUDA device: skipped the classic, token-level and NCCL checks")
        print(json.dumps({**figures, "skipped": "no CUDA device"}))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        checks: list[tuple[str, str, Callable[[], dict[str, Any]]]] = [
            ("classic_cuda", "classic CartPole on CUDA", lambda: classic_run(folder, "cuda")),
            ("classic_cpu", "the same on the CPU", lambda: classic_run(folder, "cpu")),
            ("classic_resumed_cpu", "resumed on the CPU", lambda: classic_resumed_on_cpu(folder)),
            ("token_grpo_fp32", "GRPO on CUDA, fp32", lambda: token_run(folder, "fp32")),
            ("token_grpo_bf16", "GRPO on CUDA, bf16", lambda: token_run(folder, "bf16")),
        ]
        if torch.cuda.device_count() >= 2:
            checks.append(("nccl_2_ranks", "2 ranks over NCCL", lambda: nccl_run(folder)))
        else:
            figures["nccl_2_ranks"] = "skipped: fewer than 2 GPUs"
            print("2 ranks over NCCL: skipped: fewer than 2 GPUs")
        for key, title, check in checks:
            t0 = time.perf_counter()
            row = check()
            row["seconds"] = round(time.perf_counter() - t0, 1)
            figures[key] = row
            print(f"{title}: {row}", flush=True)
    ran = [v for v in figures.values() if isinstance(v, dict)]
    passed = all(r["passed"] for r in ran)
    print(json.dumps({**figures, "passed": passed}))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
