"""``ppo train`` with the dashboard: the trainer in a child process, Sanctum in this one.

docs/design.md, section 2: training never shares the GIL with rendering, and a dashboard crash
never kills training. So once ``ppo.cli`` has checked the settings and fixed the run id
(the events path must be known before the child writes it), this process only starts
``python -m ppo train --headless`` with the same settings in a session of its own, and
runs the very ``SanctumApp`` that ``sanctum RUN`` runs, on that path, with a handle on the
child. Sanctum is imported here, lazily, and nowhere else in ppo, so ``import ppo`` never
loads Textual.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ppo.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_STOPPED, EXIT_USAGE
from ppo.run.halt import EXIT_HALTED
from ppo.run.messages import DONE, error
from ppo.run.messages import path as shown_path
from telemetry.files import InputFileError, open_input
from telemetry.recorder import EVENTS_FILE
from telemetry.text import visible

if TYPE_CHECKING:
    from sanctum.live.trainer_process import TrainerExit, TrainerProcess
    from sanctum.tui.app import SanctumApp

STDOUT_FILE = "trainer.out"
"""The child's progress lines, in the run folder."""
STDERR_FILE = "trainer.err"
"""The child's errors and tracebacks, in the run folder (shown when it dies)."""
FORWARDED = {
    "env": "--env",
    "total_steps": "--total-steps",
    "seed": "--seed",
    "config": "--config",
    "resume": "--resume",
    "halt_on": "--halt-on",
    "thresholds": "--thresholds",
}
"""Options the child gets as given: argument dest -> flag (``--set`` is repeated apart)."""
NOT_FORWARDED = frozenset({"command", "tui", "headless", "overrides", "run_dir", "run_id", "nproc"})
"""Arguments this module sets itself (the mode, the run folder), forwards apart, or that
never reach it (``--nproc`` > 1 runs headless)."""
CLOSING_BYTES = 64 * 1024
"""How much of the end of ``trainer.out`` is read for the trainer's closing summary."""
EXIT_GRACE = 30.0
"""Seconds to wait for a trainer that recorded the end of its run to exit."""


def wants_dashboard(args: argparse.Namespace, out: TextIO) -> bool:
    """``--tui``, or neither flag and a terminal on stdout."""
    return bool(args.tui or (not args.headless and out.isatty()))


def child_command(args: argparse.Namespace, run_id: str) -> list[str]:
    """``python -m ppo train --headless`` with the settings of ``args`` and a fixed run."""
    unknown = set(vars(args)) - FORWARDED.keys() - NOT_FORWARDED
    if unknown:  # a new `ppo train` option must be taught to this module, never dropped
        raise RuntimeError(f"ppo.run.attach does not forward {sorted(unknown)} to the trainer")
    command = [sys.executable, "-m", "ppo", "train", "--headless"]
    command += ["--run-dir", str(args.run_dir), "--run-id", run_id]
    for dest, flag in FORWARDED.items():
        value = getattr(args, dest)
        if value is not None:
            command += [flag, str(value)]
    for assignment in args.overrides:
        command += ["--set", assignment]
    return command


@dataclass
class AttachedRun:
    """A started trainer child and the dashboard that watches it."""

    app: SanctumApp
    trainer: TrainerProcess
    run_path: Path


def launch(args: argparse.Namespace, run_id: str, err: TextIO) -> AttachedRun | None:
    """Start the trainer child and build its dashboard (None: the run folder is taken)."""
    run_path = Path(args.run_dir) / run_id
    if (run_path / EVENTS_FILE).exists():
        error(err, f"{run_path} already has an event log; pick another --run-id")
        return None
    from sanctum.health.thresholds_toml import load_thresholds
    from sanctum.live.trainer_process import TrainerProcess
    from sanctum.tui.app import SanctumApp  # Textual loads only for the dashboard

    thresholds = load_thresholds(args.thresholds)  # the rules --halt-on judges by, if given
    trainer = TrainerProcess.start(
        child_command(args, run_id),
        stderr_path=run_path / STDERR_FILE,
        stdout_path=run_path / STDOUT_FILE,
    )
    app = SanctumApp(run_path / EVENTS_FILE, thresholds, trainer=trainer)
    return AttachedRun(app, trainer, run_path)


