"""ONE prepared check for a machine with a GPU: token-level GRPO on CUDA in fp32 and in
bf16 (short), with the figures each run recorded; the classic trainer's CUDA path and a
2-rank NCCL run are reported as not built in this version (they are named, not skipped
silently).

    python bench/gpu_check.py            # about a minute on one GPU

Each line printed is one check; the last line is one JSON object with every figure.
Exit 0 when every check that ran passed, 1 otherwise.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from lib import EXAMPLES
from ppo.cli import main as ppo_main
from telemetry import PPOUpdate, RunStarted, read_events

SHORT = [
    "--set", "updates=10", "--set", "rollouts_per_update=256", "--set", "group_size=8",
    "--set", "warm_start_steps=200",
]  # fmt: skip


def token_run(folder: Path, precision: str) -> dict[str, object]:
    """A short GRPO run on CUDA: its exit code, the device it recorded, tokens/s."""
    run_id = f"grpo-{precision}"
    argv = ["train", "--config", str(EXAMPLES / "token_grpo.toml"), "--headless"]
    extra = ["--set", "device=cuda", "--set", f"precision={precision}"]
    t0 = time.perf_counter()
    code = ppo_main([*argv, "--run-dir", str(folder), "--run-id", run_id, *SHORT, *extra])
    seconds = time.perf_counter() - t0
    if code != 0:
        return {"passed": False, "exit": code}
    events = read_events(folder / run_id / "events.jsonl").events
    started = events[0]
    assert isinstance(started, RunStarted)
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    tokens = sum(u.tokens or 0 for u in updates)
    return {
        "passed": started.payload.config.get("device_used") == "cuda",
        "exit": code,
        "device_used": started.payload.config.get("device_used"),
        "tokens": tokens,
        "tokens_per_s": round(tokens / seconds),
        "reward_first": updates[0].reward_mean,
        "reward_last": updates[-1].reward_mean,
    }


def main() -> int:
    figures: dict[str, object] = {
        "cuda": torch.cuda.is_available(),
        "gpus": torch.cuda.device_count(),
        "device_name": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch": torch.__version__,
    }
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        print(json.dumps({**figures, "passed": False}))
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for precision in ("fp32", "bf16"):
            row = token_run(Path(tmp), precision)
            figures[f"token_grpo_{precision}"] = row
            print(f"token-level GRPO on CUDA, {precision}: {row}")
    figures["classic_cuda"] = "not built: the classic trainer has no device setting yet"
    figures["nccl_2_ranks"] = (
        "not built: needs the classic trainer on CUDA"
        if torch.cuda.device_count() >= 2
        else "skipped: fewer than 2 GPUs"
    )
    print(f"classic CUDA: {figures['classic_cuda']}")
    print(f"2-rank NCCL: {figures['nccl_2_ranks']}")
    ran = [v for v in figures.values() if isinstance(v, dict)]
    passed = all(r["passed"] for r in ran)
    print(json.dumps({**figures, "passed": passed}))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
