"""``ppo train``: parse, build the config, run the trainer, report progress; nothing more.

Exit codes: 0 completed, 1 training stopped (the run could not be recorded, or a
checkpoint could not be written), 2 unusable input (bad config, unknown environment, a
checkpoint that cannot be used, a run id that is taken or not a name), 130 interrupted by
Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (a checkpoint was saved). Headless progress is a
Rich bar on a terminal and plain periodic lines otherwise, so CI logs stay readable. With
the dashboard (a terminal, or ``--tui``) the trainer runs in a child process under
Sanctum: see :mod:`ppo.attach`.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ppo import reference
from ppo.attach import train_attached, wants_dashboard
from ppo.checkpoint import CheckpointError
from ppo.config import ConfigError, PPOConfig
from ppo.distributed import SINGLE, RankLost, World, join, launched_world_size
from ppo.envs import EnvError
from ppo.exits import EXIT_OK, EXIT_STOPPED, EXIT_USAGE
from ppo.launch import launch
from ppo.progress import PlainReporter, Reporter, RichReporter
from ppo.signals import Stopped, exit_code_of, stop_on_signals
from ppo.tokens.cli import token_config, train_tokens
from ppo.tokens.config import TokenPPOConfig
from ppo.trainer import Trainer, TrainingStopped, TrainResult, config_from_checkpoint
from telemetry.eventlog import LogInUse
from telemetry.recorder import EVENTS_FILE, check_run_id, new_run_id

EPILOG = """\
examples:
  ppo train --headless --total-steps 20000
  ppo train --env Acrobot-v1 --set max_kl=0.03 --set early_stop_scope=epoch
  ppo train --config ppo.toml --set kl_penalty_coefficient=0.1 --run-dir runs
  ppo train --resume runs/CartPole-v1-20250101-120000-ab12 --total-steps 200000
  ppo train --config examples/token_ppo.toml    # token-level PPO (algorithm = "token_ppo")
  ppo train --headless --nproc 2                 # 2 processes (DDP); or: torchrun -m ppo train
  ppo train --config examples/pendulum.toml      # continuous control (RL Zoo's settings)
  ppo train --config examples/halfcheetah.toml   # MuJoCo, normalised (the mujoco extra)
  ppo train --set vector_env=envpool             # EnvPool's C++ envs (the envpool extra)

