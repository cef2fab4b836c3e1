"""Small helpers for reader tests (the log builder itself is ``telemetry.testing``)."""

from __future__ import annotations


def steps_of(events: list[object]) -> list[int]:
    return [e.payload.global_step for e in events]  # type: ignore[attr-defined]
