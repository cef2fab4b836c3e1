"""The learning gate of ``sanctum check RUN --seeds ... --baseline ...``.

On recorded runs (tests/fixtures/recorded, README there): the same config with another seed
passes, the same config with a learning rate 10x lower fails. On logs written by the real
writer: the rules of the gate one by one, and the input it refuses.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.reports.compare import load_run
from sanctum.reports.learning import GateError, GateOptions, judge_learning
from tests.sanctum.logs import RunLog, kl_breach, ppo_update, rollout, write_two_runs
from tests.sanctum.recorded import RECORDED, recorded, run_cli

BASELINE = [str(RECORDED / f"base-s{seed}") for seed in (1, 2, 3)]


def gate_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli(capsys, "check", *argv, "--json")
    assert err == ""
    doc: dict[str, Any] = json.loads(out)
    return code, doc


def comparisons(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in doc["learning"]["comparisons"]}


# -- recorded runs: the acceptance ---------------------------------------------------------


def test_the_same_config_with_other_seeds_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = gate_json(
        capsys, recorded("new-s4"), "--seeds", recorded("new-s5"), "--baseline", *BASELINE
    )
    assert code == 0 and doc["passed"] is True
    final, steps = comparisons(doc).values()
    assert final["candidate_median"] == pytest.approx(451.7, abs=0.1)
    assert final["baseline_median"] == pytest.approx(428.3, abs=0.1)
    assert steps["candidate_median"] == 23552 and steps["baseline_median"] == 24576
    assert [r["run_id"] for r in doc["learning"]["candidates"]] == ["new-s4", "new-s5"]
    assert doc["learning"]["notes"] == []  # the configs differ in the seed only
    names = [row["name"] for row in doc["rows"]]
    assert names[-2:] == ["learning.final_return", "learning.steps_to_threshold"]


def test_a_learning_rate_10x_lower_fails_and_the_junit_names_the_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = tmp_path / "report.xml"
    argv = [recorded("lowlr-s1"), "--seeds", recorded("lowlr-s2"), "--baseline", *BASELINE]
    code, out, err = run_cli(capsys, "check", *argv, "--junit", str(junit))
    assert (code, err) == (1, "")
    assert out.splitlines()[-1] == "FAIL: final return, steps to threshold"  # health passed
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    failures = {n: c.find("failure") for n, c in cases.items() if c.find("failure") is not None}
    assert set(failures) == {"learning.final_return", "learning.steps_to_threshold"}
    final = failures["learning.final_return"]
    assert final is not None
    assert final.get("message") == (
        "median final return 127.5 over 2 runs vs baseline 428.3 over 3 runs; regressed: "
        "the limit is 326.6 (the baseline less 25% of its gain 407.1)"
    )
    steps = failures["learning.steps_to_threshold"]
    assert steps is not None
    assert steps.get("message") == (
        "median steps to reach a return of 224.8: never over 2 runs (2 never reached it) vs "
        "baseline 24576 over 3 runs; regressed: the limit is 30720 (the baseline plus 25%)"
    )
    assert cases["learning.final_return"].get("classname") == "sanctum.reports.check.lowlr-s1"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "2"


def test_the_text_names_the_seeds_and_the_config_difference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [recorded("lowlr-s1"), "--seeds", recorded("lowlr-s2"), "--baseline", *BASELINE]
    code, out, _ = run_cli(capsys, "check", *argv)
    assert code == 1
    lines = out.splitlines()
    assert (
        "threshold 224.8 (half-rise of the baseline); tolerances: final return -25% of the "
        "baseline's gain, steps +25%"
    ) in lines
    row = next(line for line in lines if line.startswith("candidate lowlr-s2"))
    assert row.split() == ["candidate", "lowlr-s2", "2", "21.26", "115.7", "never"]
    assert (
        "note  config differs from the baseline's (baseline -> candidate): "
        "learning_rate 0.001 -> 0.0001"
    ) in lines
    assert any(line.startswith("FAIL  final return: median final return 127.5") for line in lines)


@pytest.mark.parametrize(("run", "passes"), [("new-s5", True), ("lowlr-s2", False)])
def test_one_run_against_the_baseline(
    run: str, passes: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    code, doc = gate_json(capsys, recorded(run), "--baseline", *BASELINE)
    assert code == (0 if passes else 1)
    assert [c["passed"] for c in comparisons(doc).values()] == [passes, passes]


def test_the_tolerance_and_threshold_are_the_users_to_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [recorded("lowlr-s1"), "--seeds", recorded("lowlr-s2"), "--baseline", *BASELINE]
    code, doc = gate_json(capsys, *argv, "--return-tolerance", "0.8")
    final, steps = comparisons(doc).values()
    assert code == 1 and final["passed"] is True and steps["passed"] is False
    assert final["limit"] == pytest.approx(428.33 - 0.8 * 407.08, abs=0.01)
    code, doc = gate_json(capsys, *argv, "--return-threshold", "100", "--steps-tolerance", "9")
    learning = doc["learning"]
    assert learning["return_threshold"] == 100.0
    assert learning["return_threshold_source"] == "--return-threshold"
    reached = [r["steps_to_threshold"] for r in learning["candidates"]]
    assert all(isinstance(s, int) for s in reached)  # lr/10 does reach 100, late
    _, steps = comparisons(doc).values()
    assert steps["passed"] is True and steps["candidate_median"] > steps["baseline_median"]


# -- refused input: exit 2 ---------------------------------------------------------------


def returns_run(
    path: Path,
    returns: Sequence[float],
    env_id: str = "CartPole-v1",
    run_id: str = "run-test",
    episodes: int = 20,
) -> Path:
    """A completed run whose rollout ``u`` finished ``episodes`` episodes of mean
    ``returns[u]`` (20: each rollout fills the gate's window alone)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    log = RunLog(path, run_id=run_id)
    log.start(env_id=env_id)
    for u, value in enumerate(returns):
        log.emit(rollout(u, episodes=episodes, episode_return_mean=value))
        log.emit(ppo_update(u))
    log.finish()
    log.close()
    return path


RISING = [10.0, 20.0, 40.0, 80.0, 100.0, 100.0]


def test_runs_of_another_env_are_refused_with_a_junit_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    acrobot = returns_run(tmp_path / "acrobot" / "events.jsonl", RISING, env_id="Acrobot-v1")
    junit = tmp_path / "report.xml"
    code, out, err = run_cli(
        capsys, "check", recorded("new-s4"), "--baseline", str(acrobot), "--junit", str(junit)
    )
    assert (code, out) == (2, "")
    assert err == (
        f"sanctum: error: {acrobot}: cannot be compared with {RECORDED / 'new-s4'}/events.jsonl "
        "(env CartPole-v1 vs Acrobot-v1): a learning gate compares runs of one environment and "
        "schema\n"
    )
    case = ET.parse(junit).getroot().find("testsuite/testcase")
    assert case is not None and case.get("name") == "input"
    error = case.find("error")
    assert error is not None and "Acrobot-v1" in (error.get("message") or "")


def test_a_baseline_that_did_not_learn_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flat = returns_run(tmp_path / "flat.jsonl", [50.0, 40.0, 50.0, 45.0])
    rising = returns_run(tmp_path / "rising.jsonl", RISING)
    code, out, err = run_cli(capsys, "check", str(rising), "--baseline", str(flat))
    assert (code, out) == (2, "")
    assert err.startswith("sanctum: error: the baseline did not learn: its median final return 45")


def test_a_threshold_the_baseline_never_reaches_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rising = returns_run(tmp_path / "rising.jsonl", RISING)
    code, _, err = run_cli(
        capsys, "check", str(rising), "--baseline", str(rising), "--return-threshold", "500"
    )
    assert code == 2
    assert "never reaches a return of 500" in err and "--return-threshold" in err


def test_a_run_without_a_finished_episode_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    silent = tmp_path / "silent.jsonl"
    log = RunLog(silent)
    log.start()
    log.emit(rollout(0, episodes=0, episode_return_mean=None))
    log.emit(ppo_update(0))
    log.finish()
    log.close()
    code, _, err = run_cli(capsys, "check", recorded("new-s4"), "--baseline", str(silent))
    assert code == 2
    assert (
        err == f"sanctum: error: {silent}: no rollout with a finished episode: no return to judge\n"
    )


def test_a_baseline_log_with_two_runs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = tmp_path / "two.jsonl"
    line = write_two_runs(two)
    code, _, err = run_cli(capsys, "check", recorded("new-s4"), "--baseline", str(two))
    assert code == 2
    assert err.startswith(f"sanctum: error: {two}:{line}: a second run, run-b, starts here")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "x"], "--seeds: only with --baseline"),
        (["--return-tolerance", "0.1", "--final-episodes", "5"], "--return-tolerance, --final"),
    ],
)
def test_gate_options_without_a_baseline_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "check", recorded("new-s4"), *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"sanctum: error: {message}")


