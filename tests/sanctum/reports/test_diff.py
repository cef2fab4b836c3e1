"""``sanctum diff``: recorded runs (tests/fixtures/recorded), logs written by the real
writer, and the return-curve functions it compares with."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main
from sanctum.reports.compare import ConfigDifference, config_differences
from sanctum.reports.return_curve import (
    ReturnPoint,
    curve_of,
    equal_steps,
    final_return,
    initial_return,
    sample_at,
    smoothed,
)
from telemetry.events import Rollout, RolloutPayload
from tests.sanctum.logs import (
    KL_CRITICAL,
    KL_HOLDS,
    KL_WARNING,
    RunLog,
    early_stop_update,
    kl_breach,
    write_run,
)
from tests.sanctum.recorded import recorded, run_cli


def diff_json(capsys: pytest.CaptureFixture[str], a: str, b: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "diff", a, b, "--json")
    assert (code, err) == (0, "")
    doc: dict[str, Any] = json.loads(out)
    return doc


# -- recorded runs ---------------------------------------------------------------------------


def test_a_learning_rate_10x_lower_is_the_one_config_difference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = diff_json(capsys, recorded("base-s1"), recorded("lowlr-s1"))
    assert doc["comparable"] is True and doc["incomparable"] == []
    assert doc["config"] == [{"key": "learning_rate", "a": 0.001, "b": 0.0001, "only_in": None}]


def test_return_curves_are_compared_at_the_same_steps(capsys: pytest.CaptureFixture[str]) -> None:
    doc = diff_json(capsys, recorded("base-s1"), recorded("lowlr-s1"))
    returns = doc["returns"]
    points = returns["at_steps"]
    assert [p["step"] for p in points] == [8192 * k for k in range(1, 11)]
    assert all(p["b_minus_a"] == pytest.approx(p["b"] - p["a"]) for p in points)
    assert all(p["b"] < p["a"] for p in points)  # the slower learner is behind at every step
    # same seed, same first policy: the same first episodes; then 428 against 139
    assert returns["a"]["initial"] == pytest.approx(returns["b"]["initial"])
    assert returns["a"]["final"] == pytest.approx(428.33, abs=0.01)
    assert returns["b"]["final"] == pytest.approx(139.25, abs=0.01)
    assert points[-1]["a"] == pytest.approx(returns["a"]["final"])  # the last step is the end


def test_final_and_worst_values_are_the_summarys(capsys: pytest.CaptureFixture[str]) -> None:
    """One rule table: diff reports what ``sanctum summary`` reports for each run."""
    doc = diff_json(capsys, recorded("base-s2"), recorded("lowlr-s2"))
    for side, name in (("a", "base-s2"), ("b", "lowlr-s2")):
        code, out, _ = run_cli(capsys, "summary", recorded(name), "--json")
        assert code == 0
        summary = {row["metric"]: row for row in json.loads(out)["rules"]}
        rules = doc["rules"]
        assert len(rules) == len(summary)
        for rule in rules:
            expected = summary[rule["metric"]]
            got = rule[side]
            assert (got["final"], got["worst"], got["first_critical"]) == (
                expected["final"],
                expected["worst"],
                expected["first_critical"],
            )
    metrics = {m["metric"]: m for m in doc["metrics"]}
    assert metrics["learning_rate"]["a"]["final"] == pytest.approx(2.5e-5)
    assert metrics["learning_rate"]["b"]["final"] == pytest.approx(2.5e-6)


def test_the_text_report_reads_in_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "diff", recorded("base-s1"), recorded("new-s4"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "sanctum diff"
    assert lines[1].startswith("A  base-s1  ") and "env CartPole-v1, seed 1" in lines[1]
    assert lines[2].startswith("B  new-s4  ") and "verdict OK" in lines[2]
    assert "config (1 key differs)" in lines
    assert "  seed  A 1  B 4" in lines
    assert "WARNING" not in out
    final = next(line for line in lines if line.strip().startswith("final "))
    assert final.split() == ["final", "428.3", "500.0", "71.67"]
    assert "early stops: A 0, B 0" in lines
    assert max(len(line) for line in lines) <= 200


# -- health timelines, early stops, incomparable runs -----------------------------------------


def test_health_timelines_and_early_stops_of_each_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calm, wild = tmp_path / "calm.jsonl", tmp_path / "wild.jsonl"
    log = RunLog(calm, run_id="calm")
    log.start()
    for u in range(12):
        log.update(u)
    log.finish()
    log.close()
    log = RunLog(wild, run_id="wild")
    log.start()
    warning, critical = kl_breach(6, KL_WARNING), kl_breach(11, KL_CRITICAL)
    for u in range(16):
        if u == 5:
            log.update(early_stop_update(u))
        else:
            log.update(u, **warning(u), **critical(u))
    log.finish()
    log.close()
    doc = diff_json(capsys, str(calm), str(wild))
    kl = next(r for r in doc["rules"] if r["metric"] == "approx_kl")
    assert (kl["a"]["first_warning"], kl["a"]["first_critical"]) == (None, None)
    # each breach reaches its level at its third update, when the median of 5 crosses
    first_warning, first_critical = 6 + KL_HOLDS - 1, 11 + KL_HOLDS - 1
    assert (kl["b"]["first_warning"], kl["b"]["first_critical"]) == (first_warning, first_critical)
    per_clip = KL_CRITICAL["approx_kl"] / 0.01  # a clip fraction of 0 counts as 0.01
    assert kl["b"]["worst"] == pytest.approx(per_clip)
    assert kl["b"]["worst_update"] == first_critical
    stops = doc["early_stops"]
    assert stops["a"] == {"count": 0, "listed": []}
    assert stops["b"]["count"] == 1
    assert stops["b"]["listed"][0]["update"] == 5
    assert "max_kl 0.0300 at epoch 2 minibatch 3" in stops["b"]["listed"][0]["reason"]
    _, out, _ = run_cli(capsys, "diff", str(calm), str(wild))
    assert "early stops: A 0, B 1" in out
    assert "  B update 5: approx_kl 0.0412 > max_kl 0.0300" in out
    row = next(line for line in out.splitlines() if "KL approx_kl" in line)
    assert row.split()[-2:] == [f"-/{first_warning}", f"-/{first_critical}"]


def test_runs_of_another_env_and_schema_are_flagged_incomparable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("telemetry.eventlog.reader.SCHEMA_MAJOR", 2)  # a reader of 1 and 2
    other = tmp_path / "acrobot" / "events.jsonl"
    other.parent.mkdir()
    log = RunLog(other, run_id="acrobot")
    log.start(schema=2, env_id="Acrobot-v1")
    for u in range(4):
        log.update(u)
    log.finish()
    log.close()
    doc = diff_json(capsys, recorded("base-s1"), str(other.parent))
    assert doc["comparable"] is False
    assert doc["incomparable"] == ["env CartPole-v1 vs Acrobot-v1", "schema 1 vs 2"]
    code, out, _ = run_cli(capsys, "diff", recorded("base-s1"), str(other))
    assert code == 0
    assert (
        "WARNING: incomparable runs (env CartPole-v1 vs Acrobot-v1; schema 1 vs 2): "
        "their numbers do not measure the same thing"
    ) in out.splitlines()


# -- unusable input ------------------------------------------------------------------------


def test_a_missing_run_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "events.jsonl"
    code, out, err = run_cli(capsys, "diff", recorded("base-s1"), str(missing))
    assert (code, out) == (2, "")
    assert err.startswith("sanctum: error: ") and str(missing) in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_log_without_run_started_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"hello": 1}\nnot json\n', encoding="utf-8")
    code, out, err = run_cli(capsys, "diff", str(junk), recorded("base-s1"), "--json")
    assert (code, out) == (2, "")
    assert err.startswith(f"sanctum: error: {junk}: no run_started event")
    assert err.count("\n") == 1


def test_diff_needs_two_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["diff", recorded("base-s1")])
    assert exc.value.code == 2
    assert "the following arguments are required: B" in capsys.readouterr().err


# -- pure parts ------------------------------------------------------------------------------


def test_config_differences_keep_absent_apart_from_null() -> None:
    a = {"lr": 1e-3, "clip": None, "norm": True, "layers": [64, 64], "steps": 1}
    b = {"lr": 1e-4, "norm": 1, "layers": [64, 64], "steps": 1.0, "extra": None}
    assert config_differences(a, b) == [
        ConfigDifference("lr", 1e-3, 1e-4, None),
        ConfigDifference("clip", None, None, "a"),
        ConfigDifference("norm", True, 1, None),
        ConfigDifference("extra", None, None, "b"),
    ]
    assert config_differences(a, b, ignore=("lr", "clip", "norm", "extra")) == []


def rollout(step: int, episodes: int, mean: float | None) -> Rollout:
    payload = RolloutPayload(
        update=step // 100, global_step=step, episodes=episodes, episode_return_mean=mean
    )
    return Rollout(run_id="r", seq=1, ts=0.0, payload=payload)


def test_a_curve_keeps_only_rollouts_that_say_something_of_the_return() -> None:
    rollouts = [
        rollout(100, 4, 10.0),
        rollout(200, 0, None),
        rollout(300, 2, math.nan),
        rollout(400, 1, 30.0),
    ]
    assert curve_of(rollouts) == (ReturnPoint(100, 4, 10.0), ReturnPoint(400, 1, 30.0))


CURVE = (
    ReturnPoint(100, 10, 10.0),
    ReturnPoint(200, 10, 20.0),
    ReturnPoint(300, 5, 40.0),
    ReturnPoint(400, 5, 60.0),
)


def test_the_window_holds_the_latest_rollouts_with_enough_episodes() -> None:
    # window of 10+ episodes: a rollout of 10 alone, then the last two of 5
    assert smoothed(CURVE, 10) == [10.0, 20.0, (20 * 10 + 40 * 5) / 15, 50.0]
    assert final_return(CURVE, 10) == 50.0
    assert initial_return(CURVE, 10) == 10.0
    assert initial_return(CURVE, 15) == 15.0  # whole rollouts: the first two, 20 episodes
    assert final_return((), 10) is None


def test_curves_are_interpolated_between_rollouts_and_never_extrapolated() -> None:
    values = sample_at(CURVE, [50, 100, 150, 400, 450], 10)
    assert values == [None, 10.0, 15.0, 50.0, None]


def test_equal_steps_stop_at_the_shorter_run() -> None:
    assert equal_steps(81920, 40960, 4) == [10240, 20480, 30720, 40960]
    assert equal_steps(0, 100) == []


def test_a_final_value_its_rule_did_not_judge_carries_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """EV of -8.377 on returns nearly constant is not judged: ``diff`` marks the value and
    says why under the table (the JSON: ``final_note``), as the health panel does."""
    flat = {"explained_variance": -8.377, "return_std": 0.0}
    a = write_run(tmp_path / "a" / "events.jsonl", 12, lambda u: flat)
    b = write_run(tmp_path / "b" / "events.jsonl", 12)
    code, out, err = run_cli(capsys, "diff", str(a), str(b))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    ev = next(line for line in lines if line.strip().startswith("EV explained_variance"))
    assert ev.split()[2:4] == ["-8.377*", "0.600"]
    assert "  * A: EV not judged: returns nearly constant" in lines
    doc = diff_json(capsys, str(a), str(b))
    (rule,) = (r for r in doc["rules"] if r["metric"] == "explained_variance")
    assert rule["a"]["final_note"] == "not judged: returns nearly constant"
    assert rule["b"]["final_note"] is None
