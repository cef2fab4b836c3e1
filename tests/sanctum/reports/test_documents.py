"""The report documents: a rule's tally, a run's facts and the skipped lines are one object
each, written with the same keys and values by ``check``, ``summary`` and ``diff``."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from sanctum.metrics import can_have
from sanctum.reports.documents import RuleTallyReport, RunFactsReport
from tests.sanctum.logs import KL_HOLDS, kl_breach, write_run
from tests.sanctum.recorded import run_cli

BREACH_AT = 7


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    _, out, err = run_cli(capsys, *argv, "--json")
    assert err == ""
    doc: dict[str, Any] = json.loads(out)
    return doc


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[str, str]:
    """A healthy run and one whose KL goes past critical from update ``BREACH_AT``."""
    healthy = write_run(tmp_path / "healthy" / "events.jsonl", updates=20)
    breach = write_run(
        tmp_path / "breach" / "events.jsonl", updates=20, overrides=kl_breach(BREACH_AT)
    )
    return str(healthy), str(breach)


def three_reports(
    capsys: pytest.CaptureFixture[str], two_runs: tuple[str, str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``check --json`` and ``summary --json`` of the breached run, ``diff --json`` of the
    healthy run (A) and it (B)."""
    healthy, breach = two_runs
    return (
        as_json(capsys, "check", breach),
        as_json(capsys, "summary", breach),
        as_json(capsys, "diff", healthy, breach),
    )


def test_a_rules_tally_is_the_same_object_in_check_summary_and_diff(
    capsys: pytest.CaptureFixture[str], two_runs: tuple[str, str]
) -> None:
    check, summary, diff = three_reports(capsys, two_runs)
    assert check["rules"] == summary["rules"] == [rule["b"] for rule in diff["rules"]]
    assert as_json(capsys, "check", two_runs[0])["rules"] == [rule["a"] for rule in diff["rules"]]
    keys = {f.name for f in fields(RuleTallyReport)}
    assert all(set(tally) == keys for tally in check["rules"])
    kl = next(tally for tally in check["rules"] if tally["metric"] == "approx_kl")
    # critical once it held KL_HOLDS updates, then for as many updates as the breach lasts
    assert (kl["first_critical"], kl["updates_critical"]) == (BREACH_AT + KL_HOLDS - 1, KL_HOLDS)
    assert (kl["updates_measured"], kl["final_update"]) == (20, 19)
    row = next(row for row in check["rows"] if row["name"] == "approx_kl")  # the gate's row
    assert all(row[key] == kl[key] for key in ("worst", "first_critical", "updates_critical"))


def test_a_runs_facts_are_the_same_object_in_check_summary_and_diff(
    capsys: pytest.CaptureFixture[str], two_runs: tuple[str, str]
) -> None:
    check, summary, diff = three_reports(capsys, two_runs)
    assert check["run"] == summary["run"] == diff["b"]["run"]
    assert set(check["run"]) == {f.name for f in fields(RunFactsReport)}
    assert (check["run"]["updates"], check["run"]["status"]) == (20, "completed")
    # the gate's own keys stay, the same facts
    assert (check["run_id"], check["updates"], check["status"]) == (
        check["run"]["run_id"],
        check["run"]["updates"],
        check["run"]["status"],
    )
    assert summary["earlier_runs"] == diff["b"]["earlier_runs"] == []


SKIPPED_KEYS = ("skipped_lines", "skipped_malformed", "skipped_unknown_kind", "skipped")


def test_the_skipped_lines_are_the_same_keys_in_check_and_summary(
    capsys: pytest.CaptureFixture[str], corrupt_log: Path, unknown_kind_log: Path
) -> None:
    for log, malformed, unknown in ((corrupt_log, 2, 0), (unknown_kind_log, 0, 2)):
        check = as_json(capsys, "check", str(log), "--allow-skipped", "--allow-unfinished")
        summary = as_json(capsys, "summary", str(log))
        assert [check[k] for k in SKIPPED_KEYS] == [summary[k] for k in SKIPPED_KEYS]
        counts = (check["skipped_lines"], check["skipped_malformed"], check["skipped_unknown_kind"])
        assert counts == (malformed + unknown, malformed, unknown)
        assert all(set(line) == {"line", "kind", "type", "detail"} for line in check["skipped"])


def test_every_text_report_shows_the_tally_its_json_writes(
    capsys: pytest.CaptureFixture[str], two_runs: tuple[str, str]
) -> None:
    """The text formatters render the same document: each rule's line in ``check``,
    ``summary`` and ``diff`` shows the tally's name, values and first critical update."""
    healthy, breach = two_runs
    tallies = as_json(capsys, "check", breach)["rules"]
    texts = {
        cmd: run_cli(capsys, *argv)[1]
        for cmd, argv in (
            ("check", ("check", breach)),
            ("summary", ("summary", breach)),
            ("diff", ("diff", breach, healthy)),
        )
    }
    measured = {t["metric"] for t in tallies if t["updates_measured"]}
    for tally in tallies:
        if not can_have(tally["metric"], measured):  # the reference KL of a CartPole run
            assert tally["label"] not in texts["check"] + texts["summary"]
            continue
        name, first = f"{tally['label']} {tally['metric']}", tally["first_critical"]
        lines = {cmd: _line_of(text, name) for cmd, text in texts.items()}
        crit = "-" if first is None else str(first)
        assert lines["check"].split()[-2:] == [crit, "pass" if first is None else "FAIL"]
        assert tally["worst_text"] in lines["check"].split()
        summary_cells = lines["summary"].split()
        assert summary_cells[-5].rstrip("!") == tally["final_text"]
        assert summary_cells[-4:] == [
            tally["worst_text"],
            str(tally["updates_warning"]),
            str(tally["updates_critical"]),
            crit,
        ]
        diff_cells = lines["diff"].split()
        assert diff_cells[-6] == tally["final_text"] and diff_cells[-4] == tally["worst_text"]
        assert diff_cells[-1].split("/")[0] == crit


def _line_of(text: str, name: str) -> str:
    (line,) = [line for line in text.splitlines() if line.strip().startswith(f"{name} ")]
    return line
