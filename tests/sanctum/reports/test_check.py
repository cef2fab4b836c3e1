"""``sanctum check``: verdicts, exit codes, JSON and JUnit on fixture logs."""

from __future__ import annotations

import itertools
import json
import math
import tracemalloc
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sanctum.cli import main
from sanctum.formatting import dumps
from sanctum.health.levels import Level
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.reports.check import CheckResult, SeveralRuns, judge, refuse_several_runs, run_check
from sanctum.reports.check_report import format_text, to_dict, write_junit
from sanctum.reports.scan import LogScan, NoRunStarted, run_starts
from telemetry import KLMeasure, PPOUpdatePayload, Recorder, RunStarted
from telemetry.eventlog import (
    MAX_LINE_BYTES,
    EventLogNotFound,
    ReadBatch,
    SchemaVersionError,
    read_events,
)
from telemetry.events import RunFinishedPayload
from tests.cli_runner import Ran, run_main
from tests.sanctum.logs import (
    CONFIG,
    HEALTHY,
    KL_CRITICAL,
    KL_HOLDS,
    RunLog,
    append_after_each_read,
    ppo_update,
    write_failed_then_completed,
    write_lost_updates,
    write_run,
    write_two_runs,
    write_with_foreign_updates,
)
from tests.sanctum.recorded import recorded


def check(path: Path, **kwargs: object) -> CheckResult:
    return run_check(path / "events.jsonl" if path.is_dir() else path, DEFAULT_THRESHOLDS, **kwargs)  # type: ignore[arg-type]


def rows(result: CheckResult) -> dict[str, dict[str, object]]:
    return {r["name"]: r for r in to_dict(result)["rows"]}


def test_healthy_run_passes(healthy_log: Path) -> None:
    result = check(healthy_log)
    assert result.exit_code == 0
    assert [r.name for r in result.rows] == [
        *DEFAULT_THRESHOLDS.metrics,  # a row per rule, in the table's order
        "nonfinite",
        "bug",
        "stall",
        "anomalies",
        "max_kl",
        "skipped",
        "lost",
        "foreign",
        "source",
        "judged",
        "run_finished",
    ]
    kl = rows(result)["approx_kl"]  # its worst is what it judges: KL per clip fraction
    per_clip = HEALTHY["approx_kl"] / HEALTHY["clip_fraction"]
    assert (kl["worst"], kl["updates_measured"], kl["updates_critical"]) == (per_clip, 20, 0)
    assert rows(result)["explained_variance"]["updates_measured"] == 20
    assert format_text(result).endswith(f"\n{result.verdict.text}")  # OK, as every view


def test_critical_kl_fails_with_its_update(critical_kl_log: Path) -> None:
    result = check(critical_kl_log)
    assert result.exit_code == 1
    kl = rows(result)["approx_kl"]
    assert kl["passed"] is False
    # KL_CRITICAL from update 7: its median of 5 per clip fraction is past the line from
    # the third such update, for as many updates as the breach lasted
    first = 7 + KL_HOLDS - 1
    per_clip = KL_CRITICAL["approx_kl"] / 0.01  # a clip fraction of 0 counts as 0.01
    assert (kl["worst"], kl["worst_update"]) == (pytest.approx(per_clip), first)
    assert (kl["updates_warning"], kl["updates_critical"], kl["first_critical"]) == (
        0,
        KL_HOLDS,
        first,
    )
    assert [r.name for r in result.rows if not r.passed] == ["approx_kl"]
    assert format_text(result).endswith("\nFAIL: KL 3x")  # the verdict's own words


def test_warning_fails_only_with_fail_on_warning(warning_kl_log: Path) -> None:
    assert check(warning_kl_log).exit_code == 0
    strict = check(warning_kl_log, fail_on=Level.WARNING)
    assert strict.exit_code == 1
    kl = rows(strict)["approx_kl"]
    # KL_WARNING from update 3: a warning once the median of 5 crossed, at the third
    first = 3 + KL_HOLDS - 1
    assert (kl["updates_warning"], kl["first_warning"], kl["first_critical"]) == (
        KL_HOLDS,
        first,
        None,
    )
    assert f"reached warning in {KL_HOLDS} updates, first at update {first}" in str(kl["message"])


def test_nan_metric_fails_and_json_spells_it(nan_log: Path) -> None:
    result = check(nan_log)
    assert result.exit_code == 1
    doc = json.loads(dumps(to_dict(result)))  # strict JSON: no bare NaN
    by_name = {r["name"]: r for r in doc["rows"]}
    assert by_name["approx_kl"]["worst"] == "NaN"
    assert by_name["approx_kl"]["first_critical"] == 6
    nonfinite = by_name["nonfinite"]
    assert (nonfinite["passed"], nonfinite["updates_critical"], nonfinite["first_critical"]) == (
        False,
        2,
        4,
    )
    assert "entropy (1x, first at update 4)" in nonfinite["message"]


