"""SVG snapshots of the dashboard in each state, at a fixed size and a frozen clock.

Every log is written through the real writer with one second per event, the app's clock
is frozen two seconds after the last event, and the paths shown are relative, so the
pictures are the same on every machine. The baselines in ``__snapshots__`` are the
screenshots of the states; regenerate with ``pytest --snapshot-update`` and look at them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.snapshot import Connection, SanctumSnapshot
from sanctum.tui.app import SanctumApp
from tests.sanctum.app_support import lively, wait_until
from tests.sanctum.logs import RunLog

SnapCompare = Callable[..., bool]
SMALL = (80, 24)
LARGE = (120, 36)
LOG = Path("runs") / "ppo-demo" / "events.jsonl"

HEALTHY_KL = (4.1e-4, 2.2e-4, 9.7e-5, 6.3e-5, 3.8e-5, 2.1e-5, 1.6e-5, 1.9e-5, 1.2e-5, 1.4e-5)
"""What a healthy default run's KL looks like: 1e-4 falling to 1e-5 (the log chart shows it)."""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each snapshot in an empty folder so the relative log path is the same everywhere."""
    monkeypatch.chdir(tmp_path)


def write(
    kls: tuple[float, ...],
    finish: bool = False,
    ref: tuple[float, ...] = (),
    clip: tuple[float, ...] = (),
    **last: Any,
) -> RunLog:
    """A run with one update per KL value (and reference KL, when ``ref`` holds one per
    update); ``clip`` the clip fractions of the last ``len(clip)`` updates (the others a
    learning run's); ``last`` overrides fields of the final update."""
    LOG.parent.mkdir(parents=True, exist_ok=True)
    log = RunLog(LOG, run_id="CartPole-v1-20261121-153012-a3f9")
    log.start()
    for u, kl in enumerate(kls):
        fields = last if u == len(kls) - 1 else {}
        if ref:
            fields = {"ref_kl": ref[u], "ref_kl_coef": round(0.05 * 1.1**u, 6), **fields}
        if u >= len(kls) - len(clip):
            fields = {"clip_fraction": clip[u - len(kls)], **fields}
        if kl > 0.03:
            fields = {"early_stopped": True, **fields}
        log.update(lively(u, kl, **fields))
    if finish:
        log.finish()
    log.close()
    return log


def app_for(log: RunLog | None) -> SanctumApp:
    frozen = (log.now if log is not None else 1_700_000_000.0) + 2.0
    return SanctumApp(LOG, DEFAULT_THRESHOLDS, clock=lambda: frozen)


def settled(events: int) -> Callable[[Pilot[None]], Any]:
    """A run_before that waits until the app has shown every event of the log."""

    async def run_before(pilot: Pilot[None]) -> None:
        def done(s: SanctumSnapshot) -> bool:
            return s.run.events == events

        await wait_until(pilot, done, f"{events} events")

    return run_before


def test_waiting_for_the_log(snap_compare: SnapCompare) -> None:
    async def waiting(pilot: Pilot[None]) -> None:
        await wait_until(pilot, lambda s: s.connection is Connection.WAITING, "WAITING")

    assert snap_compare(app_for(None), terminal_size=SMALL, run_before=waiting)


def test_pending_before_the_first_update(snap_compare: SnapCompare) -> None:
    log = write(())
    assert snap_compare(app_for(log), terminal_size=SMALL, run_before=settled(1))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_healthy(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    log = write(HEALTHY_KL)
    assert snap_compare(app_for(log), terminal_size=size, run_before=settled(21))


def test_warning_kl(snap_compare: SnapCompare) -> None:
    # KL about 10 per clip fraction (a clip fraction of 0 counts as 0.01) three updates in
    # a row: the median of 5 past the warning line (5), under critical (20)
    log = write((*HEALTHY_KL, 0.085, 0.11, 0.095), clip=(0.0, 0.0, 0.0))
    assert snap_compare(app_for(log), terminal_size=LARGE, run_before=settled(27))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_critical_kl_and_nan(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    # KL 30 to 60 per clip fraction three updates in a row (the clip bounds nothing): the
    # median of 5 past the critical line (20); a NaN gradient norm at the last update
    log = write((*HEALTHY_KL, 0.3, 0.45, 0.6), clip=(0.0, 0.0, 0.0), grad_norm=math.nan)
    assert snap_compare(app_for(log), terminal_size=size, run_before=settled(27))


def test_finished(snap_compare: SnapCompare) -> None:
    log = write((*HEALTHY_KL, 0.0091, 0.0086), finish=True)
    assert snap_compare(app_for(log), terminal_size=LARGE, run_before=settled(26))


REF_KL = (2e-4, 0.004, 0.011, 0.019, 0.027, 0.034, 0.38, 0.52, 0.47, 0.031)
"""A fine-tune's reference KL: rising toward its target, then a burst past the warning."""


def test_fine_tuning_charts_the_reference_kl_beside_the_policy_kl(
    snap_compare: SnapCompare,
) -> None:
    log = write(HEALTHY_KL, ref=REF_KL)
    assert snap_compare(app_for(log), terminal_size=LARGE, run_before=settled(21))


def test_help_screen(snap_compare: SnapCompare) -> None:
    log = write(HEALTHY_KL)
    assert snap_compare(
        app_for(log), terminal_size=SMALL, press=["question_mark"], run_before=settled(21)
    )
