"""C-04: fixed input vectors give the same KL metrics and step summaries on every CPU.

The expected file was produced once by ``fixtures/make_reference_vectors.py``. Decisions
are compared exactly: whether and where an update stopped, the reason text, what was applied or
skipped, every count. Floats are compared with a tight relative tolerance, because
another CPU (or another BLAS path on it) may round the last bits of a float32 reduction
differently; within one process two runs must still be bit-identical.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.ppo.reference_vectors import EXPECTED, SCENARIOS, load_inputs, run

REL, ABS = 1e-6, 1e-7
"""Cross-machine tolerance on floats. The statistics are float32 (epsilon 1.2e-7): another
CPU's reduction order moves a value of order 1 by a few 1e-8, and a mean of terms that
cancel (the policy loss of normalised advantages, about -0.0056 here) by as much in
absolute terms, which is 4e-6 of it. Measured between the Intel machine that first wrote
the fixture and an AMD EPYC: at most 2.2e-8 absolute, 4e-6 relative (that policy loss)."""


def assert_matches(got: Any, expected: Any, where: str) -> None:
    """Exact for everything but floats, which agree to REL (NaN with NaN)."""
    if isinstance(expected, float) and isinstance(got, float):
        if math.isnan(expected):
            assert math.isnan(got), where
        else:
            assert got == pytest.approx(expected, rel=REL, abs=ABS), where
    elif isinstance(expected, dict) and isinstance(got, dict):
        assert set(got) == set(expected), f"{where}: fields differ"
        for key in expected:
            assert_matches(got[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list) and isinstance(got, list):
        assert len(got) == len(expected), f"{where}: lengths differ"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_matches(g, e, f"{where}[{i}]")
    else:
        assert got == expected, where


def test_reference_vectors_reproduce_the_expected_metrics_on_any_cpu() -> None:
    expected = json.loads(EXPECTED.read_text())
    got = json.loads(json.dumps(run(load_inputs())))  # the same float round trip as the file
    assert set(got) == set(SCENARIOS) == set(expected)
    for name in SCENARIOS:
        assert_matches(got[name], expected[name], name)


def test_reference_decisions_are_exact() -> None:
    """Stop or not, where, why, and what was applied: no tolerance at all."""
    expected = json.loads(EXPECTED.read_text())
    got = json.loads(json.dumps(run(load_inputs())))
    decisions = (
        "early_stopped",
        "early_stop_reason",
        "epochs_completed",
        "minibatches_completed",
        "minibatches_planned",
        "skipped_steps",
        "nonfinite_ratios",
    )
    for name in SCENARIOS:
        for g, e in zip(got[name], expected[name], strict=True):
            assert {k: g.get(k) for k in decisions} == {k: e.get(k) for k in decisions}
            stop_g, stop_e = g.get("early_stop") or {}, e.get("early_stop") or {}
            for key in ("epoch", "minibatch", "scope", "applied", "threshold"):
                assert stop_g.get(key) == stop_e.get(key)


def test_repeated_runs_in_one_process_are_identical() -> None:
    inputs = load_inputs()
    assert run(inputs) == run(inputs)


def test_a_last_bit_difference_is_within_tolerance_but_a_real_one_is_not() -> None:
    """The comparison itself: float32 rounding passes, a change in the 4th digit fails."""
    assert_matches({"approx_kl": 0.0123456789}, {"approx_kl": 0.0123456790}, "kl")
    with pytest.raises(AssertionError):
        assert_matches({"approx_kl": 0.01235}, {"approx_kl": 0.01234}, "kl")


def test_reference_vectors_cover_stops_in_both_scopes_and_the_penalty() -> None:
    expected = json.loads(EXPECTED.read_text())
    reasons = [r.get("early_stop_reason") for r in expected["minibatch_scope"]]
    assert reasons[0] == (
        "approx_kl 0.0165 > max_kl 0.0040 at epoch 0 minibatch 3 (minibatch not applied)"
    )
    assert expected["epoch_scope"][0]["early_stop"]["scope"] == "epoch"
    coefs = [r["kl_coef"] for r in expected["penalty_adaptive_dual_clip"]]
    assert coefs == [0.5, 1.0, 2.0]
