"""Record a Tianshou PPO run (``tianshou.algorithm.PPO``, Tianshou 2.x): one line around
``algorithm.run_training(...)``.

Tianshou's logger writes ``update/*`` (losses, entropy) every ``update_interval`` updates
(1,000 by default) at update counts, and no KL, clip fraction or gradient norm.
:class:`TianshouRecorder` wraps the algorithm's ``update`` and ``_update_with_batch`` on that
instance (the class is untouched) and measures each update with
:class:`~torchprobe.probe.UpdateProbe` on the batch PPO prepared (its
``logp_old``, returns and values)::

    with TianshouRecorder(algorithm, env_id="CartPole-v1"):
        algorithm.run_training(OnPolicyTrainerParams(...))

===================  ==========================================================================
field                what is recorded (and how Tianshou's own figures differ)
===================  ==========================================================================
``kl_final``         KL(pi_before || pi_after) on the batch (k3 on its actions; Tianshou logs no
                     KL)
``clip_fraction``    the batch's share outside [1 - eps_clip, 1 + eps_clip] after the update
``entropy``          the policy's entropy on the batch after the update (Tianshou's
                     ``update/ent_loss`` is the minibatches' mean entropy, during it)
``grad_norm``        the pre-clip global norm at each optimizer step (before ``max_grad_norm``)
``policy_loss``      the mean of Tianshou's ``actor_loss`` over the update's minibatches
``value_loss``       the mean of its ``vf_loss``: the MSE to the returns, without our 0.5
``explained_variance``  from the batch's ``v_s`` (the critic's values as collected) and
                     ``returns``
episodes             returns and lengths of the episodes that ended in the update's rollout,
                     summed per env from the buffer's rewards
``global_step``      environment steps, all envs together (the buffer's transitions; the
                     on-policy trainer empties it after each update)
===================  ==========================================================================

A raise inside the ``with`` block ends the run ``failed`` with the error's first line;
Ctrl-C ends it ``interrupted``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from telemetry.events import TrainerInfo
from telemetry.halting import Halter
from telemetry.integrations.episodes import RunningEpisodes, rollout_payload
from telemetry.integrations.recorded import RecordedRun
from telemetry.run_config import CLIP_RANGE, MAX_GRAD_NORM
from torchprobe.probe import BATCH_SIZE, UpdateProbe, as_tensor

SETTINGS = (
    "eps_clip",
    "dual_clip",
    "value_clip",
    "advantage_normalization",
    "recompute_adv",
    "vf_coef",
    "ent_coef",
    "gae_lambda",
    "gamma",
    "max_batchsize",
)
"""The PPO settings recorded in ``run_started.config`` (those the algorithm holds)."""


def _version() -> str:
    import tianshou  # the algorithm came from it

    return str(getattr(tianshou, "__version__", "unknown"))


def config_of(algorithm: Any) -> dict[str, Any]:
    """The algorithm's PPO settings, with the names our readers know."""
    config: dict[str, Any] = {}
    for name in SETTINGS:
        value = getattr(algorithm, name, None)
        if value is None or isinstance(value, bool | int | float | str):
            config[name] = value
    config[CLIP_RANGE] = config.get("eps_clip")
    config[MAX_GRAD_NORM] = getattr(algorithm.optim, "_max_grad_norm", None)
    return config


def _ended(buffer: Any, running: RunningEpisodes) -> tuple[list[float], list[float]]:
    """Returns and lengths of the episodes that ended in ``buffer`` (one sub-buffer per
    env, each in the order its env stepped), with each env's episode carried across
    updates in ``running``."""
    found = getattr(buffer, "buffers", None)  # a VectorReplayBuffer's, one per env
    for env, sub in enumerate([buffer] if found is None else list(found)):
        size = len(sub)
        rewards = sub.rew[:size].tolist()
        done = (sub.terminated[:size] | sub.truncated[:size]).tolist()
        for reward, end in zip(rewards, done, strict=True):
            running.step(env, float(reward), bool(end))
    return running.drain()


