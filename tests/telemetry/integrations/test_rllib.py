"""RLlibRecorder: real RLlib PPO runs (examples/rllib_ppo.py: RLlib's tuned CartPole PPO
settings) on a local Ray cluster with two env runners, recorded through the shipped
integration and judged by ``sanctum``. One Ray session serves the module's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray.rllib", reason="needs the rllib extra: pip install 'sanctum-ppo[rllib]'")

import ray

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

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # Ray's own, of its own APIs
]
SMALL = ["--iterations", "3", "--train-batch-size", "1000", "--epochs", "2"]
"""3 iterations of 1,000 env steps (500 from each of 2 env runners), 2 epochs of 128."""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray cluster: the driver, and a process per env runner."""
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_an_rllib_run_is_judged_on_kl_clip_grad_and_entropy(
    tmp_path: Path, local_ray: None
) -> None:
    run = load_example("rllib_ppo").main([*SMALL, "--run-dir", str(tmp_path), "--run-id", "rllib"])
    report = check_report(run)
    rows = {row["name"]: row for row in report["rows"]}
    for metric in ("approx_kl", "clip_fraction", "grad_norm", "entropy_normalized", "entropy"):
        assert rows[metric]["updates_measured"] == 3, metric
    assert report["exit_code"] == 0, report["verdict_text"]
    updates = payloads(run, PPOUpdatePayload)
    assert [u.global_step for u in updates] == [1000, 2000, 3000]
    for u in updates:
        assert u.approx_kl is not None and u.approx_kl_max is not None
        assert u.approx_kl <= u.approx_kl_max
        assert u.ratio_min is not None and u.ratio_max is not None
        assert u.ratio_min <= 1 <= u.ratio_max
        assert u.minibatches_completed is not None and u.minibatches_completed >= 14
    rollouts = payloads(run, RolloutPayload)
    assert all(r.episodes > 0 for r in rollouts)  # from both env runners, into one log
    assert all(r.episode_return_mean == r.episode_length_mean for r in rollouts)  # CartPole
    (started,) = payloads(run, RunStartedPayload)
    assert started.trainer.name == "rllib" and started.policy_epochs == 2
    assert started.action_space == "discrete"  # made from the config's Gymnasium id
    assert report["verdict_unmeasured"] == []
    assert started.config["num_env_runners"] == 2 and started.config["clip_range"] == 0.3


def _train(config: Any, run_dir: Path, run_id: str) -> Path:
    """One iteration of ``config``'s algorithm, recorded."""
    from telemetry.integrations.rllib import RLlibRecorder

    with RLlibRecorder(config, run_dir=run_dir, run_id=run_id) as rec:
        algo = config.build_algo()
        try:
            algo.train()
        finally:
            algo.stop()
    return rec.run_dir


def _nan_config(**fault_tolerance: Any) -> Any:
    module = load_example("rllib_ppo")
    args = module.parse([*SMALL, "--nan-observations-from", "300"])
    return module.config_of(args).fault_tolerance(**fault_tolerance)


def test_nan_observations_fail_an_rllib_run_in_every_view(tmp_path: Path, local_ray: None) -> None:
    """An env runner that raises on NaN is dropped and restarted by RLlib's fault tolerance,
    and train() goes on: the run is a critical anomaly, never OK, and with no env runner
    left healthy at the end it ended ``failed``."""
    run = _train(_nan_config(delay_between_env_runner_restarts_s=0.0), tmp_path, "nan")
    anomaly = payloads(run, AnomalyPayload)[0]
    assert (anomaly.severity, anomaly.metric) == ("critical", "env_runners")
    assert anomaly.message.startswith("RLlib's env runners: 0 of 2 healthy (")
    assert not payloads(run, PPOUpdatePayload)  # the learner updated nothing
    (finished,) = payloads(run, RunFinishedPayload)
    assert finished.status == "failed"
    assert (finished.reason or "").startswith("RLlib's env runners: 0 of 2 healthy at the end (")
    report = check_report(run)
    assert report["exit_code"] == 1 and "anomaly" in report["verdict_text"]
    assert "FAIL" in run_main(sanctum_main, "summary", run).stdout
    assert run_main(sanctum_main, run, "--once").stdout.splitlines()[1].startswith("FAIL: ")


def test_a_raise_in_train_ends_the_run_failed(tmp_path: Path, local_ray: None) -> None:
    """Without fault tolerance an env runner's error raises from train(): failed."""
    config = _nan_config(restart_failed_env_runners=False)
    with pytest.raises(ray.exceptions.RayError):
        _train(config, tmp_path, "raised")
    (finished,) = payloads(tmp_path / "raised", RunFinishedPayload)
    assert finished.status == "failed" and "\n" not in (finished.reason or "")
    assert check_report(tmp_path / "raised")["exit_code"] == 1


def test_a_config_reused_for_a_second_run_carries_one_set_of_callbacks(tmp_path: Path) -> None:
    """A seed sweep over one config: the second recorder replaces the first's callbacks."""
    from telemetry.integrations.rllib import RLlibRecorder, on_episode_end

    config = load_example("rllib_ppo").config_of(load_example("rllib_ppo").parse([]))
    RLlibRecorder(config, run_dir=tmp_path, run_id="first")
    second = RLlibRecorder(config, run_dir=tmp_path, run_id="second")
    assert config.callbacks_on_episode_end == [on_episode_end]
    (train_result,) = config.callbacks_on_train_result
    assert train_result.keywords == {"key": second.key}


def test_halt_on_critical_stops_the_rllib_run_at_the_iteration_the_gate_fails(
    tmp_path: Path, local_ray: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example at a learning rate 170,000x its own: the first iteration's loss is
    non-finite, the gate fails the run, and the driver's on_train_result stops algo.train()
    by raising, the run finished failed naming the rule."""
    module = load_example("rllib_ppo")
    gate = gated(monkeypatch, module, "RLlibRecorder")
    argv = [*SMALL[:1], "4", *SMALL[2:], "--learning-rate", "50"]
    with pytest.raises(TrainingHalted, match=r"^halted: non-finite critical \("):
        module.main([*argv, "--run-dir", str(tmp_path), "--run-id", "halted"])
    rules = assert_halted(tmp_path / "halted" / "events.jsonl", 4)
    assert rules == gate.fired == ("non-finite",)
