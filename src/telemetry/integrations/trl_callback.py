"""The TRL callback itself; import it as ``telemetry.integrations.trl``.

This module imports transformers at once: the public module loads it only when
``SanctumCallback`` is first used. The hooks gather what the Trainer hands its callbacks;
the mapping to our payloads is ``telemetry.integrations.trl_figures``. A run halts through
the halter it is given (:class:`telemetry.halting.Halter`, such as ``sanctum.HaltGate``):
this module knows the protocol, not who implements it.

Every hook returns at once on a process other than the main one (``is_world_process_zero``):
one log per run, written by rank 0, whose figures TRL has already gathered over the ranks.
A step can run for minutes without calling any hook (generation, a reward model, a remote
sandbox), so a small thread writes a heartbeat after :data:`HEARTBEAT_SECONDS` of silence
while training is under way; it falls silent once a wait has lasted
:data:`HEARTBEAT_FACTOR` times the run's longest so far (and :data:`HEARTBEAT_HORIZON` at
least), so a run that hangs for good still reads as stalled.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from importlib import metadata
from types import TracebackType
from typing import Any, Final

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from telemetry.events import (
    SAMPLES,
    HeartbeatPayload,
    Payload,
    RunStatus,
    TrainerInfo,
    policy_epochs_of,
)
from telemetry.halting import Halter, HaltWatch, TrainingHalted
from telemetry.integrations.trl_figures import (
    Settings,
    config_of,
    is_update,
    settings_of,
    update_payload,
    whole_number,
)
from telemetry.recorder import Recorder, ending_of, new_run_id

HEARTBEAT_SECONDS: Final = 5.0
"""A heartbeat is written when the run has been silent this long while training."""
HEARTBEAT_FACTOR: Final = 10.0
"""Heartbeats stop once the wait for the next hook is this many times the longest so far."""
HEARTBEAT_HORIZON: Final = 600.0
"""...and at least this many seconds: a first step may load and compile for minutes."""
UNSEEN_END: Final = (
    "train() ended without reaching its end: an exception the callback could not see "
    "(use SanctumCallback as a context manager to record it)"
)


def _vocab_size(model: Any) -> int | None:
    """The size of the model's output vocabulary (what its entropy is normalised by)."""
    config: Any = getattr(model, "config", None)
    text_config = getattr(config, "get_text_config", None)
    text = text_config() if callable(text_config) else config
    size = getattr(text, "vocab_size", None)
    return size if isinstance(size, int) and not isinstance(size, bool) else None


def _trl_version() -> str:
    try:
        return metadata.version("trl")
    except metadata.PackageNotFoundError:
        return ""