def test_unfinished_and_interrupted_need_allow_unfinished(
    unfinished_log: Path, tmp_path: Path
) -> None:
    assert check(unfinished_log).exit_code == 1
    assert rows(check(unfinished_log))["run_finished"]["message"] == (
        "no run_finished: the run is still going or was cut off"
    )
    assert check(unfinished_log, allow_unfinished=True).exit_code == 0
    interrupted = write_run(tmp_path / "int.jsonl", updates=3, finish="interrupted")
    assert check(interrupted).exit_code == 1
    assert check(interrupted, allow_unfinished=True).exit_code == 0


def test_a_failed_run_fails_even_when_unfinished_is_allowed(tmp_path: Path) -> None:
    failed = write_run(tmp_path / "f.jsonl", updates=3, finish="failed")
    result = check(failed, allow_unfinished=True)
    assert result.exit_code == 1
    assert rows(result)["run_finished"]["message"] == "run failed: stopped by the test"


def test_corrupt_lines_and_unknown_kinds_are_counted_not_fatal(
    corrupt_log: Path, unknown_kind_log: Path
) -> None:
    corrupt = check(corrupt_log, allow_skipped=True)
    assert (corrupt.exit_code, corrupt.skipped_lines, corrupt.updates) == (0, 2, 3)
    assert "2 lines skipped" in format_text(corrupt)
    # without --allow-skipped: what a line that cannot be read holds is not judged: it fails
    strict = check(corrupt_log)
    assert strict.exit_code == 1
    assert rows(strict)["skipped"]["message"] == (
        "2 lines could not be read, so what they hold was not judged: lines 4, 7; the first: "
        "not a JSON event object: JSON is malformed: invalid character (byte 4)"
    )
    unknown = check(unknown_kind_log)
    assert (unknown.exit_code, unknown.skipped_lines, unknown.updates) == (0, 2, 2)


