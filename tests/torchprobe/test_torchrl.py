"""TorchRLRecorder: real TorchRL PPO runs (the tutorial's loop, examples/torchrl_ppo.py, on
Pendulum), recorded through the shipped integration and judged by ``sanctum``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torchrl", reason="needs the torchrl extra: pip install 'sanctum-ppo[torchrl]'")
pytestmark = [  # TorchRL 0.14 warns of its own coming changes
    pytest.mark.filterwarnings("ignore:The env passed to Collector is missing:FutureWarning"),
    pytest.mark.filterwarnings(r"ignore:Creating \w+WeightUpdater:DeprecationWarning"),
]

from sanctum.cli import main as sanctum_main  # noqa: E402
from telemetry import read_events  # noqa: E402
from telemetry.events import PPOUpdatePayload, RolloutPayload, RunFinishedPayload  # noqa: E402
from telemetry.halting import TrainingHalted  # noqa: E402
from tests.cli_runner import run_main  # noqa: E402
from tests.examples import load_example, payloads  # noqa: E402
from tests.sanctum.recorded import check_report  # noqa: E402
from tests.telemetry.halted_runs import assert_halted, gated  # noqa: E402

SMALL = ["--batches", "6", "--frames-per-batch", "256", "--epochs", "3", "--minibatch", "64"]


def _example(argv: list[str]) -> Path:
    run: Path = load_example("torchrl_ppo").main(argv)
    return run


def test_a_torchrl_run_is_judged_on_kl_clip_grad_and_entropy(tmp_path: Path) -> None:
    run = _example([*SMALL, "--run-dir", str(tmp_path), "--run-id", "torchrl"])
    report = check_report(run)
    rows = {row["name"]: row for row in report["rows"]}
    for metric in ("approx_kl", "clip_fraction", "grad_norm", "entropy", "explained_variance"):
        assert rows[metric]["updates_measured"] == 6, metric
    assert report["exit_code"] == 0, report["verdict_text"]
    updates = payloads(run, PPOUpdatePayload)
    assert [u.global_step for u in updates] == [256 * (i + 1) for i in range(6)]
    assert all(u.minibatches_completed == 3 * 4 for u in updates)  # 3 epochs of 256 / 64
    assert all(u.policy_loss is not None and u.value_loss is not None for u in updates)
    assert all(u.grad_norm_max is not None and u.grad_clip_scale is not None for u in updates)
    episodes = [r for r in payloads(run, RolloutPayload) if r.episodes]
    assert episodes and all(r.episode_length_mean == 200 for r in episodes)  # Pendulum's cap
    (started,) = [e.payload for e in read_events(run / "events.jsonl").events[:1]]
    assert started.trainer.name == "torchrl" and started.config["kl_estimator"] == "k3"
    assert started.action_space == "continuous"  # the actor's spec: Pendulum's Box
    assert report["verdict_unmeasured"] == [] and report["verdict_text"] == "OK"


def test_nan_observations_end_a_torchrl_run_failed_in_every_view(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        _example(
            [
                *SMALL,
                "--run-dir",
                str(tmp_path),
                "--run-id",
                "nan",
                "--nan-observations-from",
                "300",
            ]
        )
    run = tmp_path / "nan"
    (finished,) = payloads(run, RunFinishedPayload)
    assert finished.status == "failed" and finished.reason.startswith("RuntimeError: ")
    assert check_report(run)["exit_code"] == 1
    assert "FAIL" in run_main(sanctum_main, "summary", run).stdout
    assert "FAIL" in run_main(sanctum_main, run, "--once").stdout.splitlines()[1]
    folder = run_main(sanctum_main, "--once", tmp_path).stdout  # the folder's one run
    assert folder.splitlines()[1].startswith("FAIL: ")


def test_halt_on_critical_stops_the_torchrl_run_at_the_update_the_gate_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example with a learning rate 1,700x the example's: the first update at it moves
    the policy infinitely far (KL +Inf): the gate fails the run and the probe stops the
    trainer by raising, the run finished failed naming the rule."""
    module = load_example("torchrl_ppo")
    gate = gated(monkeypatch, module, "TorchRLRecorder")
    argv = [*SMALL[2:], "--batches", "12", "--learning-rate", "0.5"]
    with pytest.raises(TrainingHalted, match=r"^halted: KL, non-finite critical \("):
        module.main([*argv, "--run-dir", str(tmp_path), "--run-id", "halted"])
    rules = assert_halted(tmp_path / "halted" / "events.jsonl", 12)
    assert rules == gate.fired == ("KL", "non-finite")
