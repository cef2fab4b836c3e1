"""The gate never passes a log it cannot vouch for: a run whose head is missing, a run
started or finished more than once, a finished run that judged no update, ``seq`` that
does not increase, a ``run_finished.updates`` the log contradicts, and bytes after the
last newline once nothing can still be writing them. Every view shows the same verdict,
and ``--once`` refuses what ``check`` cannot judge.

Each log is recorded by the project's recorder (through the test builder), then edited
as a hostile or broken writer would leave it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.model.aggregator import SanctumAggregator
from sanctum.reports.check import CheckResult, run_check
from sanctum.reports.check_report import to_dict
from telemetry.eventlog import MAX_LINE_BYTES, EventLogReader
from tests.sanctum.logs import CONFIG, write_run

Events = list[dict[str, Any]]


def check(path: Path, **kwargs: Any) -> CheckResult:
    return run_check(path, DEFAULT_THRESHOLDS, **kwargs)


def row(result: CheckResult, name: str) -> dict[str, Any]:
    return next(r for r in to_dict(result)["rows"] if r["name"] == name)


def edited(path: Path, edit: Callable[[Events], Events], **run: Any) -> Path:
    """A healthy run of 10 updates (completed) recorded at ``path``, then edited."""
    write_run(path, updates=run.pop("updates", 10), **run)
    events = [json.loads(line) for line in path.read_bytes().splitlines()]
    path.write_text("".join(json.dumps(e) + "\n" for e in edit(events)))
    return path


def renumbered(events: Events) -> Events:
    for seq, event in enumerate(events, 1):
        event["seq"] = seq
    return events


def head_deleted(events: Events) -> Events:
    """The first 4 updates (and the rollouts that fed them) deleted, seq renumbered."""
    return renumbered(
        [e for e in events if e["type"] == "run_started" or e["payload"].get("update", 99) >= 4]
    )


def started_again(events: Events) -> Events:
    again = json.loads(json.dumps(events[0]))
    again["payload"]["env_id"] = "Acrobot-v1"
    return renumbered([*events[:9], again, *events[9:]])


def interrupted_then_completed(events: Events) -> Events:
    stop = json.loads(json.dumps(events[-1]))
    stop["payload"].update(status="interrupted", reason="SIGTERM")
    return renumbered([*events[:-1], stop, events[-1]])


def completed_twice(events: Events) -> Events:
    return renumbered([*events, json.loads(json.dumps(events[-1]))])


def no_update(events: Events) -> Events:
    events[-1]["payload"].update(updates=0, global_step=0)
    return renumbered([events[0], events[-1]])


def seq_all_same(events: Events) -> Events:
    for event in events:
        event["seq"] = 7
    return events


def count_said(updates: int) -> Callable[[Events], Events]:
    def edit(events: Events) -> Events:
        events[-1]["payload"]["updates"] = updates
        return events

    return edit


CASES: dict[str, tuple[Callable[[Events], Events], str, str]] = {
    # name: (edit, failing row, the start of its message)
    "head deleted (G2)": (head_deleted, "lost", "the first update in the log is 4, and run_st"),
    "started again (G3)": (started_again, "foreign", "run_started of run-test again 1 time"),
    "interrupted, completed (G4)": (
        interrupted_then_completed,
        "run_finished",
        "run_finished interrupted, then 1 more event",
    ),
    "completed twice (G9)": (completed_twice, "run_finished", "run_finished completed, then 1"),
    "no update (G5)": (no_update, "run_finished", "run_finished completed, but the log holds no"),
    "seq all the same (G7)": (seq_all_same, "lost", "seq did not increase"),
    "39 said, 40 held (G8)": (count_said(9), "lost", "run_finished says 9 updates, the log hol"),
}


@pytest.mark.parametrize("case", CASES)
def test_the_gate_fails_and_every_view_shows_it(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit, name, message = CASES[case]
    path = edited(tmp_path / "events.jsonl", edit)
    result = check(path)
    failing = row(result, name)
    assert (result.exit_code, failing["passed"]) == (1, False)
    assert failing["message"].startswith(message)
    verdict = result.verdict.text
    assert verdict.startswith("FAIL: ")
    capsys.readouterr()
    assert main(["check", str(path), "--allow-skipped", "--allow-unfinished"]) == 1
    for argv in (["summary", str(path), "--json"], [str(path), "--once", "--json"]):
        capsys.readouterr()
        main(argv)
        assert json.loads(capsys.readouterr().out)["verdict_text"] == verdict, argv


def test_a_missing_head_is_lost_without_a_finish_and_a_recorded_resume_is_not(
    tmp_path: Path,
) -> None:
    cut = edited(tmp_path / "cut.jsonl", head_deleted, finish=None)
    lost = row(check(cut, allow_unfinished=True), "lost")
    assert lost["passed"] is False
    assert lost["message"].startswith(
        "the first update in the log is 4, and run_started records no resume "
        "(config.resumed_from), so the run began at update 0 (4 not in it)"
    )

    def resumed(events: Events) -> Events:
        events = head_deleted(events)
        events[0]["payload"]["config"]["resumed_from"] = {"checkpoint": "c.pt", "update": 4}
        return events

    assert check(edited(tmp_path / "resumed.jsonl", resumed)).exit_code == 0


def test_a_resume_that_ran_no_update_says_why(tmp_path: Path) -> None:
    config = dict(CONFIG, resumed_from={"checkpoint": "c.pt", "update": 10, "global_step": 5})

    def resumed(events: Events) -> Events:
        events = no_update(events)
        events[-1]["payload"]["updates"] = 10
        return events

    path = edited(tmp_path / "events.jsonl", resumed, config=config)
    finish = row(check(path), "run_finished")
    assert finish["passed"] is False
    assert "no update was judged" in finish["message"]
    assert "resume with a larger --total-steps" in finish["message"]


def torn_update(path: Path, finish: str | None) -> Path:
    """A run (completed, or unfinished) whose file ends in an update without its newline."""
    write_run(path, updates=10, finish=finish)  # type: ignore[arg-type]
    update = next(line for line in path.read_bytes().splitlines() if b"ppo_update" in line)
    with path.open("ab") as fh:
        fh.write(update)
    return path


def test_a_line_without_its_newline_fails_once_nothing_can_still_write_it(
    tmp_path: Path,
) -> None:
    done = torn_update(tmp_path / "done.jsonl", "completed")
    result = check(done)
    skipped = row(result, "skipped")
    assert (result.exit_code, skipped["passed"]) == (1, False)
    assert skipped["message"].startswith("line 23 (")
    assert "after run_finished) has no newline" in skipped["message"]
    assert check(done, allow_skipped=True).exit_code == 0  # accepted explicitly
    live = torn_update(tmp_path / "live.jsonl", None)
    assert check(live, allow_unfinished=True).exit_code == 1  # check cannot wait for it
    assert check(live, allow_unfinished=True, allow_skipped=True).exit_code == 0
    agg = SanctumAggregator()  # a live view: the line may be on its way
    for batch in EventLogReader(live).batches():
        agg.handle_batch(batch)
    assert agg.integrity.tail is not None and agg.run.last_event_ts is not None
    assert agg.run_verdict(now=agg.run.last_event_ts + 1).word == "OK"


def test_bytes_after_the_finish_fail_without_being_held(tmp_path: Path) -> None:
    """NUL bytes past the line limit (a sparse tail, no newline) after run_finished."""
    path = tmp_path / "events.jsonl"
    write_run(path, updates=10)
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size + MAX_LINE_BYTES + 4096)
    result = check(path)
    skipped = row(result, "skipped")
    assert (result.exit_code, skipped["passed"]) == (1, False)
    assert skipped["message"].startswith(
        f"line 23 ({MAX_LINE_BYTES + 4096} bytes after run_finished) has no newline"
    )


@pytest.mark.parametrize("how", ["NUL bytes", "BOM", "CR line ends"])
def test_once_refuses_what_check_cannot_judge(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    write_run(path, updates=5)
    data = path.read_bytes()
    if how == "NUL bytes":
        path.write_bytes(b"")
        with path.open("r+b") as fh:
            fh.truncate(MAX_LINE_BYTES + 4096)
    elif how == "BOM":
        path.write_bytes(b"\xef\xbb\xbf" + data)
    else:
        path.write_bytes(data.replace(b"\n", b"\r"))
    capsys.readouterr()
    assert main(["check", str(path)]) == 2
    assert main([str(path), "--once"]) == 2
    err = capsys.readouterr().err
    assert err.count("no run_started event in") == 2
