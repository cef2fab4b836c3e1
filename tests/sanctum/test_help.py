"""The help screen's glossary describes the fields a user meets on the dashboard."""

from __future__ import annotations

import msgspec

from sanctum.thresholds import DEFAULT_THRESHOLDS
from sanctum.widgets.help import GLOSSARY
from telemetry.events import PPOUpdatePayload

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


def test_the_fields_of_schema_1_2_are_real_fields_of_the_contract() -> None:
    fields = [f.name for f in msgspec.structs.fields(PPOUpdatePayload)]
    assert list(SCHEMA_1_2) == fields[-len(SCHEMA_1_2) :]


def test_every_ruled_metric_and_every_field_of_schema_1_2_is_in_the_glossary() -> None:
    described = {name for name, _ in GLOSSARY}
    missing = (set(SCHEMA_1_2) | set(DEFAULT_THRESHOLDS.metrics)) - described
    assert not missing, f"the ? help does not describe {sorted(missing)}"