class TianshouRecorder(RecordedRun):
    """Records a Tianshou PPO algorithm's run (see the module doc). The keywords are the
    :class:`~telemetry.Recorder`'s; ``batch_size``: batch samples the probe evaluates.
    ``halter``: stops the run after the first update it gives a reason at
    (``telemetry.integrations.halting_recorder``).
    """

    def __init__(
        self,
        algorithm: Any,
        *,
        run_dir: str | os.PathLike[str] = "runs",
        run_id: str | None = None,
        env_id: str | None = None,
        seed: int | None = None,
        batch_size: int = BATCH_SIZE,
        halter: Halter | None = None,
    ) -> None:
        if not all(hasattr(algorithm, a) for a in ("_update_with_batch", "policy", "eps_clip")):
            raise TypeError(
                f"TianshouRecorder records Tianshou's PPO; got {type(algorithm).__name__}"
            )
        self.algorithm = algorithm
        config = config_of(algorithm)
        self.probe = UpdateProbe(
            self._distribution,
            algorithm.optim._optim,
            clip_range=float(algorithm.eps_clip),
            max_grad_norm=config[MAX_GRAD_NORM],
            batch_size=batch_size,
            kl_estimator="k3",
            entropy_coef=float(algorithm.ent_coef),
        )
        self.recorder = self.probe.recorder(
            halter,
            TrainerInfo(name="tianshou", version=_version()),
            config,
            run_dir=run_dir,
            run_id=run_id,
            env_id=env_id,
            seed=seed,
            action_space=getattr(algorithm.policy, "action_space", None),
        )
        self.steps = 0
        self._episodes = RunningEpisodes()
        self._originals: dict[str, Any] = {}

    def attach(self) -> None:
        wrappers: dict[str, Callable[..., Any]] = {
            "update": self._wrapped_update,
            "_update_with_batch": self._wrapped_update_with_batch,
        }
        for name, wrapper in wrappers.items():
            own = vars(self.algorithm).get(name)
            self._originals[name] = (own, getattr(self.algorithm, name))
            object.__setattr__(self.algorithm, name, wrapper)  # nn.Module's setattr, bypassed

    def detach(self) -> None:
        for name, (own, _) in self._originals.items():  # the algorithm as it was
            if own is not None:
                object.__setattr__(self.algorithm, name, own)
            else:
                vars(self.algorithm).pop(name, None)

    def _distribution(self, obs: Any) -> Any:
        from tianshou.data import Batch

        return self.algorithm.policy(Batch(obs=obs, info=Batch())).dist

    def _wrapped_update(self, buffer: Any, *args: Any, **kwargs: Any) -> Any:
        collected = len(buffer) if buffer is not None else 0
        self.steps += collected
        returns, lengths = _ended(buffer, self._episodes) if collected else ([], [])
        self.recorder.emit(
            rollout_payload(
                update=self.recorder.updates,
                global_step=self.steps,
                returns=returns,
                lengths=lengths,
                steps_per_second=None,
            )
        )
        return self._originals["update"][1](buffer, *args, **kwargs)

    def _wrapped_update_with_batch(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        policy = self.algorithm.policy
        with self.probe.update(
            self.recorder,
            batch.obs,
            as_tensor(batch.act, policy),
            global_step=self.steps,
            old_log_probs=as_tensor(batch.logp_old, policy),
        ) as measured:
            stats = self._originals["_update_with_batch"][1](batch, *args, **kwargs)
            measured.losses(policy=_mean(stats, "actor_loss"), value=_mean(stats, "vf_loss"))
            if hasattr(batch, "v_s") and hasattr(batch, "returns"):
                measured.critic(as_tensor(batch.v_s, policy), as_tensor(batch.returns, policy))
            measured.epochs = kwargs.get("repeat", args[1] if len(args) > 1 else None)
        return stats


def _mean(stats: Any, name: str) -> float | None:
    """The mean of one of Tianshou's SequenceSummaryStats (None when it has none)."""
    summary = getattr(stats, name, None)
    mean = getattr(summary, "mean", None)
    return None if mean is None else float(mean)
