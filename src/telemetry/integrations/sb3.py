"""Record a Stable-Baselines3 PPO run in one line: ``model.learn(n, callback=SanctumCallback())``.

Importing this module costs nothing: stable-baselines3 is imported when ``SanctumCallback``
is first used, and without it that says ``pip install 'sanctum-ppo[sb3]'``. The callback
writes ``runs/<run_id>/events.jsonl``: ``run_started`` with the model's settings, one
``rollout`` and one ``ppo_update`` per SB3 iteration (the last one included), heartbeats
during slow rollouts, and ``run_finished``.

How each figure SB3 logs becomes ours (``sb3_figures`` holds the mapping):

=============================  ================================  ===========================
SB3                            ours                              where the definitions differ
=============================  ================================  ===========================
``train/approx_kl``            ``approx_kl``                     none: k3 before each step,
                                                                 mean over the last epoch's
                                                                 evaluated minibatches
``train/clip_fraction``        ``clip_fraction``                 none: mean over every
                                                                 evaluated minibatch
``train/entropy_loss``         ``entropy`` = -entropy_loss;      SB3 logs the negative; with
                               ``entropy_normalized`` (discrete) no analytic entropy it is
                                                                 -mean(log pi), an estimate
``train/policy_gradient_loss`` ``policy_loss``                   mean over evaluated
                                                                 minibatches: an early stop's
                                                                 unapplied one is included
``train/value_loss``           ``value_loss``                    mean squared error without
                                                                 the 0.5 of sanctum-ppo's
                                                                 trainer (twice ours), over
                                                                 evaluated minibatches
``train/loss``                 not used; ``total_loss`` is       SB3's is the last minibatch's
                               pg + ent_coef x entropy_loss +    loss alone; ours the mean
                               vf_coef x value_loss
``train/explained_variance``   ``explained_variance``            none; NaN (Var(R) = 0) is
                                                                 written as absent
``train/learning_rate``        ``learning_rate``                 none
``train/n_updates``            ``epochs_completed``              SB3 counts epochs over the
                                                                 run; ours is the rise in one
                                                                 update
optimizer steps (a hook)       ``minibatches_completed``,        SB3 does not log them;
                               ``minibatches_planned``           planned is n_epochs x
                                                                 ceil(n_steps n_envs / batch)
``target_kl`` stop             ``early_stopped``,                SB3 only prints it (verbose);
                               ``early_stop_reason``,            see below
                               ``early_stop``
``train/clip_range(_vf)``      ``run_started.config``            no ppo_update field
``train/std``                  not recorded                      no field in schema 1
gradients (a hook per param)   ``grad_norm``, ``grad_norm_max``, SB3 logs none; each applied
                               ``grad_clip_scale``               step's global norm before
                                                                 ``clip_grad_norm_``
``rollout_buffer.returns``     ``return_mean``, ``return_std``   SB3 logs none; the critic's
                                                                 targets (normalised rewards
                                                                 under VecNormalize)
``ent_coef`` (setting)         ``entropy_coef``                  none
Monitor ``episode`` r, l       ``rollout`` episodes, return      SB3's ``rollout/ep_rew_mean``
                               mean/min/max, length mean         is a 100-episode window; ours
                                                                 are this rollout's episodes
=============================  ================================  ===========================

``steps_per_second`` is the rollout's steps over the time since the previous rollout ended
(SB3's ``time/fps`` averages the whole run); ``update_seconds`` is the time from the
rollout's end to the update's recording, ``train()`` and SB3's log dump. Not measured by
SB3, so absent: ratio statistics, ``approx_kl_max``, ``kl_final``, advantage statistics.
The gradient norms and return targets are measured by the callback itself: a hook on each
parameter's gradient adds up the squared norms of a backward pass, read at the optimizer
step (SB3 clips the gradients in place between the two), and the return targets are read
from the rollout buffer when the rollout ends (SB3 has computed them by then).

Early stops: SB3 stops when one minibatch's k3 exceeds 1.5 x ``target_kl`` (the threshold
sanctum-ppo calls ``max_kl``, written as such in the config), before that minibatch's
step, and logs nothing about it. The callback counts the optimizer steps applied and SB3's
epochs, so the epoch and minibatch of the stop are exact::

    a minibatch's approx_kl > 1.5 x target_kl 0.0100 = 0.0150 at epoch 3 minibatch 5
    (SB3 target_kl; minibatch not applied); SB3 logged only the mean of the epoch's
    minibatches up to it, 0.0123

The KL that crossed is known only when the stop came at an epoch's first minibatch: the
epoch's mean is then that one value, the reason starts ``approx_kl 0.0162 > ...`` and
``early_stop`` holds the structured record; elsewhere the record is left out.

Limits: SB3 calls no callback when ``learn`` raises, so a crash leaves the run unfinished
unless the callback is used as a context manager (then ``failed`` or ``interrupted``). Time
spent in ``train()`` has no hook, so no heartbeat is written during it. The mapping reads
``PPO.train``'s logging; another algorithm is refused. Episodes come from the ``Monitor``
(or ``VecMonitor``) SB3 wraps environments in; without one no episode is seen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from telemetry.integrations import from_extra
from telemetry.integrations.episodes import rollout_payload
from telemetry.integrations.sb3_figures import hyperparameters, update_payload

if TYPE_CHECKING:
    from telemetry.integrations.sb3_callback import SanctumCallback

__all__ = ["SanctumCallback", "hyperparameters", "rollout_payload", "update_payload"]

EXTRA_HINT = "SanctumCallback needs stable-baselines3: pip install 'sanctum-ppo[sb3]'"
"""The one-line error when SB3 is not installed."""


def __getattr__(name: str) -> Any:
    if name != "SanctumCallback":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return from_extra("telemetry.integrations.sb3_callback", name, EXTRA_HINT)
