"""A run's TensorBoard log, imported, is judged as its native recording is.

Each test trains once and records twice: Stable-Baselines3 with ``tensorboard_log=`` and
``SanctumCallback``; CleanRL's ``ppo.py`` structure (``examples/cleanrl_ppo.py``) with its
own ``SummaryWriter`` and the ``telemetry.integrations.cleanrl`` lines. The TensorBoard
log is imported with ``sanctum import tensorboard`` and both logs are judged by
``sanctum check``: the same exit code, the same failing rows, and update by update the
same figures. A healthy and a broken run of each (far too large a learning rate, and a
clip range that bounds nothing: PPO's trust region gone), so the verdicts agree on passing
and on failing. A native recording may hold what the trainer's TensorBoard log does not
(CleanRL's: the gradient norms and the return targets): the logs are compared on what both
can hold.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main as sanctum_main
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from telemetry import PPOUpdate, PPOUpdatePayload, Rollout, RolloutPayload, read_events
from tests.integration.support import EXAMPLES, run
from tests.schema_support import assert_valid_log

needs_tensorboard = pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None,
    reason="needs the tensorboard extra: pip install 'sanctum-ppo[tensorboard]'",
)
needs_sb3 = pytest.mark.skipif(
    importlib.util.find_spec("stable_baselines3") is None,
    reason="needs the sb3 extra: pip install 'sanctum-ppo[sb3]'",
)
SETTINGS = {"healthy": (3e-4, 0.2), "broken": (0.1, 10.0)}
"""(learning rate, clip range): a default run, and one whose KL per clip fraction is
critical from the KL rule's first judged update (the clip bounds nothing)."""
FIGURES = (
    "approx_kl",
    "clip_fraction",
    "entropy",
    "entropy_normalized",
    "policy_loss",
    "value_loss",
    "explained_variance",
    "learning_rate",
)
"""Update fields both logs hold (TensorBoard keeps float32: compared to 1e-6)."""


