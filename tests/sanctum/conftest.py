"""Fixture logs for Sanctum tests, each written through the real writer into tmp_path."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.sanctum.logs import KL_CRITICAL, KL_WARNING, RunLog, kl_breach, write_run


@pytest.fixture
def healthy_log(tmp_path: Path) -> Path:
    """A run folder with 20 healthy updates that finished completed."""
    return write_run(tmp_path / "healthy" / "events.jsonl", updates=20).parent


@pytest.fixture
def critical_kl_log(tmp_path: Path) -> Path:
    """approx_kl 0.5 with clip fraction 0 (50 per clip fraction, past critical) for
    ``KL_HOLDS`` (3) updates from update 7: critical from the third, for as many updates."""
    return write_run(tmp_path / "kl.jsonl", updates=12, overrides=kl_breach(7, KL_CRITICAL))


@pytest.fixture
def warning_kl_log(tmp_path: Path) -> Path:
    """approx_kl 0.1 with clip fraction 0 (10 per clip fraction: past warning, below
    critical) for ``KL_HOLDS`` (3) updates from update 3: a warning from the third."""
    return write_run(tmp_path / "warn.jsonl", updates=12, overrides=kl_breach(3, KL_WARNING))


@pytest.fixture
def nan_log(tmp_path: Path) -> Path:
    """entropy (a metric without a rule) NaN at update 4 and approx_kl NaN at update 6."""

    def nan_at(u: int) -> dict[str, float]:
        return {4: {"entropy": math.nan}, 6: {"approx_kl": math.nan}}.get(u, {})

    return write_run(tmp_path / "nan.jsonl", updates=10, overrides=nan_at)


@pytest.fixture
def unfinished_log(tmp_path: Path) -> Path:
    """Healthy updates but no run_finished (a killed trainer)."""
    return write_run(tmp_path / "unfinished.jsonl", updates=8, finish=None)


@pytest.fixture
def corrupt_log(tmp_path: Path) -> Path:
    """A healthy run with a broken line and a truncated JSON line in the middle."""
    path = tmp_path / "corrupt.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    log.raw("this is not json\n")
    log.update(1)
    log.raw('{"type": "ppo_update", "run_id": "run-test", "seq": 99, "ts": 1.0, "payl\n')
    log.update(2)
    log.finish()
    log.close()
    return path


@pytest.fixture
def unknown_kind_log(tmp_path: Path) -> Path:
    """A healthy run with events of a kind this reader does not know (a newer minor)."""
    path = tmp_path / "unknown.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    log.raw('{"type": "gpu_stats", "run_id": "run-test", "seq": 4, "ts": 1.0, "payload": {}}\n')
    log.raw('{"type": "gpu_stats", "run_id": "run-test", "seq": 5, "ts": 2.0, "payload": {}}\n')
    log.update(1)
    log.finish()
    log.close()
    return path


@pytest.fixture
def newer_schema_log(tmp_path: Path) -> Path:
    """A log whose run_started declares schema 2."""
    path = tmp_path / "v2.jsonl"
    log = RunLog(path)
    log.start(schema=2)
    log.update(0)
    log.close()
    return path
