"""``ppo train``'s settings: the config (defaults, or the resumed run's, < ``--config`` <
``--set`` < flags), the token-level config a TOML file may name, and the health gate of
``--halt-on``. All of it is checked before torch or an environment loads, so a refused
setting answers at once; then :mod:`ppo.cli.run` trains."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from ppo.config import ConfigError, PPOConfig
from ppo.config.settings import read_toml
from ppo.exits import EXIT_USAGE
from ppo.run.messages import error
from ppo.tokens.config import ALGORITHMS, TokenPPOConfig
from telemetry.files import InputFileError
from telemetry.halting import Halter


def train(args: argparse.Namespace, out: TextIO, err: TextIO, argv: Sequence[str] = ()) -> int:
    """Run ``ppo train`` with parsed ``args`` (parsed from ``argv``, which ``--nproc`` hands
    to every rank); returns the exit code."""
    args.resume = resolve_resume(args)
    try:
        halt = _halt(args)
        config: PPOConfig | TokenPPOConfig | None = token_config(args)
        if config is None:
            config = resolve_config(args)  # a resumed run's checkpoint is read (checked) here
    except (ConfigError, InputFileError, ValueError) as exc:  # ValueError: a checkpoint
        error(err, exc)
        return EXIT_USAGE
    from ppo.cli.run import run  # torch and the environments load once the settings hold

    return run(args, config, halt, out, err, argv)


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
        from ppo.run.resume import config_from_checkpoint  # a checkpoint is read with torch

        base = config_from_checkpoint(args.resume)
    else:
        base = PPOConfig.from_toml(args.config) if args.config is not None else PPOConfig()
    config = base.with_overrides(args.overrides)
    flags = {"env_id": args.env, "total_steps": args.total_steps, "seed": args.seed}
    explicit = [f"{key}={value}" for key, value in flags.items() if value is not None]
    return config.with_overrides(explicit, source="command line") if explicit else config


def token_config(args: argparse.Namespace) -> TokenPPOConfig | None:
    """The token-level config ``--config`` names, or None when it is not one."""
    if args.config is None or args.resume is not None:
        return None
    data = read_toml(args.config)
    algorithm = data.get("algorithm")
    if algorithm not in ALGORITHMS:
        return None
    if args.env is not None or args.total_steps is not None:
        raise ConfigError(
            [f"--env and --total-steps do not apply to a {algorithm} config (set updates=N)"],
            str(args.config),
        )
    config = TokenPPOConfig.from_mapping(data, str(args.config)).with_overrides(args.overrides)
    if args.seed is not None:
        config = config.with_overrides([f"seed={args.seed}"], source="command line")
    return config


def _halt(args: argparse.Namespace) -> Halter | None:
    """The health gate of ``--halt-on``: Sanctum's own judge (the rules ``sanctum check``
    applies, from ``--thresholds`` or the shipped ones; ppo has none of its own), handed to
    the trainer as a halter; None without the option, so Sanctum is loaded only for it.
    ValueError naming the file or the option."""
    if args.halt_on is None:
        if args.thresholds is not None:
            raise ValueError("--thresholds: used only to halt; give --halt-on with it")
        return None
    from sanctum import HaltGate

    return HaltGate(args.thresholds, args.halt_on)
