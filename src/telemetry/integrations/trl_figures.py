"""TRL's logged figures and settings as our payloads: pure functions, stdlib only.

The callback (``trl_callback``) gathers what the Trainer hands its hooks: the training log
lines, the config, the model's vocabulary size. Everything that turns those into
``PPOUpdatePayload`` and ``run_started.config`` lives here, without transformers, TRL or
torch, so each mapping is one testable function, and TRL's TensorBoard importer
(``sanctum.importers.tensorboard.trl``) derives its tags from the same tables. The mapping
and where TRL's definitions differ from ours are listed in ``telemetry.integrations.trl``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from telemetry.events import OPTIMIZER_STEPS, SAMPLES, KLMeasure, PPOUpdatePayload
from telemetry.run_config import REF_KL_REWARD_ESTIMATOR

GRPO_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "kl": "ref_kl",
        "entropy": "entropy",
        "clip_ratio/low_mean": "clip_fraction_low",
        "clip_ratio/high_mean": "clip_fraction_high",
        "clip_ratio/region_mean": "clip_fraction_region",
        "reward": "reward_mean",
        "reward_std": "reward_std",
        "frac_reward_zero_std": "reward_zero_std_frac",
        "completions/mean_length": "completion_length_mean",
        "completions/min_length": "completion_length_min",
        "completions/max_length": "completion_length_max",
        "completions/clipped_ratio": "completion_truncated_frac",
        "sampling/sampling_logp_difference/mean": "logprob_gap",
        "policy_loss": "policy_loss",
        "entropy_coef": "entropy_coef",
        "loss": "total_loss",
        "grad_norm": "grad_norm",
        "learning_rate": "learning_rate",
        "step_time": "update_seconds",
    }
)
"""What GRPOTrainer and RLOOTrainer log -> the ppo_update field (``rewards/<f>/mean`` go to
``reward_components``)."""

PPO_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "objective/kl": "ref_kl",
        "policy/approxkl_avg": "approx_kl",
        "policy/clipfrac_avg": "clip_fraction_region",
        "policy/entropy_avg": "entropy",
        "loss/policy_avg": "policy_loss",
        "loss/value_avg": "value_loss",
        "val/ratio": "ratio_mean",
        "objective/scores": "reward_mean",
        "lr": "learning_rate",
    }
)
"""What TRL's PPOTrainer logs -> the ppo_update field."""

REWARD_COMPONENT = ("rewards/", "/mean")
"""A reward function's mean is logged as ``rewards/<name>/mean``."""
SUMMARY_KEYS: Final = frozenset({"train_runtime", "train_loss", "train_samples_per_second"})
"""Keys of the summary line ``Trainer.train()`` logs at its end: not an update."""


@dataclass(frozen=True, slots=True)
class Algorithm:
    """How one TRL trainer logs: its algorithm name, field table and KL declarations."""

    name: str
    fields: Mapping[str, str]
    epochs_setting: str
    """The config setting holding the optimisation passes per batch."""
    step_unit: str
    """What ``global_step`` counts (``run_started.step_unit``), which says where the callback
    takes it from: ``samples``, the trainer's logged ``episode`` (PPO); ``optimizer
    steps``, ``state.global_step`` (GRPO, RLOO: an ``episode`` they log is not taken)."""


ALGORITHMS: Final[Mapping[str, Algorithm]] = MappingProxyType(
    {
        "GRPOConfig": Algorithm("grpo", GRPO_FIELDS, "num_iterations", OPTIMIZER_STEPS),
        "RLOOConfig": Algorithm("rloo", GRPO_FIELDS, "num_iterations", OPTIMIZER_STEPS),
        "PPOConfig": Algorithm("ppo", PPO_FIELDS, "num_ppo_epochs", SAMPLES),
    }
)
"""A trainer's config class (or a base class of it) -> how its trainer logs."""

SETTINGS: Final = (
    "learning_rate",
    "lr_scheduler_type",
    "max_steps",
    "num_train_epochs",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "max_grad_norm",
    "logging_steps",
    "seed",
    "bf16",
    "fp16",
    "world_size",
    # GRPO and RLOO
    "beta",
    "num_generations",
    "num_iterations",
    "steps_per_generation",
    "generation_batch_size",
    "max_completion_length",
    "max_prompt_length",
    "temperature",
    "top_p",
    "top_k",
    "epsilon",
    "epsilon_high",
    "delta",
    "loss_type",
    "scale_rewards",
    "importance_sampling_level",
    "multi_objective_aggregation",
    "mask_truncated_completions",
    "reward_weights",
    "entropy_coef",
    "top_entropy_quantile",
    "use_bias_correction_kl",
    "sync_ref_model",
    "use_vllm",
    "vllm_importance_sampling_correction",
    # PPO
    "num_ppo_epochs",
    "num_mini_batches",
    "total_episodes",
    "response_length",
    "kl_coef",
    "cliprange",
    "cliprange_value",
    "vf_coef",
    "gamma",
    "lam",
    "whiten_rewards",
    "missing_eos_penalty",
    "stop_token",
)
"""The settings of TRL's configs recorded in ``run_started.config`` under TRL's names (those
a config lacks are left out). PPO's ``kl_estimator`` is recorded as
``ref_kl_reward_estimator``: our ``kl_estimator`` names ``approx_kl``'s."""


def algorithm_of(args: Any) -> Algorithm:
    """How the trainer configured by ``args`` logs; TypeError for a trainer we do not read."""
    for cls in type(args).__mro__:
        found = ALGORITHMS.get(cls.__name__)
        if found is not None:
            return found
    raise TypeError(
        f"SanctumCallback records GRPOTrainer, RLOOTrainer and PPOTrainer; got "
        f"{type(args).__name__}"
    )


