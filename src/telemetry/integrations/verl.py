"""Read a verl run: its ``file`` logger's records as the contract's payloads.

verl (github.com/volcengine/verl) writes, with ``trainer.logger`` including ``file``, one
line per call of its tracker: ``FileLogger.log`` in ``verl/utils/tracking.py`` writes
``orjson.dumps({"step": step, "data": data}, option=OPT_SERIALIZE_NUMPY) + b"\\n"`` to a
file opened ``"wb", buffering=0`` (one unbuffered write per line; opening truncates, so a
resumed job starts the file again) at ``$VERL_FILE_LOGGER_PATH``, or else at
``$VERL_FILE_LOGGER_ROOT/<project_name>/<experiment_name>.jsonl`` (root ``.``). orjson
writes a NaN or an infinity as ``null``: a ``null`` value here is a non-finite one. The
PPO/GRPO driver (``RayPPOTrainer.fit`` in ``verl/trainer/ppo/ray_trainer.py``) logs once per
training step, ``step`` = ``training/global_step`` counting from 1, after an optional
validation-only record at step 0 (``val_before_train``); the keys come from
``compute_data_metrics``, ``compute_timing_metrics`` and ``compute_throughout_metrics``
(``verl/trainer/ppo/metric_utils.py``), the actor's update (``DataParallelPPOActor.
update_policy`` in ``verl/workers/actor/dp_actor.py``, its policy-loss functions in
``verl/trainer/ppo/core_algos.py``), ``apply_kl_penalty`` (``ray_trainer.py``) and
``calculate_debug_metrics`` (``verl/utils/debug/metrics.py``). Read at verl commit
b178a3cd (January 2026). The file holds no configuration, no wall-clock time and no end of
run.

====================================  =============================  ===============================
verl logs                             we record (``ppo_update``)     where the definitions differ
====================================  =============================  ===============================
``step`` (=                           ``update`` = step - 1,         none; verl's steps count from 1
``training/global_step``)             ``global_step`` = step
``actor/ppo_kl``                      ``approx_kl``                  k1: mean of log pi_old - log
                                                                     pi_new over response tokens
                                                                     (signed), against the old
                                                                     policy, over every epoch's
                                                                     micro-batches (ours: the last
                                                                     epoch's); recorded with
                                                                     ``kl_estimator`` k1
``actor/pg_clipfrac``                 ``clip_fraction_region``       none: the share of tokens whose
                                                                     clipped term the loss takes
                                                                     (``clip_fraction``, abs(r - 1)
                                                                     > clip_range, is not logged:
                                                                     not measured)
``actor/pg_clipfrac_lower``           ``clip_fraction_lower``        none: the dual-clip share
``actor/entropy``                     ``entropy``                    token entropy aggregated by
                                                                     ``loss_agg_mode``
``actor/grad_norm``                   ``grad_norm``                  none: mean of the mini-batches'
                                                                     norms before clipping
``actor/pg_loss``                     ``policy_loss``                summed over mini-batches and
                                                                     epochs
``actor/kl_loss``                     ``ref_kl``                     the reference KL per token with
                                                                     ``kl_loss_type`` (default
                                                                     low_var_kl; not in the file, so
                                                                     recorded as unknown), summed
                                                                     over mini-batches and epochs:
                                                                     the mean only with one of each
``actor/kl_coef``                     ``ref_kl_coef``                none (``kl_loss_coef``)
``actor/reward_kl_penalty`` x         ``ref_kl_reward_penalty``      verl logs KL(pi_old ‖ pi_ref)
``actor/reward_kl_penalty_coeff``                                    itself, we record coef x KL
``actor/reward_kl_penalty_coeff``     ``ref_kl_reward_coef``         none
``actor/lr``                          ``learning_rate``              none
``critic/score/mean``                 ``reward_mean``                the sequence score before any
                                                                     KL penalty
``critic/returns/mean``               ``return_mean``                none
``critic/values/mean``                ``value_mean``                 none (PPO with a critic only)
``critic/vf_explained_var``           ``explained_variance``         Var(R) + 1e-5 in the
                                                                     denominator
``critic/vf_loss``                    ``value_loss``                 none
``response_length/mean``, ``/min``,   ``completion_length_mean``,    none (tokens)
``/max``                              ``_min``, ``_max``
``response_length/clip_ratio``        ``completion_truncated_frac``  none: the share at
                                                                     max_response_length
``timing_s/update_actor``             ``update_seconds``             the actor's update only
``timing_s/step``                     the envelope's ``ts``          see :func:`stamps`
``critic/rewards/mean``,              not recorded                   the reward after the KL
``critic/advantages/*``                                              penalty; the advantages after
                                                                     GRPO's normalisation (ours:
                                                                     before)
``training/rollout_probs_diff_mean``  not recorded                   mean abs(p_train - p_rollout)
                                                                     of token probabilities, not
                                                                     ``logprob_gap``'s
                                                                     log-probabilities
``perf/total_num_tokens``             not recorded                   prompt and response tokens;
                                                                     ``tokens`` counts completions
                                                                     only
``critic/vf_clipfrac``,               not recorded                   no field
``prompt_length/*``, ``val-*``,
other ``perf/*`` and ``timing_*``
====================================  =============================  ===============================

``run_started`` is built from the first training record: trainer ``verl``, ``algorithm``
``ppo`` when the record holds critic values or a value loss (``use_critic``), else
``grpo`` (verl does not log its ``adv_estimator``: GRPO, RLOO, REINFORCE++ and the other
critic-free estimators all read as grpo); ``kl``: ``approx_kl`` k1 against the old policy
per token, ``ref_kl`` against the reference per token (``loss_agg_mode`` token-mean, verl's
default) with its estimator ``unknown``; no ``policy_epochs`` (``ppo_epochs`` is not in the
file); ``config.source`` ``verl``, ``config.no_run_finished`` (why no ``run_finished`` will
come: ``sanctum check`` says so in its finish row and judges the log as it stands)
and, when the first step is not 1, ``resumed_from``. A record without training keys before
that record (verl's step-0 validation) is no event; one after it is a heartbeat.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from telemetry.events import (
    TRAINING_STEPS,
    HeartbeatPayload,
    KLMeasure,
    PPOUpdatePayload,
    RunStartedPayload,
    TrainerInfo,
    field_docs,
)
from telemetry.run_config import (
    KL_ESTIMATOR,
    NO_RUN_FINISHED,
    RESUMED_FROM,
    RESUMED_UPDATE,
    SOURCE,
)

VERL: Final = "verl"
"""``run_started.config.source`` of a run read from verl's file logger (and its trainer name)."""