def judge(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """``sanctum check RUN --json``: the exit code and the verdict."""
    capsys.readouterr()
    code = sanctum_main(["check", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def imported(logdir: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """``sanctum import tensorboard LOGDIR --out OUT --actions 2 --exit-code 0`` (CartPole's
    two actions; the trainer ran here, and returned)."""
    capsys.readouterr()
    args = ["import", "tensorboard", str(logdir), "--out", str(out), "--actions", "2"]
    code = sanctum_main([*args, "--exit-code", "0"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert f"wrote {out / 'events.jsonl'}" in printed.out
    assert_valid_log(out / "events.jsonl")
    return out


def failing(verdict: dict[str, Any]) -> list[str]:
    return [row["name"] for row in verdict["rows"] if not row["passed"]]


def payloads(path: Path, kind: type[Any]) -> list[Any]:
    return [e.payload for e in read_events(path / "events.jsonl").events if isinstance(e, kind)]


def assert_same_figures(ours: PPOUpdatePayload, theirs: PPOUpdatePayload) -> None:
    assert (ours.update, ours.global_step) == (theirs.update, theirs.global_step)
    for name in FIGURES:
        a, b = getattr(ours, name), getattr(theirs, name)
        assert (a is None) == (b is None), f"update {ours.update}: {name} {a} vs {b}"
        if a is not None:
            assert a == pytest.approx(b, rel=1e-6, abs=1e-9), f"update {ours.update}: {name}"


def train_sb3(tmp_path: Path, learning_rate: float, clip_range: float) -> Path:
    import torch
    from stable_baselines3 import PPO

    from telemetry.integrations.sb3 import SanctumCallback

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = PPO(
            "MlpPolicy",
            "CartPole-v1",
            n_steps=128,
            batch_size=64,
            n_epochs=4,
            learning_rate=learning_rate,
            clip_range=clip_range,
            seed=0,
            device="cpu",
            tensorboard_log=str(tmp_path / "tb"),
        )
        model.learn(2048, callback=SanctumCallback(run_dir=tmp_path, run_id="native"))
    finally:
        torch.set_num_threads(threads)
    return tmp_path / "native"


@needs_tensorboard
@needs_sb3
@pytest.mark.parametrize("health", SETTINGS)
def test_sb3_tensorboard_log_is_judged_as_its_native_recording(
    health: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    native = train_sb3(tmp_path, *SETTINGS[health])
    tb = imported(tmp_path / "tb", tmp_path / "tb-import", capsys)  # finds tb/PPO_1
    (native_code, native_verdict), (tb_code, tb_verdict) = judge(native, capsys), judge(tb, capsys)
    assert tb_code == native_code == (0 if health == "healthy" else 1)
    assert failing(tb_verdict) == failing(native_verdict)
    # SB3 dumps an update's figures after the next rollout: all but the last are in its log
    ours, theirs = payloads(tb, PPOUpdate), payloads(native, PPOUpdate)
    assert len(ours) == len(theirs) - 1 == 15
    for a, b in zip(ours, theirs, strict=False):
        assert_same_figures(a, b)
    assert tb_verdict["updates"] == native_verdict["updates"] - 1


NATIVE_ONLY = ("grad_norm",)
"""Rules whose metric only the native recording holds (CleanRL logs no gradient norm). EV,
gated on the returns' spread that only the native log holds, is compared: 4 updates are
all within its warm-up, in both."""


def cleanrl(tmp_path: Path, *args: str) -> Path:
    """Run the example (4 updates of 512 steps); returns its run folder (both logs)."""
    command = [str(EXAMPLES / "cleanrl_ppo.py"), "--total-timesteps", "2048", "--no-cuda"]
    result = run([*command, "--run-dir", str(tmp_path / "runs"), *args])
    assert result.returncode == 0, result.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    assert any(p.name.startswith("events.out.tfevents") for p in folder.iterdir())
    assert_valid_log(folder / "events.jsonl")
    return folder


@needs_tensorboard
@pytest.mark.parametrize("health", SETTINGS)
def test_cleanrl_tensorboard_log_is_judged_as_its_native_recording(
    health: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    learning_rate, clip_coef = SETTINGS[health]
    native = cleanrl(tmp_path, "--learning-rate", str(learning_rate), "--clip-coef", str(clip_coef))
    tb = imported(native, tmp_path / "tb-import", capsys)
    (native_code, native_verdict), (tb_code, tb_verdict) = judge(native, capsys), judge(tb, capsys)
    assert tb_code == native_code == (0 if health == "healthy" else 1)
    assert failing(tb_verdict) == failing(native_verdict)
    ours, theirs = payloads(tb, PPOUpdate), payloads(native, PPOUpdate)
    assert len(ours) == len(theirs) == 4
    # The example records what CleanRL's TensorBoard log has no tag for: the gradient norms
    # (the Grad rule's metric) and the return targets (EV's gate on the returns' spread).
    assert all(b.grad_norm is not None and b.return_std is not None for b in theirs)
    assert all(a.grad_norm is None and a.return_std is None for a in ours)
    for a, b in zip(tb_verdict["rows"], native_verdict["rows"], strict=True):
        if a["name"] in NATIVE_ONLY:  # a rule only the native recording can judge
            assert a["message"] == "not measured in this run"
            continue
        counts = ("name", "passed", "updates_measured", "updates_warning", "updates_critical")
        assert {k: a[k] for k in counts} == {k: b[k] for k in counts}
        assert a["first_critical"] == b["first_critical"]
        if b["worst"] is not None and math.isfinite(b["worst"]):
            # float32 in TensorBoard: a shift (a difference of entropies near 1) agrees to
            # float32's absolute precision, every other statistic to its relative one
            rule = DEFAULT_THRESHOLDS.rule(a["name"])
            near = 1e-6 if rule is not None and rule.statistic == "shift" else 0.0
            assert a["worst"] == pytest.approx(b["worst"], rel=1e-6, abs=near)
    for a, b in zip(ours, theirs, strict=True):
        assert_same_figures(a, b)
    rollouts: list[RolloutPayload] = payloads(tb, Rollout)
    native_rollouts: list[RolloutPayload] = payloads(native, Rollout)
    assert [(r.update, r.global_step, r.episodes) for r in rollouts] == [
        (r.update, r.global_step, r.episodes) for r in native_rollouts
    ]
    for a, b in zip(rollouts, native_rollouts, strict=True):
        assert a.episode_return_mean == pytest.approx(b.episode_return_mean)
    assert sum(r.episodes for r in rollouts) > 0
