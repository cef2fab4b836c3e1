"""The Stable-Baselines3 callback itself; import it as ``telemetry.integrations.sb3``.

This module imports stable-baselines3 (and so torch) at once: the public module loads it
only when ``SanctumCallback`` is first used. The hooks only gather what SB3 exposes; the
mapping to our payloads is ``sb3_figures``.

SB3 logs an update's figures at the end of ``train()``, which runs after the rollout's end
and before the next rollout starts, and its logger clears them at the next log dump (after
that rollout). So an update is recorded at the next ``_on_rollout_start``, or at
``_on_training_end`` for the last one: each exactly once, whatever ``log_interval`` is.
A pending update is recorded only when SB3's epochs counter shows its ``train()`` logged.
With a halter, each recorded update is judged at once: a halted run's ``_on_step`` returns
False at the next rollout's first step, which ends ``learn()`` (SB3's own way to stop).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import stable_baselines3
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback

from telemetry.events import AnomalyPayload, HeartbeatPayload, Payload, TrainerInfo
from telemetry.halting import Halter, HaltWatch
from telemetry.integrations.episodes import rollout_payload
from telemetry.integrations.sb3_figures import (
    EPOCHS_KEY,
    Counts,
    Measured,
    Settings,
    hyperparameters,
    update_payload,
)
from telemetry.recorder import Recorder


class _Handle(Protocol):
    """What an optimizer hook's registration returns (torch's ``RemovableHandle``)."""

    def remove(self) -> None: ...


class Gradient(Protocol):
    """A gradient tensor, as far as the norm needs it."""

    def detach(self) -> Gradient: ...
    def pow(self, exponent: int) -> Gradient: ...
    def sum(self) -> Gradient: ...
    def __float__(self) -> float: ...
    def __add__(self, other: Gradient) -> Gradient: ...


class Parameter(Protocol):
    """A parameter of SB3's policy, as far as the gradient hook needs it."""

    requires_grad: bool

    def register_hook(self, hook: Callable[[Gradient], None]) -> _Handle: ...


class Optimizer(Protocol):
    """The one thing the callback needs of SB3's torch optimizer: a step hook (named
    structurally, so this package never imports torch, not even for its types)."""

    def register_step_post_hook(self, hook: Callable[..., None]) -> _Handle: ...


HEARTBEAT_SECONDS: Final = 5.0
"""A heartbeat is written when a rollout has been silent this long."""


@dataclass(frozen=True, slots=True)
class _Pending:
    """An update whose ``train()`` runs now: what the callback knew when it began."""

    update: int
    global_step: int
    epochs_before: int
    steps_before: int
    started: float
    return_mean: float | None
    return_std: float | None


