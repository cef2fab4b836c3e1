"""Recorder: the few lines any trainer needs to write an event log Sanctum can show.

Opening it creates ``<run_dir>/<run_id>/events.jsonl`` (or the given path) and writes
``run_started``; closing writes ``run_finished``: ``completed``, ``failed`` with the
exception's summary when the block raised, or ``interrupted`` on KeyboardInterrupt. It
tracks the latest ``global_step`` and update count from what was emitted, so
``run_finished`` needs nothing from the caller.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from telemetry.bus import Emitter, EventBus
from telemetry.eventlog import EventLogWriter, LogInUse
from telemetry.events import (
    Event,
    KLMeasure,
    Payload,
    PPOUpdatePayload,
    RunFinishedPayload,
    RunStartedPayload,
    RunStatus,
    TrainerInfo,
    action_space_of,
)
from telemetry.text import visible

EVENTS_FILE = "events.jsonl"
# bytes kept free beside the log for run_finished (a line of a few hundred bytes; a page or
# more on most file systems)
FINISH_RESERVE = 16 * 1024
"""Name of the event log inside a run folder."""


RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")
"""A run id is a folder name: letters, digits, ``.``, ``_`` and ``-``, not a path."""


def check_run_id(run_id: str) -> str:
    """``run_id`` if it is a name (see :data:`RUN_ID`); else ValueError saying why."""
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(
            f"run id {run_id!r} is not a name: use letters, digits, '.', '_' and '-' "
            "(at most 200, not starting with '.' or '-'); a run id is a folder under the "
            "run directory, never a path"
        )
    return run_id


def new_run_id(label: str | None = None) -> str:
    """A sortable, unique run id such as ``CartPole-v1-20261121-153012-a3f9``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    prefix = re.sub(r"[^A-Za-z0-9._-]+", "-", label or "run").strip(".-")[:150] or "run"
    return f"{prefix}-{stamp}-{secrets.token_hex(2)}"


REASON_CHARS: Final = 300
"""The longest reason :func:`ending_of` writes for an exception (the log keeps a line a
reader can show, not a tensor dump)."""


def ending_of(exc: BaseException | None) -> tuple[RunStatus, str | None]:
    """How a run whose block ended with ``exc`` finishes: ``completed`` without one,
    ``interrupted`` on KeyboardInterrupt (Ctrl-C, or a stop signal that says which), else
    ``failed`` with the exception's summary: its type and the first line of its message
    (torch's errors go on to print whole tensors), cut to :data:`REASON_CHARS`."""
    if exc is None:
        return "completed", None
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", str(exc) or "KeyboardInterrupt"
    lines = str(exc).strip().splitlines()
    said = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    if len(lines) > 1 or len(said) > REASON_CHARS:
        said = said[: REASON_CHARS - 5].rstrip() + " (...)"
    return "failed", said


class Recorder:
    """Records one run to an event log; use as a context manager.

    Example::

        with Recorder(env_id="CartPole-v1", config={"max_kl": 0.03}) as rec:
            rec.emit(RolloutPayload(update=0, global_step=512, episode_return_mean=21.0))

    ``algorithm``, ``kl``, ``policy_epochs`` and ``step_unit`` go into ``run_started`` (see
    :class:`~telemetry.events.RunStartedPayload`): a GRPO run says ``algorithm="grpo"`` and
    what its ``ref_kl`` measures, a run whose ``global_step`` counts generated tokens
    ``step_unit="tokens"`` (None: environment steps), a policy over a ``Box``
    ``action_space="continuous"``, or the space itself (``env.action_space``: a Gymnasium
    ``Box`` is continuous, ``Discrete`` discrete, a ``Dict`` not declared; see
    ``telemetry.events.action_space_of``). A payload the readers would refuse raises
    :class:`~telemetry.codec.PayloadError` at :meth:`emit` and writes nothing.

    ``clock``: where event times come from (default ``time.time``); when given, the run's
    duration is measured on it too, so a test with a fake clock is repeatable.
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
        clock: Callable[[], float] | None = None,
        world_size: int = 1,
        algorithm: str = "ppo",
        kl: dict[str, KLMeasure] | None = None,
        policy_epochs: int | None = None,
        step_unit: str | None = None,
        action_space: object = None,
    ) -> None:
        if isinstance(action_space, str) and action_space_of(action_space) is None:
            raise ValueError(
                f"action_space must be 'discrete' or 'continuous', got {action_space!r}"
            )
        self.run_id = check_run_id(run_id) if run_id is not None else new_run_id(env_id)
        self.path = Path(path) if path is not None else Path(run_dir) / self.run_id / EVENTS_FILE
        self.run_dir = self.path.parent
        self._started = RunStartedPayload(
            trainer=trainer or TrainerInfo(name="custom"),
            env_id=env_id,
            seed=seed,
            config=dict(config or {}),
            host=socket.gethostname(),
            pid=os.getpid(),
            world_size=world_size,
            algorithm=algorithm,
            kl=kl,
            policy_epochs=policy_epochs,
            step_unit=step_unit,
            action_space=action_space_of(action_space),
        )
        self._fsync_every = fsync_every
        self._append = append
        self.bus = EventBus()
        self.emitter = Emitter(self.bus, self.run_id, clock=clock or time.time)
        self._elapsed = clock or time.monotonic
        self._writer: EventLogWriter | None = None
        self._t0: float | None = None
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
        self.finish(*ending_of(exc))

    def start(self) -> None:
        """Open the log (:meth:`open`) and write ``run_started``."""
        self.open()
        self._t0 = self._elapsed()
        self.emitter.emit(self._started)

    def open(self) -> None:
        """Open the log without writing anything: for a caller that writes its own
        ``run_started``. Idempotent.

        A log that already holds events is refused unless ``append=True``: two runs in one
        file would be judged as one, and nothing already recorded may be overwritten.
        """
        if self._writer is not None:
            return
        writer = EventLogWriter(  # locked: ours alone
            self.path, fsync_every=self._fsync_every, reserve=FINISH_RESERVE
        )
        if not self._append and writer.size > 0:
            writer.close()
            raise LogInUse(
                f"{visible(str(self.path))}: an event log is already there; choose another run "
                "id or path (a Recorder adds a run to it only with append=True)"
            )
        self._writer = writer
        self.bus.subscribe(self._writer, name=self._writer.name)

    def log_moved(self) -> bool:
        """Whether the log file was renamed or removed while the run records into it."""
        return self._writer is not None and self._writer.moved()

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
        self._writer.release_reserve()  # the last line fits even on a disk that filled
        try:
            self.emitter.emit(
                RunFinishedPayload(
                    status=status,
                    reason=reason,
                    global_step=self.global_step,
                    updates=self.updates,
                    duration_seconds=None if self._t0 is None else self._elapsed() - self._t0,
                )
            )
        finally:
            self.close()

    def close(self) -> None:
        """Close the log without writing ``run_finished`` (the run then reads as one that
        stopped without a word, as a killed process leaves it); later emits are refused."""
        self.finished = True
        if self._writer is not None:
            self._writer.close()
