"""``ppo train``'s run, once its settings hold (:mod:`ppo.cli.train`): the checks that need
torch or an environment (the device, the checkpoints fine-tuning starts from, the run
folder, memory), then the trainer, its progress, and each way of ending mapped to an exit
code (:mod:`ppo.cli`). Headless progress is a Rich bar on a terminal and plain periodic
lines otherwise, so CI logs stay readable. With the dashboard (a terminal, or ``--tui``)
the trainer runs in a child process under Sanctum: see :mod:`ppo.cli.attach`.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import io
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TextIO

import torch

from ppo.cli.attach import train_attached, wants_dashboard
from ppo.cli.tokens import check_task, train_tokens
from ppo.cli.verdict import verdict_line
from ppo.config import ConfigError, PPOConfig
from ppo.config.device import resolved_device
from ppo.config.limits import MAX_NPROC
from ppo.distributed.launch import launch
from ppo.distributed.world import (
    SINGLE,
    RankLost,
    World,
    join,
    launched_world_size,
    local_rank,
)
from ppo.exits import EXIT_STOPPED, EXIT_USAGE
from ppo.model import reference
from ppo.model.checkpoint import CheckpointError
from ppo.rollout.envs import EnvError, probe
from ppo.run.halt import EXIT_HALTED
from ppo.run.messages import (
    DONE,
    announce,
    error,
    memory_line,
    out_of_memory,
    say,
    shown,
    summarize,
)
from ppo.run.messages import path as shown_path
from ppo.run.preflight import check_memory, check_run_folder
from ppo.run.progress import PlainReporter, Reporter, RichReporter
from ppo.run.ranks import check_share
from ppo.run.signals import Stopped, exit_code_of, stop_on_signals
from ppo.run.trainer import NotStarted, Trainer, TrainingStopped, TrainResult
from ppo.tokens.config import TokenPPOConfig
from telemetry.eventlog import LogInUse
from telemetry.files import InputFileError
from telemetry.halting import Halter
from telemetry.recorder import EVENTS_FILE, check_run_id, new_run_id
from telemetry.returns import FINAL_RETURN
from telemetry.text import plural


def _train_tokens(
    args: argparse.Namespace,
    config: TokenPPOConfig,
    halt: Halter | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Token-level PPO: the same run folder, dashboard and exit codes as any run."""
    run_id = _run_id(args, "tokens")
    check_task(config)
    check_run_folder(args.run_dir, run_id)
    if wants_dashboard(args, out):
        return train_attached(args, run_id, out, err)
    return train_tokens(config, args.run_dir, run_id, out, err, halt, args.thresholds)


def _reporter(stream: TextIO) -> Reporter:
    return RichReporter() if stream.isatty() else PlainReporter(stream)


def run(
    args: argparse.Namespace,
    config: PPOConfig | TokenPPOConfig,
    halt: Halter | None,
    out: TextIO,
    err: TextIO,
    argv: Sequence[str] = (),
) -> int:
    """Train with the settings :func:`ppo.cli.train.train` resolved (``argv``, the command
    line, is handed to every rank of ``--nproc``); returns the exit code."""
    world = SINGLE
    try:
        if isinstance(config, TokenPPOConfig):
            return _train_tokens(args, config, halt, out, err)
        device = _device(args, config)  # "cuda" without one: refused before anything starts
        reference.check_sources(config)  # and the checkpoints fine-tuning starts from
        run_id = _run_id(args, config.env_id)
        if args.nproc is not None:
            _check_nproc(args.nproc, config)
        if launched_world_size() == 1:  # one process, or the launcher of --nproc ranks
            preflight(args, config, run_id)
        if (args.nproc or 1) > 1 and launched_world_size() == 1:
            timeout = config.collective_timeout_seconds
            return launch(args.nproc, [*argv, "--run-id", run_id], timeout, err)
        if launched_world_size() > 1:  # one rank of a torchrun job: rank 0 names the run
            world = join(config.collective_timeout_seconds, device)
            run_id = world.broadcast(run_id, "the run id")
    except (ConfigError, CheckpointError, InputFileError, ValueError) as exc:
        error(err, exc)  # ValueError: the run id, a pre-flight check, the environment
        return EXIT_USAGE
    except RankLost as exc:
        error(err, exc)
        code = EXIT_STOPPED
    else:
        try:
            code = _train_rank(args, config, run_id, world, halt, out, err)
        finally:
            world.close()
    if world.lost:  # the run is recorded and said: end before the backend's threads abort
        world.end_process(code)
    return code


