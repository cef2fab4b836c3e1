"""Collection with Gymnasium 1.x autoreset: episode ends, final observations, action masks."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from ppo.config import PPOConfig
from ppo.model.policy import ActorCritic
from ppo.rollout.buffer import RolloutBuffer
from ppo.rollout.collector import Collector
from ppo.rollout.envs import EnvError, action_mask, make_vector_env
from tests.ppo import toy_envs


@pytest.fixture(autouse=True)
def _toy_envs() -> None:
    toy_envs.register()


def collector_for(env_id: str, num_envs: int = 2, num_steps: int = 8) -> Collector:
    envs, spec = make_vector_env(env_id, num_envs)
    torch.manual_seed(0)
    policy = ActorCritic(spec.obs_dim, spec.action, hidden=(8,))
    collector = Collector(envs, spec, policy, num_steps, np.random.default_rng(0))
    collector.reset(seed=0)
    return collector


def test_truncated_episodes_keep_their_final_observation() -> None:
    c = collector_for("ToyCounterTrunc-v0")  # time limit 3 steps
    result = c.collect()
    buf = c.buffer
    # obs stored at each step: 0,1,2 then the reset observation 0 again (same-step reset)
    assert buf.obs[:, 0, 0].tolist() == [0, 1, 2, 0, 1, 2, 0, 1]
    assert buf.truncated[:, 0].tolist() == [False, False, True] * 2 + [False, False]
    assert not buf.terminated.any()
    assert buf.final_obs[2, 0, 0] == 3.0 and buf.final_obs[5, 1, 0] == 3.0
    assert result.returns == (3.0,) * 4 and result.lengths == (3,) * 4
    c.envs.close()


def test_terminated_episodes_are_not_truncated() -> None:
    c = collector_for("ToyCounterTerm-v0")  # terminates after 2 steps
    c.collect()
    buf = c.buffer
    assert buf.terminated[:, 0].tolist() == [False, True] * 4
    assert not buf.truncated.any()
    c.envs.close()


def test_batch_bootstraps_truncation_from_final_observation_value() -> None:
    c = collector_for("ToyCounterTrunc-v0", num_envs=1, num_steps=4)
    c.collect()
    config = PPOConfig(num_envs=1, num_steps=4, gamma=0.9, gae_lambda=1.0)
    batch = c.buffer.to_batch(c.policy, c.obs, config)
    values, returns = batch.values, batch.returns  # steps x 1 env, flattened

    def v(x: float) -> float:
        with torch.no_grad():
            return float(c.policy.value(torch.tensor([[x]], dtype=torch.float32))[0])

    # steps: obs 0,1,2 (truncated at 2, final obs 3), then obs 0; next obs after rollout: 1
    assert values.tolist() == pytest.approx([v(0), v(1), v(2), v(0)])
    expected = [1 + 0.9 * (1 + 0.9 * (1 + 0.9 * v(3))), 1 + 0.9 * (1 + 0.9 * v(3)), 1 + 0.9 * v(3)]
    expected.append(1 + 0.9 * v(1))
    assert returns.tolist() == pytest.approx(expected, rel=1e-5)
    assert batch.size == 4 and batch.masks is None
    c.envs.close()


def test_masked_actions_never_reach_the_environment() -> None:
    c = collector_for("ToyMasked-v0", num_envs=3, num_steps=200)
    c.collect()  # the env raises on a masked action
    buf = c.buffer
    assert buf.masks is not None
    taken = np.take_along_axis(buf.masks, buf.actions[..., None], axis=-1)
    assert taken.all()
    config = PPOConfig(num_envs=3, num_steps=200)
    batch = buf.to_batch(c.policy, c.obs, config)
    assert batch.masks is not None and bool(torch.isfinite(batch.logp).all())
    c.envs.close()


def test_box_actions_are_clipped_for_the_env_but_stored_raw() -> None:
    c = collector_for("Pendulum-v1", num_envs=2, num_steps=16)
    c.collect()
    assert c.buffer.actions.shape == (16, 2, 1)
    assert isinstance(c.buffer, RolloutBuffer)
    c.envs.close()


def test_unknown_env_id_is_named() -> None:
    with pytest.raises(EnvError, match="unknown environment id 'NoSuchEnv-v0'"):
        make_vector_env("NoSuchEnv-v0", 1)


class NeedsBox2D(toy_envs.Counter):
    def __init__(self) -> None:
        raise gym.error.DependencyNotInstalled('Box2D is not installed, run `pip install "box2d"`')


class NeedsMuJoCo(toy_envs.Counter):
    def __init__(self) -> None:
        raise gym.error.DependencyNotInstalled('MuJoCo is not installed, run `pip install "x"`')


def test_a_missing_mujoco_names_the_projects_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = gym.envs.registration.EnvSpec("Cheetah-v0", entry_point=NeedsMuJoCo)  # type: ignore[arg-type]
    monkeypatch.setitem(gym.registry, "Cheetah-v0", spec)
    hint = r"MuJoCo is not installed.*pip install 'sanctum-ppo\[mujoco\]'"
    with pytest.raises(EnvError, match=hint):
        make_vector_env("Cheetah-v0", 1)


@pytest.mark.parametrize(
    ("entry_point", "cause"),
    [
        (NeedsBox2D, "DependencyNotInstalled: Box2D is not installed"),
        ("no_such_package.envs:Env", "ModuleNotFoundError: No module named 'no_such_package'"),
    ],
)
def test_env_that_cannot_be_created_is_named_with_its_cause(
    monkeypatch: pytest.MonkeyPatch, entry_point: object, cause: str
) -> None:
    spec = gym.envs.registration.EnvSpec("Broken-v0", entry_point=entry_point)  # type: ignore[arg-type]
    monkeypatch.setitem(gym.registry, "Broken-v0", spec)
    with pytest.raises(EnvError) as info:
        make_vector_env("Broken-v0", 2)
    assert str(info.value).startswith(f"cannot create environment 'Broken-v0': {cause}")


def test_a_mask_that_allows_no_action_is_an_env_error() -> None:
    mask = np.array([[True, False], [False, False], [False, False]])
    with pytest.raises(EnvError, match=r"allows no action in env\(s\) \[1, 2\]"):
        action_mask({"action_mask": mask}, 3, 2)
    assert action_mask({"action_mask": mask[:1]}, 1, 2) is not None
