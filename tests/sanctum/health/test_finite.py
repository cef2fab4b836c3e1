"""Where the non-finite rule looks: every float field of the contract, nested ones included,
read off the types; a NaN or Inf named by its kind and path."""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec

from sanctum.health.finite import WALKED, float_fields, nonfinite_paths, update_paths
from sanctum.metrics import PPO_METRICS
from telemetry.events import (
    EVENT_FOR_PAYLOAD,
    AnomalyPayload,
    EarlyStop,
    PPOUpdatePayload,
    RolloutPayload,
    RunFinishedPayload,
    about,
)
from tests.sanctum.logs import early_stop_update, ppo_update, rollout


class Probe(msgspec.Struct, frozen=True, kw_only=True):
    """A payload a later schema might bring: floats at every depth, and fields without."""

    count: int = 0
    rate: Annotated[float | None, about("A rate.")] = None
    parts: dict[str, float] | None = None
    stops: list[EarlyStop] = []
    config: dict[str, Any] = {}
    label: str = ""


def test_the_fields_holding_a_float_are_read_off_the_types_at_any_depth() -> None:
    assert float_fields(Probe) == ("rate", "parts", "stops")
    assert float_fields(EarlyStop) == ("kl", "threshold")


def test_every_float_of_every_kind_is_walked_but_the_metric_columns_and_an_anomalys_report() -> (
    None
):
    for payload in EVENT_FOR_PAYLOAD:
        left_out = set(float_fields(payload)) - set(WALKED[payload])
        expected = {
            PPOUpdatePayload: set(PPO_METRICS) & set(float_fields(PPOUpdatePayload)),
            AnomalyPayload: {"value"},
        }.get(payload, set())
        assert left_out == expected, payload
    assert set(WALKED[PPOUpdatePayload]) == {"early_stop", "reward_components"}
    assert "duration_seconds" in WALKED[RunFinishedPayload]


def test_a_nonfinite_rollout_value_is_named_by_its_kind_and_field() -> None:
    spoiled = rollout(3, episode_return_mean=math.nan, steps_per_second=-math.inf)
    assert nonfinite_paths(spoiled) == [
        "rollout.episode_return_mean",
        "rollout.steps_per_second",
    ]
    assert nonfinite_paths(rollout(3)) == []
    assert nonfinite_paths(RolloutPayload(update=0, global_step=0)) == []
    assert nonfinite_paths(RunFinishedPayload(status="completed", duration_seconds=math.inf)) == [
        "run_finished.duration_seconds"
    ]


def test_an_anomalys_nonfinite_value_is_its_report_not_a_measurement() -> None:
    report = AnomalyPayload(severity="warning", metric="grad_norm", value=math.nan, message="x")
    assert nonfinite_paths(report) == []


def test_nested_nonfinite_values_of_updates_are_found_with_their_update() -> None:
    payloads = [
        ppo_update(0, reward_components={"format": 1.0, "answer": 0.5}),
        ppo_update(1, reward_components={"format": math.nan, "answer": 0.5}),
        early_stop_update(2, kl=math.inf),
        ppo_update(3, approx_kl=math.nan),  # a metric column: the judge's, not walked here
        early_stop_update(4, reward_components={"answer": -math.inf}),
    ]
    assert update_paths(payloads) == [
        (1, ["ppo_update.reward_components.format"]),
        (2, ["ppo_update.early_stop.kl"]),
        (4, ["ppo_update.reward_components.answer"]),
    ]
    assert update_paths([ppo_update(u) for u in range(5)]) == []


def test_finite_values_whose_sum_overflows_are_not_taken_for_infinite() -> None:
    huge = ppo_update(0, reward_components={"a": 1e308, "b": 1e308, "c": -math.inf})
    assert update_paths([huge]) == [(0, ["ppo_update.reward_components.c"])]
    assert update_paths([ppo_update(0, reward_components={"a": 1e308, "b": 1e308})]) == []