def settings_of(model: Any) -> Settings:
    """The figures' reading settings of a PPO model (TypeError for any other algorithm)."""
    if not all(hasattr(model, a) for a in ("n_epochs", "batch_size", "target_kl", "n_steps")):
        raise TypeError(f"SanctumCallback records PPO; got {type(model).__name__}")
    samples = model.n_steps * model.n_envs
    space = model.action_space
    log_actions = None
    if isinstance(space, spaces.Discrete) and int(space.n) > 1:
        log_actions = math.log(int(space.n))
    elif isinstance(space, spaces.MultiDiscrete):
        log_actions = math.fsum(math.log(int(n)) for n in space.nvec.flat) or None
    return Settings(
        n_epochs=model.n_epochs,
        minibatches_per_epoch=-(-samples // (model.batch_size or samples)),
        ent_coef=float(model.ent_coef),
        vf_coef=float(model.vf_coef),
        target_kl=None if model.target_kl is None else float(model.target_kl),
        log_actions=log_actions,
    )


def env_id_of(model: Any) -> str | None:
    """The gymnasium id of the model's first environment, when it was made by id."""
    try:
        spec = model.get_env().get_attr("spec", indices=[0])[0]
    except AttributeError:
        return None
    return getattr(spec, "id", None)


class SanctumCallback(BaseCallback):
    """Records an SB3 PPO run: ``model.learn(n, callback=SanctumCallback())``.

    By default it opens a :class:`~telemetry.Recorder` at the start of ``learn`` (the
    model's settings in ``run_started.config``) and finishes it at the end. SB3 calls no
    callback when ``learn`` raises: use it as a context manager to record that run as
    ``failed`` or ``interrupted`` rather than unfinished::

        with SanctumCallback() as cb:
            model.learn(100_000, callback=cb)

    ``recorder``: record into a Recorder you opened and will close (the callback then
    neither starts nor finishes it, and its update indices follow the recorder's).

    ``halter``: what judges the run as it is recorded (a :class:`~telemetry.halting.Halter`;
    ``sanctum.HaltGate("rules.toml", "critical")`` stops training after the first update at
    which ``sanctum check --fail-on critical`` would fail the run so far). Once its
    ``reason`` is set, the callback records the halter's anomaly, ``learn()`` returns at the
    next step, and the run finishes with the halter's status and reason (``failed``,
    ``halted: <rule> critical (...)``), your ``recorder`` too (build the callback before
    that recorder starts: the halter is subscribed to it then).
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str] = "runs",
        run_id: str | None = None,
        recorder: Recorder | None = None,
        env_id: str | None = None,
        verbose: int = 0,
        halter: Halter | None = None,
    ) -> None:
        super().__init__(verbose)
        self.halting = HaltWatch.of(halter)
        if recorder is not None and self.halting is not None:
            self.halting.subscribe(recorder)
        self.run_dir, self.run_id, self.env_id = run_dir, run_id, env_id
        self.recorder = recorder
        self._owns = recorder is None
        self._settings: Settings | None = None
        self._pending: _Pending | None = None
        self._returns: list[float] = []
        self._lengths: list[int] = []
        self._steps = 0
        self._hook: tuple[Optimizer, _Handle] | None = None
        self._grad_hooks: list[_Handle] = []
        self._squares: list[Gradient] = []
        """Squared norms of each parameter's gradient in the backward pass under way."""
        self._norms: list[Gradient] = []
        """Squared pre-clip global gradient norm of each optimizer step of the update under
        way, still on the device: read once, when the update is recorded (no sync a step)."""
        self._mark = (0, 0.0)
        self._last_event = 0.0

    def __enter__(self) -> SanctumCallback:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._flush(report_stale=False)
        self._unhook()
        if self._owns and self.recorder is not None:
            self.recorder.__exit__(*exc_info)  # no-op when learn() finished it

    def _emit(self, payload: Payload) -> None:
        assert self.recorder is not None
        self.recorder.emit(payload)
        self._last_event = time.monotonic()

    def _init_callback(self) -> None:
        self._settings = settings_of(self.model)

    def _on_training_start(self) -> None:
        if self._owns:
            total = self.locals.get("total_timesteps")
            self.recorder = Recorder(
                run_dir=self.run_dir,
                run_id=self.run_id,
                env_id=self.env_id or env_id_of(self.model),
                seed=self.model.seed,
                config=hyperparameters(self.model, total),
                trainer=TrainerInfo(
                    name="stable-baselines3", version=stable_baselines3.__version__
                ),
                action_space=self.model.action_space,
            )
            if self.halting is not None:  # before run_started: it judges the whole run
                self.halting.subscribe(self.recorder)
            self.recorder.start()
        self._mark = (self.model.num_timesteps, time.monotonic())
        self._last_event = self._mark[1]

    @property
    def halted(self) -> str | None:
        """Why the halter stopped ``learn()`` (``halted: <rule> critical (...)``), or None:
        ``learn()`` returns normally either way, so a script that should exit as ``ppo train
        --halt-on`` does (1) checks it: ``if cb.halted: sys.exit(1)``."""
        return None if self.halting is None else self.halting.reason

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", ()):
            episode = info.get("episode")
            if episode is not None:  # Monitor's summary of a finished episode
                self._returns.append(float(episode["r"]))
                self._lengths.append(int(episode["l"]))
        if time.monotonic() - self._last_event >= HEARTBEAT_SECONDS:
            self._emit(HeartbeatPayload(global_step=self.model.num_timesteps))
        return self.halting is None or self.halting.reason is None

    def _on_rollout_start(self) -> None:
        self._flush(report_stale=True)

    def _on_rollout_end(self) -> None:
        assert self.recorder is not None
        step, now = self.model.num_timesteps, time.monotonic()
        seconds = now - self._mark[1]
        self._emit(
            rollout_payload(
                update=self.recorder.updates,
                global_step=step,
                returns=self._returns,
                lengths=self._lengths,
                steps_per_second=(step - self._mark[0]) / seconds if seconds > 0 else None,
            )
        )
        self._returns, self._lengths, self._mark = [], [], (step, now)
        self._watch(self.model.policy.optimizer)
        self._watch_gradients(self.model.policy.parameters())
        self._norms, self._squares = [], []
        mean, std = _return_stats(getattr(self.model, "rollout_buffer", None))
        self._pending = _Pending(
            self.recorder.updates,
            step,
            self.model._n_updates,
            self._steps,
            time.monotonic(),
            mean,
            std,
        )

    def _on_training_end(self) -> None:
        self._flush(report_stale=True)
        self._unhook()
        if self.recorder is None:
            return
        if self.halting is not None and self.halting.reason is not None:
            self.halting.finish(self.recorder)
        elif self._owns:
            self.recorder.finish("completed")

    def _flush(self, *, report_stale: bool) -> None:
        """Record the pending update when its ``train()`` logged (see the module doc)."""
        pending, self._pending = self._pending, None
        if pending is None or self.recorder is None or self.recorder.finished:
            return
        values = self.model.logger.name_to_value
        epochs = values.get(EPOCHS_KEY)
        if epochs is None or int(epochs) <= pending.epochs_before:
            if report_stale:
                self._emit(_stale(pending))
            return
        assert self._settings is not None
        counts = Counts(int(epochs) - pending.epochs_before, self._steps - pending.steps_before)
        limit = getattr(self.model, "max_grad_norm", None)
        measured = Measured(
            grad_norms=tuple(math.sqrt(float(square)) for square in self._norms),
            max_grad_norm=None if limit is None else float(limit),
            return_mean=pending.return_mean,
            return_std=pending.return_std,
        )
        self._emit(
            update_payload(
                values,
                update=pending.update,
                global_step=pending.global_step,
                counts=counts,
                settings=self._settings,
                seconds=time.monotonic() - pending.started,
                measured=measured,
            )
        )
        if self.halting is not None:
            self.halting.judge(self.recorder, pending.global_step)

    def _watch(self, optimizer: Optimizer) -> None:
        """Count applied optimizer steps (SB3 keeps no count of minibatches)."""
        if self._hook is not None and self._hook[0] is optimizer:
            return
        self._unhook()
        self._hook = (optimizer, optimizer.register_step_post_hook(self._count_step))

    def _count_step(self, optimizer: Optimizer, args: Any, kwargs: Any) -> None:
        self._steps += 1
        if self._squares:  # the backward pass before this step: its norm before SB3 clipped
            total = self._squares[0]
            for square in self._squares[1:]:
                total = total + square
            self._norms.append(total)
            self._squares = []

    def _watch_gradients(self, parameters: Iterable[Parameter]) -> None:
        """Measure each backward pass's gradient norm as it is computed, before SB3's
        ``clip_grad_norm_`` scales the gradients in place (SB3 logs no gradient norm)."""
        if self._grad_hooks:
            return
        self._grad_hooks = [p.register_hook(self._square) for p in parameters if p.requires_grad]

    def _square(self, grad: Gradient) -> None:
        self._squares.append(grad.detach().pow(2).sum())

    def _unhook(self) -> None:
        if self._hook is not None:
            self._hook[1].remove()
            self._hook = None
        for handle in self._grad_hooks:
            handle.remove()
        self._grad_hooks = []


def _return_stats(buffer: Any) -> tuple[float | None, float | None]:
    """Mean and standard deviation of a rollout buffer's return targets (computed by SB3
    before the rollout's end is reported), or None when it holds none."""
    returns = getattr(buffer, "returns", None)
    if returns is None or getattr(returns, "size", 0) == 0:
        return None, None
    return float(returns.mean()), float(returns.std())


def _stale(pending: _Pending) -> AnomalyPayload:
    return AnomalyPayload(
        severity="warning",
        metric="approx_kl",
        message=(
            f"SB3's logger held no figures of update {pending.update} when the callback "
            "read them (another callback dumped the log first); the update is not recorded"
        ),
        update=pending.update,
        global_step=pending.global_step,
    )
