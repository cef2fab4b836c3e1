"""Helpers for the dashboard tests: lively updates (so sparklines have shape) and waiting.

Logs are written with ``tests.sanctum.logs.RunLog`` (the real Emitter and EventLogWriter
with a one-second-per-event clock); these helpers only vary the numbers and wait for the
app's reader thread without sleeping blindly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.pilot import Pilot
from textual.widget import Widget

from sanctum.model.snapshot import SanctumSnapshot
from telemetry.events import PPOUpdatePayload
from tests.sanctum.logs import early_stop_update, ppo_update
from tests.waiting import settle

WAIT_LIMIT = 10.0
"""Seconds a test waits for the reader thread before failing (a hang guard, not a timing test)."""


def lively(update: int, kl: float, **fields: Any) -> PPOUpdatePayload:
    """A healthy update whose statistics drift the way a learning run's do."""
    values: dict[str, Any] = {
        "approx_kl": kl,
        "approx_kl_max": round(kl * 1.6, 6),
        "clip_fraction": 0.06 + 0.01 * update,
        "entropy": 0.69 - 0.015 * update,
        "entropy_normalized": round((0.69 - 0.015 * update) / 0.6931, 6),
        "policy_loss": -0.012 + 0.002 * (update % 3),
        "value_loss": 40.0 - 2.5 * update,
        "explained_variance": 0.2 + 0.05 * update,
        "grad_norm": 0.8 + 0.1 * update,
        "kl_coef": 0.2,
        "kl_final": None,  # this trainer does not measure it
        **fields,
    }
    if values.get("early_stopped"):
        del values["early_stopped"]
        return early_stop_update(update, kl=kl, **values)
    return ppo_update(update, **values)


async def wait_until(
    pilot: Pilot[None], ready: Callable[[SanctumSnapshot], bool], what: str
) -> SanctumSnapshot:
    """Let the app run until its newest snapshot satisfies ``ready``, then let it repaint."""
    app = await settle(
        pilot, lambda a: a.snapshot is not None and ready(a.snapshot), what, WAIT_LIMIT
    )
    assert app.snapshot is not None
    return app.snapshot


def screen_lines(app: App[None]) -> list[str]:
    """The characters the terminal shows, one string per row (what a user reads)."""
    update = app.screen._compositor.render_update(full=True)
    return ["".join(segment.text for segment in strip) for strip in update.strips]


def region_lines(app: App[None], widget: Widget) -> list[str]:
    """The rows of ``widget`` as the terminal shows them, its border left out."""
    region = widget.region.shrink(widget.styles.border.spacing)
    rows = screen_lines(app)[region.y : region.bottom]
    return [row[region.x : region.right] for row in rows]
