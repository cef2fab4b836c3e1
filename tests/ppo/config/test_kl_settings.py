"""The KL settings both configs declare are one group: the same default and the same
allowed values in :class:`PPOConfig` and :class:`TokenPPOConfig`, and a doc each config
words only where the two differ (its unit, what a step counts)."""

from __future__ import annotations

import dataclasses

import pytest

from ppo.config import PPOConfig
from ppo.tokens.config import TokenPPOConfig

SHARED = (
    "kl_estimator",
    "max_kl",
    "log_ratio_clamp",
    "ref_kl_loss_coef",
    "ref_kl_loss_estimator",
    "ref_kl_target",
    "ref_kl_horizon",
)


@pytest.mark.parametrize("name", SHARED)
def test_both_configs_declare_the_same_default_and_allowed_values(name: str) -> None:
    classic = {f.name: f for f in dataclasses.fields(PPOConfig)}[name]
    token = {f.name: f for f in dataclasses.fields(TokenPPOConfig)}[name]
    assert classic.default == token.default
    assert classic.metadata["validator"].allowed == token.metadata["validator"].allowed


def test_the_docs_differ_only_in_the_words_each_config_gives() -> None:
    classic = {f.name: f.metadata["doc"] for f in dataclasses.fields(PPOConfig)}
    token = {f.name: f.metadata["doc"] for f in dataclasses.fields(TokenPPOConfig)}
    assert classic["log_ratio_clamp"] == token["log_ratio_clamp"]
    assert (
        classic["ref_kl_loss_coef"]
        .replace("per-sample", "per-token")
        .startswith(token["ref_kl_loss_coef"][:-2])
    )
    assert classic["ref_kl_horizon"].startswith("Environment steps over which")
    assert token["ref_kl_horizon"].startswith("Generated tokens over which")
