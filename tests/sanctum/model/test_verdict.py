"""One verdict for a run: ``check``, ``summary``, ``--once``, ``diff``, the run table and the
banner say the same of the same log.

Five recorded runs: healthy, warned (KL at warning, never critical), failed (KL critical
to the end), a recovered spike (KL critical for three updates, healthy for the last four)
and an interrupted one. The level at the latest update differs from the run's verdict in
two of them (the recovered spike reads OK now; the warned run too): every view must give
the run's verdict, ``check``'s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Label

from sanctum.cli import main
from sanctum.health.levels import Level
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.checks import judge_rows
from sanctum.model.verdict import CheckRow, verdict_of
from sanctum.tui.app import SanctumApp
from sanctum.tui.runs_app import RunsApp
from sanctum.tui.widgets import StatusBanner
from sanctum.tui.widgets.runs import RunTable
from telemetry.eventlog import EventLogReader
from tests.sanctum.app_support import wait_until
from tests.sanctum.logs import (
    KL_WARNING,
    RunLog,
    kl_breach,
    rollout,
    write_failed_then_completed,
    write_lost_updates,
    write_run,
    write_source_unread,
    write_with_foreign_updates,
)
from tests.sanctum.tui.test_runs_app import wait_for

FIXTURES: dict[str, dict[str, Any]] = {
    "healthy": {},
    "warned": {"overrides": kl_breach(3, KL_WARNING)},  # at warning for updates 5-7
    "failed": {"overrides": kl_breach(7, updates=5)},  # critical for updates 9-11
    "recovered": {"overrides": kl_breach(3)},  # critical for updates 5-7, then healthy
    "interrupted": {"updates": 8, "finish": "interrupted"},
}
"""Each KL breach lasts 3 updates or more: the KL rule's median of 5 per clip fraction is
past a line from the third such update, and for 2 updates after it ends. The breaches pass
twice the runs' max_kl (0.03) with no early stop recorded: each also warns that the early
stop did not fire (``KL past max_kl``), which a failure's words leave out."""
COVERAGE = (
    " · judged: KL, Clip, Grad, EV, Value loss, Entropy shift (6 of 7 rules; Entropy not measured)"
)
"""What an OK or WARN of these runs rests on: they log no entropy_normalized."""
EXPECTED = {
    "healthy": ("OK", "OK" + COVERAGE),
    "warned": ("WARN", "WARN: KL 3x, KL past max_kl 3x" + COVERAGE),
    "failed": ("FAIL", "FAIL: KL 3x"),
    "recovered": ("FAIL", "FAIL: KL 3x"),
    "interrupted": ("FAIL", "FAIL: interrupted"),
}
"""(word, text) of each run's verdict under ``--fail-on critical``."""
STRICT = {
    "healthy": ("OK", "OK" + COVERAGE),
    "warned": ("FAIL", "FAIL: KL 3x, KL past max_kl 3x"),
    "failed": ("FAIL", "FAIL: KL 3x, KL past max_kl 5x"),
    "recovered": ("FAIL", "FAIL: KL 3x, KL past max_kl 3x"),
    "interrupted": ("FAIL", "FAIL: interrupted"),
}
"""The same under ``--fail-on warning``: the warned run fails."""
TABLE = {
    "healthy": "OK · 6/7 rules",
    "warned": "WARN: KL 3x · 6/7",  # cut to the column: the (+1) gives way first
    "failed": "FAIL: KL 3x",
    "recovered": "FAIL: KL 3x",
    "interrupted": "FAIL: interrupted",
}
"""The verdict in the run table's column: the rules' count cut to fit."""
BANNER = {
    "healthy": "OK · 6/7 rules",
    "warned": "WARN: KL 3x (+1) · 6/7 rules",
    "failed": "FAIL: KL 3x",
    "recovered": "FAIL: KL 3x",
    "interrupted": "FAIL: interrupted",
}
"""The verdict in the banner: the rules' count; the health panel's facts name them."""


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    """The five runs, each in its own folder under ``tmp_path/runs``."""
    folders = {}
    for name, kwargs in FIXTURES.items():
        events = tmp_path / "runs" / name / "events.jsonl"
        write_run(events, **{"updates": 12, **kwargs})
        folders[name] = events.parent
    return folders


