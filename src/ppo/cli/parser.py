"""``ppo``'s argument parser: the commands, their options and the help that explains them.
Loads no torch: ``ppo --help`` and a mistyped option answer at once."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from pathlib import Path

from ppo.cli.listing import CONFIGS, HelpConfig
from ppo.config import PPOConfig
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
from ppo.tokens.config import ALGORITHMS
from telemetry.files import MIB, TOML_MAX_BYTES, TOML_MAX_DEPTH
from telemetry.halting import HALT_LEVELS

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


class PPOParser(argparse.ArgumentParser):
    """The ``ppo`` parser: an option its command does not know is refused by that command,
    with its usage and the closest option it has (argparse alone refuses it at the top,
    with the top-level usage and no hint)."""

    commands: dict[str, argparse.ArgumentParser]

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: None = None
    ) -> argparse.Namespace:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = self.commands.get(getattr(parsed, "command", None) or "", self)
            command.error(f"unrecognized arguments: {' '.join(extra)}{_closest(command, extra)}")
        return parsed


def _closest(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """`` (did you mean --total-steps?)`` for the first unknown option close to one of
    ``parser``'s; empty when none is."""
    known = [s for action in parser._actions for s in action.option_strings]
    for word in extra:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.7)
            if close:
                return f" (did you mean {close[0]}?)"
    return ""


def build_parser() -> argparse.ArgumentParser:
    """The ``ppo`` argument parser (subcommands: ``train``, ``config``)."""
    parser = PPOParser(
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
    parser.commands = {"train": train, "config": config}
    return parser


def _add_train_arguments(train: argparse.ArgumentParser) -> None:
    _add_config_arguments(train)
    _add_run_arguments(train)
    train.add_argument("--help-config", action=HelpConfig)


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
        metavar="FILE|spec",
        help="the rules --halt-on judges by: a TOML thresholds file, or spec (fixed KL lines "
        "of 0.015 and 0.03 nats), as for sanctum check (default: the shipped rules)",
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