def _device(args: argparse.Namespace, config: PPOConfig) -> torch.device:
    """Where this process trains: the config's ``device`` resolved on this machine, one GPU
    per rank across processes (``cuda:LOCAL_RANK``; the launcher of ``--nproc N`` checks
    the machine has the N it will need). A :class:`ConfigError` when CUDA is named and
    torch sees none, or fewer GPUs than ranks."""
    rank = local_rank()
    if rank is None and (args.nproc or 1) > 1:
        rank = args.nproc - 1
    return resolved_device(config.device, rank)


def _run_id(args: argparse.Namespace, prefix: str) -> str:
    """``--run-id`` checked (an empty one is refused, not replaced), or a new one."""
    return new_run_id(prefix) if args.run_id is None else check_run_id(args.run_id)


def _check_nproc(nproc: int, config: PPOConfig) -> None:
    """``--nproc`` in [1, MAX_NPROC], sharing the job evenly: checked before any process
    starts (a hundred thousand would never all start)."""
    if not 1 <= nproc <= MAX_NPROC:
        raise ValueError(f"--nproc must be in [1, {MAX_NPROC}], got {nproc}")
    check_share(config, nproc)


def preflight(args: argparse.Namespace, config: PPOConfig, run_id: str) -> None:
    """What can be checked before anything is built (:mod:`ppo.run.preflight`): the run
    folder, the environment id (one environment is made and closed to learn its
    spaces), the memory the rollout and the network will need. Raises ValueError."""
    check_run_folder(args.run_dir, run_id)
    check_memory(config, probe(config.env_id, config.vector_env), args.nproc or 1)


