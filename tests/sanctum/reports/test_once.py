"""``sanctum RUN --once [--json]``: the dashboard's state printed once, from a real log."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.reports.once import once_dict, once_text, read_snapshot
from tests import processes
from tests.cli_runner import run_main
from tests.sanctum.logs import RunLog, append_after_each_read, write_run


def write(path: Path, updates: int, finish: bool, run_id: str = "run-once", **last: float) -> None:
    log = RunLog(path, run_id=run_id)
    log.start()
    for u in range(updates):
        log.update(u, **(last if u == updates - 1 else {}))
    if finish:
        log.finish()
    log.close()


def test_the_text_is_the_banner_then_the_panels(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    write(path, 6, finish=True)
    text = once_text(read_snapshot(path, DEFAULT_THRESHOLDS), path)
    lines = text.splitlines()
    assert lines[0].startswith("■ FINISHED  run-once  CartPole-v1  update 5")
    assert lines[1].startswith("OK · 6/7 rules  KL 0.00")  # the rules it rests on
    assert any(line.startswith("KL/clip ") and "healthy" in line for line in lines)  # its row
    assert "early stops   0" in text
    assert "finish     run completed" in text


def test_nan_is_shown_and_critical_in_text_and_json(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    write(path, 3, finish=False, grad_norm=float("nan"))
    snapshot = read_snapshot(path, DEFAULT_THRESHOLDS)
    text = once_text(snapshot, path)
    grad = next(line for line in text.splitlines() if line.startswith("grad_norm "))
    assert "NaN" in grad and "critical" in grad
    doc = once_dict(snapshot)
    assert doc["worst_level"] == "critical" and doc["verdict"].startswith("FAIL")
    assert doc["metrics"]["grad_norm"]["level"] == "critical"


def test_an_unfinished_silent_run_reads_stale_at_the_current_time(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    write(path, 2, finish=False)  # the fake clock stamps events long ago
    doc = once_dict(read_snapshot(path, DEFAULT_THRESHOLDS, now=time.time))
    assert doc["connection"] == "stale"


def test_cli_prints_json_and_refuses_json_without_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run" / "events.jsonl"
    path.parent.mkdir()
    write(path, 4, finish=True)
    assert main([str(path.parent), "--once", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["run_id"], doc["update"], doc["connection"]) == ("run-once", 3, "finished")
    assert main([str(path.parent), "--json"]) == 2
    assert "--json needs --once" in capsys.readouterr().err
    assert main([str(tmp_path / "missing"), "--once"]) == 2
    assert "sanctum: error:" in capsys.readouterr().err


def test_a_hostile_run_id_is_printed_as_text(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    write(path, 1, finish=True, run_id="evil\x1b[2J\x07")
    text = once_text(read_snapshot(path, DEFAULT_THRESHOLDS), path)
    assert "\x1b" not in text and "\x07" not in text
    assert "evil" in text.splitlines()[0]


def test_once_loads_no_textual(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    write(path, 2, finish=True)
    code = (
        "import sys\nfrom sanctum.cli import main\n"
        f"assert main([{str(path)!r}, '--once']) == 0\n"
        "print(sorted(m for m in ('textual', 'torch') if m in sys.modules))\n"
    )
    result = processes.run([processes.PYTHON, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_a_file_that_is_not_a_run_log_is_an_error_and_an_empty_one_is_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\xff not json\n{}\n")
    assert main([str(garbage), "--once"]) == 2
    assert "no run_started event in 2 lines" in capsys.readouterr().err
    empty = tmp_path / "events.jsonl"
    empty.touch()  # a trainer that has only just created its log
    assert main([str(empty), "--once", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["connection"] == "waiting"


def test_once_on_a_file_that_keeps_growing_shows_it_as_it_was_when_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer faster than the reader (every read is followed by twenty more updates):
    ``--once`` shows the file up to its size when it began, and returns."""
    path = tmp_path / "events.jsonl"
    write(path, updates=5, finish=False)
    writer = RunLog(path, run_id="run-once")
    writer.emitter._seq = itertools.count(12)
    reads = append_after_each_read(monkeypatch, writer, first_update=5)
    snapshot = read_snapshot(path, DEFAULT_THRESHOLDS)
    writer.close()
    assert snapshot.run.updates == 5 and len(reads) <= 2


def test_unjudged_metrics_say_not_judged_and_absent_ones_not_measured(tmp_path: Path) -> None:
    """No rule judges policy_loss or learning_rate: never "healthy"; an update that did not
    measure grad_norm: "not measured", not "pending"; in the text and in ``--json``."""
    path = tmp_path / "events.jsonl"
    write(path, 6, finish=True, grad_norm=None)
    snapshot = read_snapshot(path, DEFAULT_THRESHOLDS)
    rows = {line.split()[0]: line for line in once_text(snapshot, path).splitlines() if line}
    for name in ("policy_loss", "learning_rate"):
        assert "not judged" in rows[name] and "healthy" not in rows[name], rows[name]
    assert rows["grad_norm"].split()[:3] == ["grad_norm", "not", "measured"]  # then its history
    assert "healthy" in rows["KL/clip"]  # approx_kl's row says what it shows
    metrics = once_dict(snapshot)["metrics"]
    assert metrics["policy_loss"]["status"] == "not judged"
    assert metrics["grad_norm"]["status"] == "not measured"
    assert metrics["approx_kl"]["status"] == "healthy"


def test_json_level_is_null_where_nothing_judged(tmp_path: Path) -> None:
    """``--json``'s ``level`` never says "healthy" or "pending" beside a status of "not
    judged" or "not measured": it is null there, the rule's level elsewhere (real CLI)."""
    path = tmp_path / "events.jsonl"
    write(path, 6, finish=True, grad_norm=None)
    done = run_main(main, path, "--once", "--json")
    assert done.returncode == 0, done.stderr
    metrics = json.loads(done.stdout)["metrics"]
    for name in ("policy_loss", "learning_rate", "grad_norm"):
        assert metrics[name]["level"] is None, (name, metrics[name])
    assert metrics["approx_kl"]["level"] == "healthy"


def _steps_line(path: Path, step_unit: str | None) -> tuple[str, dict[str, Any]]:
    """The banner's second line of ``--once`` and its JSON, for a finished 6-update run."""
    write_run(path, updates=6, step_unit=step_unit)
    snapshot = read_snapshot(path, DEFAULT_THRESHOLDS)
    return once_text(snapshot, path).splitlines()[1], once_dict(snapshot)


def test_a_run_that_counts_tokens_says_tokens_in_the_banner_and_json(tmp_path: Path) -> None:
    line, doc = _steps_line(tmp_path / "events.jsonl", "tokens")
    assert line.endswith("30%  3,072/10,240 tokens  4,000 tokens/s")
    assert (doc["global_step"], doc["step_unit"]) == (3072, "tokens")


def test_a_log_without_a_step_unit_shows_steps_as_before(tmp_path: Path) -> None:
    line, doc = _steps_line(tmp_path / "events.jsonl", None)
    assert line.endswith("30%  3,072/10,240 steps  4,000 sps")
    assert (doc["global_step"], doc["step_unit"]) == (3072, None)