def json_of(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    main(list(argv))
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def word_and_text(doc: Mapping[str, Any]) -> tuple[str, str]:
    return doc["verdict"], doc["verdict_text"]


@pytest.mark.parametrize("fail_on", ["critical", "warning"])
def test_check_summary_once_and_diff_give_each_run_checks_verdict(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], fail_on: str
) -> None:
    expected = EXPECTED if fail_on == "critical" else STRICT
    policy = ("--fail-on", fail_on)
    for name, run in runs.items():
        check = json_of(capsys, "check", str(run), "--json", *policy)
        assert check["passed"] is (expected[name][0] != "FAIL"), name
        assert word_and_text(check) == expected[name], name
        summary = json_of(capsys, "summary", str(run), "--json", *policy)
        assert word_and_text(summary) == expected[name], name
        assert summary["verdict_so_far"] is False
        once = json_of(capsys, str(run), "--once", "--json", *policy)
        assert word_and_text(once) == expected[name], name
        assert once["worst_level"] == check["verdict_level"]
        diff = json_of(capsys, "diff", str(runs["healthy"]), str(run), "--json", *policy)
        assert word_and_text(diff["b"]) == expected[name], name


def test_the_level_now_is_kept_beside_the_runs_verdict(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The recovered spike is healthy at its latest update: that is the 'now', not the run."""
    once = json_of(capsys, str(runs["recovered"]), "--once", "--json")
    assert (once["now_verdict"], once["now_level"]) == ("OK", "healthy")
    assert (once["verdict_text"], once["worst_level"]) == ("FAIL: KL 3x", "critical")
    summary = json_of(capsys, "summary", str(runs["recovered"]), "--json")
    assert summary["latest_verdict"] == "OK"
    main(["summary", str(runs["recovered"])])
    text = capsys.readouterr().out
    assert "verdict   FAIL: KL 3x (as sanctum check --fail-on critical); latest update OK" in text
    main(["check", str(runs["recovered"])])
    assert capsys.readouterr().out.endswith("\nFAIL: KL 3x\n")  # check's last line
    main([str(runs["recovered"]), "--once"])
    assert capsys.readouterr().out.splitlines()[1].startswith("FAIL: KL 3x  KL 0.005")


async def test_the_run_table_gives_each_run_checks_verdict(runs: dict[str, Path]) -> None:
    paths = [run / "events.jsonl" for run in runs.values()]
    app = RunsApp(paths, DEFAULT_THRESHOLDS)
    async with app.run_test(size=(140, 36)) as pilot:
        await wait_for(
            pilot, lambda a: all(r.update is not None for r in a.board.rows), "every run"
        )
        header, *lines = app.query_one(RunTable).text()
        assert "verdict" in header.split()
        for name, (word, text) in EXPECTED.items():
            line = next(line for line in lines if line.split()[1] == name)
            assert f" {TABLE[name]} " in line, line
            row = next(r for r in app.board.rows if r.label == name)  # type: ignore[union-attr]
            assert (row.verdict.word, row.verdict.text) == (word, text)
        interrupted = next(line for line in lines if line.split()[1] == "interrupted")
        assert "■ INTERRUPTED" in interrupted and "FAIL: interrupted" in interrupted


def banner(app: SanctumApp) -> tuple[str | None, str]:
    """The banner's 'now' (None when hidden) and its run verdict."""
    bar = app.query_one(StatusBanner)
    now = bar.query_one("#now-verdict", Label)
    run = str(bar.query_one("#verdict", Label).content).strip()
    return (str(now.content) if now.display else None), run


@pytest.mark.parametrize("name", list(FIXTURES))
async def test_the_banner_of_a_finished_run_gives_checks_verdict(
    runs: dict[str, Path], name: str
) -> None:
    app = SanctumApp(runs[name] / "events.jsonl", DEFAULT_THRESHOLDS)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda s: s.run.status not in (None, "running"), "the finish")
        await pilot.pause()
        assert banner(app) == (None, BANNER[name])
        if COVERAGE in EXPECTED[name][1]:  # the health panel says which rules, in full
            facts = " ".join(str(app.query_one("#health-facts").content).split())
            assert "judged" + COVERAGE.removeprefix(" · judged:") in facts


