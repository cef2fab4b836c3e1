"""The help screen's glossary describes the fields a user meets on the dashboard."""

from __future__ import annotations

import msgspec

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.tui.widgets.help import GLOSSARY
from telemetry.events import PPOUpdatePayload, field_docs

SCHEMA_1_2 = (
    "ratio_std",
    "entropy_penalty",
    "entropy_below_threshold",
    "td_error_mean",
    "return_scale",
    "ref_kl",
    "ref_kl_coef",
    "ref_kl_reward_coef",
    "ref_kl_loss",
    "ref_kl_reward_penalty",
)
"""The fields schema 1.2 appended to ppo_update."""

SCHEMA_1_3 = ("full_reward_rate", "max_new_tokens_rate", "max_length_rate")
"""The fields schema 1.3 appended to ppo_update (token-level PPO)."""

SCHEMA_1_5 = (
    "reward_mean",
    "reward_std",
    "reward_zero_std_frac",
    "reward_components",
    "completion_length_mean",
    "completion_length_min",
    "completion_length_max",
    "completion_truncated_frac",
    "tokens",
    "clip_fraction_low",
    "clip_fraction_high",
    "clip_fraction_region",
    "logprob_gap",
)
"""The fields schema 1.5 appended to ppo_update (critic-free and sequence-level RL)."""

APPENDED = SCHEMA_1_2 + SCHEMA_1_3 + SCHEMA_1_5


def test_the_fields_of_schema_1_2_to_1_5_are_real_fields_of_the_contract() -> None:
    fields = [f.name for f in msgspec.structs.fields(PPOUpdatePayload)]
    assert list(APPENDED) == fields[-len(APPENDED) :]


def test_every_ruled_metric_and_every_appended_field_is_in_the_glossary() -> None:
    described = {name for name, _ in GLOSSARY}
    missing = (set(APPENDED) | set(DEFAULT_THRESHOLDS.metrics)) - described
    assert not missing, f"the ? help does not describe {sorted(missing)}"


def test_the_glossary_is_the_contract_s_definitions_in_contract_order() -> None:
    docs = field_docs(PPOUpdatePayload)
    assert [name for name, _ in GLOSSARY] == [d.name for d in docs]
    for (_, text), doc in zip(GLOSSARY, docs, strict=True):
        assert text.startswith(doc.description)
        assert "unit" not in doc.facts or f"In {doc.facts['unit']}." in text
