"""Trainer: rollouts from Gymnasium vector envs, PPO updates, telemetry and checkpoints.

One loop, one event stream: each iteration records ``rollout`` then ``ppo_update`` (and an
``anomaly`` for each problem the agent reports) through a :class:`telemetry.Recorder`,
which writes ``run_started`` on entry and ``run_finished`` on exit. The policy, its update
and the reference live on the config's ``device``; the environments step on the CPU with
the rollout's numpy actor, refreshed from the policy after each update. A heartbeat goes out
whenever nothing else was recorded for ``heartbeat_seconds``. Failures stop training
loudly but safely: Ctrl-C saves a checkpoint and records ``interrupted``; a sink that
cannot record (a full disk) saves a checkpoint and raises :class:`TrainingStopped` naming
the file and the error, because training on without a record defeats the point.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ppo import __version__
from ppo.config import PPOConfig
from ppo.config.device import resolved_device
from ppo.core.normalize import Normalization
from ppo.distributed.world import SINGLE, World
from ppo.model import checkpoint
from ppo.model import reference as ref
from ppo.model.checkpoint import Counters
from ppo.model.policy import ActorCritic
from ppo.rollout.collector import Collector, rollout_payload
from ppo.rollout.envs import make_vector_env, reset_seed
from ppo.run.halt import agreed_reason
from ppo.run.ranks import (
    QuietRecorder,
    env_seed_offset,
    generator_seed,
    job_rollout,
    rank_share,
    sampling_rng,
    trace_update,
)
from ppo.run.resume import restore, run_state
from ppo.update.agent import PPOAgent
from telemetry import (
    HeartbeatPayload,
    Recorder,
    SinkError,
    TrainerInfo,
)
from telemetry.bus import Sink
from telemetry.eventlog import LogInUse
from telemetry.events import Payload, PPOUpdatePayload
from telemetry.halting import Halter
from telemetry.returns import FINAL_EPISODES, final_return
from telemetry.run_config import DEVICE_USED, RESUMED_FROM, RESUMED_UPDATE

TRAINER = TrainerInfo(name="sanctum-ppo", version=__version__)


class NotStarted(Exception):
    """``on_start`` refused to start (it said why); nothing was recorded."""


class TrainingStopped(RuntimeError):
    """Training stopped because the run could not be recorded; a checkpoint was saved."""

    def __init__(self, message: str, checkpoint_path: Path | None) -> None:
        super().__init__(message)
        self.checkpoint_path = checkpoint_path


@dataclass(frozen=True)
class Progress:
    """Where training stands after an update (for progress bars and benchmarks)."""

    updates_done: int
    num_updates: int
    global_step: int
    total_steps: int
    recent_return_mean: float | None
    steps_per_second: float
    early_stopped: bool


@dataclass(frozen=True)
class TrainResult:
    """What a finished run left behind."""

    run_id: str
    events_path: Path
    checkpoint_path: Path | None
    """None on ranks other than 0, which write no checkpoint."""
    global_step: int
    updates: int
    recent_return_mean: float | None
    halted: str | None = None
    """Why the health gate stopped the run (``halted: <rule> critical (...)``), if it did."""


class Trainer:
    """Trains one PPO run and records it; :meth:`run` does the work."""

    def __init__(
        self,
        config: PPOConfig,
        *,
        run_dir: str | Path = "runs",
        run_id: str | None = None,
        resume: Path | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        sinks: Sequence[Sink] = (),
        world: World = SINGLE,
        on_start: Callable[[], bool] | None = None,
        halt: Halter | None = None,
    ) -> None:
        self.config = config
        """The whole job's config (what is recorded); ``local`` is this rank's share."""
        self.world = world
        self.local = rank_share(config, world)
        self.device = world.device if world.distributed else resolved_device(config.device)
        """Where the policy, its update and the reference live (a rank's: its world's);
        :class:`~ppo.config.ConfigError` when the config names CUDA and there is none."""
        self.run_dir = Path(run_dir)
        self.run_id = run_id
        self.resume_path = checkpoint.find(resume) if resume is not None else None
        self.on_progress = on_progress
        self.on_start = on_start
        """Called once everything is built (environments, networks, checkpoints read) and
        before the run folder is made: where ``ppo train`` says where it records, so it never
        names a folder a failed build leaves unmade. False: :class:`NotStarted`."""
        self.sinks = tuple(sinks)
        self.halt = halt
        """The health gate of ``--halt-on`` (given on every rank; rank 0's judges)."""
        self.halted: str | None = None
        self.checkpoint_path: Path | None = None
        self.checkpoint_error: str | None = None
        """Why the checkpoint of an interrupted run could not be saved, if it could not."""
        self._reference: ActorCritic | None = None
        """The frozen reference policy (None: no reference KL)."""
        self._norm: Normalization | None = None
        """The normalisation statistics (built with the environments)."""
        self._recent: deque[tuple[int, float | None]] = deque(maxlen=FINAL_EPISODES)
        """(episodes, mean return) of the latest rollouts: the final return's window needs
        no more (each rollout that counts holds an episode at least)."""
        self._last_emit = time.monotonic()
        self._stop_reason: str | None = None

    def request_stop(self, reason: str = "stop requested") -> None:
        """Finish after the current update: checkpoint, then ``run_finished`` interrupted.

        Safe to call from ``on_progress`` (or another thread); ``run`` then returns normally.
        """
        self._stop_reason = reason

    # ----------------------------------------------------------------- setup
    def _build(self) -> tuple[Collector, PPOAgent, Counters, dict[str, Any]]:
        cfg, local, world = self.config, self.local, self.world
        torch.set_num_threads(cfg.torch_threads)
        envs, spec = make_vector_env(cfg.env_id, local.num_envs, cfg.vector_env)
        self._norm = norm = Normalization(cfg, local.num_envs, spec.obs_dim, world)
        torch.manual_seed(cfg.seed)  # the same initial weights on every rank
        policy = ActorCritic(spec.obs_dim, spec.action, cfg.hidden_sizes, cfg.activation)
        policy.to(self.device)  # initialised on the CPU: the same weights on any device
        self._sampling = sampling_rng(cfg.seed, world)
        shuffle = torch.Generator().manual_seed(generator_seed(cfg.seed, world))
        agent = PPOAgent(policy, local, shuffle, world)
        counters = Counters(update=0, global_step=0)
        recorded = {**cfg.to_dict(), DEVICE_USED: self.device.type}
        try:
            if self.resume_path is not None:
                counters, self._reference = restore(
                    self.resume_path, world, agent, self._sampling, norm, cfg.uses_reference
                )
                recorded[RESUMED_FROM] = {
                    "checkpoint": str(self.resume_path),
                    RESUMED_UPDATE: counters.update,
                    "global_step": counters.global_step,
                }
            else:
                if cfg.init_from is not None:
                    ref.load_weights(policy, cfg.init_from, "starting policy (init_from)")
                self._reference = ref.build_reference(cfg, policy)
            collector = Collector(
                envs, spec, policy, cfg.num_steps, self._sampling, norm.observations, world
            )
            collector.reset(reset_seed(cfg.seed, counters.update) + env_seed_offset(world, local))
        except BaseException:
            envs.close()
            raise
        return collector, agent, counters, recorded

    # ------------------------------------------------------------------- run
    def run(self) -> TrainResult:
        """Train to ``total_steps`` (or until interrupted) and return where things are."""
        collector, agent, counters, recorded = self._build()
        try:
            if self.on_start is not None and not self.on_start():
                raise NotStarted
            recorder = self._recorder(recorded, collector.spec.action.discrete)
            if isinstance(recorder, Recorder):
                try:
                    recorder.open()  # the run folder: checked before, but a race or root
                except LogInUse:  # on a read-only file system can still refuse it
                    raise
                except OSError as exc:
                    why = exc.strerror or str(exc)
                    raise TrainingStopped(
                        f"training stopped: cannot record the run to {recorder.path}: {why}",
                        None,
                    ) from None
            if self.halt is not None:  # before run_started: the gate folds the whole run
                recorder.bus.subscribe(self.halt, name=self.halt.name)
            with recorder as rec:
                for sink in self.sinks:
                    rec.bus.subscribe(sink)
                counters = self._loop(rec, collector, agent, counters)
                if self.halted is not None and self.halt is not None:
                    rec.finish(self.halt.status, self.halted)
                elif self._stop_reason is not None:
                    rec.finish("interrupted", self._stop_reason)
            assert self.checkpoint_path is not None or not self.world.is_main
            return TrainResult(
                run_id=rec.run_id,
                events_path=rec.path,
                checkpoint_path=self.checkpoint_path,
                global_step=counters.global_step,
                updates=counters.update,
                recent_return_mean=self.recent_return_mean,
                halted=self.halted,
            )
        finally:
            collector.envs.close()

    def _recorder(self, recorded: dict[str, Any], discrete: bool) -> Any:
        """Rank 0's :class:`Recorder`; a :class:`QuietRecorder` on every other rank."""
        cfg = self.config
        if not self.world.is_main:
            assert self.run_id is not None, "every rank must be given the run id"
            return QuietRecorder(self.run_dir, self.run_id)
        return Recorder(
            run_dir=self.run_dir,
            run_id=self.run_id,
            env_id=cfg.env_id,
            seed=cfg.seed,
            config=recorded,
            trainer=TRAINER,
            world_size=self.world.size,
            action_space="discrete" if discrete else "continuous",
        )

    def _loop(
        self, rec: Recorder, collector: Collector, agent: PPOAgent, counters: Counters
    ) -> Counters:
        self._started = time.perf_counter()
        self._start_step = counters.global_step
        self._latest = counters  # advanced as soon as an update is applied
        try:
            while self._latest.update < self.config.num_updates and self._stop_reason is None:
                progress = self._iteration(rec, collector, agent, self._latest)
                self._judge_halt(rec, self._latest)
                every = self.config.checkpoint_every
                if every and self._latest.update % every == 0:
                    self._save(rec, agent, self._latest)
                if self.on_progress is not None:
                    self.on_progress(progress)
            self._save(rec, agent, self._latest)
        except KeyboardInterrupt:  # Ctrl-C or a stop signal; the Recorder records "interrupted"
            try:
                self._save(rec, agent, self._latest)
            except (checkpoint.CheckpointError, TrainingStopped) as exc:
                self.checkpoint_error = str(exc)
            raise
        except SinkError as exc:
            raise self._stop_recording_failed(rec, agent, self._latest, exc) from exc
        except checkpoint.CheckpointError as exc:  # a full disk: the run is recorded as failed
            raise TrainingStopped(f"training stopped: {exc}", self.checkpoint_path) from None
        return self._latest

    def _iteration(
        self, rec: Recorder, collector: Collector, agent: PPOAgent, counters: Counters
    ) -> Progress:
        """Collect, record the rollout, update, record the update; counters advance."""
        cfg, update = self.config, counters.update
        num_envs = collector.num_envs

        def on_step(t: int) -> None:
            self._maybe_heartbeat(rec, counters.global_step + (t + 1) * num_envs)

        rollout = job_rollout(collector.collect(on_step=on_step), self.world, update)
        global_step = counters.global_step + cfg.batch_size
        sps = (global_step - self._start_step) / max(time.perf_counter() - self._started, 1e-9)
        recorded = rollout_payload(update, global_step, rollout, sps)
        if recorded.episodes:  # the figures the log holds, so sanctum computes the same
            self._recent.append((recorded.episodes, recorded.episode_return_mean))
        self._emit(rec, recorded)
        batch = collector.buffer.to_batch(
            collector.policy,
            collector.last_obs,
            self.local,
            reference=self._reference,
            reward_kl_coef=agent.reward_kl_coef,
            scaler=self._norm.returns if self._norm is not None else None,
        )
        agent.on_minibatch = lambda: self._maybe_heartbeat(rec, global_step)
        summary = agent.update(batch, update=update, global_step=global_step)
        collector.actor.refresh()  # a copy of the policy's actor acts in the next rollout
        self._latest = Counters(update=update + 1, global_step=global_step)
        if cfg.rank_trace:
            self._trace(rec, summary.payload, agent)
        self._emit(rec, summary.payload)
        for anomaly in summary.anomalies:
            self._emit(rec, anomaly)
        return Progress(
            updates_done=update + 1,
            num_updates=cfg.num_updates,
            global_step=global_step,
            total_steps=cfg.num_updates * cfg.batch_size,
            recent_return_mean=self.recent_return_mean,
            steps_per_second=sps,
            early_stopped=summary.payload.early_stopped,
        )

    def _judge_halt(self, rec: Recorder, counters: Counters) -> None:
        """With ``--halt-on``: once the gate fired (rank 0's verdict, on every rank), record
        the stop and end the loop after this update, as a stop request does."""
        reason = agreed_reason(self.halt, self.world, counters.update - 1)
        if reason is None or self.halt is None:
            return
        self.halted = self._stop_reason = reason
        if self.world.is_main:
            self._emit(rec, self.halt.anomaly(counters.global_step))

    def _trace(self, rec: Recorder, payload: PPOUpdatePayload, agent: PPOAgent) -> None:
        """This rank's line of ``rank_trace``: decision, weights, shared statistics."""
        shared = self._norm.state_dict(shared=True) if self._norm is not None else None
        trace_update(rec.run_dir, self.world, payload, agent.policy, shared)

    @property
    def recent_return_mean(self) -> float | None:
        """The final return so far (:func:`telemetry.returns.final_return`: the mean over the
        latest rollouts holding :data:`~telemetry.returns.FINAL_EPISODES` episodes or more),
        as ``sanctum`` computes it from the log."""
        return final_return(self._recent)

    # ------------------------------------------------------------- telemetry
    def _emit(self, rec: Recorder, payload: Payload) -> None:
        rec.emit(payload)
        self._last_emit = time.monotonic()

    def _maybe_heartbeat(self, rec: Recorder, global_step: int) -> None:
        """Emit a heartbeat when nothing was recorded for ``heartbeat_seconds``."""
        if time.monotonic() - self._last_emit >= self.config.heartbeat_seconds:
            self._emit(rec, HeartbeatPayload(global_step=global_step))

    # ----------------------------------------------------------- checkpoints
    def _save(self, rec: Recorder, agent: PPOAgent, counters: Counters) -> Path | None:
        if not self.world.is_main:  # rank 0 writes the checkpoints
            return None
        if rec.log_moved():  # a checkpoint under the old name would split the run in two
            raise TrainingStopped(
                f"training stopped: {rec.path} was moved, renamed or removed while training "
                "(its lines went with it); no checkpoint was written under the old name",
                self.checkpoint_path,
            )
        state = run_state(
            agent,
            self.config,
            counters,
            self._sampling,
            rec.run_id,
            self.world,
            self._reference,
            self._norm,
        )
        path = checkpoint.save(checkpoint.path_for(rec.run_dir, counters.update), state)
        self.checkpoint_path = path
        return path

    def _stop_recording_failed(
        self, rec: Recorder, agent: PPOAgent, counters: Counters, exc: SinkError
    ) -> TrainingStopped:
        try:
            saved = f"checkpoint saved to {self._save(rec, agent, counters)}"
        except (checkpoint.CheckpointError, TrainingStopped) as save_exc:
            saved = f"the checkpoint could not be saved either: {save_exc}"
        with contextlib.suppress(SinkError):  # the same sink may fail again on run_finished
            rec.finish("failed", f"recording failed: {exc}")
        error = f"{type(exc.error).__name__}: {exc.error}"
        if exc.sink_name.startswith("eventlog:"):
            what = f"could not write the event log {rec.path}: {error}"
        else:
            what = f"sink {exc.sink_name!r} failed ({error}); event log {rec.path}"
        return TrainingStopped(f"training stopped: {what}; {saved}", self.checkpoint_path)