async def test_a_live_run_shows_now_and_the_verdict_so_far(tmp_path: Path) -> None:
    """While the run is live, the banner says what happens now and what has happened: a
    spike that passed stays in sight. Silent past its stall limit, the run stalled (now)
    and, if it never speaks again, was cut off: judged as check judges it."""
    path = tmp_path / "events.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(12):
        log.update(u, **kl_breach(4)(u))  # critical for updates 6-8
    clock = {"now": log.now}
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: clock["now"])
    async with app.run_test(size=(120, 36)) as pilot:
        snap = await wait_until(pilot, lambda s: s.update == 11, "update 11")
        assert banner(app) == ("now OK ·", "run FAIL: KL 3x")
        assert snap.run_verdict.so_far
        clock["now"] = log.now + 121.0  # past the 120 s floor (10 x its 2 s pace is less)
        await wait_until(pilot, lambda s: not s.run_verdict.so_far, "the stall")
        await pilot.pause()
        assert banner(app) == ("now FAIL: Stall ·", "run FAIL: KL 3x (+1)")
        assert app.snapshot is not None
        assert app.snapshot.run_verdict.text == "FAIL: KL 3x, unfinished"
    log.close()


def test_a_live_run_is_judged_so_far_and_a_cut_off_one_as_check_judges_it(
    tmp_path: Path,
) -> None:
    path = write_run(tmp_path / "e.jsonl", updates=12, finish=None)
    agg = SanctumAggregator(DEFAULT_THRESHOLDS)
    for batch in EventLogReader(path).batches():
        agg.handle_batch(batch)
    last = agg.run.last_event_ts
    assert last is not None
    so_far = agg.run_verdict(last + 5.0)
    assert (so_far.word, so_far.items, so_far.so_far) == ("OK", (), True)
    assert so_far.text == "OK" + COVERAGE
    cut_off = agg.run_verdict(last + 10_000.0)
    assert (cut_off.word, cut_off.items, cut_off.so_far) == ("FAIL", ("unfinished",), False)
    assert agg.run_verdict(None).text == "FAIL: unfinished"  # a file, judged as a file


def rule_row(warning: int = 0, critical: int = 0, judged: int = 5, passed: bool = True) -> CheckRow:
    return CheckRow(
        "approx_kl",
        "KL",
        passed,
        "",
        rule="approx_kl > 0.04 / > 0.1",
        updates_warning=warning,
        updates_critical=critical,
        updates_judged=judged,
        updates_measured=judged,
        counted=0 if passed else critical,
    )


def test_the_verdict_word_follows_the_rows() -> None:
    stall = CheckRow("stall", "stall", False, "", verdict_name="Stall", counted=2)
    warn_anomaly = CheckRow(
        "anomalies", "anomalies", True, "", updates_warning=1, verdict_name="anomaly", warns=True
    )
    cases: list[tuple[list[CheckRow], str, Level]] = [
        ([rule_row(judged=0)], "PENDING", Level.PENDING),
        ([rule_row()], "OK", Level.HEALTHY),
        ([rule_row(warning=3)], "WARN: KL 3x", Level.WARNING),
        (
            [rule_row(judged=0), warn_anomaly],
            "WARN: anomaly 1x · judged: nothing (0 of 1 rules; KL not measured)",
            Level.WARNING,
        ),
        (
            [rule_row(warning=3, critical=22, passed=False), stall],
            "FAIL: KL 22x, Stall 2x",
            Level.CRITICAL,
        ),
    ]
    for rows, text, level in cases:
        verdict = verdict_of(rows)
        assert (verdict.text, verdict.level) == (text, level)
    long = verdict_of([rule_row(critical=22, passed=False), stall])
    assert long.short == "FAIL: KL 22x (+1)"
    assert long.fields() == {
        "verdict": "FAIL",
        "verdict_text": "FAIL: KL 22x, Stall 2x",
        "verdict_level": "critical",
        "verdict_so_far": False,
        "verdict_judged_on": ["KL"],
        "verdict_unmeasured": [],
    }


