"""``ppo train`` with the dashboard: the trainer in a child process, Sanctum in this one.

docs/design.md, section 2: training never shares the GIL with rendering, and a dashboard crash
never kills training. So once ``ppo.cli`` has checked the settings and fixed the run id
(the events path must be known before the child writes it), this process hands
``python -m ppo train --headless`` with the same settings to Sanctum's one call for it,
``sanctum.watch_process``, and says what became of training from the record it returns
(:func:`report`), never from the dashboard itself. Sanctum is imported inside
:func:`train_attached`, so ``import ppo`` never loads Textual.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ppo.cli.verdict import verdict_line
from ppo.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_STOPPED, EXIT_USAGE
from ppo.run.halt import EXIT_HALTED
from ppo.run.messages import DONE, error
from ppo.run.messages import path as shown_path
from telemetry.files import InputFileError, open_input
from telemetry.halting import HALT_PREFIX
from telemetry.recorder import EVENTS_FILE
from telemetry.text import visible

if TYPE_CHECKING:
    from sanctum import ProcessOutcome, TrainerExit

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


def wants_dashboard(args: argparse.Namespace, out: TextIO) -> bool:
    """``--tui``, or neither flag and a terminal on stdout."""
    return bool(args.tui or (not args.headless and out.isatty()))


def child_command(args: argparse.Namespace, run_id: str) -> list[str]:
    """``python -m ppo train --headless`` with the settings of ``args`` and a fixed run."""
    unknown = set(vars(args)) - FORWARDED.keys() - NOT_FORWARDED
    if unknown:  # a new `ppo train` option must be taught to this module, never dropped
        raise RuntimeError(f"ppo.cli.attach does not forward {sorted(unknown)} to the trainer")
    command = [sys.executable, "-m", "ppo", "train", "--headless"]
    command += ["--run-dir", str(args.run_dir), "--run-id", run_id]
    for dest, flag in FORWARDED.items():
        value = getattr(args, dest)
        if value is not None:
            command += [flag, str(value)]
    for assignment in args.overrides:
        command += ["--set", assignment]
    return command


def report(
    watched: ProcessOutcome,
    run_path: Path,
    out: TextIO,
    err: TextIO,
    thresholds: Path | None = None,
) -> int:
    """After the dashboard closed: say what became of training (a halted run with its
    verdict under ``thresholds``, as headless says it); returns the exit code."""
    ended, pid, path = watched.ended, watched.pid, shown_path(run_path)
    if watched.detached or ended is None:
        why = "detached" if watched.detached else "the dashboard closed"
        print(
            f"{why}; training continues in the background (pid {pid})\n"
            f"  re-attach:  sanctum {path}\n"
            f"  stop it:    kill -INT {pid}   (saves a checkpoint)\n"
            f"  its output: {path}/{STDOUT_FILE}, {path}/{STDERR_FILE}",
            file=out,
        )
        return EXIT_OK if watched.detached else EXIT_STOPPED
    if ended.requested:  # the trainer's own last word says where its checkpoint went
        said = f"\n  {visible(ended.stderr_tail[-1])}" if ended.stderr_tail else ""
        print(f"stopped the trainer ({visible(ended.describe())}){said}", file=err)
        return EXIT_INTERRUPTED
    reason = watched.reason
    if ended.down and ended.code == EXIT_HALTED and reason and reason.startswith(HALT_PREFIX):
        print(f"ppo train: {visible(reason)}\n  see why:  sanctum check {path}", file=err)
        print(verdict_line(run_path / EVENTS_FILE, thresholds), file=err)
        return EXIT_HALTED
    if ended.down:
        return _report_down(ended, path, err)
    closing = closing_lines(run_path / STDOUT_FILE) or [f"done; event log: {path}/{EVENTS_FILE}"]
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
    """Run ``ppo train`` (settings already validated) with the dashboard; the exit code.
    The dashboard judges by ``--thresholds`` (given with ``--halt-on``), as the trainer's
    gate does."""
    run_path = Path(args.run_dir) / run_id
    if (run_path / EVENTS_FILE).exists():
        error(err, f"{run_path} already has an event log; pick another --run-id")
        return EXIT_USAGE
    from sanctum import watch_process  # Textual loads only for the dashboard

    return watch_process(
        child_command(args, run_id),
        run_path / EVENTS_FILE,
        lambda watched: report(watched, run_path, out, err, args.thresholds),
        stdout_path=run_path / STDOUT_FILE,
        stderr_path=run_path / STDERR_FILE,
        thresholds=args.thresholds,
    )