@pytest.mark.parametrize("value", ["-0.1", "nan", "a lot"])
def test_a_tolerance_must_be_a_finite_fraction(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", recorded("new-s4"), "--baseline", BASELINE[0], "--return-tolerance", value])
    assert exc.value.code == 2
    assert "--return-tolerance: " in capsys.readouterr().err


# -- the judgement itself ------------------------------------------------------------------


def test_a_run_that_never_reaches_the_threshold_counts_as_infinitely_slow(
    tmp_path: Path,
) -> None:
    def load(name: str, returns: Sequence[float]) -> Any:
        return load_run(returns_run(tmp_path / f"{name}.jsonl", returns), DEFAULT_THRESHOLDS)

    base = [load("b1", RISING), load("b2", RISING)]
    fast, never = load("fast", RISING), load("never", [10.0, 20.0, 30.0, 40.0, 50.0, 54.0])
    verdict = judge_learning([fast, never], base, GateOptions(return_tolerance=0.3))
    assert verdict.threshold == 55.0  # halfway from 10 to 100
    assert "seed 3 is in 2 baseline runs: it counts 2 times" in verdict.notes
    final, steps = verdict.comparisons
    assert [r.steps for r in verdict.candidates] == [4 * 512, None]
    assert math.isinf(steps.candidate) and not steps.passed
    assert final.candidate == 77.0 and final.limit == pytest.approx(73.0) and final.passed
    alone = judge_learning([fast], base, GateOptions(steps_tolerance=0.0))
    assert alone.passed and alone.comparisons[1].candidate == 2048


def test_a_health_failure_and_a_learning_pass_are_judged_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "spiky.jsonl"
    log = RunLog(path)
    log.start()
    for u, value in enumerate(RISING):
        log.emit(rollout(u, episodes=20, episode_return_mean=value))
        log.emit(ppo_update(u, **kl_breach(2)(u)))  # a critical KL from update 2 on
    log.finish()
    log.close()
    base = returns_run(tmp_path / "base.jsonl", RISING)
    code, doc = gate_json(capsys, str(path), "--baseline", str(base))
    assert code == 1 and doc["learning"]["passed"] is True
    failed = [row["name"] for row in doc["rows"] if not row["passed"]]
    assert failed == ["approx_kl"]


def test_seeds_of_another_env_are_refused_before_judging(tmp_path: Path) -> None:
    cart = load_run(returns_run(tmp_path / "cart.jsonl", RISING), DEFAULT_THRESHOLDS)
    other = returns_run(tmp_path / "other.jsonl", RISING, env_id="Pendulum-v1")
    pendulum = load_run(other, DEFAULT_THRESHOLDS)
    with pytest.raises(GateError, match="env CartPole-v1 vs Pendulum-v1"):
        judge_learning([cart, pendulum], [cart], GateOptions())
