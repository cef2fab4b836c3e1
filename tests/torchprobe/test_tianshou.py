"""TianshouRecorder: real Tianshou PPO runs (examples/tianshou_ppo.py: Tianshou's discrete PPO
test's settings, and a Gaussian policy on Pendulum), recorded through the shipped
integration and judged by ``sanctum``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "tianshou", reason="needs the tianshou extra: pip install 'sanctum-ppo[tianshou]'"
)

from sanctum.cli import main as sanctum_main
from telemetry.events import (
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

SMALL = ["--epochs", "1", "--epoch-num-steps", "2000", "--collection-steps", "500"]
SMALL += ["--num-envs", "4", "--repetitions", "3", "--batch-size", "125"]
"""4 updates of 500 env steps, each 3 passes of 4 minibatches."""


@pytest.mark.parametrize(
    ("env_id", "entropy"), [("CartPole-v1", "entropy_normalized"), ("Pendulum-v1", "entropy")]
)
def test_a_tianshou_run_is_judged_on_kl_clip_grad_and_entropy(
    tmp_path: Path, env_id: str, entropy: str
) -> None:
    run = load_example("tianshou_ppo").main(
        [*SMALL, "--env-id", env_id, "--run-dir", str(tmp_path), "--run-id", "t"]
    )
    report = check_report(run)
    rows = {row["name"]: row for row in report["rows"]}
    for metric in ("approx_kl", "clip_fraction", "grad_norm", entropy, "explained_variance"):
        assert rows[metric]["updates_measured"] == 4, metric
    assert report["exit_code"] == 0, report["verdict_text"]
    updates = payloads(run, PPOUpdatePayload)
    assert [u.global_step for u in updates] == [500, 1000, 1500, 2000]
    assert all(u.minibatches_completed == 3 * 4 and u.epochs_completed == 3 for u in updates)
    assert all(u.policy_loss is not None and u.grad_clip_scale is not None for u in updates)
    (started,) = payloads(run, RunStartedPayload)
    assert started.trainer.name == "tianshou"
    assert started.action_space == ("discrete" if env_id == "CartPole-v1" else "continuous")
    assert report["verdict_unmeasured"] == []  # every rule its action space has measured
    assert (started.config["clip_range"], started.config["max_grad_norm"]) == (0.2, 0.5)
    rollouts = payloads(run, RolloutPayload)
    if env_id == "CartPole-v1":  # a CartPole episode's return is its length
        finished = [r for r in rollouts if r.episodes]
        assert finished and all(
            r.episode_return_mean == pytest.approx(r.episode_length_mean) for r in finished
        )


def test_the_algorithm_is_left_as_it_was_and_a_raise_fails_the_run(tmp_path: Path) -> None:
    from torchprobe.tianshou import TianshouRecorder

    module = load_example("tianshou_ppo")
    algorithm, _ = module.build(module.parse([*SMALL, "--run-dir", str(tmp_path)]))
    with pytest.raises(TypeError, match="TianshouRecorder records Tianshou's PPO; got object"):
        TianshouRecorder(object())
    rec = TianshouRecorder(algorithm, run_dir=tmp_path, run_id="boom")

    def train() -> None:
        with rec:
            assert vars(algorithm)["update"] == rec._wrapped_update
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        train()
    assert "update" not in vars(algorithm) and "_update_with_batch" not in vars(algorithm)
    (finished,) = payloads(tmp_path / "boom", RunFinishedPayload)
    assert (finished.status, finished.reason) == ("failed", "RuntimeError: boom")


def test_nan_observations_end_a_tianshou_run_failed_in_every_view(tmp_path: Path) -> None:
    argv = [*SMALL, "--run-dir", str(tmp_path), "--run-id", "nan", "--nan-observations-from"]
    # torch's Categorical refuses NaN logits, or (once skrl or TorchRL, imported in this
    # process, turned torch's argument checks off) its sampling refuses NaN probabilities
    with pytest.raises((ValueError, RuntimeError), match=r"invalid values|probability tensor"):
        load_example("tianshou_ppo").main([*argv, "300"])
    run = tmp_path / "nan"
    (finished,) = payloads(run, RunFinishedPayload)
    assert finished.status == "failed"
    assert finished.reason.startswith(("ValueError: Expected", "RuntimeError: probability"))
    assert check_report(run)["exit_code"] == 1
    assert "FAIL" in run_main(sanctum_main, "summary", run).stdout
    assert run_main(sanctum_main, run, "--once").stdout.splitlines()[1].startswith("FAIL: ")


def test_halt_on_critical_stops_the_tianshou_run_at_the_update_the_gate_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example with a learning rate 300,000x the example's: the policy collapses to one
    action: the gate fails the run and the probe stops the trainer by raising, the run
    finished failed naming the rule."""
    module = load_example("tianshou_ppo")
    gate = gated(monkeypatch, module, "TianshouRecorder")
    argv = [*SMALL[:3], "6000", *SMALL[4:], "--learning-rate", "100"]
    with pytest.raises(TrainingHalted, match=r"^halted: Entropy critical \("):
        module.main([*argv, "--run-dir", str(tmp_path), "--run-id", "halted"])
    rules = assert_halted(tmp_path / "halted" / "events.jsonl", 12)
    assert rules == gate.fired == ("Entropy",)
