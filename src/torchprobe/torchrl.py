"""Record a TorchRL PPO loop (``ClipPPOLoss`` in the user's own loop): three lines.

TorchRL's tutorial loop logs nothing the health rules judge, and what ``ClipPPOLoss``
returns is a minibatch's: its ``kl_approx`` is the signed k1 estimator (negative on some
minibatches), its ``clip_fraction`` the minibatch's share. This module measures each update
from outside with :class:`~torchprobe.probe.UpdateProbe` (the actor's
distribution on the collector's batch before and after the update, the gradient norm as
backward leaves it, before clipping) and records it::

    with TorchRLRecorder(loss_module, optim, env_id="Pendulum-v1") as rec:   # the run
        for data in collector:
            with rec.update(data):                                           # the update
                ...  # the epochs: advantage(data), minibatches, loss_module(subdata)
                    rec.losses(loss_vals)                                    # optional

====================  =========================================================================
field                 what is recorded (and how it differs from ``ClipPPOLoss``'s outputs)
====================  =========================================================================
``kl_final``          KL(pi_before || pi_after) on the batch, k3 on the batch's actions (the
                      probe's; TorchRL's ``kl_approx`` is k1 per minibatch, not recorded)
``clip_fraction``     the batch's share outside [1 - eps, 1 + eps] after the update (TorchRL's
                      is per minibatch, during it); absent for an asymmetric ``clip_epsilon``
``entropy``           the actor's entropy on the batch after the update (a Monte Carlo
                      estimate, -log pi(a) of a sample, for TanhNormal, which has no closed
                      form)
``grad_norm``         the pre-clip global norm at each optimizer step: mean, max
``policy_loss``,      the mean over the update's minibatches of ``loss_objective`` and
``value_loss``        ``loss_critic`` given to :meth:`losses` (TorchRL's, with its
                      ``critic_coeff`` and smooth-L1 loss applied: not our 0.5 x MSE)
``explained_variance``  from the batch's ``state_value`` and ``value_target`` after the update
                      (GAE's, as the loop last computed them)
episodes              finished episodes in the batch: ``("next", "episode_reward")`` where
                      ``("next", "done")`` (a ``RewardSum`` transform), lengths from
                      ``("next", "step_count")`` (``StepCounter``)
``global_step``       frames collected so far
====================  =========================================================================

A raise inside the ``with`` block ends the run ``failed`` with the error's first line; Ctrl-C
ends it ``interrupted``. The trainer is imported only through the objects given.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from telemetry.events import TrainerInfo
from telemetry.halting import Halter
from telemetry.integrations.cleanrl import plain
from telemetry.integrations.episodes import rollout_payload
from telemetry.integrations.recorded import RecordedRun
from torchprobe.probe import BATCH_SIZE, UpdateProbe


def _version() -> str:
    import torchrl  # the loss module came from it

    return str(getattr(torchrl, "__version__", "unknown"))


def _clip_range(loss_module: Any) -> float | None:
    """The symmetric ``clip_epsilon`` of a ClipPPOLoss (None: asymmetric, or none)."""
    if getattr(loss_module, "_asymmetric_clip", False):
        return None
    eps = getattr(loss_module, "clip_epsilon", None)
    return None if eps is None else float(eps)


def _action_spec(loss_module: Any, action_key: Any) -> Any:
    """The actor's action spec (a ``ProbabilisticActor`` built with ``spec=``), the
    action's entry of a composite one; None when the actor was built without one."""
    spec = getattr(loss_module.actor_network, "spec", None)
    if spec is not None and type(spec).__name__ in ("Composite", "CompositeSpec"):
        try:
            return spec[action_key]
        except KeyError:
            return None
    return spec