def _train_rank(
    args: argparse.Namespace,
    config: PPOConfig,
    run_id: str,
    world: World,
    halt: Halter | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Train as this process's rank: rank 0 (or the only process) records and reports."""
    taken = args.run_dir / run_id / EVENTS_FILE
    if world.is_main and taken.exists() and taken.stat().st_size > 0:  # checked again, locked
        error(err, f"{taken.parent} already holds a run; pick another --run-id")
        return EXIT_USAGE
    if not world.distributed and wants_dashboard(args, out):  # trainer in a child: ppo.cli.attach
        return train_attached(args, run_id, out, err)
    if not world.is_main:
        out = io.StringIO()  # the other ranks print only errors
    reporter = _reporter(out)
    try:
        trainer = Trainer(
            config,
            run_dir=args.run_dir,
            run_id=run_id,
            resume=args.resume,
            on_progress=reporter.update,
            world=world,
            halt=halt,
        )
    except ValueError as exc:  # a checkpoint gone since, this rank's share of the job
        error(err, exc)
        return EXIT_USAGE
    run_path = args.run_dir / run_id
    processes = f" by {world.size} processes" if world.distributed else ""
    where = shown_path(run_path)
    line = f"recording to {where}/{EVENTS_FILE}{processes}  (watch live: sanctum {where})"
    verdict = args.thresholds if world.is_main else NO_VERDICT  # rank 0 says it, once
    return _run(trainer, reporter, line, run_path, out, err, verdict)


class NoVerdict(enum.Enum):
    """A rank other than 0: it does not judge the run (rank 0 does, once)."""

    NO_VERDICT = enum.auto()


NO_VERDICT: Final = NoVerdict.NO_VERDICT


def _run(
    trainer: Trainer,
    reporter: Reporter,
    line: str,
    run_path: Path,
    out: TextIO,
    err: TextIO,
    verdict_by: Path | NoVerdict | None = None,
) -> int:
    """Train under the reporter and map each way of ending to an exit code. ``line`` (where
    the run records) is printed once the trainer has built everything, just before the run
    folder is made (a build that fails leaves no folder to name), then the reporter starts.
    A run that ended by itself closes with its verdict (:func:`verdict_line`) under the
    thresholds file ``verdict_by`` (None: the shipped rules; :data:`NO_VERDICT`: none, rank
    0 says it)."""
    started = time.monotonic()
    try:
        with stop_on_signals(), contextlib.ExitStack() as running:

            def start() -> bool:
                if not announce(line, out, err):  # standard output unwritable: exit 2
                    return False
                running.enter_context(reporter)
                return True

            trainer.on_start = start
            result = trainer.run()
    except NotStarted:
        return EXIT_USAGE
    except (EnvError, CheckpointError, LogInUse) as exc:
        error(err, exc)
        return EXIT_USAGE
    except TrainingStopped as exc:
        error(err, exc)
        return EXIT_STOPPED
    except RankLost as exc:
        error(err, f"training stopped: {exc}; the run is recorded as failed")
        return EXIT_STOPPED
    except KeyboardInterrupt as exc:
        say(err, _interrupted(exc, trainer, run_path))
        return exit_code_of(exc)
    except (MemoryError, RuntimeError) as exc:  # beyond the pre-flight estimate
        if not out_of_memory(exc):
            raise
        error(err, memory_line(exc))
        return EXIT_STOPPED
    verdict = "" if verdict_by is NO_VERDICT else verdict_line(result.events_path, verdict_by)
    if result.halted is not None:
        say(err, "\n".join(filter(None, (_halted(result, run_path), verdict))))
        return EXIT_HALTED
    summary = _summary(result, time.monotonic() - started)
    return summarize("\n".join(filter(None, (summary, verdict))), result.events_path, out, err)


def _halted(result: TrainResult, run_path: Path) -> str:
    """What a run the health gate stopped left: why, its checkpoint, how to look."""
    checkpoint = "none" if result.checkpoint_path is None else shown_path(result.checkpoint_path)
    where = shown_path(run_path)
    return (
        f"\nppo train: {shown(result.halted or '')}\n"
        f"  stopped after {plural(result.updates, 'update')}; "
        f"checkpoint saved to {checkpoint}\n"
        f"  see why:   sanctum check {where}\n"
        f"  resume:    ppo train --resume {where}"
    )


def _interrupted(exc: KeyboardInterrupt, trainer: Trainer, run_path: Path) -> str:
    """What an interrupted run left: where its checkpoint is and how to go on."""
    why = f"stopped by {exc}" if isinstance(exc, Stopped) else "interrupted"
    if trainer.checkpoint_error is not None:
        saved = shown(trainer.checkpoint_error)
        return f"\nppo train: {why}; the checkpoint could not be saved: {saved}"
    checkpoint = "none" if trainer.checkpoint_path is None else shown_path(trainer.checkpoint_path)
    return (
        f"\n{why}; checkpoint saved to {checkpoint}; resume with: "
        f"ppo train --resume {shown_path(run_path)}"
    )


def _summary(result: TrainResult, seconds: float) -> str:
    mean = result.recent_return_mean
    saved = result.checkpoint_path
    return (
        f"{DONE}{plural(result.global_step, 'step')}, {plural(result.updates, 'update')} "
        f"in {seconds:.1f} s; "
        f"{FINAL_RETURN} {'n/a' if mean is None else f'{mean:.2f}'}\n"
        f"event log: {shown_path(result.events_path)}\n"
        f"checkpoint: {'none' if saved is None else shown_path(saved)}"
    )
