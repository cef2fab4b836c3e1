"""TRL's TensorBoard tags (``report_to="tensorboard"``), read as ``SanctumCallback`` records.

transformers' ``TensorBoardCallback`` writes each key of a training log line as the scalar
tag ``train/<key>`` (``rewrite_logs``: ``eval_<key>`` as ``eval/<key>``) at the step
``state.global_step`` (the optimizer step), the run's ``TrainingArguments`` as JSON in the
text tag ``args`` and the model's config as JSON in ``model_config``. So a TRL log's tags
are TRL's keys with ``train/`` before them, and each means what
:mod:`telemetry.integrations.trl` says it means: the tables here are derived from
``GRPO_FIELDS`` and ``PPO_FIELDS`` (one home for what a TRL key means), and the run's
``algorithm``, ``kl`` declarations, ``policy_epochs`` and config are those the callback
records, read from ``args`` (``rloo`` for an ``RLOOConfig``: its ``normalize_advantages``).
What the import cannot do as the callback does: ``update`` counts the steps at which TRL
logged, ``global_step`` is the optimizer step (PPO: ``train/episode``, the samples so far,
as the callback records it); ``entropy_normalized`` needs the vocabulary (``model_config``'s
``vocab_size``, or ``--actions``); ``update_seconds`` and heartbeats come from the callback
only where TRL logs ``step_time``; the run's end is not in the log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from sanctum.importers.tensorboard.mapping import Header, TagMapping, Target, Targets, target_of
from sanctum.importers.tensorboard.reader import TBLog
from telemetry.events import policy_epochs_of
from telemetry.integrations.trl_figures import (
    ALGORITHMS,
    REWARD_COMPONENT,
    SUMMARY_KEYS,
    Algorithm,
    config_from,
    settings_from,
)

PREFIX: Final = "train/"
"""transformers' TensorBoardCallback writes a training key ``k`` as the tag ``train/k``."""
ARGS_TAG: Final = "args/text_summary"
"""The text tag holding the run's TrainingArguments (TRL's config) as JSON (``add_text``
writes the tag ``args`` as ``args/text_summary``)."""
MODEL_TAG: Final = "model_config/text_summary"
"""The text tag holding the model's config as JSON (its ``vocab_size``)."""
IGNORED: Final = {
    "epoch": "the Trainer's epoch counter (dataset passes), not an update figure",
    "num_tokens": "prompt and completion tokens of the whole run so far (no field)",
}
"""TRL keys the import knows and leaves out (and :data:`SUMMARY_KEYS`, of the summary
line ``train()`` logs at its end)."""


def _tags(fields: Mapping[str, str]) -> Mapping[str, Targets]:
    """TRL's table as tags: ``train/<key>`` -> the field the callback records it as."""
    tags: dict[str, Targets] = {}
    for key, name in fields.items():
        target = target_of(name)
        if target is None or target.kind != "update":
            raise LookupError(f"TRL key {key} names {name}, not a ppo_update field")
        tags[PREFIX + key] = (target,)
    for key, reason in IGNORED.items():
        tags[PREFIX + key] = (Target("ignore", reason=reason),)
    for key in sorted(SUMMARY_KEYS):
        tags[PREFIX + key] = (Target("ignore", reason="train()'s summary line, not an update"),)
    return MappingProxyType(tags)


def _json(log: TBLog, tag: str) -> dict[str, Any]:
    """The JSON object a text tag holds; empty when absent or not an object."""
    try:
        value = json.loads(log.texts.get(tag, "{}"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _algorithm(default: str, values: Mapping[str, Any]) -> Algorithm:
    """RLOO logs GRPO's keys: its config has ``normalize_advantages`` and no ``loss_type``."""
    if default == "GRPOConfig" and "normalize_advantages" in values and "loss_type" not in values:
        return ALGORITHMS["RLOOConfig"]
    return ALGORITHMS[default]


def _header(config_class: str) -> Any:
    def read(log: TBLog) -> Header:
        values = _json(log, ARGS_TAG)
        vocab = _json(log, MODEL_TAG).get("vocab_size")
        vocab = vocab if isinstance(vocab, int) and not isinstance(vocab, bool) else None
        algorithm = _algorithm(config_class, values)
        settings = settings_from(algorithm, values, vocab)
        epochs = values.get(algorithm.epochs_setting)
        seed = values.get("seed")
        constants = {}
        if settings.beta:
            constants["ref_kl_coef"] = settings.beta
        if settings.kl_coef is not None:
            constants["ref_kl_reward_coef"] = settings.kl_coef
        return Header(
            config=config_from(algorithm, values),
            seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
            algorithm=algorithm.name,
            kl=settings.kl,
            policy_epochs=policy_epochs_of(epochs),
            action_count=vocab if vocab is not None and vocab > 1 else None,
            constants=constants,
        )

    return read


_NOTES: Final = (
    "TRL's figures are the means over the logging_steps optimizer steps of each log line, "
    "as telemetry.integrations.trl records them (see its table)",
    "each update is one TRL log line: update counts them from 0",
)


def _trl(config_class: str, detect: tuple[str, str], note: str, **more: Any) -> TagMapping:
    """The table of the TRL trainer configured by ``config_class``, from its key table."""
    algorithm = ALGORITHMS[config_class]
    return TagMapping(
        name=f"trl-{algorithm.name}",
        trainer="trl",
        tags=_tags(algorithm.fields),
        detect_tags=tuple(PREFIX + key for key in detect),
        algorithm=algorithm.name,
        step_unit=algorithm.step_unit,
        header=_header(config_class),
        read_texts=(ARGS_TAG, MODEL_TAG),
        notes=(*_NOTES, note),
        **more,
    )


TRL_GRPO: Final = _trl(
    "GRPOConfig",
    ("reward", "frac_reward_zero_std"),
    "global_step is the optimizer step (GRPO logs no sample count)",
    component_tags=(PREFIX + REWARD_COMPONENT[0], REWARD_COMPONENT[1]),
)
"""TRL's GRPOTrainer and RLOOTrainer (``rewards/<f>/mean`` -> ``reward_components[f]``)."""

TRL_PPO: Final = _trl(
    "PPOConfig",
    ("objective/kl", "policy/approxkl_avg"),
    "global_step is TRL's episode: the samples so far",
    kl_estimator="k2",
    global_step_tag=PREFIX + "episode",
)
"""TRL's PPOTrainer (``trl.experimental.ppo``)."""
