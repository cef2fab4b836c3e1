"""HaltGate: a run recorded through a real Recorder is judged as it goes, and the gate fires
exactly when ``sanctum check --allow-unfinished`` would fail the run so far."""

from __future__ import annotations

from pathlib import Path

import pytest

from sanctum.health.levels import Level
from sanctum.health.rule import Rule
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, Thresholds
from sanctum.live.halt import HALT_STATUS, HaltGate
from telemetry import PPOUpdatePayload, Recorder, read_events
from telemetry.events import Anomaly, AnomalyPayload, RunFinished
from telemetry.halting import HALT_PREFIX, Halter
from tests.sanctum.recorded import check_report

REF_KL = (0.01, 0.02, 0.7, 1.2, 1.3, 1.4, 1.5)
"""A reference KL that warns at update 2 and is critical two updates in a row at 3 and 4
(the shipped RefKL rule: > 0.6 / > 1.0, two in a row)."""


def _update(update: int, ref_kl: float) -> PPOUpdatePayload:
    return PPOUpdatePayload(
        update=update, global_step=update + 1, early_stopped=False, ref_kl=ref_kl, entropy=2.0
    )


def _record(tmp_path: Path, gate: HaltGate, values: tuple[float, ...] = REF_KL) -> Recorder:
    """Record ``values`` until the gate fires, as a trainer that halts would, then stop."""
    rec = Recorder(run_dir=tmp_path, run_id="r", algorithm="grpo")
    rec.open()
    rec.bus.subscribe(gate, name=gate.name)
    rec.start()
    for update, value in enumerate(values):
        rec.emit(_update(update, value))
        if gate.fired:
            rec.emit(gate.anomaly(update + 1))
            rec.finish(HALT_STATUS, gate.reason)
            break
    else:
        rec.finish("completed")
    return rec


def test_fires_at_the_update_the_rule_goes_critical(tmp_path: Path) -> None:
    gate = HaltGate()
    rec = _record(tmp_path, gate)
    assert gate.fired == ("RefKL",)
    assert gate.update == 4  # critical at 3 and 4: two in a row
    events = read_events(rec.path).events
    anomaly = next(e.payload for e in events if isinstance(e, Anomaly))
    assert anomaly.severity == "critical"
    assert anomaly.metric == "ref_kl"
    assert anomaly.update == 4
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "failed"
    assert finished.payload.reason is not None
    assert finished.payload.reason.startswith("halted: RefKL critical (RefKL reached critical")


def test_the_gate_and_check_agree(tmp_path: Path) -> None:
    """The log up to the update the gate fired at fails check --allow-unfinished on the rule;
    the log up to the update before passes it."""
    gate = HaltGate()
    _record(tmp_path / "halted", gate)
    assert gate.update is not None
    fired = gate.update
    for stop, code in ((fired, 1), (fired - 1, 0)):
        rec = Recorder(run_dir=tmp_path / str(stop), run_id="r")
        with rec:
            for update, value in enumerate(REF_KL[: stop + 1]):
                rec.emit(_update(update, value))
        report = check_report(rec.path)
        assert report["exit_code"] == code, report
        if code:
            assert "RefKL" in str(report["verdict_text"])


def test_halt_on_warning_fires_earlier(tmp_path: Path) -> None:
    gate = HaltGate(halt_on="warning")
    _record(tmp_path, gate)
    assert gate.halt_on is Level.WARNING
    assert gate.fired == ("RefKL",)
    assert gate.update == 3  # past 0.6 two in a row at 2 and 3; critical only at 4


def test_a_healthy_run_never_fires(tmp_path: Path) -> None:
    gate = HaltGate()
    rec = _record(tmp_path, gate, (0.01, 0.02, 0.03, 0.02, 0.01))
    assert gate.fired == ()
    assert gate.reason is None
    assert isinstance(read_events(rec.path).events[-1], RunFinished)
    with pytest.raises(RuntimeError, match="before the gate fired"):
        gate.anomaly()


def test_a_critical_anomaly_of_the_trainer_fires(tmp_path: Path) -> None:
    gate = HaltGate()
    rec = Recorder(run_dir=tmp_path, run_id="r")
    rec.open()
    rec.bus.subscribe(gate, name=gate.name)  # before run_started, as every trainer does
    with rec:
        rec.emit(AnomalyPayload(severity="critical", metric="grad_norm", message="NaN loss"))
    assert gate.fired == ("anomaly",)


def test_thresholds_from_an_object_or_a_file(tmp_path: Path) -> None:
    tight = Thresholds(rules=(Rule("ref_kl", "RefKL", "above", 0.005, 0.015),))
    gate = HaltGate(tight)
    _record(tmp_path / "object", gate)
    assert gate.update == 1
    toml = tmp_path / "tight.toml"
    toml.write_text("[ref_kl]\nwarning = 0.005\ncritical = 0.015\npersist = 1\nfar = false\n")
    from_file = HaltGate(toml)
    _record(tmp_path / "file", from_file)
    assert from_file.update == 1
    base = from_file.aggregator.base_thresholds  # the table as given, before it fits the run
    assert base.rule("approx_kl") == DEFAULT_THRESHOLDS.rule("approx_kl")


def test_bad_levels_and_files_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^halt_on must be one of critical, warning or None"):
        HaltGate(halt_on="fatal")
    with pytest.raises(ValueError, match=r"missing\.toml") as info:
        HaltGate(tmp_path / "missing.toml")
    assert "\n" not in str(info.value)


def test_sanctum_exports_the_gate_as_a_telemetry_halter() -> None:
    """``from sanctum import HaltGate``: the public name, an object of the protocol a
    trainer takes (its reason, when set, begins as the protocol says)."""
    import sanctum

    assert sanctum.HaltGate is HaltGate
    assert "HaltGate" in sanctum.__all__
    gate: Halter = sanctum.HaltGate()  # what the type checker holds it to
    assert isinstance(gate, Halter)
    assert (gate.name, gate.status) == ("halt", HALT_STATUS)


def test_a_new_run_started_is_judged_afresh(tmp_path: Path) -> None:
    """A trainer that trains twice with one gate: the second run is judged on its own, not
    as the first run's sequel (which would fire at once, or fail as two runs in a log)."""
    gate = HaltGate()
    _record(tmp_path / "first", gate)
    assert gate.reason is not None and gate.reason.startswith(HALT_PREFIX)
    second = _record(tmp_path / "second", gate, (0.01, 0.02, 0.03))
    assert gate.fired == () and gate.reason is None and gate.update is None
    finished = read_events(second.path).events[-1]
    assert isinstance(finished, RunFinished) and finished.payload.status == "completed"
