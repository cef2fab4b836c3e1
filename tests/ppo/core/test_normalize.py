"""Observation normalisation and reward clipping: running statistics that update once per
rollout, go into checkpoints and come back on resume."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ppo.config import PPOConfig
from ppo.core.normalize import EPSILON, ObservationNormalizer, ReturnScaler, RunningMoments
from ppo.model.checkpoint import CheckpointError
from ppo.model.policy import ActorCritic
from ppo.rollout.collector import Collector
from ppo.rollout.envs import make_vector_env
from ppo.run.trainer import Trainer

finite = st.floats(-1e3, 1e3, allow_nan=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        arrays(np.float64, st.tuples(st.integers(1, 40), st.just(3)), elements=finite),
        min_size=1,
        max_size=5,
    )
)
def test_running_moments_equal_the_moments_of_everything_seen(batches: list[np.ndarray]) -> None:
    moments = RunningMoments((3,))
    for batch in batches:
        moments.update(batch)
    joined = np.concatenate(batches)
    assert moments.count == len(joined)
    np.testing.assert_allclose(moments.mean, joined.mean(0), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(moments.var, joined.var(0), rtol=1e-7, atol=1e-6)


def test_observations_are_the_identity_until_the_first_rollout_then_centred_and_clipped() -> None:
    norm = ObservationNormalizer(2, clip=3.0)
    raw = np.array([[50.0, -7.0]], dtype=np.float32)
    np.testing.assert_array_equal(norm(raw), raw)  # nothing seen yet: not even clipped
    rng = np.random.default_rng(0)
    seen = rng.normal([10.0, -5.0], [2.0, 0.5], size=(4000, 2))
    norm.update(seen)
    out = norm(seen.astype(np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.mean(0), 0.0, atol=0.01)
    np.testing.assert_allclose(out.std(0), 1.0, atol=0.02)
    far = norm(np.array([[1e6, -1e6]], dtype=np.float32))
    assert far.tolist() == [[3.0, -3.0]]
    expected = (raw - seen.mean(0)) / np.sqrt(seen.var(0) + EPSILON)
    np.testing.assert_allclose(norm(raw), np.clip(expected, -3, 3), rtol=1e-5)


def test_statistics_round_trip_and_refuse_another_shape() -> None:
    a = ObservationNormalizer(3, clip=10.0)
    a.update(np.arange(12.0).reshape(4, 3))
    b = ObservationNormalizer(3, clip=10.0)
    b.load_state_dict(a.state_dict())
    x = np.ones((2, 3), dtype=np.float32)
    np.testing.assert_array_equal(a(x), b(x))
    with pytest.raises(ValueError, match=r"shape \(3,\), expected \(4,\)"):
        ObservationNormalizer(4, clip=10.0).load_state_dict(a.state_dict())


def test_scaled_rewards_are_clipped_after_the_division() -> None:
    scaler = ReturnScaler(num_envs=1, gamma=0.0, clip=2.0)
    rewards = np.array([[1.0], [1.0], [1.0], [100.0]], dtype=np.float32)
    out, scale = scaler.scaled(rewards, np.zeros((4, 1), dtype=bool))
    assert scale == pytest.approx(np.sqrt(rewards.var() + EPSILON))
    assert out[:3, 0] == pytest.approx(rewards[:3, 0] / scale, rel=1e-6)
    assert out[3, 0] == 2.0


def test_a_rollout_is_normalised_with_the_statistics_it_started_with() -> None:
    envs, spec = make_vector_env("Pendulum-v1", 2)
    torch.manual_seed(0)
    policy = ActorCritic(spec.obs_dim, spec.action)
    norm = ObservationNormalizer(spec.obs_dim, clip=10.0)
    norm.update(np.random.default_rng(1).normal(0.0, 3.0, size=(100, spec.obs_dim)))
    before = norm.state_dict()
    collector = Collector(envs, spec, policy, 205, np.random.default_rng(0), norm)
    collector.reset(3)
    first_raw = collector.obs.copy()
    collector.collect()
    envs.close()
    frozen = ObservationNormalizer(spec.obs_dim, clip=10.0)
    frozen.load_state_dict(before)
    buf = collector.buffer
    np.testing.assert_array_equal(buf.obs[0], frozen(first_raw))  # stored as the policy saw it
    np.testing.assert_array_equal(collector.last_obs, frozen(collector.obs))
    cut = buf.truncated
    assert cut.sum() == 2
    # final observations are on the same scale: undone with the frozen statistics they are
    # Pendulum's (cos, sin, velocity) again
    final = buf.final_obs[cut] * frozen.moments.std + frozen.moments.mean
    np.testing.assert_allclose(final[:, 0] ** 2 + final[:, 1] ** 2, 1.0, rtol=1e-5)
    assert norm.moments.count == 100 + 205 * 2  # the rollout's raw observations were folded in


def _normalised(**fields: object) -> PPOConfig:
    small = {"env_id": "Pendulum-v1", "num_envs": 2, "num_steps": 64, "hidden_sizes": (16,)}
    normalised = {"checkpoint_every": 1, "normalize_obs": True, "normalize_returns": True}
    return PPOConfig.from_mapping({**small, **normalised, **fields}, "test")


def test_statistics_are_saved_in_checkpoints_and_restored_on_resume(tmp_path: Path) -> None:
    cfg = _normalised(total_steps=384)
    result = Trainer(cfg, run_dir=tmp_path, run_id="a").run()
    assert result.checkpoint_path is not None
    saved = torch.load(tmp_path / "a" / "checkpoints" / "update_000002.pt", weights_only=True)
    assert saved["observations"]["count"] == 2 * 128
    assert saved["returns"]["count"] == 2 * 128
    resumed = Trainer(
        cfg,
        run_dir=tmp_path,
        run_id="b",
        resume=tmp_path / "a" / "checkpoints" / "update_000002.pt",
    )
    collector, _, counters, _ = resumed._build()
    collector.envs.close()
    assert counters.update == 2
    assert resumed._norm is not None
    assert resumed._norm.state_dict() == {k: saved[k] for k in ("returns", "observations")}


def test_a_checkpoint_without_statistics_cannot_resume_a_normalised_run(tmp_path: Path) -> None:
    plain = PPOConfig(
        env_id="Pendulum-v1", num_envs=2, num_steps=64, hidden_sizes=(16,), total_steps=128
    )
    result = Trainer(plain, run_dir=tmp_path, run_id="plain").run()
    normalised = _normalised(total_steps=256, normalize_returns=False)
    with pytest.raises(CheckpointError, match="observations"):
        Trainer(normalised, run_dir=tmp_path, run_id="n", resume=result.checkpoint_path)._build()