@dataclass(frozen=True, slots=True)
class Settings:
    """What reading a run's log lines needs of its settings."""

    algorithm: Algorithm
    beta: float | None = None
    """GRPO's and RLOO's reference-KL coefficient in the loss (0: no reference)."""
    kl_coef: float | None = None
    """PPO's reference-KL coefficient in the reward."""
    ref_kl_estimator: str = "k3"
    log_vocab: float | None = None
    """ln of the vocabulary size (the entropy of a uniform next token), when known."""

    @property
    def kl(self) -> dict[str, KLMeasure]:
        """What each KL field of the run's updates measures (``run_started.kl``)."""
        if self.algorithm.name == "ppo":
            return {
                "ref_kl": KLMeasure(
                    against="reference", estimator=self.ref_kl_estimator, unit="sequence"
                ),
                "approx_kl": KLMeasure(against="old_policy", estimator="k2", unit="token"),
            }
        if not self.beta:
            return {}
        return {
            "ref_kl": KLMeasure(against="reference", estimator=self.ref_kl_estimator, unit="token")
        }


def _number(value: Any) -> float | None:
    """A setting or logged figure as a float, NaN and Inf included: a Python number, or a
    scalar that says its value through ``item()`` (a numpy scalar, a 0-d numpy array or
    torch tensor: what a trainer's logs hold before TRL rounds them); None for anything
    else (bool included, and an array of several values). Never raises."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        if getattr(value, "shape", None) != () or not callable(getattr(value, "item", None)):
            return None
        item = value.item()
    except Exception:  # noqa: BLE001 - an observer never raises into the trainer
        return None
    return _number(item) if isinstance(item, int | float) else None


def whole_number(value: Any) -> int | None:
    """A count or step from a trainer (an int, a numpy or 0-d torch integer): None for
    anything else (None, 2.5, a bool, a string). Never raises."""
    number = _number(value)
    if number is None or not number.is_integer():
        return None
    return int(number)


def settings_of(args: Any, vocab_size: int | None = None) -> Settings:
    """The reading settings of the run configured by ``args`` (a TRL config)."""
    return settings_from(algorithm_of(args), values_of(args), vocab_size)


def values_of(args: Any) -> dict[str, Any]:
    """The settings of ``args`` that :data:`SETTINGS` names, and PPO's ``kl_estimator``."""
    return {n: getattr(args, n) for n in (*SETTINGS, "kl_estimator") if hasattr(args, n)}


def settings_from(
    algorithm: Algorithm, values: Mapping[str, Any], vocab_size: int | None = None
) -> Settings:
    """The reading settings of a run of ``algorithm`` whose config holds ``values`` (a TRL
    config's settings by name: its attributes, or the ``args`` JSON its TensorBoard log
    holds)."""
    log_vocab = math.log(vocab_size) if vocab_size and vocab_size > 1 else None
    if algorithm.name == "ppo":
        return Settings(
            algorithm,
            kl_coef=_number(values.get("kl_coef")),
            ref_kl_estimator=str(values.get("kl_estimator", "k1")),
            log_vocab=log_vocab,
        )
    return Settings(
        algorithm,
        beta=_number(values.get("beta")),
        ref_kl_estimator="k3" if algorithm.name == "grpo" else "k1",
        log_vocab=log_vocab,
    )


def _plain(value: Any) -> Any:
    """A setting as JSON: plain scalars and lists of them as they are, else its ``str``."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def config_of(args: Any) -> dict[str, Any]:
    """``run_started.config`` of the run configured by ``args``: :data:`SETTINGS` it has."""
    return config_from(algorithm_of(args), values_of(args))


def config_from(algorithm: Algorithm, values: Mapping[str, Any]) -> dict[str, Any]:
    """``run_started.config`` of a run of ``algorithm`` whose config holds ``values``."""
    config = {name: _plain(values[name]) for name in SETTINGS if name in values}
    if algorithm.name == "ppo" and "kl_estimator" in values:
        config[REF_KL_REWARD_ESTIMATOR] = _plain(values["kl_estimator"])
    return config


def is_update(logs: Mapping[str, Any]) -> bool:
    """Whether a log line is a training update's (not evaluation, not train()'s summary)."""
    if SUMMARY_KEYS.intersection(logs):
        return False
    return not any(key.startswith("eval_") for key in logs)


def update_payload(
    logs: Mapping[str, Any], *, update: int, global_step: int, settings: Settings
) -> PPOUpdatePayload:
    """One TRL training log line as a ``ppo_update`` (see the module's table)."""
    values: dict[str, Any] = {}
    for key, name in settings.algorithm.fields.items():
        value = _number(logs.get(key))
        if value is not None:
            values[name] = value
    head, tail = REWARD_COMPONENT
    components = {
        key[len(head) : -len(tail)]: value
        for key, raw in logs.items()
        if key.startswith(head) and key.endswith(tail) and (value := _number(raw)) is not None
    }
    if components:
        values["reward_components"] = components
    entropy = values.get("entropy")
    if entropy is not None and settings.log_vocab:
        values["entropy_normalized"] = entropy / settings.log_vocab
    if settings.beta:
        values["ref_kl_coef"] = settings.beta
    if settings.kl_coef is not None:
        values["ref_kl_reward_coef"] = settings.kl_coef
    return PPOUpdatePayload(update=update, global_step=global_step, early_stopped=False, **values)
