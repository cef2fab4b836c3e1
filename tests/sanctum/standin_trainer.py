"""A stand-in trainer process for the dashboard's supervision tests (no torch, starts fast).

``python standin_trainer.py EVENTS MODE [UPDATES]`` records a run through the real
``telemetry.Recorder``: ``forever`` emits an update every 100 ms until Ctrl-C (recorded as
``interrupted``, exit 130, as ``ppo train`` does); ``finish`` emits UPDATES updates and
completes; ``until`` goes on until a file ``EVENTS`` with suffix ``.done`` exists, then
completes; ``crash`` emits UPDATES updates, writes a traceback-like tail to stderr and
exits 3 without recording an end, as a trainer that dies does.

Like ``ppo train``, it takes Ctrl-C even when started with SIGINT ignored (pytest run from
``nohup ... &``); and it never outlives its test: ``forever`` and ``until`` end (recorded as
interrupted) once the process that started it is gone or after :data:`LIFETIME` seconds.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from telemetry import Recorder
from telemetry.events import PPOUpdatePayload, RolloutPayload

STEPS_PER_UPDATE = 512
LIFETIME = 300.0
"""Seconds after which a stand-in that was never stopped stops itself."""


def record_update(rec: Recorder, update: int) -> None:
    step = (update + 1) * STEPS_PER_UPDATE
    rec.emit(RolloutPayload(update=update, global_step=step, episode_return_mean=20.0 + update))
    rec.emit(
        PPOUpdatePayload(
            update=update,
            global_step=step,
            approx_kl=0.004,
            clip_fraction=0.05,
            early_stopped=False,
            explained_variance=0.7,
            grad_norm=0.8,
        )
    )


def orphaned(parent: int, started: float) -> bool:
    """The test that started this process is gone, or has forgotten it."""
    return os.getppid() != parent or time.monotonic() - started > LIFETIME


def main(path: Path, mode: str, updates: int) -> int:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if inherited ignored
    parent, started = os.getppid(), time.monotonic()
    config = {"total_steps": updates * STEPS_PER_UPDATE, "max_kl": 0.03}
    rec = Recorder(path=path, env_id="CartPole-v1", seed=1, config=config)
    try:
        with rec:
            update = 0
            done = path.with_suffix(".done")
            while mode == "forever" or (mode == "until" and not done.exists()) or update < updates:
                if orphaned(parent, started):
                    raise KeyboardInterrupt
                record_update(rec, update)
                update += 1
                time.sleep(0.1)
            if mode == "crash":
                print("Traceback (most recent call last):", file=sys.stderr)
                print("RuntimeError: the stand-in trainer fell over", file=sys.stderr)
                sys.stderr.flush()
                os._exit(3)  # dies on the spot: no run_finished, as after a segfault
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    code = main(Path(args[0]), args[1], int(args[2]) if len(args) > 2 else 0)
    sys.exit(code)
