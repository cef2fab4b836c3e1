"""SVG snapshots of the run table: the table with the KL overlay, the return overlay, seeds
grouped, and a run's full view, at 80x24 and 120x36.

The sweep (``sweep_logs``) is written through the real writer into ``runs/`` of an empty
folder, so the paths are relative and the same everywhere; the clock is frozen two
seconds after the last event of any run. Regenerate with ``pytest --snapshot-update``
and look at them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.board_feed import EPISODE_RETURN
from sanctum.run_files import find_runs
from sanctum.tui.runs_app import RunsApp
from tests.sanctum.sweep_logs import SWEEP, write_sweep
from tests.sanctum.tui.test_runs_app import board_of, wait_for

SnapCompare = Callable[..., bool]
SIZES = pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def sweep_app() -> RunsApp:
    frozen = max(log.now for log in write_sweep(Path("runs"))) + 2.0
    return RunsApp(find_runs([], "runs"), DEFAULT_THRESHOLDS, now=lambda: frozen)


def every_update_read(pilot: Pilot[None]) -> Any:
    return wait_for(
        pilot,
        lambda a: [r.update for r in board_of(a).rows] == [12 - 1] * 2 + [14 - 1] * 3,
        "every update of every run",
    )


def then(*keys: str, until: Callable[[RunsApp], bool]) -> Callable[[Pilot[None]], Any]:
    """A run_before: every update read, then ``keys``, then wait for ``until``."""

    async def run_before(pilot: Pilot[None]) -> None:
        await every_update_read(pilot)
        await pilot.press(*keys)
        await wait_for(pilot, until, f"the app after {keys}")

    return run_before


@SIZES
def test_run_table_with_the_kl_overlay(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    assert len(SWEEP) == 5
    assert snap_compare(sweep_app(), terminal_size=size, run_before=every_update_read)


@SIZES
def test_overlay_of_episode_returns(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    ready = then("down", "o", until=lambda a: board_of(a).metric == EPISODE_RETURN)
    assert snap_compare(sweep_app(), terminal_size=size, run_before=ready)


@SIZES
def test_seeds_grouped(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    ready = then("g", until=lambda a: a.grouped)
    assert snap_compare(sweep_app(), terminal_size=size, run_before=ready)


def test_full_view_of_a_run(snap_compare: SnapCompare) -> None:
    ready = then("down", "enter", until=lambda a: board_of(a).snapshot is not None)
    assert snap_compare(sweep_app(), terminal_size=(120, 36), run_before=ready)
