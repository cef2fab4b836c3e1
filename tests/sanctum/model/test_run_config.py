"""What Sanctum reads of run_started.config: a value only when it has the shape its key
promises."""

from __future__ import annotations

import math

from sanctum.model.run_config import (
    NO_END,
    OUTCOME_UNKNOWN,
    max_kl_of,
    no_end_of,
    outcome_unknown_declared,
    outcome_unknown_of,
    total_steps_of,
)


def test_config_facts() -> None:
    assert total_steps_of({"total_steps": 1000}) == 1000
    assert total_steps_of({"total_timesteps": 500}) == 500
    assert total_steps_of({"total_steps": True}) is None
    assert total_steps_of({}) is None
    assert max_kl_of({"max_kl": 0.03}) == 0.03
    assert max_kl_of({"max_kl": None}) is None  # early stop disabled
    assert max_kl_of({"max_kl": 0}) is None
    assert max_kl_of({"max_kl": math.inf}) is None
    assert max_kl_of({}) is None


def test_the_words_a_config_gives_for_a_missing_end_are_read_only_as_words() -> None:
    assert outcome_unknown_of({OUTCOME_UNKNOWN: "TensorBoard holds no end"}) == (
        "TensorBoard holds no end"
    )
    assert outcome_unknown_of({OUTCOME_UNKNOWN: True}) is None
    assert outcome_unknown_of({}) is None
    assert no_end_of({NO_END: "verl records no end"}) == "verl records no end"
    assert no_end_of({NO_END: ["a"]}) is None
    assert outcome_unknown_declared({OUTCOME_UNKNOWN: None})  # an import all the same
    assert not outcome_unknown_declared({})
