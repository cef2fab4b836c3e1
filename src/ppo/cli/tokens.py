"""``ppo train --config FILE`` where FILE says ``algorithm = "token_ppo"`` or ``"grpo"``."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, TextIO

from ppo.cli.verdict import verdict_line
from ppo.config.settings import ConfigError
from ppo.exits import EXIT_STOPPED, EXIT_USAGE
from ppo.run.halt import EXIT_HALTED
from ppo.run.messages import (
    DONE,
    announce,
    error,
    memory_line,
    out_of_memory,
    say,
    summarize,
)
from ppo.run.messages import path as shown_path
from ppo.run.preflight import PreflightError, memory_available, size
from ppo.run.progress import updates_done
from ppo.run.signals import exit_code_of, stop_on_signals
from ppo.tokens.config import TokenPPOConfig
from ppo.tokens.task import load_task, task_preflight
from ppo.tokens.trainer import TokenProgress, TokenTrainer, device_of
from telemetry import SinkError
from telemetry.eventlog import LogInUse
from telemetry.halting import Halter
from telemetry.recorder import EVENTS_FILE
from telemetry.text import plural

PROGRESS_EVERY = 10
"""Updates between two progress lines."""


def check_task(config: TokenPPOConfig) -> None:
    """Pre-flight of a token-level run: its task's ``module:function`` imports and names a
    function (:class:`ConfigError` otherwise), and the task module's own ``preflight``
    passes, checked before the run folder, the dashboard or the "recording to" line exist;
    building it (the warm start) comes later. So is its device: "cuda" on a machine without
    one is refused here."""
    load_task(config.task)
    check = task_preflight(config.task)
    if check is not None:
        check(config)
    device_of(config)
    check_rollout_memory(config)


TOKEN_BYTES: Final = 24
"""Bytes one generated token takes at least in an update's rollouts: its id, old and
reference log-probabilities, value and mask. The floor of a token run's memory: the
model's own (known once its task builds it) comes on top."""


def check_rollout_memory(config: TokenPPOConfig) -> None:
    """Refuse (:class:`PreflightError`, exit 2) a run whose rollouts alone would need more
    memory than is available now: ``rollouts_per_update = 1000000000`` used to pass the
    checks and die once started."""
    tokens = config.rollouts_per_update * config.max_new_tokens
    available = memory_available()
    if available is not None and tokens * TOKEN_BYTES > available:
        raise PreflightError(
            f"this run's rollouts need at least {size(tokens * TOKEN_BYTES)} of memory "
            f"({config.rollouts_per_update} rollouts x {config.max_new_tokens} new tokens, "
            f"before the model's own) but {size(available)} is available; lower "
            "rollouts_per_update or max_new_tokens"
        )


def _progress(out: TextIO) -> Callable[[TokenProgress], None]:
    broken = False

    def show(p: TokenProgress) -> None:
        nonlocal broken
        if broken or not (p.updates_done % PROGRESS_EVERY == 0 or p.updates_done == p.num_updates):
            return
        try:
            print(
                f"{updates_done(p.updates_done, p.num_updates)}  "
                f"{p.tokens_per_second:,.0f} tokens/s  "
                f"reward {p.reward_mean:.3f}",
                file=out,
                flush=True,
            )
        except OSError:  # standard output went away: training goes on, the log records it
            broken = True

    return show


def train_tokens(
    config: TokenPPOConfig,
    run_dir: Path,
    run_id: str,
    out: TextIO,
    err: TextIO,
    halt: Halter | None = None,
    thresholds: Path | None = None,
) -> int:
    """Run token-level PPO or GRPO headless (stopped by ``halt`` once it fires), closing
    with the run's verdict under ``thresholds`` (:func:`verdict_line`); the exit code."""
    where = shown_path(run_dir / run_id)
    recording = f"recording to {where}/{EVENTS_FILE}  (watch live: sanctum {where})"
    if not announce(f"warm start: {config.warm_start_steps} supervised steps", out, err):
        return EXIT_USAGE
    trainer = TokenTrainer(
        config, run_dir, run_id, _progress(out), on_start=lambda: say(out, recording), halt=halt
    )
    started = time.monotonic()
    try:
        with stop_on_signals():
            result = trainer.run()
    except (ConfigError, LogInUse) as exc:
        error(err, exc)
        return EXIT_USAGE
    except SinkError as exc:
        error(err, f"training stopped: could not record: {exc}")
        return EXIT_STOPPED
    except OSError as exc:  # the run folder could not be created
        error(err, f"training stopped: cannot record the run in {where}: {exc.strerror or exc}")
        return EXIT_STOPPED
    except KeyboardInterrupt as exc:
        error(err, f"interrupted ({exc or 'Ctrl-C'}); the run is recorded", lead="\n")
        return exit_code_of(exc)
    except (MemoryError, RuntimeError) as exc:  # rollouts_per_update x max_new_tokens
        if not out_of_memory(exc):
            raise
        error(err, memory_line(exc))
        return EXIT_STOPPED
    verdict = verdict_line(result.events_path, thresholds)
    if result.halted is not None:
        stopped = f"stopped after {plural(result.updates, 'update')}"
        error(err, f"{result.halted}; {stopped}", lead="\n")
        error(err, f"see why: sanctum check {where}")
        say(err, verdict)
        return EXIT_HALTED
    first, last = result.reward_means[0], result.reward_means[-1]
    summary = (
        f"{DONE}{plural(result.updates, 'update')}, {plural(result.global_step, 'token')} in "
        f"{time.monotonic() - started:.1f} s; mean reward {first:.3f} -> {last:.3f}\n"
        f"event log: {shown_path(result.events_path)}\n"
        f"rollouts: {shown_path(result.rollouts_path)}\n"
        f"{verdict}"
    )
    return summarize(summary, result.events_path, out, err)