@dataclass(frozen=True, slots=True)
class VerlKey:
    """One verl key and the ``ppo_update`` field it is recorded as."""

    key: str
    field: str


VERL_KEYS: Final[tuple[VerlKey, ...]] = (
    VerlKey("actor/ppo_kl", "approx_kl"),
    VerlKey("actor/pg_clipfrac", "clip_fraction_region"),
    VerlKey("actor/pg_clipfrac_lower", "clip_fraction_lower"),
    VerlKey("actor/entropy", "entropy"),
    VerlKey("actor/grad_norm", "grad_norm"),
    VerlKey("actor/pg_loss", "policy_loss"),
    VerlKey("actor/kl_loss", "ref_kl"),
    VerlKey("actor/kl_coef", "ref_kl_coef"),
    VerlKey("actor/reward_kl_penalty_coeff", "ref_kl_reward_coef"),
    VerlKey("actor/lr", "learning_rate"),
    VerlKey("critic/score/mean", "reward_mean"),
    VerlKey("critic/returns/mean", "return_mean"),
    VerlKey("critic/values/mean", "value_mean"),
    VerlKey("critic/vf_explained_var", "explained_variance"),
    VerlKey("critic/vf_loss", "value_loss"),
    VerlKey("response_length/mean", "completion_length_mean"),
    VerlKey("response_length/min", "completion_length_min"),
    VerlKey("response_length/max", "completion_length_max"),
    VerlKey("response_length/clip_ratio", "completion_truncated_frac"),
    VerlKey("timing_s/update_actor", "update_seconds"),
)
"""The table of the module docstring, one row per verl key recorded as it is."""
END_NOT_LOGGED: Final = "verl's file logger records no end of run"
"""Why a verl run's log holds no ``run_finished`` (``config.no_run_finished``; sanctum's
gate says so and judges the log as it stands)."""
_KL_PENALTY: Final = "actor/reward_kl_penalty"
_KL_PENALTY_COEF: Final = "actor/reward_kl_penalty_coeff"
STEP_SECONDS: Final = "timing_s/step"
"""The key of verl's wall time of a training step."""
_TRAINING_PREFIXES: Final = ("actor/", "critic/", "response_length/", "training/")
"""A record holding a key under one of these is a training step's (not a validation's)."""
_CRITIC_KEYS: Final = ("critic/values/mean", "critic/vf_loss")
_RUN_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_UPDATE_FIELDS: Final = frozenset(d.name for d in field_docs(PPOUpdatePayload))
_INT_FIELDS: Final = frozenset(
    d.name for d in field_docs(PPOUpdatePayload) if d.type in (int, int | None)
)
"""Fields that hold counts: verl's value must be a whole number (it may be written 40.0)."""