class TorchRLRecorder(RecordedRun):
    """Records a TorchRL PPO run whose loop calls ``loss_module`` (a ``ClipPPOLoss`` or
    another ``PPOLoss``) and steps ``optimizer`` (see the module doc).

    ``max_grad_norm``: the loop's ``clip_grad_norm_`` threshold (for ``grad_clip_scale``);
    ``grad_scaler``: its ``GradScaler``, when it trains in mixed precision.
    ``batch_size``: frames of each batch the probe evaluates. The other keywords are the
    :class:`~telemetry.Recorder`'s.
    ``halter``: stops the run after the first update it gives a reason at
    (``telemetry.integrations.halting_recorder``).
    """

    def __init__(
        self,
        loss_module: Any,
        optimizer: Any,
        *,
        run_dir: str | os.PathLike[str] = "runs",
        run_id: str | None = None,
        env_id: str | None = None,
        seed: int | None = None,
        config: dict[str, Any] | None = None,
        max_grad_norm: float | None = None,
        batch_size: int = BATCH_SIZE,
        grad_scaler: Any = None,
        halter: Halter | None = None,
    ) -> None:
        self.loss_module = loss_module
        keys = loss_module.tensor_keys
        self.action_key, self.log_prob_key = keys.action, keys.sample_log_prob
        self.probe = UpdateProbe(
            self._distribution,
            optimizer,
            clip_range=_clip_range(loss_module),
            max_grad_norm=max_grad_norm,
            batch_size=batch_size,
            kl_estimator="k3",
            grad_scaler=grad_scaler,
        )
        settings = {str(k): plain(v) for k, v in (config or {}).items()}
        self.recorder = self.probe.recorder(
            halter,
            TrainerInfo(name="torchrl", version=_version()),
            settings,
            run_dir=run_dir,
            run_id=run_id,
            env_id=env_id,
            seed=seed,
            action_space=_action_spec(loss_module, self.action_key),
        )
        self.frames = 0
        self._losses: list[tuple[Any, Any]] = []
        """Each minibatch's losses, 0-d tensors on the device."""

    def _distribution(self, batch: Any) -> Any:
        """The actor's distribution on ``batch``, with the loss module's parameters (as
        ClipPPOLoss computes it)."""
        actor = self.loss_module.actor_network
        params = getattr(self.loss_module, "actor_network_params", None)
        if params is None:
            return actor.get_dist(batch)
        with params.to_module(actor):
            return actor.get_dist(batch)

    def losses(self, loss_vals: Any) -> None:
        """One minibatch's ``loss_module`` output: its ``loss_objective`` and
        ``loss_critic``, kept on the device and read once per update, as their mean."""
        objective = loss_vals.get("loss_objective").detach().mean()
        critic = loss_vals.get("loss_critic", None)
        self._losses.append((objective, None if critic is None else critic.detach().mean()))

    @contextmanager
    def update(self, data: Any) -> Iterator[None]:
        """Measure the update on the collector's batch ``data`` run inside the block."""
        flat = data.reshape(-1)
        self.frames += int(flat.numel())
        self._rollout(flat)
        self._losses = []
        old = flat.get(self.log_prob_key, None)
        with self.probe.update(
            self.recorder,
            flat,
            flat.get(self.action_key),
            global_step=self.frames,
            old_log_probs=old,
        ) as measured:
            yield
            if self._losses:
                policy = sum(p for p, _ in self._losses) / len(self._losses)
                values = [v for _, v in self._losses if v is not None]
                value = sum(values) / len(values) if values else None
                measured.losses(policy=policy, value=value)  # one read each
            # read from the batch itself: GAE writes there, and a batch of several dims
            # (envs x time) reshapes into a copy that never sees those keys
            state_value, target = data.get("state_value", None), data.get("value_target", None)
            if state_value is not None and target is not None:
                measured.critic(state_value.reshape(-1), target.reshape(-1))

    def _rollout(self, flat: Any) -> None:
        done = flat.get(("next", "done"), None)
        returns: list[float] = []
        lengths: list[float] = []
        if done is not None:
            ended = done.reshape(-1).bool()
            reward = flat.get(("next", "episode_reward"), None)
            steps = flat.get(("next", "step_count"), None)
            if reward is not None:
                returns = [float(r) for r in reward.reshape(-1)[ended]]
                if steps is not None:
                    lengths = [float(n) for n in steps.reshape(-1)[ended]]
        self.recorder.emit(
            rollout_payload(
                update=self.recorder.updates,
                global_step=self.frames,
                returns=returns,
                lengths=lengths,
                steps_per_second=None,
            )
        )
