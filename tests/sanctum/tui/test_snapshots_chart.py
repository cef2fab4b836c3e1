"""SVG snapshots of the chart screen (``c``), zoomed in, at a fixed size and a frozen clock.

The log is written through the real writer (one second per event) into an empty folder
and opened by a relative path, so the pictures are the same on every machine; regenerate
with ``pytest --snapshot-update`` and look at them. The chart draws a rule's lines and
bands only in the metric's own units, and the default KL rule judges KL per clip fraction:
the pictures judge KL by a rule on its value (``VALUE_KL``), whose lines they show.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from sanctum.tui.app import SanctumApp
from tests.sanctum.app_support import lively
from tests.sanctum.charts.test_chart import VALUE_KL_TABLE
from tests.sanctum.logs import RunLog
from tests.sanctum.tui.test_snapshots import LARGE, SMALL, settled

SnapCompare = Callable[..., bool]
LOG = Path("runs") / "ppo-long" / "events.jsonl"
UPDATES = 120
SPIKE = {112: 0.052, 113: 0.061, 114: 0.13}
"""KL past the warning line twice, then past the critical line, near the end of the run."""
NAN_AT = 117


def kl_at(update: int) -> float:
    """A KL that wanders between about 1e-3 and 1e-2 (a healthy run), but for the spike."""
    if update == NAN_AT:
        return math.nan
    return SPIKE.get(update, round(0.004 * (1.5 + math.sin(update / 6.0)), 6))


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each snapshot in an empty folder so the relative log path is the same everywhere."""
    monkeypatch.chdir(tmp_path)


def long_run() -> SanctumApp:
    """An app over a finished run of UPDATES updates, its clock frozen after the last event."""
    LOG.parent.mkdir(parents=True, exist_ok=True)
    log = RunLog(LOG, run_id="CartPole-v1-20261121-160000-b7c1")
    log.start(config={"max_kl": 0.03, "total_steps": UPDATES * 512})
    for u in range(UPDATES):
        log.update(lively(u, kl_at(u), clip_fraction=0.1 + 0.001 * u))
    log.finish()
    log.close()
    frozen = log.now + 2.0
    return SanctumApp(LOG, VALUE_KL_TABLE, clock=lambda: frozen)


ZOOMED = ["c", "plus", "plus", *["left_square_bracket"] * 6, "l"]
"""Open the chart, zoom in twice (120 -> 30 updates, at the newest), cursor back to update
113, log scale."""


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "120x36"])
def test_zoomed_kl_chart_with_the_cursor_on_a_warning(
    snap_compare: SnapCompare, size: tuple[int, int]
) -> None:
    events = 2 + 2 * UPDATES
    assert snap_compare(long_run(), terminal_size=size, press=ZOOMED, run_before=settled(events))
