"""Record a TRL run in one line: ``GRPOTrainer(..., callbacks=[SanctumCallback()])``.

Importing this module costs nothing: transformers is imported when ``SanctumCallback`` is
first used, and without it that says ``pip install 'sanctum-ppo[trl]'``. The callback
writes ``runs/<run_id>/events.jsonl`` on the main process only: ``run_started`` with the
algorithm (``grpo`` for a ``GRPOConfig``, ``rloo`` for an ``RLOOConfig``, ``ppo`` for a
``PPOConfig``), TRL's settings and what each KL figure measures; one ``ppo_update`` per
training log line (every ``logging_steps`` optimizer steps: TRL averages its figures over
them); heartbeats while a step runs (generation and reward models can take minutes); and
``run_finished``. ``update`` counts the log lines from 0; ``global_step`` is PPO's
``episode`` (samples so far, ``run_started.step_unit`` ``samples``), GRPO's and RLOO's
optimizer-step counter (``optimizer steps``).

How each figure TRL logs becomes ours (:data:`GRPO_FIELDS`, :data:`PPO_FIELDS`):

==========================================  =============================  =========================
what TRL logs                               what we record                 where the definitions
                                                                           differ
==========================================  =============================  =========================
GRPO and RLOO
``kl``                                      ``ref_kl``                     to the reference, per
                                                                           token (mean over
                                                                           completion tokens): k3
                                                                           for GRPO (times r with
                                                                           use_bias_correction_kl),
                                                                           k1 of the sampling policy
                                                                           for RLOO
``entropy``                                 ``entropy``                    mean over completion
                                                                           tokens
                                            ``entropy_normalized``         entropy / ln(vocabulary
                                                                           size)
``clip_ratio/low_mean``                     ``clip_fraction_low``          none
``clip_ratio/high_mean``                    ``clip_fraction_high``         none
``clip_ratio/region_mean``                  ``clip_fraction_region``       none
``reward``                                  ``reward_mean``                the weighted sum of the
                                                                           terms
``reward_std``                              ``reward_std``                 none
``frac_reward_zero_std``                    ``reward_zero_std_frac``       none
``rewards/<f>/mean``                        ``reward_components[<f>]``     unweighted, as the
                                                                           function returned it
``completions/mean_length``                 ``completion_length_mean``     none
``completions/min_length``                  ``completion_length_min``      none
``completions/max_length``                  ``completion_length_max``      none
``completions/clipped_ratio``               ``completion_truncated_frac``  truncated: the last token
                                                                           is neither EOS nor pad
``sampling/sampling_logp_difference/mean``  ``logprob_gap``                vLLM only; none
``policy_loss``                             ``policy_loss``                logged only with an
                                                                           entropy bonus
``entropy_coef``                            ``entropy_coef``               none
``loss``                                    ``total_loss``                 the Trainer's mean over
                                                                           the logged steps
``grad_norm``                               ``grad_norm``                  before clipping; the last
                                                                           logged step's
``learning_rate``                           ``learning_rate``              none
``step_time``                               ``update_seconds``             training_step's time
                                                                           (generation and reward
                                                                           included), mean over the
                                                                           logged steps
``num_tokens``                              not recorded                   prompt and completion
                                                                           tokens of the whole run
                                                                           so far (tokens: one
                                                                           update's completion
                                                                           tokens)
``completions/*_terminated_length``         not recorded                   no field
``rewards/<f>/std``                         not recorded                   no field
``clip_ratio/low_min``                      not recorded                   no field
``clip_ratio/high_max``                     not recorded                   no field
``sampling/importance_sampling_ratio/*``    not recorded                   no field
``aux_loss``                                not recorded                   no field
PPO (trl.experimental.ppo)
``objective/kl``                            ``ref_kl``                     to the reference, SUMMED
                                                                           over a response's tokens
                                                                           (unit sequence), with
                                                                           kl_estimator (k1 or k3)
``policy/approxkl_avg``                     ``approx_kl``                  k2 = (log r)^2 / 2 to the
                                                                           old policy, mean over
                                                                           every epoch's minibatches
                                                                           (ours: the last epoch's),
                                                                           padding positions counted
                                                                           as 0
``policy/clipfrac_avg``                     ``clip_fraction_region``       where the clipped term
                                                                           binds (sign-aware), every
                                                                           epoch
``policy/entropy_avg``                      ``entropy``                    per token, padding
                                                                           positions counted
                                            ``entropy_normalized``         entropy / ln(vocabulary
                                                                           size)
``loss/policy_avg``                         ``policy_loss``                mean over every epoch's
                                                                           minibatches
``loss/value_avg``                          ``value_loss``                 with the 0.5, as ours
``val/ratio``                               ``ratio_mean``                 mean of the minibatch
                                                                           means
``objective/scores``                        ``reward_mean``                the reward model's score,
                                                                           without the KL penalty
``lr``                                      ``learning_rate``              none
``episode``                                 ``global_step``                samples so far
``objective/entropy``                       not recorded                   a response's summed -log
                                                                           p: an estimate per
                                                                           sequence
``objective/rlhf_reward``                   not recorded                   the score minus the KL
                                                                           penalty
``objective/non_score_reward``              not recorded                   minus the KL penalty, per
                                                                           sequence
``val/clipfrac_avg``                        not recorded                   the value clip's share:
                                                                           no field
``val/ratio_var``                           not recorded                   variance of minibatch
                                                                           means
``val/num_eos_tokens``                      not recorded                   a count on rank 0
``eps``                                     not recorded                   samples per second, whole
                                                                           run
==========================================  =============================  =========================

Not measured by TRL, so absent: GRPO's and RLOO's ``approx_kl`` (no KL to the old policy is
logged) and every run's ``clip_fraction`` (TRL counts only the sign-aware clipped share,
``clip_fraction_region``); a critic-free run's value figures. ``beta`` (GRPO, RLOO) is
recorded as ``ref_kl_coef`` on each update, PPO's ``kl_coef`` as ``ref_kl_reward_coef``.
TRL logs ``None`` for a figure whose every sample was NaN: it is recorded as absent. No
TRL trainer stops an update early (none has a target KL): ``early_stopped`` is false.
Evaluation lines (``eval_*``) and the summary line of ``train()`` (``train_runtime``...)
are not updates and are not recorded.

Halting: given a halter (``SanctumCallback(halter=sanctum.HaltGate(halt_on="critical"))``,
or any :class:`telemetry.halting.Halter`), the callback sets ``control.should_training_stop``
at the log line the halter fires on; the Trainer stops after that step. TRL's PPOTrainer
runs its own loop and never reads that flag: at its next log line the callback finishes the
run as halted and raises ``TrainingHalted``.

Limits: ``transformers.Trainer`` calls no callback when ``train()`` raises, so the callback
records the failure from ``sys.excepthook`` (an uncaught exception), from ``atexit`` (the
process ended while training) or, the sure way, as a context manager::

    with SanctumCallback() as cb:
        GRPOTrainer(..., callbacks=[cb]).train()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from telemetry.halting import TrainingHalted
from telemetry.integrations import from_extra
from telemetry.integrations.trl_figures import (
    GRPO_FIELDS,
    PPO_FIELDS,
    Settings,
    config_of,
    settings_of,
    update_payload,
)

if TYPE_CHECKING:
    from telemetry.integrations.trl_callback import SanctumCallback

__all__ = [
    "GRPO_FIELDS",
    "PPO_FIELDS",
    "SanctumCallback",
    "Settings",
    "TrainingHalted",
    "config_of",
    "settings_of",
    "update_payload",
]

EXTRA_HINT = "SanctumCallback needs transformers and TRL: pip install 'sanctum-ppo[trl]'"
"""The one-line error when transformers is not installed."""


def __getattr__(name: str) -> Any:
    if name != "SanctumCallback":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return from_extra("telemetry.integrations.trl_callback", name, EXTRA_HINT)
