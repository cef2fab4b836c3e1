"""What every test of an integration's ``halter=`` asserts of the run it halted: a real
tiny run with a fault, stopped by ``sanctum.HaltGate`` at critical as ``ppo train
--halt-on critical`` stops its own, and judged by ``sanctum check`` naming the same rule;
and how a test hands an example's recorder the gate; a halter that is not sanctum's."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from sanctum import HaltGate
from telemetry import read_events
from telemetry.events import Anomaly, AnomalyPayload, Event, PPOUpdate, RunFinished, RunStatus
from telemetry.halting import HALT_PREFIX
from tests.sanctum.recorded import check_report


def gated(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> HaltGate:
    """``module.name`` (what an example builds its recorder with) given a fresh
    ``sanctum.HaltGate`` at critical for the test; returns the gate."""
    gate = HaltGate(None, "critical")
    monkeypatch.setattr(module, name, functools.partial(getattr(module, name), halter=gate))
    return gate


def assert_halted(path: Path, planned: int) -> tuple[str, ...]:
    """The run of ``path`` (its events file) stopped early (fewer than ``planned``
    updates) at the update the gate failed, finished ``failed`` with a ``halted: <rule>
    critical (...)`` reason recorded by its critical anomaly, and ``sanctum check`` fails
    it naming those rules in its verdict; returns them."""
    events = read_events(path).events
    updates = [e.payload.update for e in events if isinstance(e, PPOUpdate)]
    assert 0 < len(updates) < planned, updates
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    reason = finished.payload.reason or ""
    assert (finished.payload.status, reason[: len(HALT_PREFIX)]) == ("failed", HALT_PREFIX)
    rules = tuple(reason[len(HALT_PREFIX) :].split(" critical (", 1)[0].split(", "))
    (anomaly,) = [
        e.payload
        for e in events
        if isinstance(e, Anomaly) and e.payload.message.startswith(HALT_PREFIX)
    ]
    assert (anomaly.severity, anomaly.update) == ("critical", updates[-1])
    assert anomaly.message.startswith(reason)
    report = check_report(path)
    verdict = report["verdict_text"]  # FAIL: KL 1x, non-finite 2x, anomaly 2x, run failed
    named = set(re.findall(r"(?:^FAIL: |, )([^,]+?) \d+x", verdict))
    assert report["exit_code"] == 1 and set(rules) <= named, (rules, verdict)
    return rules


class FiresAt:
    """A halter that is not sanctum's: it fires once it has seen update ``at``."""

    name = "fires-at"
    status: RunStatus = "failed"

    def __init__(self, at: int) -> None:
        self.at = at
        self.seen: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.seen.append(event)

    @property
    def reason(self) -> str | None:
        updates = [e.payload.update for e in self.seen if isinstance(e, PPOUpdate)]
        return f"{HALT_PREFIX}test at {self.at}" if self.at in updates else None

    def anomaly(self, global_step: int | None = None) -> AnomalyPayload:
        return AnomalyPayload(
            severity="critical", metric="ref_kl", message="stop", update=self.at,
            global_step=global_step,
        )  # fmt: skip