Every field of the config (see ppo/config.py) can be set in a flat TOML file or with
--set KEY=VALUE; flags such as --seed win over both. Watch a run live with `sanctum RUN`.
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``ppo`` argument parser (one subcommand: ``train``)."""
    parser = argparse.ArgumentParser(
        prog="ppo", description="PPO with KL guardrails that records its health as telemetry."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    train = commands.add_parser(
        "train",
        help="train a policy and record its event log",
        description="Train PPO on a Gymnasium environment and record runs/<run>/events.jsonl.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_train_arguments(train)
    return parser


def _add_train_arguments(train: argparse.ArgumentParser) -> None:
    _add_config_arguments(train)
    _add_run_arguments(train)


def _add_config_arguments(train: argparse.ArgumentParser) -> None:
    """What to train: the environment, the length, the seed, and the config."""
    defaults = PPOConfig()
    train.add_argument(
        "--env", metavar="ID", help=f"Gymnasium environment id (default: {defaults.env_id})"
    )
    train.add_argument(
        "--total-steps",
        type=int,
        metavar="N",
        help=f"environment steps to train (default: {defaults.total_steps})",
    )
    train.add_argument(
        "--seed", type=int, metavar="N", help=f"seed of the run (default: {defaults.seed})"
    )
    train.add_argument("--config", type=Path, metavar="FILE", help="flat TOML file of settings")
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="override one config field, e.g. --set max_kl=0.03 (repeatable)",
    )


def _add_run_arguments(train: argparse.ArgumentParser) -> None:
    """Where the run is recorded, where it resumes from, and whether a dashboard shows it."""
    train.add_argument(
        "--run-dir",
        type=Path,
        default=Path("runs"),
        metavar="DIR",
        help="folder that receives the run folder (default: runs)",
    )
    train.add_argument("--run-id", metavar="ID", help="name of the run folder (default: generated)")
    train.add_argument(
        "--resume",
        type=Path,
        metavar="RUN",
        help="continue from a run's latest checkpoint: a run folder, a run id under "
        "--run-dir, or a .pt file (a new run folder records the continuation)",
    )
    train.add_argument(
        "--nproc",
        type=int,
        metavar="N",
        help="train with N processes on this machine (torch.distributed, gloo), as "
        "torchrun --nproc_per_node N -m ppo train would; headless",
    )
    mode = train.add_mutually_exclusive_group()
    mode.add_argument(
        "--headless", action="store_true", help="no dashboard (the default without a terminal)"
    )
    mode.add_argument(
        "--tui",
        action="store_true",
        help="live dashboard, trainer in a child process (the default on a terminal)",
    )


def resolve_resume(args: argparse.Namespace) -> Path | None:
    """``--resume`` as given, or as a run id under ``--run-dir`` when that is what exists."""
    run: Path | None = args.resume
    run_dir: Path = args.run_dir
    if run is not None and not run.exists() and (run_dir / run).exists():
        return run_dir / run
    return run


def resolve_config(args: argparse.Namespace) -> PPOConfig:
    """Defaults (or the resumed run's config) < --config file < --set < explicit flags."""
    if args.resume is not None:
        if args.config is not None or args.env is not None:
            raise ConfigError(
                [
                    "--resume takes the config from the checkpoint; "
                    "--config and --env cannot change it (use --set)"
                ]
            )
        base = config_from_checkpoint(args.resume)
    else:
        base = PPOConfig.from_toml(args.config) if args.config is not None else PPOConfig()
    config = base.with_overrides(args.overrides)
    flags = {"env_id": args.env, "total_steps": args.total_steps, "seed": args.seed}
    explicit = [f"{key}={value}" for key, value in flags.items() if value is not None]
    return config.with_overrides(explicit, source="command line") if explicit else config


def _train_tokens(
    args: argparse.Namespace, config: TokenPPOConfig, out: TextIO, err: TextIO
) -> int:
    """Token-level PPO: the same run folder, dashboard and exit codes as any run."""
    run_id = check_run_id(args.run_id) if args.run_id else new_run_id("tokens")
    taken = args.run_dir / run_id / EVENTS_FILE
    if taken.exists() and taken.stat().st_size > 0:
        print(f"ppo train: {taken.parent} already holds a run; pick another --run-id", file=err)
        return EXIT_USAGE
    if wants_dashboard(args, out):
        return train_attached(args, run_id, out, err)
    return train_tokens(config, args.run_dir, run_id, out, err)


def _reporter(stream: TextIO) -> Reporter:
    return RichReporter() if stream.isatty() else PlainReporter(stream)


def train(args: argparse.Namespace, out: TextIO, err: TextIO, argv: Sequence[str] = ()) -> int:
    """Run ``ppo train`` with parsed ``args`` (parsed from ``argv``, which ``--nproc`` hands
    to every rank); returns the exit code."""
    args.resume = resolve_resume(args)
    world = SINGLE
    try:
        tokens = token_config(args)
        if tokens is not None:
            return _train_tokens(args, tokens, out, err)
        config = resolve_config(args)  # a resumed run's checkpoint is read (checked) here
        reference.check_sources(config)  # and the checkpoints fine-tuning starts from
        run_id = check_run_id(args.run_id) if args.run_id else new_run_id(config.env_id)
        if args.nproc is not None and args.nproc < 1:
            raise ValueError(f"--nproc must be at least 1, got {args.nproc}")
        if (args.nproc or 1) > 1 and launched_world_size() == 1:
            timeout = config.collective_timeout_seconds
            return launch(args.nproc, [*argv, "--run-id", run_id], timeout, err)
        if launched_world_size() > 1:  # one rank of a torchrun job: rank 0 names the run
            world = join(config.collective_timeout_seconds)
            run_id = world.broadcast(run_id, "the run id")
    except (ConfigError, CheckpointError, ValueError) as exc:  # ValueError: the run id
        print(f"ppo train: {exc}", file=err)
        return EXIT_USAGE
    except RankLost as exc:
        print(f"ppo train: {exc}", file=err)
        return EXIT_STOPPED
    try:
        return _train_rank(args, config, run_id, world, out, err)
    finally:
        world.close()


def _train_rank(
    args: argparse.Namespace, config: PPOConfig, run_id: str, world: World, out: TextIO, err: TextIO
) -> int:
    """Train as this process's rank: rank 0 (or the only process) records and reports."""
    taken = args.run_dir / run_id / EVENTS_FILE
    if world.is_main and taken.exists() and taken.stat().st_size > 0:  # checked again, locked
        print(f"ppo train: {taken.parent} already holds a run; pick another --run-id", file=err)
        return EXIT_USAGE
    if not world.distributed and wants_dashboard(args, out):  # trainer in a child: ppo.attach
        return train_attached(args, run_id, out, err)
    if not world.is_main:
        out = io.StringIO()  # the other ranks print only errors
    reporter = _reporter(out)
    trainer = Trainer(
        config,
        run_dir=args.run_dir,
        run_id=run_id,
        resume=args.resume,
        on_progress=reporter.update,
        world=world,
    )
    run_path = args.run_dir / run_id
    processes = f" by {world.size} processes" if world.distributed else ""
    print(
        f"recording to {run_path / EVENTS_FILE}{processes}  (watch live: sanctum {run_path})",
        file=out,
    )
    return _run(trainer, reporter, run_path, out, err)


def _run(trainer: Trainer, reporter: Reporter, run_path: Path, out: TextIO, err: TextIO) -> int:
    """Train under the reporter and map each way of ending to an exit code."""
    started = time.monotonic()
    try:
        with stop_on_signals(), reporter:
            result = trainer.run()
    except (EnvError, CheckpointError, LogInUse) as exc:
        print(f"ppo train: {exc}", file=err)
        return EXIT_USAGE
    except TrainingStopped as exc:
        print(f"ppo train: {exc}", file=err)
        return EXIT_STOPPED
    except RankLost as exc:
        print(f"ppo train: training stopped: {exc}; the run is recorded as failed", file=err)
        return EXIT_STOPPED
    except KeyboardInterrupt as exc:
        print(_interrupted(exc, trainer, run_path), file=err)
        return exit_code_of(exc)
    print(_summary(result, time.monotonic() - started), file=out)
    return EXIT_OK


def _interrupted(exc: KeyboardInterrupt, trainer: Trainer, run_path: Path) -> str:
    """What an interrupted run left: where its checkpoint is and how to go on."""
    why = f"stopped by {exc}" if isinstance(exc, Stopped) else "interrupted"
    if trainer.checkpoint_error is not None:
        return f"\nppo train: {why}; the checkpoint could not be saved: {trainer.checkpoint_error}"
    return (
        f"\n{why}; checkpoint saved to {trainer.checkpoint_path}; resume with: "
        f"ppo train --resume {run_path}"
    )


def _summary(result: TrainResult, seconds: float) -> str:
    mean = result.recent_return_mean
    return (
        f"done: {result.global_step} steps, {result.updates} updates in {seconds:.1f} s; "
        f"mean return (last 20 episodes) {'n/a' if mean is None else f'{mean:.1f}'}\n"
        f"event log: {result.events_path}\ncheckpoint: {result.checkpoint_path}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ppo`` console script and ``python -m ppo``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.command == "train":
        return train(args, sys.stdout, sys.stderr, argv)
    return EXIT_USAGE  # pragma: no cover - argparse rejects unknown commands
