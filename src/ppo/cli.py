"""``ppo train``: parse, build the config, run the trainer, report progress; nothing more.
``ppo config`` lists the settings (:mod:`ppo.config.listing`).

Exit codes: 0 completed, 1 training stopped (by the health gate of ``--halt-on``, or the
run could not be recorded, a checkpoint could not be written, or standard output broke
while training), 2 unusable input (bad
config, unknown environment, a checkpoint that cannot be used, a run id that is taken or
not a name; standard output closed or unwritable at the start: nothing recorded), 130 interrupted by
Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (a checkpoint was saved). Headless progress is a
Rich bar on a terminal and plain periodic lines otherwise, so CI logs stay readable. With
the dashboard (a terminal, or ``--tui``) the trainer runs in a child process under
Sanctum: see :mod:`ppo.run.attach`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import torch

from ppo.config import ConfigError, PPOConfig, listing
from ppo.config.limits import (
    MAX_ASYNC_ENVS,
    MAX_HIDDEN_LAYERS,
    MAX_HIDDEN_WIDTH,
    MAX_MINIBATCH_STEPS,
    MAX_NPROC,
    MAX_NUM_ENVS,
    MAX_SEED,
    MAX_TORCH_THREADS,
    MAX_UPDATE_EPOCHS,
)
from ppo.config.settings import Settings, resolved_device, unknown_key
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
from ppo.run.attach import train_attached, wants_dashboard
from ppo.run.halt import EXIT_HALTED, HALT_LEVELS, Halter, halt_gate
from ppo.run.messages import (
    DONE,
    announce,
    error,
    listed,
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
from ppo.run.resume import config_from_checkpoint
from ppo.run.signals import Stopped, exit_code_of, stop_on_signals
from ppo.run.trainer import NotStarted, Trainer, TrainingStopped, TrainResult
from ppo.tokens.cli import check_task, token_config, train_tokens
from ppo.tokens.config import ALGORITHMS, TokenPPOConfig
from telemetry.eventlog import LogInUse
from telemetry.files import MIB, TOML_MAX_BYTES, TOML_MAX_DEPTH, InputFileError
from telemetry.recorder import EVENTS_FILE, check_run_id, new_run_id
from telemetry.returns import FINAL_RETURN
from telemetry.text import plural

EPILOG = f"""\
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
  ppo train --halt-on critical                   # stop (checkpoint saved) once a rule is critical

Every field of the config can be set in a flat TOML file or with --set KEY=VALUE; flags such
as --seed win over both. `ppo config` lists every field with its type, default, allowed values
and meaning (also: --help-config). A name from SB3 or CleanRL (target_kl, batch_size, n_steps,
clip_coef, ...) is refused with the field and value to write instead. Watch a run live with
`sanctum RUN`.