def test_a_one_line_verdict_names_the_rule_that_fired_most_or_how_the_run_ended() -> None:
    """examples/unstable.toml's banner read ``FAIL: KL 8x (+1)`` while Entropy was critical
    for 379 updates: the short form names the rule that fired in the most updates (how the
    run ended is the banner's connection word)."""
    kl = rule_row(critical=8, passed=False)
    entropy = replace(rule_row(critical=379, passed=False), name="entropy", label="Entropy")
    assert verdict_of([kl, entropy]).short == "FAIL: Entropy 379x (+1)"
    assert verdict_of([kl, entropy]).text == "FAIL: KL 8x, Entropy 379x"  # rows in order
    ended = CheckRow("run_finished", "finished", False, "", verdict_name="interrupted")
    assert verdict_of([kl, entropy, ended]).short == "FAIL: Entropy 379x (+2)"
    assert verdict_of([ended]).short == "FAIL: interrupted"
    warned = replace(rule_row(warning=9), name="entropy", label="Entropy")
    assert verdict_of([rule_row(warning=2), warned]).short == "WARN: Entropy 9x (+1)"


def test_an_ok_says_which_rules_it_rests_on_when_some_measured_nothing() -> None:
    clip = CheckRow("clip_fraction", "Clip", True, "", rule="clip_fraction > 0.5")
    grad = CheckRow("grad_norm", "Grad", True, "", rule="grad_norm jump")
    ref_kl = CheckRow("ref_kl", "RefKL", True, "", rule="ref_kl > 0.6", optional=True)
    verdict = verdict_of([rule_row(), clip, grad, ref_kl])
    assert verdict.text == "OK · judged: KL (1 of 3 rules; Clip, Grad not measured)"
    assert verdict.short == "OK · 1/3 rules"
    assert (verdict.judged_on, verdict.unmeasured) == (("KL",), ("Clip", "Grad"))
    warned = verdict_of([rule_row(warning=2), clip])
    assert warned.text == "WARN: KL 2x · judged: KL (1 of 2 rules; Clip not measured)"
    failed = verdict_of([rule_row(critical=2, passed=False), clip])
    assert failed.text == "FAIL: KL 2x"  # a failure rests on its rows
    measured_ref = replace(ref_kl, updates_measured=4)
    assert verdict_of([rule_row(), measured_ref]).text == "OK"


# -- what the gate cannot vouch for fails the same in every view ---------------------------

DOUBTFUL: dict[str, tuple[Callable[[Path], Path], str]] = {
    "lost": (write_lost_updates, "FAIL: lost 20x"),
    "foreign": (write_with_foreign_updates, "FAIL: other run 40x"),
    "failed-then-completed": (write_failed_then_completed, "FAIL: run failed"),
    "source-unread": (write_source_unread, "FAIL: source unread 1x"),
}
"""A log that lost 20 of its 40 updates, one holding 40 critical updates of another run,
a run that reported failed and then completed, an import that could not read its source:
each fails check, and every view says so with check's words."""


@pytest.fixture
def doubtful(tmp_path: Path) -> dict[str, Path]:
    folders = {}
    for name, (write, _) in DOUBTFUL.items():
        folders[name] = write(tmp_path / "runs" / name / "events.jsonl").parent
    return folders