def test_unusable_input_raises(newer_schema_log: Path, tmp_path: Path) -> None:
    with pytest.raises(SchemaVersionError, match="schema 2 is newer than the supported schema 1"):
        check(newer_schema_log)
    with pytest.raises(EventLogNotFound, match=r"missing\.jsonl"):
        check(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(NoRunStarted, match="no run_started event"):
        check(empty)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(bytes(range(256)) * 40 + b"\n")
    with pytest.raises(NoRunStarted, match=r"no run_started event in 41 lines; not the event"):
        check(garbage)
    headless = tmp_path / "headless.jsonl"
    log = RunLog(headless)
    log.update(0)
    log.close()
    with pytest.raises(NoRunStarted, match=r"headless\.jsonl"):
        check(headless)


def test_anomalies(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    log.anomaly("warning", "ratio_max", 40.0, update=0)
    log.finish()
    log.close()
    assert check(path).exit_code == 0
    strict = check(path, fail_on=Level.WARNING)
    assert strict.exit_code == 1
    text = format_text(strict)  # the output says why a warning anomaly failed the check
    assert "failing on warning (a rule at warning or critical, any anomaly, warning" in text
    assert (
        "FAIL  anomalies: 0 critical, 1 warning (warning anomalies fail the check under "
        "--fail-on warning); first at update 0: ratio_max = 40.00: optimizer step skipped"
    ) in text
    assert "failing on critical (a rule at critical, a critical anomaly)" in format_text(
        check(path)
    )
    log = RunLog(path)
    log.anomaly("critical", "grad_norm", math.inf, update=0)
    log.close()
    result = check(path)
    assert result.exit_code == 1
    assert rows(result)["anomalies"]["message"] == (
        "1 critical, 1 warning; first at update 0: grad_norm = +Inf: "
        "optimizer step skipped: non-finite gradient"
    )


def test_explained_variance_warm_up(tmp_path: Path) -> None:
    early = write_run(
        tmp_path / "early.jsonl", updates=10, overrides=lambda u: {"explained_variance": -1.0}
    )
    result = check(early)
    assert result.exit_code == 0
    ev = rows(result)["explained_variance"]
    assert ev["message"] == "not judged: all 10 updates within the warm-up"
    late = write_run(
        tmp_path / "late.jsonl", updates=20, overrides=lambda u: {"explained_variance": -1.0}
    )
    # judged from update 10, on the median of at least 5 values, 3 updates in a row; the
    # EV rule only warns
    ev = rows(check(late))["explained_variance"]
    assert (ev["first_warning"], ev["first_critical"]) == (16, None)


def test_a_metric_never_measured_is_said_so(tmp_path: Path) -> None:
    path = write_run(tmp_path / "g.jsonl", updates=3, overrides=lambda u: {"grad_norm": None})
    result = check(path)
    assert result.exit_code == 0
    assert rows(result)["grad_norm"]["message"] == "not measured in this run"
    assert rows(result)["grad_norm"]["worst"] is None


def test_junit_has_one_case_per_row(critical_kl_log: Path, tmp_path: Path) -> None:
    result = check(critical_kl_log)
    out = tmp_path / "reports" / "sanctum.xml"
    write_junit(result, out)
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == (str(len(result.rows)), "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases) == [r.name for r in result.rows]
    failure = cases["approx_kl"].find("failure")
    assert failure is not None
    assert f"first at update {7 + KL_HOLDS - 1}" in (failure.get("message") or "")
    assert cases["clip_fraction"].find("failure") is None


def test_a_log_holding_two_runs_is_refused_at_the_second_run_started(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "both.jsonl"
    line = write_two_runs(path)
    with pytest.raises(SeveralRuns) as refused:
        check(path)
    assert str(refused.value) == (
        f"{path}:{line}: a second run, run-b, starts here after run run-a (the log holds "
        "2 runs: run-a, run-b); sanctum check judges one run: give it that run's own events "
        "file (sanctum summary describes the last run)"
    )
    assert main(["check", str(path)]) == 2  # unusable input, never 1 for run-a's KL
    assert capsys.readouterr().err.startswith(f"sanctum: error: {path}:{line}: a second run")


def test_a_run_started_again_with_its_own_id_fails(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    write_run(path, updates=3, finish=None)
    log = RunLog(path)  # the same run id started again: two runs under one id
    log.start()
    log.update(3)
    log.finish()
    log.close()
    result = check(path)
    foreign = rows(result)["foreign"]
    assert (result.exit_code, foreign["passed"]) == (1, False)
    assert str(foreign["message"]).startswith(
        "run_started of run-test again 1 time after its first"
    )
    assert "run started again" in result.verdict.text


def test_a_log_that_started_over_while_read_is_judged_on_what_it_holds_now(
    tmp_path: Path,
) -> None:
    path = tmp_path / "both.jsonl"
    write_two_runs(path)
    events = read_events(path).events
    scan = LogScan(path, DEFAULT_THRESHOLDS)
    scan.feed(ReadBatch(events[:-10]))  # run-a: KL 0.5, NaN, a critical anomaly
    scan.feed(ReadBatch(events[-10:], reset=f"{path} was replaced by a new file"))
    refuse_several_runs(scan)  # the old content is gone from the file: one run, not two
    result = judge(scan, Level.CRITICAL, allow_unfinished=False)
    assert (result.run_id, result.updates, result.passed) == ("run-b", 4, True)
    assert result.notes == (f"{path} was replaced by a new file; judged what the file holds now",)
    assert f"note  {path} was replaced by a new file; judged what" in format_text(result)


def test_a_recorded_stall_fails_with_its_update(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(4):  # updates 2 s apart: the run's pace
        log.update(u)
    log.now += 130.0  # no event, not even a heartbeat, for 131 s: past the 120 s floor
    log.update(4)
    log.finish()
    log.close()
    result = check(path)
    assert result.exit_code == 1
    stall = rows(result)["stall"]
    assert stall["passed"] is False and stall["first_critical"] == 4
    assert stall["message"] == (
        "1 silence past the stall limit while running; longest: no event for 131 s, over the "
        "120 s floor; first during update 4"
    )
    assert format_text(result).endswith("\nFAIL: Stall 1x")
    assert result.verdict.text == "FAIL: Stall 1x"


def paced_run(path: Path, interval: float, silence: float, before: int = 6) -> Path:
    """``before`` updates ``interval`` s apart, a silence of ``silence`` s, two more
    updates, and the finish (a rollout and its update are half an interval apart)."""
    log = RunLog(path, tick=interval / 2)
    log.start()
    for u in range(before):
        log.update(u)
    log.now += silence - interval / 2
    for u in range(before, before + 2):
        log.update(u)
    log.finish()
    log.close()
    return path


def test_one_slow_step_of_a_fast_run_is_not_a_stall(tmp_path: Path) -> None:
    # updates 2 s apart, then one 70 s step (a checkpoint, an evaluation): 35x the pace,
    # but not past the 120 s floor
    result = check(paced_run(tmp_path / "e.jsonl", interval=2.0, silence=70.0))
    assert result.exit_code == 0
    assert rows(result)["stall"]["message"] == (
        "no silence past the stall limit (120 s, or 10x the run's median interval if longer)"
    )


def test_a_run_silent_for_ten_times_its_pace_is_stalled(tmp_path: Path) -> None:
    # updates 30 s apart: its limit is 10 x 30 = 300 s; silent for 412 s
    slow = check(paced_run(tmp_path / "slow.jsonl", interval=30.0, silence=412.0))
    stall = rows(slow)["stall"]
    assert stall["passed"] is False
    assert stall["message"] == (
        "1 silence past the stall limit while running; longest: no event for 412 s, over 10x "
        "the run's median interval of 30 s; first during update 6"
    )
    assert slow.verdict.text == "FAIL: Stall 1x"
    # the same run silent for 290 s: under 10x its pace, though past the floor
    assert check(paced_run(tmp_path / "ok.jsonl", interval=30.0, silence=290.0)).passed


def test_no_stall_is_judged_before_the_run_has_a_pace(tmp_path: Path) -> None:
    # a model that loads for 5 minutes before its second update: no pace yet
    assert check(paced_run(tmp_path / "e.jsonl", interval=2.0, silence=300.0, before=1)).passed


def test_heartbeats_set_the_pace_of_a_run_with_long_updates(tmp_path: Path) -> None:
    """Updates 300 s apart, with a heartbeat every 5 s between them (the trainer's own, or
    SB3's during rollouts): the run's pace is 5 s, so a 130 s silence is a stall."""
    path = tmp_path / "e.jsonl"
    log = RunLog(path, tick=5.0)
    log.start()
    for u in range(3):
        log.beats(*[u * 512 + 8 * i for i in range(59)])
        log.update(u)
    log.now += 125.0
    log.update(3)
    log.finish()
    log.close()
    stall = rows(check(path))["stall"]
    assert stall["passed"] is False
    assert "no event for 130 s, over the 120 s floor" in str(stall["message"])


def test_a_stall_stays_out_of_the_pace(tmp_path: Path) -> None:
    """The interval that spans a stall does not make the run's pace slower."""
    path = tmp_path / "e.jsonl"
    log = RunLog(path, tick=1.0)
    log.start()
    for u in range(4):
        log.update(u)
    for u in range(4, 7):  # three stalls of 200 s in a row
        log.now += 200.0
        log.update(u)
    log.finish()
    log.close()
    assert rows(check(path))["stall"]["updates_critical"] == 3


def test_an_impossible_value_fails_as_a_logging_bug(tmp_path: Path) -> None:
    path = write_run(
        tmp_path / "e.jsonl",
        updates=4,
        overrides=lambda u: {"clip_fraction": 1.5} if u == 2 else {},
    )
    result = check(path)
    bug = rows(result)["bug"]
    assert result.exit_code == 1 and bug["passed"] is False
    assert bug["first_critical"] == 2
    assert "clip_fraction 1.5 outside [0, 1] (a fraction)" in str(bug["message"])


def test_json_lists_every_skipped_line_with_its_reason(corrupt_log: Path) -> None:
    doc = to_dict(check(corrupt_log))
    assert doc["passed"] is False and doc["allow_skipped"] is False
    assert [(s["line"], s["kind"], s["type"]) for s in doc["skipped"]] == [
        (4, "malformed", None),
        (7, "malformed", "ppo_update"),
    ]
    assert all(s["detail"] for s in doc["skipped"])


# -- the gate never passes what it could not vouch for -------------------------------------


def test_a_log_that_lost_update_lines_fails_in_text_json_and_junit(tmp_path: Path) -> None:
    path = write_lost_updates(tmp_path / "lost" / "events.jsonl", updates=40, delete=20)
    junit = tmp_path / "check.xml"
    proc = run_main(main, "check", path.parent, "--junit", junit)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lost_line = (
        "FAIL  lost events: run_finished says 40 updates, the log holds 20 (20 not in it); "
        "seq has 20 gaps: 20 events missing (first before seq 6) that no skipped line "
        "accounts for: the log lost events that may be updates, and the gate does not pass "
        "what it did not see"
    )
    assert lost_line in proc.stdout.splitlines()
    assert "every update line was read" in proc.stdout  # no line was unreadable: lost ones
    assert proc.stdout.endswith("\nFAIL: lost 20x\n")
    doc = to_dict(check(path.parent))
    assert (doc["passed"], doc["lost_events"], doc["missing_updates"]) == (False, 20, 20)
    assert doc["verdict_text"] == "FAIL: lost 20x"
    assert rows(check(path.parent, allow_skipped=True))["lost"]["passed"] is False
    case = ET.parse(junit).getroot().find(".//testcase[@name='lost']")
    assert case is not None and case.find("failure") is not None


def test_fewer_updates_than_run_finished_says_fail_and_a_resumed_run_passes(
    tmp_path: Path,
) -> None:
    short = tmp_path / "short.jsonl"
    log = RunLog(short)
    log.start()
    for u in range(20):
        log.update(u)
    log.emit(RunFinishedPayload(status="completed", updates=40))  # seq whole, 20 updates gone
    log.close()
    result = check(short)
    assert result.exit_code == 1 and (result.lost_events, result.missing_updates) == (0, 20)
    assert str(rows(result)["lost"]["message"]).startswith(
        "run_finished says 40 updates, the log holds 20 (20 not in it): "
    )
    resumed = tmp_path / "resumed.jsonl"  # updates 20-39 after a resume: the count is from 0
    log = RunLog(resumed)
    log.start(dict(CONFIG, resumed_from={"checkpoint": "c.pt", "update": 20, "global_step": 1}))
    for u in range(20, 40):
        log.update(u)
    log.recorder.finish("completed")
    assert check(resumed).exit_code == 0


def test_a_gap_a_skipped_line_or_a_full_disk_accounts_for_is_not_lost(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    # a newer writer's event kind takes seq 4: skipped, and not an update
    log.raw('{"type":"gpu_stats","run_id":"run-test","seq":4,"ts":1.0,"payload":{}}\n')
    log.emitter._seq = itertools.count(5)
    log.update(1)
    log.finish()
    log.close()
    result = check(path)
    assert result.exit_code == 0 and rows(result)["lost"]["message"] == (
        "seq has 1 gap, each a line the reader skipped (counted above), none lost"
    )
    full = tmp_path / "full.jsonl"  # the README's full disk: one refused write, then failed
    log = RunLog(full)
    log.start()
    log.update(0)
    next(log.emitter._seq)  # the write the disk refused
    log.finish("failed", "OSError: [Errno 28] No space left on device")
    log.close()
    result = check(full)
    assert rows(result)["lost"]["passed"] is True
    assert result.verdict.text == "FAIL: run failed"  # it fails for the failure, once


def test_events_of_another_run_in_the_log_fail_naming_it(tmp_path: Path) -> None:
    path = write_with_foreign_updates(tmp_path / "e.jsonl", foreign=40, run_id="intruder")
    result = check(path)
    assert result.exit_code == 1
    assert rows(result)["foreign"]["message"] == (
        "40 events of another run in this log: intruder (40x); the log is not this run's "
        "alone, and the gate does not pass a mix of runs"
    )
    assert result.verdict.text == "FAIL: other run 40x"
    doc = to_dict(result)
    assert doc["foreign_runs"] == {"intruder": 40}
    assert rows(result)["lost"]["passed"] is True  # the run's own seq is whole


def test_a_run_that_reported_failed_fails_whatever_it_reported_after(tmp_path: Path) -> None:
    path = write_failed_then_completed(tmp_path / "e.jsonl")
    result = check(path, allow_unfinished=True)
    assert result.exit_code == 1
    assert rows(result)["run_finished"]["message"] == (
        "run failed: RuntimeError: CUDA error: an illegal memory access; then run_finished "
        "completed: a run that reported failed has failed"
    )
    assert result.verdict.text == "FAIL: run failed"


def test_a_file_that_grows_while_checked_is_judged_up_to_its_size_at_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer faster than the reader: every read is followed by more lines (a thousand
    updates' worth) than it read. The check judges the file as it was when it began."""
    path = write_run(tmp_path / "e.jsonl", updates=5, finish=None)
    size = path.stat().st_size
    writer = RunLog(path, run_id="run-test")
    writer.emitter._seq = itertools.count(12)
    reads = append_after_each_read(monkeypatch, writer, first_update=5)
    result = check(path, allow_unfinished=True)
    writer.close()
    assert (result.updates, result.judged_bytes, result.file_bytes) == (5, size, size)
    assert len(reads) <= 2
    grown = path.stat().st_size
    note = next(n for n in result.notes if n.startswith("the file grew"))
    assert note.startswith(f"the file grew while it was read: judged up to byte {size} (it held")
    doc = to_dict(result)
    assert (doc["judged_bytes"], doc["file_bytes"]) == (size, size)
    assert grown > size


def test_events_of_another_run_before_the_run_started_fail_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    other = RunLog(path, run_id="early-bird")
    for u in range(3):
        other.emit(ppo_update(u, **KL_CRITICAL))
    other.close()
    write_run(path, updates=4)
    result = check(path)
    assert result.exit_code == 1 and result.foreign_runs == (("early-bird", 3),)
    assert result.verdict.items[-1] == "other run 3x"  # (folded before the run said its id)


def test_naming_the_second_run_holds_no_line_longer_than_the_line_limit(tmp_path: Path) -> None:
    """A 40 MiB line before the second run: the pass that names its line holds at most
    the reader's 16 MiB line limit, never the whole line."""
    path = tmp_path / "both.jsonl"
    write_run(path, updates=2)
    with path.open("ab") as fh:
        fh.write(b"x" * (40 << 20) + b"\n")
    second = RunLog(path, run_id="run-b")
    second.start()
    second.close()
    line = len(path.read_bytes().splitlines())
    tracemalloc.start()
    try:
        starts = run_starts(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert starts == [(1, "run-test"), (line, "run-b")]
    assert peak < 1.5 * MAX_LINE_BYTES  # a line buffer up to the limit (40 MiB before)
    with pytest.raises(SeveralRuns, match=rf"both\.jsonl:{line}: a second run, run-b"):
        check(path)


def test_many_events_missing_before_a_failure_are_lost_not_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    log.emitter._seq = itertools.count(10)  # 6 events gone: more than one refused write
    log.finish("failed", "OSError: [Errno 28] No space left on device")
    log.close()
    result = check(path)
    assert result.verdict.text == "FAIL: lost 6x, run failed"


# -- critic-free and sequence-level runs (schema 1.5) --------------------------------------


def write_grpo_run(
    path: Path, updates: int, policy_epochs: int = 1, **measured: float | None
) -> Path:
    """A GRPO-shaped log as a TRL callback writes it through the Recorder: no approx_kl
    or clip_fraction, the reference KL declared, rewards and completion lengths."""
    kl = {"ref_kl": KLMeasure(against="reference", estimator="k3", unit="token")}
    with Recorder(path=path, algorithm="grpo", kl=kl, policy_epochs=policy_epochs) as rec:
        for u in range(updates):
            figures: dict[str, float | None] = {
                "ref_kl": 0.001 * (u + 1),
                "entropy": 1.2 - 0.01 * u,
                "grad_norm": 0.8,
                "reward_mean": 0.2 + 0.01 * u,
                "reward_std": 0.3,
                "reward_zero_std_frac": 0.1,
                "completion_length_mean": 40.0,
                "completion_truncated_frac": 0.0,
                **measured,
            }
            rec.emit(
                PPOUpdatePayload(
                    update=u,
                    global_step=64 * (u + 1),
                    early_stopped=False,
                    reward_components={"accuracy": 0.1, "format": 0.1 + 0.01 * u},
                    **figures,  # type: ignore[arg-type]
                )
            )
    return path


def sanctum_check(path: Path, *options: str) -> Ran:
    return run_main(main, "check", path, *options)


def test_a_grpo_run_passes_with_kl_and_clip_not_measured(tmp_path: Path) -> None:
    """Two passes per batch: the KL and Clip rules apply, and say they measured nothing
    (with one pass the ratio is 1 by construction and the rows are not shown)."""
    path = write_grpo_run(tmp_path / "grpo.jsonl", updates=12, policy_epochs=2)
    proc = sanctum_check(path, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = {r["name"]: r for r in json.loads(proc.stdout)["rows"]}
    assert "explained_variance" not in doc  # no critic
    one_pass = write_grpo_run(tmp_path / "one.jsonl", updates=12)
    shown = {r["name"] for r in json.loads(sanctum_check(one_pass, "--json").stdout)["rows"]}
    assert not shown & {"approx_kl", "clip_fraction", "explained_variance"}
    for metric in ("approx_kl", "clip_fraction"):
        assert (doc[metric]["passed"], doc[metric]["message"]) == (True, "not measured in this run")
    assert doc["ref_kl"]["updates_measured"] == 12 and doc["judged"]["passed"] is True
    text = sanctum_check(path).stdout
    assert "not measured in this run" in text and text.splitlines()[-1].startswith("OK · ")


def test_a_run_no_rule_could_judge_is_not_a_pass_but_exit_2(tmp_path: Path) -> None:
    judged = ("ref_kl", "entropy", "grad_norm", "reward_mean", "reward_std")
    nothing = dict.fromkeys((*judged, "reward_zero_std_frac", "completion_truncated_frac"), None)
    path = write_grpo_run(tmp_path / "lengths-only.jsonl", updates=5, **nothing)
    proc = sanctum_check(path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        "FAIL  judged: could not judge: no rule measured anything in this run (5 updates "
        "without grad_norm, entropy_normalized, entropy, ref_kl"
    ) in proc.stdout
    assert proc.stdout.endswith("\nFAIL: not judged\n")
    doc = to_dict(check(path))
    assert (doc["passed"], doc["exit_code"], doc["verdict_text"]) == (False, 2, "FAIL: not judged")
    failed = write_run(tmp_path / "f.jsonl", updates=3, overrides=lambda u: {"grad_norm": None})
    assert check(failed).exit_code == 0  # a rule that measured something judged the run


def test_an_old_schema_1_4_log_reads_as_ppo_with_the_same_verdict() -> None:
    path = Path(recorded("base-s1")) / "events.jsonl"
    started = read_events(path).events[0]
    assert isinstance(started, RunStarted) and started.payload.schema_minor == 4
    assert (started.payload.algorithm, started.payload.kl, started.payload.policy_epochs) == (
        "ppo",
        None,
        None,
    )
    result = check(path)
    assert (result.exit_code, result.verdict.text) == (0, "OK")
    assert rows(result)["approx_kl"]["updates_measured"] == 40
    assert rows(result)["judged"]["passed"] is True


@pytest.mark.parametrize(("estimator", "bug"), [("k1", False), ("k3", True)])
def test_a_negative_kl_is_a_logging_bug_only_for_an_estimator_never_negative(
    tmp_path: Path, estimator: str, bug: bool
) -> None:
    kl = {"approx_kl": KLMeasure(against="old_policy", estimator=estimator, unit="token")}
    with Recorder(path=tmp_path / "e.jsonl", kl=kl) as rec:  # verl's actor/ppo_kl is k1
        for u in range(3):
            rec.emit(
                PPOUpdatePayload(
                    update=u, global_step=u, approx_kl=-1e-3, clip_fraction=0.1, early_stopped=False
                )
            )
    assert rows(check(rec.path))["bug"]["passed"] is not bug


# -- --require: the rules a pass must rest on ------------------------------------------------


def test_require_fails_a_run_whose_trainer_did_not_log_a_named_rules_metric(
    tmp_path: Path,
) -> None:
    """The factory's runs log KL, clip fraction, gradient norm, explained variance and
    entropy, but no entropy_normalized: they pass, and say so, unless Entropy is required."""
    run = write_run(tmp_path / "e.jsonl")
    plain = run_main(main, "check", run)
    assert plain.returncode == 0
    assert "(6 of 7 rules; Entropy not measured)" in plain.stdout
    kept = run_main(main, "check", run, "--require", "kl,Grad,approx_kl, clip_fraction")
    assert kept.returncode == 0, kept.stdout
    assert "pass  required: required rules each measured the run: KL, Grad, Clip" in kept.stdout
    for required in ("KL,Entropy", "all"):
        failed = run_main(main, "check", run, "--require", required, "--json")
        report = json.loads(failed.stdout)
        assert (failed.returncode, report["verdict_text"]) == (1, "FAIL: not measured: Entropy")
        (row,) = [r for r in report["rows"] if r["name"] == "required"]
        assert row["message"] == (
            "Entropy measured nothing in this run (the log holds no entropy_normalized)"
        )


def test_a_continuous_run_is_not_judged_by_normalised_entropy_nor_called_less_covered(
    tmp_path: Path,
) -> None:
    """Normalised entropy exists only over a finite set of actions: a run that declares a
    continuous action space is covered by all 5 of its rules (Entropy shift judges its
    entropy), and --require all passes it; the same log undeclared still says what it lacks."""
    declared = write_run(tmp_path / "box" / "e.jsonl", action_space="continuous")
    done = run_main(main, "check", declared, "--require", "all", "--json")
    report = json.loads(done.stdout)
    assert (done.returncode, report["verdict_text"]) == (0, "OK"), report["verdict_text"]
    assert report["verdict_unmeasured"] == []
    assert "Entropy shift" in report["verdict_judged_on"]
    assert "entropy_normalized" not in {r["name"] for r in report["rows"]}
    plain = run_main(main, "check", write_run(tmp_path / "undeclared" / "e.jsonl"))
    assert "(6 of 7 rules; Entropy not measured)" in plain.stdout
    discrete = run_main(
        main, "check", write_run(tmp_path / "set" / "e.jsonl", action_space="discrete")
    )
    assert "(6 of 7 rules; Entropy not measured)" in discrete.stdout


def test_require_names_a_rule_this_run_has_not_and_refuses_a_typo(tmp_path: Path) -> None:
    run = write_run(tmp_path / "e.jsonl")
    done = run_main(main, "check", run, "--require", "Reward")  # a language-model rule
    assert done.returncode == 1
    assert "FAIL  required: Reward: no such rule in this run (its rules: KL, Clip" in done.stdout
    typo = run_main(main, "check", run, "--require", "Grda")
    assert (typo.returncode, typo.stdout) == (2, "")
    assert typo.stderr.startswith("sanctum: error: --require: no rule is named 'Grda' (the ")
    assert typo.stderr.count("\n") == 1
    empty = run_main(main, "check", run, "--require", ",")
    assert empty.returncode == 2 and "names no rule" in empty.stderr


def test_require_takes_a_metrics_own_name_over_a_label_spelled_the_same(tmp_path: Path) -> None:
    """``entropy`` is the shift rule's metric; the rule labelled Entropy reads
    entropy_normalized, which these runs do not log."""
    run = write_run(tmp_path / "e.jsonl")
    done = run_main(main, "check", run, "--require", "entropy")
    assert done.returncode == 0, done.stdout
    assert "required rules each measured the run: Entropy shift" in done.stdout


@pytest.mark.parametrize("said", [None, 3])
def test_update_indices_that_skip_are_lost_updates_whatever_seq_says(
    tmp_path: Path, said: int | None
) -> None:
    """Updates 0, 2, 3 with a gap-free seq (a log renumbered, or a writer that dropped one):
    update 1 was never judged. The lost row fails, with or without a run_finished.updates
    that agrees with what the log holds."""
    log = RunLog(tmp_path / "e.jsonl")
    log.start()
    for u in (0, 2, 3):
        log.update(u)
    log.emit(RunFinishedPayload(status="completed", updates=said))
    log.close()
    result = check(log.path)
    assert result.exit_code == 1
    assert (
        "update indices skip 1 update (first from 0 to 2): updates the log does not hold"
        in (rows(result)["lost"]["message"])
    )
    whole = RunLog(tmp_path / "whole.jsonl")
    whole.start()
    for u in (0, 1, 2):
        whole.update(u)
    whole.finish()
    whole.close()
    assert check(whole.path).exit_code == 0


def test_a_kl_past_its_own_max_kl_with_no_early_stop_warns(tmp_path: Path) -> None:
    """KL three times the run's declared max_kl (0.03, checked before each minibatch's
    step), two updates in a row, no early stop recorded, with a clip fraction that keeps the
    per-clip rule quiet: the early stop did not fire, and the run warns (it read a bare OK);
    with the stop recorded, in a run that declares no max_kl, or one that checks after each
    epoch (never its last), the same KL does not warn; at --fail-on warning it fails."""
    unstopped = {"approx_kl": 0.09, "clip_fraction": 0.2}  # 0.45 per clip: under 5

    def spike(u: int) -> dict[str, object]:
        return dict(unstopped) if u in (8, 9) else {}

    path = write_run(tmp_path / "unstopped.jsonl", updates=12, overrides=spike)
    result = run_check(path, DEFAULT_THRESHOLDS)
    assert result.verdict.text.startswith("WARN: KL past max_kl 2x")
    row = next(r for r in result.rows if r.name == "max_kl")
    assert row.passed and row.first_warning == 8 and "up to 3 x max_kl" in row.message
    strict = run_check(path, DEFAULT_THRESHOLDS, fail_on=Level.WARNING)
    assert strict.verdict.text == "FAIL: KL past max_kl 2x"

    def stopped(u: int) -> dict[str, object]:
        return {**unstopped, "early_stopped": True} if u in (8, 9) else {}

    path = write_run(tmp_path / "stopped.jsonl", updates=12, overrides=stopped)
    assert run_check(path, DEFAULT_THRESHOLDS).verdict.word == "OK"
    undeclared = {**CONFIG, "max_kl": None}
    path = write_run(tmp_path / "none.jsonl", updates=12, overrides=spike, config=undeclared)
    assert run_check(path, DEFAULT_THRESHOLDS).verdict.word == "OK"
    per_epoch = {**CONFIG, "early_stop_scope": "epoch"}  # its last epoch is never checked
    path = write_run(tmp_path / "epoch.jsonl", updates=12, overrides=spike, config=per_epoch)
    assert run_check(path, DEFAULT_THRESHOLDS).verdict.word == "OK"