checked before anything is built (one line and exit 2 when not):
  seed in [0, 2^63-1]; num_envs in [1, {MAX_NUM_ENVS}] (at most {MAX_ASYNC_ENVS} with
  vector_env=async: a process each); torch_threads in [1, {MAX_TORCH_THREADS}]; hidden_sizes
  1 to {MAX_HIDDEN_LAYERS} layers of 1 to {MAX_HIDDEN_WIDTH} units; update_epochs in
  [1, {MAX_UPDATE_EPOCHS}] and update_epochs x num_minibatches at most {MAX_MINIBATCH_STEPS};
  --nproc in [1, {MAX_NPROC}], dividing num_envs; --run-id a name (not empty); --config a
  regular TOML file of at most {TOML_MAX_BYTES // MIB} MiB, nested at most {TOML_MAX_DEPTH}
  deep; checkpoints (--resume, init_from, reference unless "init") regular files torch.save
  wrote; the environment id (one environment is made and closed: a misspelt id shows
  Gymnasium's whole "Did you mean" hint, a missing extra such as mujoco or envpool is named);
  a token_ppo task's module:function; the run folder creatable, writable (a probe file is
  created and removed) and free; the memory the rollout (num_steps x num_envs) and the
  network (hidden_sizes, with gradients and Adam state) will need at most what the machine
  has available now (MemAvailable).

exit codes: 0 completed; 1 training stopped (the run could not be recorded, a checkpoint
could not be written, or standard output broke while training: the run is recorded), or
halted by --halt-on (a checkpoint was saved; run_finished is "failed", naming the rule);
2 unusable input, or standard output closed or unwritable at the start (nothing was
recorded); 130, 143, 129 stopped by SIGINT, SIGTERM, SIGHUP (a checkpoint was saved).
"""


CONFIG_EPILOG = """\
examples:
  ppo config                          # every field of ppo train's config
  ppo config max_kl early_stop_scope  # only these
  ppo config target_kl                # a peer library's name: what to write instead
  ppo config --algorithm token_ppo    # the fields of a TOML file with algorithm = "token_ppo"
  ppo config --algorithm grpo         # ... or algorithm = "grpo" (the same config)
  ppo config --json                   # for scripts

exit codes: 0 listed; 2 a field name that is not one of the config's.
"""

CONFIGS: dict[str, type[Settings]] = {"ppo": PPOConfig, **dict.fromkeys(ALGORITHMS, TokenPPOConfig)}
"""``ppo config --algorithm``: the config each algorithm reads (ppo's own, and the token-level
one for each ``algorithm`` a TOML file may name)."""


def build_parser() -> argparse.ArgumentParser:
    """The ``ppo`` argument parser (subcommands: ``train``, ``config``)."""
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
    config = commands.add_parser(
        "config",
        help="list every setting: type, default, allowed values, meaning",
        description="List the fields of a config (the keys of a TOML file and of --set), "
        "read from the config itself.",
        epilog=CONFIG_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    config.add_argument("names", nargs="*", metavar="FIELD", help="list only these fields")
    config.add_argument(
        "--algorithm",
        choices=sorted(CONFIGS),
        default="ppo",
        help="whose config: ppo (default), or "
        + " or ".join(ALGORITHMS)
        + ' (a TOML file that says algorithm = "NAME": the token-level config)',
    )
    config.add_argument("--json", action="store_true", help="one JSON document, for scripts")
    return parser


class _HelpConfig(argparse.Action):
    """``ppo train --help-config``: ``ppo config``'s listing, then exit 0 (as --help)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(
            option_strings,
            dest=dest,
            default=argparse.SUPPRESS,
            nargs=0,
            help="list every config field (as ppo config does) and exit",
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        with contextlib.suppress(OSError):  # a closed pipe: main says so when it flushes
            print(_listing(PPOConfig, listing.fields_of(PPOConfig)))
        parser.exit()


def _listing(config: type[Settings], fields: Sequence[listing.FieldDoc]) -> str:
    return listing.text(
        config,
        fields,
        f"{config.__name__}: the keys of a TOML file (--config) and of --set KEY=VALUE",
    )


def list_config(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``ppo config``: the fields asked for (all by default); exit 2 on a name that is not
    a field, with what to write when it is another library's name."""
    config, prefix = CONFIGS[args.algorithm], "ppo config: "
    known = [f.name for f in listing.fields_of(config)]
    unknown = [name for name in args.names if name not in known]
    for name in unknown:
        error(err, unknown_key(name, known, context=config().to_dict()), prefix=prefix)
    if unknown:
        return EXIT_USAGE
    fields = [f for f in listing.fields_of(config) if not args.names or f.name in args.names]
    text = listing.as_json(config, fields) if args.json else _listing(config, fields)
    return listed(text, out, err, prefix)


def _add_train_arguments(train: argparse.ArgumentParser) -> None:
    _add_config_arguments(train)
    _add_run_arguments(train)
    train.add_argument("--help-config", action=_HelpConfig)


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
        "--seed",
        type=int,
        metavar="N",
        help=f"seed of the run, 0 to {MAX_SEED} (default: {defaults.seed})",
    )
    train.add_argument("--config", type=Path, metavar="FILE", help="flat TOML file of settings")
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="override one config field, e.g. --set max_kl=0.03 (repeatable; ppo config "
        "lists them)",
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
    train.add_argument(
        "--run-id", metavar="ID", help="name of the run folder, not empty (default: generated)"
    )
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
        help=f"train with N processes on this machine (torch.distributed, gloo), as "
        f"torchrun --nproc_per_node N -m ppo train would; headless; N in [1, {MAX_NPROC}], "
        "dividing num_envs",
    )
    train.add_argument(
        "--halt-on",
        choices=HALT_LEVELS,
        metavar="LEVEL",
        help="stop the run at the end of the update whose health reaches LEVEL ("
        + " or ".join(HALT_LEVELS)
        + "), judged as `sanctum check` judges the run so far: a checkpoint is saved, a "
        "critical anomaly and run_finished (failed, reason `halted: <rule> ...`) name the "
        "rule, and ppo train exits 1",
    )
    train.add_argument(
        "--thresholds",
        type=Path,
        metavar="FILE",
        help="the rules --halt-on judges by: a TOML thresholds file, as for sanctum check "
        "(default: the shipped rules)",
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
    return train_tokens(config, args.run_dir, run_id, out, err, halt)


def _reporter(stream: TextIO) -> Reporter:
    return RichReporter() if stream.isatty() else PlainReporter(stream)


def train(args: argparse.Namespace, out: TextIO, err: TextIO, argv: Sequence[str] = ()) -> int:
    """Run ``ppo train`` with parsed ``args`` (parsed from ``argv``, which ``--nproc`` hands
    to every rank); returns the exit code."""
    args.resume = resolve_resume(args)
    world = SINGLE
    try:
        halt = _halt(args)
        tokens = token_config(args)
        if tokens is not None:
            return _train_tokens(args, tokens, halt, out, err)
        config = resolve_config(args)  # a resumed run's checkpoint is read (checked) here
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
        return EXIT_STOPPED
    try:
        return _train_rank(args, config, run_id, world, halt, out, err)
    finally:
        world.close()


def _halt(args: argparse.Namespace) -> Halter | None:
    """The health gate of ``--halt-on`` (its thresholds file read and checked), or None;
    ValueError naming the file or the option."""
    if args.halt_on is None:
        if args.thresholds is not None:
            raise ValueError("--thresholds: used only to halt; give --halt-on with it")
        return None
    return halt_gate(args.halt_on, args.thresholds)


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
    if not world.distributed and wants_dashboard(args, out):  # trainer in a child: ppo.run.attach
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
    return _run(trainer, reporter, line, run_path, out, err)


def _run(
    trainer: Trainer, reporter: Reporter, line: str, run_path: Path, out: TextIO, err: TextIO
) -> int:
    """Train under the reporter and map each way of ending to an exit code. ``line`` (where
    the run records) is printed once the trainer has built everything, just before the run
    folder is made (a build that fails leaves no folder to name), then the reporter starts."""
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
    if result.halted is not None:
        say(err, _halted(result, run_path))
        return EXIT_HALTED
    return summarize(_summary(result, time.monotonic() - started), result.events_path, out, err)


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ppo`` console script and ``python -m ppo``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if sys.stdout is None:  # started with standard output closed (>&-)
        error(sys.stderr, "cannot write to standard output: it is closed")
        return EXIT_USAGE
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:  # --help, or argparse's own usage error (exit 2)
        if not _stdout_flushed():
            error(sys.stderr, "cannot write to standard output")
            return EXIT_USAGE
        raise
    if args.command == "config":
        code = list_config(args, sys.stdout, sys.stderr)
    elif args.command == "train":
        code = train(args, sys.stdout, sys.stderr, argv)
    else:  # pragma: no cover - argparse rejects unknown commands
        return EXIT_USAGE
    return code if _stdout_flushed() else max(code, EXIT_STOPPED)


def _stdout_flushed() -> bool:
    """Flush standard output; when it cannot be written, point it at /dev/null so the
    interpreter's own last flush adds no traceback-like noise, and say False. A reader
    that went away (``ppo config | head``) is not a failure: True, and nothing is said."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        broken_pipe = isinstance(exc, BrokenPipeError)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
        return broken_pipe
    return True
