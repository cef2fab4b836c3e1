"""Record an skrl PPO agent (``skrl.agents.torch.ppo.PPO``, skrl 2.x): one line around
``trainer.train()``.

skrl tracks its losses (scaled: ``Loss / Entropy loss`` is ``-entropy_loss_scale x
entropy``, 0 by default) and the policy's standard deviation, but no KL, clip fraction,
explained variance or gradient norm. :class:`SkrlRecorder` wraps the agent's ``update`` and
``record_transition`` on that instance (the agent's class is untouched) and measures each
update with :class:`~torchprobe.probe.UpdateProbe` on the rollout memory::

    with SkrlRecorder(agent, env_id="Pendulum-v1"):       # runs/<run_id>/events.jsonl
        trainer.train()

===================  ==========================================================================
field                what is recorded (and how skrl's own figures differ)
===================  ==========================================================================
``kl_final``         KL(pi_before || pi_after) on the rollout (k3 on its actions); skrl computes
                     k3 per minibatch only for its ``kl_threshold`` stop, and does not log it
``clip_fraction``    the rollout's share outside [1 - ratio_clip, 1 + ratio_clip] after the
                     update (skrl logs none)
``entropy``          the policy's entropy on the rollout after the update (skrl logs it only
                     scaled by ``entropy_loss_scale``, so 0 by default)
``grad_norm``        the pre-clip global norm at each optimizer step (before
                     ``grad_norm_clip``): mean and max
``policy_loss``,     skrl's ``Loss / Policy loss`` and ``Loss / Value loss``: means over every
``value_loss``       minibatch of every epoch; the value loss is ``value_loss_scale x`` the MSE
                     of the *preprocessed* (scaled) returns, not our 0.5 x MSE
``explained_variance``  from the memory's ``values`` and ``returns`` (both preprocessed by the
                     same scaler, which explained variance does not change)
``early_stopped``    whether fewer optimizer steps ran than ``learning_epochs x mini_batches``
                     (skrl's ``kl_threshold`` break)
episodes             returns and lengths of the episodes that finished in the rollout, summed
                     from the rewards the environment gave (before ``rewards_shaper``); with
                     gymnasium 1.x's default NEXT_STEP autoreset, skrl records the reset step
                     as a transition and each length counts it (use SAME_STEP, as the
                     example does)
``global_step``      environment steps, all envs together
===================  ==========================================================================

The observations the probe evaluates are preprocessed once, before the update, with the
agent's preprocessors as they stand (the update's first epoch moves a running scaler):
both distributions see the same inputs. The probe draws no random number from the agent's
stream. A raise inside the ``with`` block ends the run ``failed`` with the error's first
line; Ctrl-C ends it ``interrupted``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from telemetry.events import TrainerInfo
from telemetry.halting import Halter
from telemetry.integrations.cleanrl import plain
from telemetry.integrations.episodes import RunningEpisodes, rollout_payload
from telemetry.integrations.recorded import RecordedRun
from telemetry.run_config import CLIP_RANGE, MAX_GRAD_NORM
from torchprobe.probe import BATCH_SIZE, UpdateProbe, host_rows


def _version() -> str:
    import skrl  # the agent came from it

    return str(getattr(skrl, "__version__", "unknown"))


def config_of(cfg: Any) -> dict[str, Any]:
    """skrl's PPO_CFG (a dataclass, or the dict of skrl 1.x) as ``run_started.config``,
    with the names our readers know: ``clip_range``, ``max_grad_norm``, ``kl_estimator``."""
    is_cfg = dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)
    settings = dataclasses.asdict(cfg) if is_cfg else dict(cfg)
    config = {str(k): plain(v) for k, v in settings.items() if not isinstance(v, Mapping)}
    config[CLIP_RANGE] = settings.get("ratio_clip")
    config[MAX_GRAD_NORM] = settings.get("grad_norm_clip") or None
    return config


class _Episodes:
    """Each env's running return and length, and the episodes finished since the last
    update, from what ``record_transition`` is given: each step's rewards and done flags
    are kept on the device and read once, when the update drains them (no read a step)."""

    def __init__(self) -> None:
        self.steps: list[tuple[Any, Any]] = []
        self.running = RunningEpisodes()

    def add(self, rewards: Any, done: Any) -> None:
        self.steps.append((rewards.detach().reshape(-1), done.reshape(-1).float()))

    def drain(self) -> tuple[list[float], list[float]]:
        """(returns, lengths) of the episodes that ended since the last call."""
        if self.steps:
            rewards = host_rows(r for r, _ in self.steps)
            ended = host_rows(d for _, d in self.steps)
            self.steps = []
            for step_rewards, step_done in zip(rewards, ended, strict=True):
                for env, (reward, done) in enumerate(zip(step_rewards, step_done, strict=True)):
                    self.running.step(env, reward, bool(done))
        return self.running.drain()


class SkrlRecorder(RecordedRun):
    """Records an skrl PPO agent's run (see the module doc). The keywords are the
    :class:`~telemetry.Recorder`'s; ``batch_size``: rollout samples the probe evaluates.
    ``halter``: stops the run after the first update it gives a reason at
    (``telemetry.integrations.halting_recorder``).
    """

    def __init__(
        self,
        agent: Any,
        *,
        run_dir: str | os.PathLike[str] = "runs",
        run_id: str | None = None,
        env_id: str | None = None,
        seed: int | None = None,
        batch_size: int = BATCH_SIZE,
        halter: Halter | None = None,
    ) -> None:
        if not all(hasattr(agent, a) for a in ("update", "record_transition", "memory", "cfg")):
            raise TypeError(f"SkrlRecorder records skrl's PPO agent; got {type(agent).__name__}")
        self.agent = agent
        cfg = agent.cfg
        self._planned = int(cfg.learning_epochs) * int(cfg.mini_batches)
        self._discrete = hasattr(agent.action_space, "n")
        self.probe = UpdateProbe(
            self._distribution,
            agent.optimizer,
            clip_range=float(cfg.ratio_clip),
            max_grad_norm=float(cfg.grad_norm_clip) if cfg.grad_norm_clip else None,
            batch_size=batch_size,
            kl_estimator="k3",
            entropy_coef=float(cfg.entropy_loss_scale),
            grad_scaler=getattr(agent, "scaler", None),  # cfg.mixed_precision's
        )
        self.recorder = self.probe.recorder(
            halter,
            TrainerInfo(name="skrl", version=_version()),
            config_of(cfg),
            run_dir=run_dir,
            run_id=run_id,
            env_id=env_id,
            seed=seed,
            policy_epochs=int(cfg.learning_epochs),
            action_space=agent.action_space,
        )
        self._episodes = _Episodes()
        self._update = agent.update
        self._record_transition = agent.record_transition
        self._own = {k: v for k, v in vars(agent).items() if k in ("update", "record_transition")}
        """What the instance itself held under those names (usually nothing: the class's)."""

    def attach(self) -> None:
        self.agent.update = self._wrapped_update
        self.agent.record_transition = self._wrapped_record_transition

    def detach(self) -> None:
        for name in ("update", "record_transition"):  # the agent as it was
            if name in self._own:
                setattr(self.agent, name, self._own[name])
            else:
                vars(self.agent).pop(name, None)

    def _distribution(self, inputs: Mapping[str, Any]) -> Any:
        policy = self.agent.policy
        policy.act(dict(inputs), role="policy")
        return policy.distribution(role="policy")

    def _wrapped_record_transition(self, **kwargs: Any) -> None:
        self._record_transition(**kwargs)
        self._episodes.add(kwargs["rewards"], kwargs["terminated"] | kwargs["truncated"])

    def _wrapped_update(self, *, timestep: int, timesteps: int) -> None:
        agent = self.agent
        memory = agent.memory
        step = (timestep + 1) * int(memory.num_envs)
        returns, lengths = self._episodes.drain()
        self.recorder.emit(
            rollout_payload(
                update=self.recorder.updates,
                global_step=step,
                returns=returns,
                lengths=lengths,
                steps_per_second=None,
            )
        )
        observations = memory.get_tensor_by_name("observations").flatten(0, 1)
        states = _tensor(memory, "states")
        actions = memory.get_tensor_by_name("actions").flatten(0, 1)
        if self._discrete:
            actions = actions.reshape(-1)
        inputs = {
            "observations": agent._observation_preprocessor(observations),
            "states": agent._state_preprocessor(None if states is None else states.flatten(0, 1)),
        }
        old = memory.get_tensor_by_name("log_prob").flatten(0, 1)
        with self.probe.update(
            self.recorder, inputs, actions, global_step=step, old_log_probs=old
        ) as measured:
            self._update(timestep=timestep, timesteps=timesteps)
            tracked = agent.tracking_data
            measured.losses(
                policy=_last(tracked.get("Loss / Policy loss")),
                value=_last(tracked.get("Loss / Value loss")),
            )
            measured.critic(
                memory.get_tensor_by_name("values"), memory.get_tensor_by_name("returns")
            )
            measured.epochs = int(agent.cfg.learning_epochs)
            measured.early_stopped = measured.optimizer_steps < self._planned


def _tensor(memory: Any, name: str) -> Any:
    """The memory's tensor ``name``, None when it holds none (no separate states)."""
    try:
        tensor = memory.get_tensor_by_name(name)
    except KeyError:
        return None
    return None if tensor is None or tensor.numel() == 0 else tensor


def _last(values: Any) -> float | None:
    """The latest value skrl tracked (its deque of them), None before any."""
    return float(values[-1]) if values else None
