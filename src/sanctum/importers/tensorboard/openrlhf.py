"""OpenRLHF's TensorBoard tags (``--logger.tensorboard_dir``), read as ``ppo_update`` fields.

OpenRLHF (github.com/OpenRLHF/OpenRLHF; read at v0.9.0 and at 3c3be623, August 2026) writes,
on rank 0, one scalar ``train/<key>`` per key of each training step's status at the step
``global_step`` (its own counter of PPO training steps, from 1; no sample count is logged,
so the step is the update's ``global_step``): ``TensorboardLogger.log_train`` in
``openrlhf/utils/logging_utils.py`` (before 2026: ``PPOTrainer.save_logs_and_checkpoints``),
every ``logging_steps`` steps, and ``eval/<key>`` for evaluations. The keys come from the
actor's ``ppo_train`` (``openrlhf/trainer/ray/ppo_actor.py``: token- or sample-weighted
means over every epoch's micro-batches), the critic's (``ppo_critic.py``: plain means),
the experience maker's ``info`` (per sample) and the trainer's rollout statistics. The
log holds no settings (only the wandb logger records them): ``kl_estimator``,
``advantage_estimator`` and ``n_samples_per_prompt`` are not known.

================================  ===========================  ==============================
OpenRLHF logs (``train/`` +)      we record                    where the definitions differ
================================  ===========================  ==============================
``ppo_kl``                        ``approx_kl``                k1: mean of log pi_old - log
                                                               pi_new over response tokens
                                                               (signed), every epoch
``ppo_clip_ratio``                ``clip_fraction_region``     the share of tokens whose
                                                               clipped term the loss takes
``kl``                            ``ref_kl``                   to the reference, per token,
                                                               estimator ``--algo.kl.
                                                               estimator`` (k1 by default; not
                                                               in the log: unknown); 0 when
                                                               there is no reference model
``entropy_loss``                  ``entropy``                  none: the token entropy itself
                                                               (the loss subtracts coef x it);
                                                               logged only with entropy_coef
``policy_loss``                   ``policy_loss``              token mean, every epoch
``actor_lr``                      ``learning_rate``            none
``actor_grad_norm``               ``grad_norm``                the last micro-batch's
``critic_loss``                   ``value_loss``               none (with the 0.5, as ours)
``critic_grad_norm``              ``grad_norm_critic``         mean over the critic's steps
``values``                        ``value_mean``               the critic's predictions while
                                                               it trains, not on the rollout
``reward``                        ``reward_mean``              the reward model's or reward
                                                               function's score, per sample
``group_reward_std``              ``reward_std``               mean of each prompt group's
                                                               std (as TRL's reward_std)
``response_length``               ``completion_length_mean``   none (tokens)
``truncated``,                    ``completion_truncated_      none: the share that hit the
``response_clip_ratio`` (v0.9)    frac``                       length cap
``vllm_kl``                       not recorded                 mean of log pi_rollout - log
                                                               pi_old, signed (logprob_gap is
                                                               a mean absolute difference)
``return``                        not recorded                 the shaped return (score minus
                                                               the KL penalty, baseline
                                                               subtracted): no field
``total_length``,                 not recorded                 prompt and response tokens; a
``logprobs_diff``, ``critic_lr``                               signed k1 reference KL; no field
``rollout/*``                     not recorded                 the same rollout's reward,
                                                               length and truncation again
``timing/*``, ``dynamic_          not recorded                 no field
filtering_pass_rate``
================================  ===========================  ==============================

``algorithm``: ``ppo`` when the log holds a critic's tags (``critic_loss``, ``values``:
advantage estimator ``gae``), else ``grpo`` when it holds ``group_reward_std`` (several
samples per prompt: group_norm, rloo, reinforce_baseline or dr_grpo, all group-relative),
else ``reinforce++`` (one sample per prompt: the ``reinforce`` estimator). ``kl``:
``approx_kl`` k1 against the old policy per token, ``ref_kl`` against the reference per
token with its estimator ``unknown``. A step at which the actor did not train (the first
``--critic.freezing_steps`` steps train only the critic) holds no ``ppo_kl``: not an
update, and the import says so as a warning.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from sanctum.importers.tensorboard.mapping import Header, TagMapping, Target, table
from sanctum.importers.tensorboard.reader import TBLog
from telemetry.events import TRAINING_STEPS, KLMeasure
from telemetry.run_config import KL_ESTIMATOR

PREFIX: Final = "train/"
FIELDS: Final = MappingProxyType(
    {
        "ppo_kl": "approx_kl",
        "ppo_clip_ratio": "clip_fraction_region",
        "kl": "ref_kl",
        "entropy_loss": "entropy",
        "policy_loss": "policy_loss",
        "actor_lr": "learning_rate",
        "actor_grad_norm": "grad_norm",
        "critic_loss": "value_loss",
        "critic_grad_norm": "grad_norm_critic",
        "values": "value_mean",
        "reward": "reward_mean",
        "group_reward_std": "reward_std",
        "response_length": "completion_length_mean",
        "truncated": "completion_truncated_frac",
        "response_clip_ratio": "completion_truncated_frac",
    }
)
"""OpenRLHF's key -> the ``ppo_update`` field (the module's table)."""
IGNORED: Final = MappingProxyType(
    {
        "vllm_kl": "signed mean of log pi_rollout - log pi_old (logprob_gap is absolute)",
        "return": "the shaped return (score minus the KL penalty): no field",
        "total_length": "prompt and response tokens: no field",
        "logprobs_diff": "a signed k1 reference KL, beside kl",
        "critic_lr": "the critic's learning rate: no field",
        "rollout/reward_mean": "the rollout's rewards again (reward)",
        "rollout/reward_std": "the std over every sample, not within prompt groups",
        "rollout/response_length_mean": "the rollout's lengths again (response_length)",
        "rollout/truncated_rate": "the rollout's truncation again (truncated)",
        "rollout/num_samples": "samples per step: no field",
        "dynamic_filtering_pass_rate": "no field",
        "timing/make_experience": "no field",
        "timing/ppo_train": "no field",
        "timing/broadcast": "no field",
        "timing/generation": "no field",
        "timing/step_total": "no field",
    }
)
"""OpenRLHF keys known and not recorded, with why."""
CRITIC_TAGS: Final = (PREFIX + "critic_loss", PREFIX + "values")
GROUP_TAG: Final = PREFIX + "group_reward_std"
KL: Final = MappingProxyType(
    {
        "approx_kl": KLMeasure(against="old_policy", estimator="k1", unit="token"),
        "ref_kl": KLMeasure(against="reference", estimator="unknown", unit="token"),
    }
)


def algorithm_of(tags: TBLog) -> Header:
    """``ppo`` with a critic, ``grpo`` with prompt groups, else ``reinforce++``."""
    if any(tag in tags.scalars for tag in CRITIC_TAGS):
        algorithm = "ppo"
    elif GROUP_TAG in tags.scalars:
        algorithm = "grpo"
    else:
        algorithm = "reinforce++"
    return Header(algorithm=algorithm, config={KL_ESTIMATOR: "k1"})


OPENRLHF: Final = TagMapping(
    name="openrlhf",
    trainer="openrlhf",
    tags=MappingProxyType(
        {
            **table({PREFIX + k: Target("update", f) for k, f in FIELDS.items()}),
            **table({PREFIX + k: Target("ignore", reason=r) for k, r in IGNORED.items()}),
        }
    ),
    detect_tags=(PREFIX + "policy_loss", PREFIX + "actor_lr"),
    kl_estimator="k1",
    kl=KL,
    step_unit=TRAINING_STEPS,
    header=algorithm_of,
    notes=(
        "each update is one logged OpenRLHF training step: its figures are means over "
        "every epoch's micro-batches (ours: the last epoch's)",
        "OpenRLHF's TensorBoard log holds no settings: the reference KL's estimator and "
        "the advantage estimator are not known",
    ),
)
"""OpenRLHF's PPO, REINFORCE++, GRPO and RLOO (``train_ppo_ray``)."""
