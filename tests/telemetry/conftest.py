"""Fixtures of the telemetry tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from telemetry.testing import LogBuilder


@pytest.fixture
def log(tmp_path: Path) -> Iterator[LogBuilder]:
    """A log of run ``run-a`` with its ``run_started`` written (a module may define its own)."""
    builder = LogBuilder(tmp_path / "events.jsonl", run_id="run-a")
    builder.start()
    yield builder
    builder.close()