class SanctumCallback(TrainerCallback):
    """Records a TRL GRPO, RLOO or PPO run: ``GRPOTrainer(..., callbacks=[SanctumCallback()])``.

    ``run_dir``: where ``<run_id>/events.jsonl`` goes (default ``runs``); ``run_id``: the
    run's folder name (default: the algorithm, the time and a random suffix).

    ``halter``: what judges the run as it is recorded (a :class:`~telemetry.halting.Halter`;
    ``sanctum.HaltGate("rules.toml", "critical")`` stops training at the first log line at
    which ``sanctum check --fail-on critical`` would fail the run so far). Once its
    ``reason`` is set, the callback sets ``control.should_training_stop``, records the
    halter's anomaly, and the run finishes with the halter's status and reason (``failed``,
    ``halted: <rule> critical (...)``). A trainer that goes on regardless (TRL's
    PPOTrainer never reads the flag) is stopped by :class:`TrainingHalted`, raised at its
    next log line once the run is finished.

    The Trainer calls no callback when ``train()`` raises: the run is recorded ``failed``
    from ``sys.excepthook`` or at exit, or, the sure way (notebooks included), by using the
    callback as a context manager around ``train()``.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str] | None = None,
        run_id: str | None = None,
        halter: Halter | None = None,
    ) -> None:
        super().__init__()
        self.watch = HaltWatch.of(halter)
        """The halting sequence for ``halter`` (None without one), fresh for each train()."""
        self.run_dir = "runs" if run_dir is None else run_dir
        self.run_id = run_id
        self.halter = halter
        self.recorder: Recorder | None = None
        self.settings: Settings | None = None
        self.halted = False
        self._lock = threading.Lock()
        self._last_event = 0.0
        self._last_hook = 0.0
        self._longest_wait = 0.0
        self._stop = threading.Event()
        self._beats: threading.Thread | None = None
        self._hooked = False
        self._previous_hook: Any = None

    # -- the run's life --------------------------------------------------------------------

    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> None:
        if not state.is_world_process_zero:
            return
        if self.recorder is not None and not self.recorder.finished:
            self._finish("failed", UNSEEN_END)
        settings = settings_of(args, _vocab_size(kwargs.get("model")))
        epochs = getattr(args, settings.algorithm.epochs_setting, None)
        recorder = Recorder(
            run_dir=self.run_dir,
            run_id=self.run_id or new_run_id(f"trl-{settings.algorithm.name}"),
            seed=getattr(args, "seed", None),
            config=config_of(args),
            trainer=TrainerInfo(name="trl", version=_trl_version()),
            world_size=max(1, whole_number(getattr(args, "world_size", 1)) or 1),
            algorithm=settings.algorithm.name,
            kl=settings.kl or None,
            policy_epochs=policy_epochs_of(epochs),
            step_unit=settings.algorithm.step_unit,
        )
        recorder.open()
        if self.halter is not None:  # before run_started: it judges the whole run
            self.watch = HaltWatch(self.halter)
            self.watch.subscribe(recorder)
        self.recorder, self.settings, self.halted = recorder, settings, False
        with self._lock:
            recorder.start()
            self._last_event = self._last_hook = time.monotonic()
        self._longest_wait = 0.0
        self._hook_exit()
        self._start_beats()

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._progress()
        recorder, settings = self.recorder, self.settings
        if recorder is None or settings is None or recorder.finished or not logs:
            return
        if not is_update(logs):
            return
        if self.halted:  # the trainer went on after the stop
            self._halt_by_raising()
        episode = logs.get("episode") if settings.algorithm.step_unit == SAMPLES else None
        step = whole_number(episode)
        if step is None:
            step = whole_number(getattr(state, "global_step", None))
        if step is None or step < 0:  # no step to place it at: after the latest one
            step = recorder.global_step or 0
        payload = update_payload(logs, update=recorder.updates, global_step=step, settings=settings)
        self._emit(payload)
        watch = self.watch
        if watch is not None and not self.halted:
            with self._lock:  # the halter's anomaly, between heartbeats
                self.halted = watch.judge(recorder, payload.global_step) is not None
            if self.halted:  # never unset: the trainer may be stopping for its own reasons
                control.should_training_stop = True

    def on_train_end(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> None:
        if self.recorder is None or self.recorder.finished:
            return
        if self.halted and self.watch is not None:
            self._finish(self.watch.halter.status, self.watch.reason)
        else:
            self._finish("completed")

    def _halt_by_raising(self) -> None:
        """Stop a trainer that ignores ``should_training_stop`` (TRL's PPOTrainer loops over
        its batches without reading it): finish the run as halted, then raise."""
        assert self.watch is not None
        reason = self.watch.reason
        self._finish(self.watch.halter.status, reason)
        raise TrainingHalted(f"{reason}; the trainer went on after should_training_stop")

    def __enter__(self) -> SanctumCallback:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        exc = exc_info[1]
        if isinstance(exc, BaseException):
            self._failed(exc)
        elif self.recorder is not None and not self.recorder.finished:
            self._finish("failed", UNSEEN_END)

    # -- progress and heartbeats -----------------------------------------------------------

    def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
        self._progress()

    def on_substep_end(self, *args: Any, **kwargs: Any) -> None:
        self._progress()

    def on_step_end(self, *args: Any, **kwargs: Any) -> None:
        self._progress()

    def on_evaluate(self, *args: Any, **kwargs: Any) -> None:
        self._progress()

    def on_save(self, *args: Any, **kwargs: Any) -> None:
        self._progress()

    def _progress(self) -> None:
        """A hook ran: the run is moving. Measures the longest wait between hooks."""
        if self.recorder is None:
            return
        now = time.monotonic()
        self._longest_wait = max(self._longest_wait, now - self._last_hook)
        self._last_hook = now

    def _emit(self, payload: Payload) -> None:
        recorder = self.recorder
        assert recorder is not None
        with self._lock:
            recorder.emit(payload)
            self._last_event = time.monotonic()

    def _start_beats(self) -> None:
        self._stop = threading.Event()
        self._beats = threading.Thread(
            target=self._beat, args=(self._stop,), name="sanctum-heartbeat", daemon=True
        )
        self._beats.start()

    def _beat(self, stop: threading.Event) -> None:
        """Write a heartbeat after each HEARTBEAT_SECONDS of silence while hooks still come."""
        while not stop.wait(HEARTBEAT_SECONDS / 5):
            now = time.monotonic()
            horizon = max(HEARTBEAT_HORIZON, HEARTBEAT_FACTOR * self._longest_wait)
            if now - self._last_event < HEARTBEAT_SECONDS or now - self._last_hook > horizon:
                continue
            with self._lock:
                recorder = self.recorder
                if stop.is_set() or recorder is None or recorder.finished:
                    return
                recorder.emit(HeartbeatPayload(global_step=recorder.global_step or 0))
                self._last_event = time.monotonic()

    # -- the end, seen or not --------------------------------------------------------------

    def _finish(self, status: RunStatus, reason: str | None = None) -> None:
        self._stop.set()
        with self._lock:
            if self.recorder is not None:
                self.recorder.finish(status, reason)
        beats = self._beats
        if beats is not None and beats is not threading.current_thread():
            beats.join()
        self._beats = None
        self._unhook_exit()

    def _failed(self, exc: BaseException) -> None:
        """Record the exception that ended ``train()`` (nothing once the run finished)."""
        if self.recorder is not None and not self.recorder.finished:
            self._finish(*ending_of(exc))

    def _hook_exit(self) -> None:
        """Chain ``sys.excepthook`` and register an exit handler while training runs."""
        if self._hooked:
            return
        self._hooked = True
        self._previous_hook = sys.excepthook
        sys.excepthook = self._excepthook
        atexit.register(self._at_exit)

    def _unhook_exit(self) -> None:
        if not self._hooked:
            return
        self._hooked = False
        if sys.excepthook == self._excepthook:  # not if another hook chained after ours
            sys.excepthook = self._previous_hook
        atexit.unregister(self._at_exit)

    def _excepthook(
        self, exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        self._failed(exc)
        self._previous_hook(exc_type, exc, tb)

    def _at_exit(self) -> None:
        if self.recorder is not None and not self.recorder.finished:
            self._finish("failed", "the process exited while train() was running")
