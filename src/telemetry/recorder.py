"""Recorder: the few lines any trainer needs to write an event log Sanctum can show.

Opening it creates ``<run_dir>/<run_id>/events.jsonl`` (or the given path) and writes
``run_started``; closing writes ``run_finished``: ``completed``, ``failed`` with the
exception's summary when the block raised, or ``interrupted`` on KeyboardInterrupt. It
tracks the latest ``global_step`` and update count from what was emitted, so
``run_finished`` needs nothing from the caller.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from telemetry.bus import Emitter, EventBus
from telemetry.eventlog import EventLogWriter
from telemetry.events import (
    Event,
    Payload,
    PPOUpdatePayload,
    RunFinishedPayload,
    RunStartedPayload,
    RunStatus,
    TrainerInfo,
)

EVENTS_FILE = "events.jsonl"
"""Name of the event log inside a run folder."""


def new_run_id(label: str | None = None) -> str:
    """A sortable, unique run id such as ``CartPole-v1-20261121-153012-a3f9``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    prefix = (label or "run").replace("/", "-").replace(" ", "-")
    return f"{prefix}-{stamp}-{secrets.token_hex(2)}"


class Recorder:
    """Records one run to an event log; use as a context manager.

    Example::

        with Recorder(env_id="CartPole-v1", config={"max_kl": 0.03}) as rec:
            rec.emit(RolloutPayload(update=0, global_step=512, episode_return_mean=21.0))
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str] = "runs",
        run_id: str | None = None,
        path: str | os.PathLike[str] | None = None,
        env_id: str | None = None,
        seed: int | None = None,
        config: dict[str, Any] | None = None,
        trainer: TrainerInfo | None = None,
        fsync_every: float | None = None,
        append: bool = False,
    ) -> None:
        self.run_id = run_id or new_run_id(env_id)
        self.path = Path(path) if path is not None else Path(run_dir) / self.run_id / EVENTS_FILE
        self.run_dir = self.path.parent
        self._started = RunStartedPayload(
            trainer=trainer or TrainerInfo(name="custom"),
            env_id=env_id,
            seed=seed,
            config=dict(config or {}),
            host=socket.gethostname(),
            pid=os.getpid(),
        )
        self._fsync_every = fsync_every
        self._append = append
        self.bus = EventBus()
        self.emitter = Emitter(self.bus, self.run_id)
        self._writer: EventLogWriter | None = None
        self._t0 = 0.0
        self.global_step: int | None = None
        self.updates = 0
        self.finished = False

    def __enter__(self) -> Recorder:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.finish("completed")
        elif isinstance(exc, KeyboardInterrupt):
            self.finish("interrupted", "KeyboardInterrupt")
        else:
            self.finish("failed", f"{type(exc).__name__}: {exc}")

    def start(self) -> None:
        """Open the log and write ``run_started``.

        A log that already holds events is refused unless ``append=True``: two runs in one
        file would be judged as one, and nothing already recorded may be overwritten.
        """
        if not self._append and self.path.exists() and self.path.stat().st_size > 0:
            raise FileExistsError(
                f"{self.path}: an event log is already there; choose another run id or path, "
                "or pass append=True to add a run to it"
            )
        self._writer = EventLogWriter(self.path, fsync_every=self._fsync_every)
        self.bus.subscribe(self._writer, name=self._writer.name)
        self._t0 = time.monotonic()
        self.emitter.emit(self._started)

    def emit(self, payload: Payload) -> Event:
        """Publish ``payload`` (to the log and every other subscriber of ``bus``)."""
        if self._writer is None or self.finished:
            state = "finished" if self.finished else "not started"
            raise RuntimeError(
                f"Recorder.emit({type(payload).__name__}) on a recorder that is {state}: "
                "use it inside `with Recorder(...)` or call start() first"
            )
        step = getattr(payload, "global_step", None)
        if isinstance(step, int):
            self.global_step = step
        if isinstance(payload, PPOUpdatePayload):
            self.updates = payload.update + 1
        return self.emitter.emit(payload)

    def finish(self, status: RunStatus, reason: str | None = None) -> None:
        """Write ``run_finished`` and close the log; later calls do nothing."""
        if self.finished or self._writer is None:
            return
        self.finished = True
        try:
            self.emitter.emit(
                RunFinishedPayload(
                    status=status,
                    reason=reason,
                    global_step=self.global_step,
                    updates=self.updates,
                    duration_seconds=time.monotonic() - self._t0,
                )
            )
        finally:
            self._writer.close()