class VerlRecordError(ValueError):
    """A verl record the contract cannot hold; ``str()`` names the key and why."""


def is_training(data: Mapping[str, Any]) -> bool:
    """Whether a record is a training step's (verl's step-0 validation record is not)."""
    return any(key.startswith(_TRAINING_PREFIXES) for key in data)


def algorithm_of(data: Mapping[str, Any]) -> str:
    """``ppo`` when the record holds a critic's values or loss, else ``grpo``."""
    return "ppo" if any(key in data for key in _CRITIC_KEYS) else "grpo"


def run_id_of(name: str) -> str:
    """The run id of a verl file named ``name`` (its stem, verl's experiment name by
    default), or a stable hash of it when the stem is not a plain identifier."""
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    if _RUN_ID.fullmatch(stem):
        return stem
    return "verl-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def run_started_payload(step: int, data: Mapping[str, Any]) -> RunStartedPayload:
    """What a verl run's first training record says about the run (see the docstring)."""
    config: dict[str, Any] = {SOURCE: VERL, KL_ESTIMATOR: "k1", NO_RUN_FINISHED: END_NOT_LOGGED}
    if step > 1:
        config[RESUMED_FROM] = {RESUMED_UPDATE: step - 1}
    return RunStartedPayload(
        trainer=TrainerInfo(name=VERL),
        config=config,
        algorithm=algorithm_of(data),
        step_unit=TRAINING_STEPS,
        kl={
            "approx_kl": KLMeasure(against="old_policy", estimator="k1", unit="token"),
            "ref_kl": KLMeasure(against="reference", estimator="unknown", unit="token"),
        },
    )


def update_payload(step: int, data: Mapping[str, Any]) -> PPOUpdatePayload:
    """The ``ppo_update`` of one verl training record (VerlRecordError naming the key when
    a value is not a number, or the contract refuses the payload)."""
    fields: dict[str, Any] = {"update": step - 1, "global_step": step, "early_stopped": False}
    for row in VERL_KEYS:
        if row.key in data:
            fields[row.field] = _number(row.key, data[row.key], row.field in _INT_FIELDS)
    if _KL_PENALTY in data and _KL_PENALTY_COEF in data:
        kl = _number(_KL_PENALTY, data[_KL_PENALTY])
        fields["ref_kl_reward_penalty"] = kl * _number(_KL_PENALTY_COEF, data[_KL_PENALTY_COEF])
    try:
        return msgspec.convert(fields, PPOUpdatePayload)
    except msgspec.ValidationError as exc:
        raise VerlRecordError(f"step {step}: {exc}") from None


def heartbeat_payload(step: int) -> HeartbeatPayload:
    """A record without training keys after the run began: proof of life."""
    return HeartbeatPayload(global_step=step)


def step_seconds(data: Mapping[str, Any]) -> float:
    """The step's wall time verl measured (``timing_s/step``); 0 when absent or not a
    finite non-negative number."""
    value: Any = data.get(STEP_SECONDS)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and value >= 0 else 0.0


def stamps(seconds: list[float], end: float | None, after: float | None) -> list[float]:
    """The ``ts`` of records read together that took ``seconds`` each (verl logs no time).

    ``end`` (the file's mtime, when these records end the file: verl writes each line
    unbuffered, so the last one was written then) stamps the last record, the earlier ones
    back from it by the step times after them; without ``end`` they follow ``after`` (the
    previous record's stamp) by their step times. Never before ``after``."""
    if end is None or (after is not None and end < after):
        out, total = [], after or 0.0
        for s in seconds:
            total += s
            out.append(total)
        return out
    out, total = [], end
    for s in reversed(seconds):
        out.append(total)
        total -= s
    out.reverse()
    return out if after is None else [max(t, after) for t in out]


def _number(key: str, value: Any, whole: bool = False) -> Any:
    """A verl value as a number: ``null`` is a non-finite one (orjson's NaN)."""
    if value is None:
        if whole:
            raise VerlRecordError(f"{key}: null where a count belongs")
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VerlRecordError(f"{key}: {type(value).__name__} where a number belongs")
    if whole:
        if isinstance(value, float) and not value.is_integer():
            raise VerlRecordError(f"{key}: {value!r} where a count belongs")
        return int(value)
    return float(value)
