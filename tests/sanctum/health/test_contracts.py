"""The range contracts are the bounds of the contract's field definitions, nothing else."""

from __future__ import annotations

from sanctum.health.contracts import CONTRACTS, KL_FIELDS, check_column, kl_contracts
from sanctum.metrics import PPO_METRICS
from telemetry.events import KLMeasure, PPOUpdatePayload, field_docs


def test_every_bounded_metric_has_its_contract_and_no_other_has_one() -> None:
    bounded = {
        d.name: (d.facts.get("min"), d.facts.get("max"))
        for d in field_docs(PPOUpdatePayload)
        if d.name in PPO_METRICS and ("min" in d.facts or "max" in d.facts)
    }
    estimated = {name for names in KL_FIELDS.values() for name in names}
    assert {c.metric: (c.low, c.high) for c in CONTRACTS} == {
        name: bounds for name, bounds in bounded.items() if name not in estimated
    }
    assert estimated == {
        c.metric
        for c in kl_contracts(
            {"kl_estimator": "k3"}
            | dict.fromkeys(("ref_kl_loss_estimator", "ref_kl_reward_estimator"), "k3")
        )
    }


def test_a_share_of_rollouts_is_a_fraction() -> None:
    rate = next(c for c in CONTRACTS if c.metric == "max_length_rate")
    (violation,) = check_column(rate, [3, 4], [0.5, 1.25])
    assert violation.update == 4
    assert violation.message == "max_length_rate 1.25 outside [0, 1] (a fraction)"


def test_what_run_started_declares_of_a_kl_field_wins_over_the_config() -> None:
    """verl's actor/ppo_kl is k1 (signed): declared so, a negative mean is no logging bug."""
    k1 = KLMeasure(against="old_policy", estimator="k1", unit="token")
    k3 = KLMeasure(against="reference", estimator="K3", unit="sequence")
    bounded = {c.metric for c in kl_contracts({}, {"approx_kl": k1})}
    assert "approx_kl" not in bounded and {"approx_kl_max", "kl_final"} <= bounded
    assert "ref_kl" in {c.metric for c in kl_contracts({}, {"ref_kl": k3})}
    assert "ref_kl" not in {c.metric for c in kl_contracts({})}  # no setting: unbounded
