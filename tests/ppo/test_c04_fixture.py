"""C-04: fixed input vectors give the same KL metrics and step summaries to the last digit.

The expected file was produced once by ``fixtures/make_c04.py``; the comparison is exact
equality of every float (no tolerance), on every run and within a run.
"""

from __future__ import annotations

import json

from .c04_scenario import EXPECTED, SCENARIOS, load_inputs, run


def test_c04_fixture_vectors_reproduce_expected_metrics_exactly() -> None:
    expected = json.loads(EXPECTED.read_text())
    got = json.loads(json.dumps(run(load_inputs())))  # the same float round trip as the file
    assert set(got) == set(SCENARIOS) == set(expected)
    for name in SCENARIOS:
        for update, (g, e) in enumerate(zip(got[name], expected[name], strict=True)):
            assert g == e, f"scenario {name} update {update} differs"


def test_c04_repeated_runs_in_one_process_are_identical() -> None:
    inputs = load_inputs()
    assert run(inputs) == run(inputs)


def test_c04_fixture_covers_stops_in_both_scopes_and_the_penalty() -> None:
    expected = json.loads(EXPECTED.read_text())
    reasons = [r.get("early_stop_reason") for r in expected["minibatch_scope"]]
    assert reasons[0] == (
        "approx_kl 0.0165 > max_kl 0.0040 at epoch 0 minibatch 3 (minibatch not applied)"
    )
    assert expected["epoch_scope"][0]["early_stop"]["scope"] == "epoch"
    coefs = [r["kl_coef"] for r in expected["penalty_adaptive_dual_clip"]]
    assert coefs == [0.5, 1.0, 2.0]