def report(run: AttachedRun, out: TextIO, err: TextIO) -> int:
    """After the dashboard closed: say what became of training; returns the exit code."""
    trainer, path = run.trainer, shown_path(run.run_path)
    ended = run.app.trainer_exit or trainer.poll()
    snapshot = run.app.snapshot
    if ended is None and snapshot is not None and snapshot.run.status not in (None, "running"):
        ended = trainer.wait(EXIT_GRACE)  # it recorded the end of the run and is exiting
    if run.app.choice == "detach" or ended is None:
        why = "detached" if run.app.choice == "detach" else "the dashboard closed"
        print(
            f"{why}; training continues in the background (pid {trainer.pid})\n"
            f"  re-attach:  sanctum {path}\n"
            f"  stop it:    kill -INT {trainer.pid}   (saves a checkpoint)\n"
            f"  its output: {path}/{STDOUT_FILE}, {path}/{STDERR_FILE}",
            file=out,
        )
        return EXIT_OK if run.app.choice == "detach" else EXIT_STOPPED
    if ended.requested:  # the trainer's own last word says where its checkpoint went
        said = f"\n  {visible(ended.stderr_tail[-1])}" if ended.stderr_tail else ""
        print(f"stopped the trainer ({visible(ended.describe())}){said}", file=err)
        return EXIT_INTERRUPTED
    from sanctum.live.halt import HALT_PREFIX  # loaded with the dashboard already

    reason = None if snapshot is None else snapshot.run.reason
    if ended.down and ended.code == EXIT_HALTED and reason and reason.startswith(HALT_PREFIX):
        print(f"ppo train: {visible(reason)}\n  see why:  sanctum check {path}", file=err)
        return EXIT_HALTED
    if ended.down:
        return _report_down(ended, path, err)
    closing = closing_lines(run.run_path / STDOUT_FILE) or [
        f"done; event log: {path}/{EVENTS_FILE}"
    ]
    print(
        "\n".join(closing)
        + f"\n  check it:  sanctum check {path}\n  replay it: sanctum replay {path}",
        file=out,
    )
    return EXIT_OK


def closing_lines(trainer_out: Path) -> list[str]:
    """The trainer's closing summary, as headless prints it (the done line with the final
    return, the event log, the checkpoint), escaped; read from the end of ``trainer_out``
    (the dashboard covered the terminal while it was printed). Empty when there is none."""
    try:
        with open_input(trainer_out, "trainer output") as fh:
            fh.seek(max(0, fh.seek(0, 2) - CLOSING_BYTES))
            tail = fh.read(CLOSING_BYTES).decode("utf-8", errors="replace").splitlines()
    except (InputFileError, OSError):
        return []
    starts = [i for i, line in enumerate(tail) if line.startswith(DONE)]
    return [visible(line) for line in tail[starts[-1] :]] if starts else []


def _report_down(ended: TrainerExit, path: str, err: TextIO) -> int:
    lines = "".join(f"\n  {visible(line)}" for line in ended.stderr_tail)
    print(
        f"ppo train: the trainer process died ({visible(ended.describe())}); "
        f"last lines of {path}/{STDERR_FILE}:{lines}",
        file=err,
    )
    return ended.code if 0 < ended.code < 256 else EXIT_STOPPED


def train_attached(args: argparse.Namespace, run_id: str, out: TextIO, err: TextIO) -> int:
    """Run ``ppo train`` (settings already validated) with the dashboard; the exit code."""
    run = launch(args, run_id, err)
    if run is None:
        return EXIT_USAGE
    try:
        run.app.run()
    finally:
        code = report(run, out, err)
    return code
