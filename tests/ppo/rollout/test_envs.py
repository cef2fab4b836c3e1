"""The three ways to step environments keep one contract: same-step autoreset, and the real
last observation of a truncated episode in ``final_obs`` for the bootstrap."""

from __future__ import annotations

import importlib.util
import sys

import gymnasium as gym
import numpy as np
import pytest

from ppo.config import VectorKind
from ppo.model.policy import ActorCritic
from ppo.rollout.collector import Collector
from ppo.rollout.envs import EnvError, make_vector_env

HAS_ENVPOOL = importlib.util.find_spec("envpool") is not None
needs_envpool = pytest.mark.skipif(
    not HAS_ENVPOOL, reason="needs the optional 'envpool' extra (pip install -e '.[envpool]')"
)
KINDS: list[VectorKind] = ["sync", "async", pytest.param("envpool", marks=needs_envpool)]  # type: ignore[list-item]

SEED = 3
STEPS = 205
"""Pendulum-v1 truncates at 200 steps: every env is cut once within the rollout."""


def _collect(kind: VectorKind, num_envs: int = 2) -> Collector:
    envs, spec = make_vector_env("Pendulum-v1", num_envs, kind)
    policy = ActorCritic(spec.obs_dim, spec.action)
    collector = Collector(envs, spec, policy, STEPS, np.random.default_rng(0))
    collector.reset(SEED)
    collector.collect()
    envs.close()
    return collector


def _replayed_final_obs(collector: Collector, env_index: int, step: int) -> np.ndarray:
    """The last observation of env ``env_index``'s first episode, replayed in a plain env."""
    env = gym.make("Pendulum-v1")
    env.reset(seed=SEED + int(env_index))  # Gymnasium's vector envs seed env i with seed + i
    obs = None
    for t in range(step + 1):
        obs, *_ = env.step(np.clip(collector.buffer.actions[t, env_index], -2.0, 2.0))
    env.close()
    assert obs is not None
    return np.asarray(obs, dtype=np.float32)


@pytest.mark.parametrize("kind", KINDS)
def test_a_truncated_episode_keeps_its_last_observation_for_the_bootstrap(
    kind: VectorKind,
) -> None:
    collector = _collect(kind)
    buf = collector.buffer
    cut = np.argwhere(buf.truncated)
    assert [tuple(x) for x in cut] == [(199, 0), (199, 1)]
    assert not buf.terminated.any()
    for step, env in cut:
        final = buf.final_obs[step, env]
        # the episode's last state continues the one before it (|dtheta| <= 8 * 0.05)...
        before = buf.obs[step, env]
        turned = np.arctan2(final[1], final[0]) - np.arctan2(before[1], before[0])
        assert abs(np.angle(np.exp(1j * turned))) <= 0.41
        # ...and the next stored observation is a fresh episode, not the last state again
        assert not np.allclose(buf.obs[step + 1, env], final)
        if kind != "envpool":  # EnvPool's physics are its own: compared with itself below
            np.testing.assert_allclose(final, _replayed_final_obs(collector, env, step), atol=1e-5)


@needs_envpool
def test_envpool_adapter_is_envpools_own_stream_without_the_reset_steps() -> None:
    from ppo.rollout.envpool_env import EnvPoolVectorEnv, make_pool

    raw = make_pool("CartPole-v1", 2, seed=7)
    adapted = EnvPoolVectorEnv("CartPole-v1", 2)
    raw_obs, _ = raw.reset()
    obs, _ = adapted.reset(seed=7)
    np.testing.assert_array_equal(raw_obs, obs)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(300):
        action = rng.integers(0, 2, size=2)
        raw_obs, raw_r, raw_term, _, _ = raw.step(action)
        obs, r, term, trunc, info = adapted.step(action)
        np.testing.assert_array_equal(r, raw_r)
        np.testing.assert_array_equal(term, raw_term)
        done = term | trunc
        live = ~done
        np.testing.assert_array_equal(obs[live], raw_obs[live])
        if done.any():
            ends += int(done.sum())
            np.testing.assert_array_equal(info["final_obs"][done], raw_obs[done])
            # EnvPool's own reset step: reward 0, the fresh observation the adapter gave
            reset_obs, reset_r, *_ = raw.step(np.where(done, 0, action))
            np.testing.assert_array_equal(obs[done], reset_obs[done])
            assert (reset_r[done] == 0).all()
            break
    assert ends > 0
    raw.close()
    adapted.close()


def test_envpool_missing_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "envpool", None)  # import envpool raises ImportError
    with pytest.raises(
        EnvError, match=r"needs the envpool extra: pip install 'sanctum-ppo\[envpool\]'"
    ):
        make_vector_env("CartPole-v1", 2, "envpool")


@needs_envpool
def test_envpool_unknown_id_is_named() -> None:
    with pytest.raises(EnvError, match="EnvPool has no environment 'NoSuchEnv-v0'"):
        make_vector_env("NoSuchEnv-v0", 2, "envpool")
