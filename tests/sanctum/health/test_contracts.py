"""The range contracts are the bounds of the contract's field definitions, nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

from sanctum.cli import main
from sanctum.health.contracts import (
    CONTRACTS,
    KL_FIELDS,
    check_column,
    check_frozen,
    check_kl_max,
    kl_contracts,
    number_text,
)
from sanctum.metrics import PPO_METRICS
from telemetry.events import KLMeasure, PPOUpdatePayload, field_docs
from tests.cli_runner import run_main
from tests.sanctum.logs import write_run


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


def test_updates_that_change_nothing_are_a_frozen_run() -> None:
    """A gradient norm and a KL of exactly 0 from the third update in a row on; a zero norm
    alone (a placeholder some trainers log) or a zero KL alone is not; batches carry the
    streak."""
    grad = [0.5, 0.0, 0.0, 0.0, 0.0, 0.3, 0.0]
    kl = [0.01, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    found, streak = check_frozen(0, list(range(7)), grad, kl)
    assert [v.update for v in found] == [3, 4] and streak == 1
    assert found[0].message.startswith("grad_norm and the KL 0 for 3 updates in a row: ")
    assert check_frozen(0, [0, 1, 2, 3], [0.0] * 4, [0.01] * 4) == ([], 0)
    assert check_frozen(0, [0, 1, 2, 3], [0.2] * 4, [0.0] * 4) == ([], 0)
    assert check_frozen(0, [0, 1, 2], [0.0, 0.0, None], [0.0, 0.0, 0.0]) == ([], 0)
    carried, streak = check_frozen(2, [9], [0.0], [0.0])
    assert [v.update for v in carried] == [9] and streak == 3


def test_a_frozen_run_fails_the_check_as_a_bug(tmp_path: Path) -> None:
    frozen = {"grad_norm": 0.0, "approx_kl": 0.0, "clip_fraction": 0.0}
    run = write_run(tmp_path / "e.jsonl", updates=8, overrides=lambda u: frozen if u >= 4 else {})
    report = json.loads(run_main(main, "check", run, "--json").stdout)
    assert report["exit_code"] == 1
    assert report["verdict_text"] == "FAIL: Bug 2x", report["verdict_text"]
    (bug,) = [r for r in report["rows"] if r["name"] == "bug"]
    assert "grad_norm and the KL 0 for 3 updates in a row" in bug["message"]


def test_a_kl_mean_above_its_maximum_is_a_bug(tmp_path: Path) -> None:
    found = check_kl_max([0, 1, 2, 3], [0.01, 5.0, 0.02, None], [0.02, 2.6e-6, 0.02, 0.5])
    assert [(v.update, v.message) for v in found] == [
        (1, "approx_kl 5 above approx_kl_max 2.6e-06: a mean above its maximum")
    ]
    spike = {"approx_kl": 5.0, "approx_kl_max": 2.6e-6}  # the last update: no median sees it
    run = write_run(tmp_path / "e.jsonl", updates=4, overrides=lambda u: spike if u == 3 else {})
    report = json.loads(run_main(main, "check", run, "--json").stdout)
    assert (report["exit_code"], report["verdict_text"]) == (1, "FAIL: Bug 1x")


def test_a_count_no_int64_holds_makes_its_line_unreadable_and_a_negative_one_a_bug(
    tmp_path: Path,
) -> None:
    """A count of ``ppo_update`` past int64 (a 400-digit one: no float holds it) is not a
    number to judge: its line is unreadable and the gate fails naming the field, the
    summary and the dashboard's frame name it too, none of them crashes; a negative count
    int64 holds is a logging bug."""
    path = tmp_path / "e.jsonl"
    run = write_run(path, updates=4)
    lines = path.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b'"ppo_update"' in line)
    lines[at] = re.sub(
        rb'"minibatches_completed":\d+', b'"minibatches_completed":-' + b"9" * 400, lines[at]
    )
    path.write_bytes(b"".join(lines))
    report = json.loads(run_main(main, "check", run, "--json").stdout)
    assert (report["exit_code"], report["verdict_text"]) == (1, "FAIL: unreadable 1x")
    unread = [r for r in report["rows"] if "$.payload.minibatches_completed" in r["message"]]
    assert [r["passed"] for r in unread] == [False], report["rows"]
    assert "minibatches_completed" in run_main(main, "summary", run).stdout
    assert "FAIL: unreadable 1x" in run_main(main, "--once", run).stdout
    negative = write_run(
        tmp_path / "n.jsonl",
        updates=4,
        overrides=lambda u: {"minibatches_completed": -3} if u == 2 else {},
    )
    report = json.loads(run_main(main, "check", negative, "--json").stdout)
    (bug,) = [r for r in report["rows"] if r["name"] == "bug"]
    assert "minibatches_completed -3 outside >= 0" in bug["message"], bug["message"]


def test_an_integer_too_long_to_read_is_shown_by_its_size() -> None:
    assert number_text(-(10**400)) == "-<an integer of 401 digits>"
    assert (number_text(2**63 - 1), number_text(0.000123456789)) == (
        "9223372036854775807",
        "0.000123457",
    )
