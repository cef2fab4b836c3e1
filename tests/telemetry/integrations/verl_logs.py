"""verl's ``file`` logger, as verl writes it, for tests that read verl runs.

``FileLogger`` in verl's ``verl/utils/tracking.py`` opens its path ``"wb", buffering=0`` and
writes ``orjson.dumps({"step": step, "data": data}, option=OPT_SERIALIZE_NUMPY) + b"\\n"``
per ``log`` call. :func:`dumps` is orjson's output for these records (compact, UTF-8, keys in
insertion order, a NaN or an infinity written as ``null``); orjson spells an exponent
``1e-5`` where Python's ``repr`` writes ``1e-05``, the same JSON number. The records are
shaped like ``RayPPOTrainer.fit``'s (``verl/trainer/ppo/ray_trainer.py``): the actor's
update metrics, then ``training/*``, ``compute_data_metrics``, the timings and throughput.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any


def dumps(obj: Any) -> bytes:
    """``orjson.dumps(obj)`` for plain records: compact, UTF-8, non-finite floats as null."""
    return json.dumps(_orjson_nan(obj), separators=(",", ":"), ensure_ascii=False).encode()


def _orjson_nan(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {key: _orjson_nan(value) for key, value in obj.items()}
    return obj


class FileLogger:
    """verl's ``FileLogger``: one unbuffered write per record; opening truncates."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.filepath = Path(path)
        self.fp = open(self.filepath, "wb", buffering=0)  # noqa: SIM115 - verl's own open

    def log(self, data: dict[str, Any], step: int) -> None:
        self.fp.write(dumps({"step": step, "data": data}) + b"\n")

    def finish(self) -> None:
        self.fp.close()

    def __enter__(self) -> FileLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()


def grpo_step(step: int, **overrides: Any) -> dict[str, Any]:
    """A healthy GRPO training step's record (no critic), drifting as a learning run's does;
    ``overrides`` replace or add keys (``actor/grad_norm=float("nan")``)."""
    data: dict[str, Any] = {
        "actor/entropy": 1.2 - 0.01 * step,
        "actor/pg_loss": -0.004 + 0.001 * (step % 3),
        "actor/pg_clipfrac": 0.002 + 0.0005 * (step % 4),
        "actor/ppo_kl": 0.0004 + 0.0001 * (step % 3),
        "actor/pg_clipfrac_lower": 0.0,
        "actor/kl_loss": 0.001 * step,
        "actor/kl_coef": 0.001,
        "actor/grad_norm": 0.3 + 0.02 * (step % 5),
        "perf/mfu/actor": 0.21,
        "perf/max_memory_allocated_gb": 31.5,
        "perf/max_memory_reserved_gb": 40.0,
        "perf/cpu_memory_used_gb": 80.2,
        "actor/lr": 1e-06,
        "training/global_step": step,
        "training/epoch": 0,
        "critic/score/mean": 0.2 + 0.02 * step,
        "critic/score/max": 1.0,
        "critic/score/min": 0.0,
        "critic/rewards/mean": 0.2 + 0.02 * step,
        "critic/rewards/max": 1.0,
        "critic/rewards/min": 0.0,
        "critic/advantages/mean": 0.0,
        "critic/advantages/max": 1.7,
        "critic/advantages/min": -1.7,
        "critic/returns/mean": 0.0,
        "critic/returns/max": 1.7,
        "critic/returns/min": -1.7,
        "response_length/mean": 180.0 + step,
        "response_length/max": 512.0,
        "response_length/min": 40.0,
        "response_length/clip_ratio": 0.01,
        "response/aborted_ratio": 0.0,
        "prompt_length/mean": 100.0,
        "prompt_length/max": 180.0,
        "prompt_length/min": 60.0,
        "prompt_length/clip_ratio": 0.0,
        "timing_s/gen": 20.5,
        "timing_s/reward": 0.4,
        "timing_s/old_log_prob": 3.1,
        "timing_s/ref": 2.9,
        "timing_s/adv": 0.1,
        "timing_s/update_actor": 9.8,
        "timing_s/step": 37.0,
        "timing_per_token_ms/gen": 0.02,
        "perf/total_num_tokens": 286720,
        "perf/time_per_step": 37.0,
        "perf/throughput": 968.6,
    }
    data.update(overrides)
    return data


def ppo_step(step: int, **overrides: Any) -> dict[str, Any]:
    """A PPO step's record: :func:`grpo_step` with a critic's keys."""
    critic = {
        "critic/vf_loss": 0.05,
        "critic/vf_clipfrac": 0.01,
        "critic/vpred_mean": 0.1,
        "critic/grad_norm": 1.1,
        "critic/lr": 1e-05,
        "critic/values/mean": 0.15,
        "critic/values/max": 0.9,
        "critic/values/min": -0.3,
        "critic/vf_explained_var": 0.3,
    }
    return grpo_step(step, **critic, **overrides)


def write_verl_run(path: Path, steps: int, **overrides_at: dict[str, Any]) -> Path:
    """A finished verl run of ``steps`` GRPO steps, as its FileLogger leaves it; keys of
    ``overrides_at`` (``step_3``) replace that step's values."""
    logger = FileLogger(path)
    for step in range(1, steps + 1):
        logger.log(data=grpo_step(step, **overrides_at.get(f"step_{step}", {})), step=step)
    logger.finish()
    return path
