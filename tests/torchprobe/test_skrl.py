"""SkrlRecorder: real skrl PPO runs (examples/skrl_ppo.py: skrl's Pendulum example's settings,
and CartPole), recorded through the shipped integration and judged by ``sanctum``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("skrl", reason="needs the skrl extra: pip install 'sanctum-ppo[skrl]'")

from sanctum.cli import main as sanctum_main
from telemetry.events import (
    AnomalyPayload,
    PPOUpdatePayload,
    RolloutPayload,
    RunFinishedPayload,
    RunStartedPayload,
)
from telemetry.halting import TrainingHalted
from tests.cli_runner import run_main
from tests.examples import load_example, payloads
from tests.sanctum.recorded import check_report
from tests.telemetry.halted_runs import assert_halted, gated

SMALL = ["--timesteps", "1100", "--rollouts", "256", "--epochs", "4", "--mini-batches", "8"]
"""4 envs x 1,100 steps in rollouts of 256: 4 updates of 4 x 8 optimizer steps."""


def _example(argv: list[str]) -> Path:
    run: Path = load_example("skrl_ppo").main(argv)
    return run


@pytest.mark.parametrize(
    ("env_id", "judged"),
    [
        ("Pendulum-v1", ("approx_kl", "clip_fraction", "grad_norm", "entropy")),
        ("CartPole-v1", ("approx_kl", "clip_fraction", "grad_norm", "entropy_normalized")),
    ],
)
def test_an_skrl_run_is_judged_on_kl_clip_grad_and_entropy(
    tmp_path: Path, env_id: str, judged: tuple[str, ...]
) -> None:
    run = _example([*SMALL, "--env-id", env_id, "--run-dir", str(tmp_path), "--run-id", "skrl"])
    report = check_report(run)
    rows = {row["name"]: row for row in report["rows"]}
    for metric in (*judged, "explained_variance"):
        assert rows[metric]["updates_measured"] == 4, metric
    assert report["exit_code"] == 0, report["verdict_text"]
    assert report["verdict_unmeasured"] == []  # a Box: no Entropy rule expects a normalised one
    updates = payloads(run, PPOUpdatePayload)
    assert [u.global_step for u in updates] == [1024, 2048, 3072, 4096]
    assert all(u.minibatches_completed == 32 and not u.early_stopped for u in updates)
    assert all(u.policy_loss is not None and u.grad_clip_scale is not None for u in updates)
    (started,) = payloads(run, RunStartedPayload)
    assert started.trainer.name == "skrl" and started.policy_epochs == 4
    assert started.action_space == ("continuous" if env_id == "Pendulum-v1" else "discrete")
    assert (started.config["clip_range"], started.config["kl_estimator"]) == (0.2, "k3")
    if env_id == "Pendulum-v1":  # 200-step episodes: 4 finish in each rollout of 256 x 4
        episodes = payloads(run, RolloutPayload)
        assert [r.episodes for r in episodes] == [4, 4, 4, 8]  # 800 and 1,000 in the last
        assert all(r.episode_length_mean == 200 for r in episodes)


def test_the_agent_is_left_as_it_was_and_a_raise_fails_the_run(tmp_path: Path) -> None:
    """The recorder wraps the agent's methods on the instance only, and takes them back."""
    from torchprobe.skrl import SkrlRecorder

    module = load_example("skrl_ppo")
    agent, _ = module.build(module.parse([*SMALL, "--run-dir", str(tmp_path)]))
    with pytest.raises(TypeError, match="SkrlRecorder records skrl's PPO agent; got object"):
        SkrlRecorder(object())
    rec = SkrlRecorder(agent, run_dir=tmp_path, run_id="boom")

    def train() -> None:
        with rec:
            assert vars(agent)["update"] == rec._wrapped_update
            raise RuntimeError("boom\nsecond line")

    with pytest.raises(RuntimeError, match="boom"):
        train()
    assert "update" not in vars(agent) and "record_transition" not in vars(agent)
    (finished,) = payloads(tmp_path / "boom", RunFinishedPayload)
    assert (finished.status, finished.reason) == ("failed", "RuntimeError: boom (...)")


def test_nan_observations_fail_an_skrl_run_in_every_view(tmp_path: Path) -> None:
    """skrl trains on NaN without raising: train() returns a policy of NaN, which the
    integration ends ``failed``, and the gate fails it on that, the probe's critical
    anomaly and the NaN figures."""
    argv = [*SMALL, "--run-dir", str(tmp_path), "--run-id", "nan", "--nan-observations-from"]
    run = _example([*argv, "400"])
    (finished,) = payloads(run, RunFinishedPayload)
    assert finished.status == "failed", finished
    assert (finished.reason or "").startswith("the policy's parameters hold NaN or Inf after ")
    anomaly = payloads(run, AnomalyPayload)[0]
    assert (anomaly.severity, anomaly.metric, anomaly.update) == ("critical", "observations", 1)
    assert anomaly.message.startswith("non-finite observations in the rollout: ")
    report = check_report(run)
    assert report["exit_code"] == 1 and report["verdict_text"].startswith("FAIL: ")
    assert "anomaly" in report["verdict_text"] and "non-finite" in report["verdict_text"]
    assert "FAIL" in run_main(sanctum_main, "summary", run).stdout
    assert "FAIL" in run_main(sanctum_main, run, "--once").stdout.splitlines()[1]
    folder = run_main(sanctum_main, "--once", tmp_path).stdout  # the folder's one run
    assert folder.splitlines()[1].startswith("FAIL: ")


def test_halt_on_critical_stops_the_skrl_run_at_the_update_the_gate_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example with observations NaN from the second rollout on: skrl trains on them
    without raising: the gate fails the run and the probe stops the trainer by raising, the
    run finished failed naming the rule."""
    module = load_example("skrl_ppo")
    gate = gated(monkeypatch, module, "SkrlRecorder")
    argv = [*SMALL, "--nan-observations-from", "400"]
    with pytest.raises(TrainingHalted, match=r"^halted: non-finite, anomaly critical \("):
        module.main([*argv, "--run-dir", str(tmp_path), "--run-id", "halted"])
    rules = assert_halted(tmp_path / "halted" / "events.jsonl", 4)
    assert rules == gate.fired == ("non-finite", "anomaly")
