"""RunConfig: the known keys of run_started.config, read from what writers write and from
whatever a hostile log holds, never raising."""

from __future__ import annotations

import math
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec import UNSET

from telemetry import run_config
from telemetry.events import field_docs
from telemetry.integrations.cleanrl import config_of
from telemetry.integrations.verl import END_NOT_LOGGED, VERL, run_started_payload
from telemetry.run_config import SOURCE_UNREAD_KEPT, RunConfig, changed_to

KEYS = {
    value
    for name, value in vars(run_config).items()
    if name.isupper() and isinstance(value, str) and name != "END_SUFFIX"
}


def test_every_field_is_a_key_and_has_a_meaning() -> None:
    docs = field_docs(RunConfig)
    assert {d.name for d in docs} <= KEYS
    assert KEYS - {d.name for d in docs} == {
        run_config.TOTAL_TIMESTEPS,  # read as total_steps
        run_config.RESUMED_UPDATE,  # inside resumed_from
        run_config.RUN_ID,
        run_config.RUN_DIR,
    }
    assert all(d.description for d in docs)
    assert next(d for d in docs if d.name == "max_kl").facts == {"unit": "nats"}


def test_an_empty_config_declares_nothing() -> None:
    assert RunConfig.from_config({}) == RunConfig()
    assert RunConfig().kl_estimator is UNSET and RunConfig().source_unread == ()


def test_what_the_writers_write_is_read() -> None:
    cleanrl = RunConfig.from_config(config_of({"target_kl": 0.02, "seed": 3, "total": 9}))
    assert (cleanrl.max_kl, cleanrl.kl_estimator, cleanrl.early_stop_scope) == (0.02, "k3", "epoch")
    assert cleanrl.seed == 3
    verl = RunConfig.from_config(run_started_payload(5, {"actor/pg_loss": 0.1}).config)
    assert (verl.source, verl.no_run_finished) == (VERL, END_NOT_LOGGED)
    assert (verl.kl_estimator, verl.resumed_from) == ("k1", 4)


def test_each_key_is_read_as_its_meaning_asks() -> None:
    view = RunConfig.from_config(
        {
            "max_kl": 3,
            "ref_kl_loss_estimator": None,
            "total_timesteps": 500,
            "resumed_from": {"update": 0, "checkpoint": "c.pt"},
            "vocab": ["a", "[b]"],
            "rollouts_per_update": 12,
            "clip_range": 0.2,
            "device_used": "cpu",
            "source_unread": ["events.1: truncated"],
            "outcome_unknown": "a TensorBoard log records no end",
            "someone_elses": {"max_kl": 0.5},
        }
    )
    assert view.max_kl == 3.0 and isinstance(view.max_kl, float)
    assert view.ref_kl_loss_estimator is None  # null: declared unknown, not absent
    assert view.kl_estimator is UNSET
    assert (view.total_steps, view.resumed_from, view.rollouts_per_update) == (500, 0, 12)
    assert view.vocab == ("a", "[b]") and view.clip_range == 0.2 and view.device_used == "cpu"
    assert view.source_unread == ("events.1: truncated",)
    assert view.outcome_unknown == "a TensorBoard log records no end"
    assert RunConfig.from_config({"total_steps": 7, "total_timesteps": 500}).total_steps == 7


@pytest.mark.parametrize(
    "config",
    [
        {"max_kl": 10**400},  # past a float: no threshold (not an OverflowError)
        {"max_kl": math.inf},
        {"max_kl": 0},
        {"max_kl": True},
        {"max_kl": "0.03"},
        {"total_steps": True, "total_timesteps": 0},
        {"resumed_from": {"update": -1}},
        {"resumed_from": {"update": False}},
        {"resumed_from": [3]},
        {"vocab": ["a", 3]},
        {"rollouts_per_update": 0},
        {"kl_estimator": 3},
        {"clip_range": -math.nan},
        {"max_grad_norm": 10**400},
        {"seed": 1.5},
        {"no_run_finished": ["why"]},
    ],
)
def test_a_value_of_another_shape_reads_as_not_declared(config: dict[str, Any]) -> None:
    assert RunConfig.from_config(config) == RunConfig()


def test_source_unread_keeps_its_first_lines_and_names_a_value_of_another_shape() -> None:
    many = RunConfig.from_config({"source_unread": [f"file {i}" for i in range(250)]})
    assert len(many.source_unread) == SOURCE_UNREAD_KEPT + 1
    assert many.source_unread[-1] == "... and 150 more"
    odd = RunConfig.from_config({"source_unread": {"a": 1}})
    assert odd.source_unread == ("config.source_unread is not a list of lines (dict)",)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300)
    | st.floats()
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["update", "x"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(config=st.dictionaries(st.sampled_from([*sorted(KEYS), "other"]), JSON, max_size=10))
def test_any_config_is_read_without_raising_into_the_declared_types(
    config: dict[str, Any],
) -> None:
    view = RunConfig.from_config(config)
    msgspec.convert(msgspec.to_builtins(view), RunConfig)  # every field holds its type
    assert view.max_kl is None or (math.isfinite(view.max_kl) and view.max_kl > 0)


def test_a_changed_setting_keeps_its_last_value_under_one_spelling() -> None:
    assert changed_to(run_config.CLIP_RANGE) == "clip_range_end"