def test_every_view_fails_a_log_the_gate_cannot_vouch_for(
    doubtful: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    healthy = write_run(doubtful["lost"].parent / "healthy" / "events.jsonl", updates=12)
    for name, run in doubtful.items():
        expected = ("FAIL", DOUBTFUL[name][1])
        check = json_of(capsys, "check", str(run), "--json")
        assert (check["passed"], word_and_text(check)) == (False, expected), name
        summary = json_of(capsys, "summary", str(run), "--json")
        assert word_and_text(summary) == expected, name
        assert summary["doubts"], name  # the summary says why, not only the word
        once = json_of(capsys, str(run), "--once", "--json")
        assert word_and_text(once) == expected, name
        diff = json_of(capsys, "diff", str(healthy.parent), str(run), "--json")
        assert word_and_text(diff["b"]) == expected, name
    summary = json_of(capsys, "summary", str(doubtful["foreign"]), "--json")
    assert (summary["foreign_runs"], summary["foreign_events"]) == ({"intruder": 40}, 40)
    main(["summary", str(doubtful["foreign"])])
    assert (
        "doubt     40 events of another run in this log: intruder (40x); the log is not "
        "this run's alone, and the gate does not pass a mix of runs"
    ) in capsys.readouterr().out.splitlines()


async def test_the_run_table_and_banner_fail_a_log_the_gate_cannot_vouch_for(
    doubtful: dict[str, Path],
) -> None:
    app = RunsApp([run / "events.jsonl" for run in doubtful.values()], DEFAULT_THRESHOLDS)
    async with app.run_test(size=(160, 36)) as pilot:
        await wait_for(
            pilot, lambda a: all(r.update is not None for r in a.board.rows), "every run"
        )
        for name, (_, text) in DOUBTFUL.items():
            row = next(r for r in app.board.rows if r.label == name)  # type: ignore[union-attr]
            assert row.verdict.text == text, name
    for name, run in doubtful.items():
        one = SanctumApp(run / "events.jsonl", DEFAULT_THRESHOLDS)
        async with one.run_test(size=(120, 36)) as pilot:
            await wait_until(pilot, lambda s: s.run.status not in (None, "running"), "the end")
            await pilot.pause()
            assert banner(one) == (None, DOUBTFUL[name][1]), name


def judged(path: Path) -> SanctumAggregator:
    agg = SanctumAggregator(DEFAULT_THRESHOLDS)
    for batch in EventLogReader(path).batches():
        agg.handle_batch(batch)
    return agg


def test_nan_or_inf_in_any_kind_or_nested_field_fails_the_nonfinite_row(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "run" / "events.jsonl")
    log.start()
    for u in range(6):
        log.update(u, reward_components={"format": math.nan if u == 4 else 1.0})
    log.emit(rollout(6, steps_per_second=math.inf))
    log.finish(duration=math.nan)
    log.close()
    agg = judged(log.path)
    row = next(r for r in judge_rows(agg, Level.CRITICAL, False) if r.name == "nonfinite")
    assert not row.passed and (row.counted, row.first_critical) == (3, 4)
    assert row.message == (
        "NaN or Inf in 3 events (1 ppo_update, 1 rollout, 1 run_finished): "
        "ppo_update.reward_components.format (1x, first at update 4), "
        "rollout.steps_per_second (1x, first at update 6), run_finished.duration_seconds (1x)"
    )
    assert agg.run_verdict(None, Level.CRITICAL).text == "FAIL: non-finite 3x"


def test_an_anomaly_without_an_update_is_worded_without_one(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "run" / "events.jsonl")
    log.start()
    log.update(0)
    log.anomaly(update=None)
    log.finish()
    log.close()
    row = next(
        r for r in judge_rows(judged(log.path), Level.CRITICAL, False) if r.name == "anomalies"
    )
    assert row.message.startswith("1 critical, 0 warning; first: grad_norm")
    assert "None" not in row.message


def test_every_view_gives_a_nested_nan_the_checks_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def nested_nan(u: int) -> dict[str, Any]:
        return {"reward_components": {"format": math.nan}} if u == 5 else {}

    run = write_run(tmp_path / "run" / "events.jsonl", updates=12, overrides=nested_nan).parent
    healthy = write_run(tmp_path / "healthy" / "events.jsonl", updates=12).parent
    expected = ("FAIL", "FAIL: non-finite 1x")
    assert word_and_text(json_of(capsys, "check", str(run), "--json")) == expected
    assert word_and_text(json_of(capsys, "summary", str(run), "--json")) == expected
    assert word_and_text(json_of(capsys, str(run), "--once", "--json")) == expected
    diff = json_of(capsys, "diff", str(healthy), str(run), "--json")
    assert word_and_text(diff["b"]) == expected
