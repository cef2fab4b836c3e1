"""``sanctum summary``: run facts, final and worst values, early stops, skipped lines."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main
from sanctum.formatting import dumps, format_value
from sanctum.health.rule import Rule
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, Thresholds
from sanctum.metrics import PPO_METRICS, RUNS_OF
from sanctum.model.state import SERIES_LEN
from sanctum.reports import check_report
from sanctum.reports.check import run_check
from sanctum.reports.once import once_text, read_snapshot
from sanctum.reports.summary import TEXT_LIST_LIMIT, build_summary, format_text
from telemetry.events import RolloutPayload
from telemetry.returns import BEST_ROLLOUT_MEAN, FINAL_RETURN, ROLLOUT_MEAN
from tests.sanctum.logs import (
    CONFIG,
    HEALTHY,
    RunLog,
    append_after_each_read,
    early_stop_update,
    kl_breach,
    ppo_update,
    write_run,
    write_two_runs,
)
from tests.sanctum.recorded import RECORDED

PLAIN_KL = Thresholds(
    rules=(Rule("approx_kl", "KL", "above", 0.04, 0.1, decimals=4, persist=2, far=0.5),)
)
"""A KL rule on the value itself, with persistence and a far line: the final and worst
values below follow its mechanics, whatever the default KL rule judges."""


def summary(path: Path, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(dumps(build_summary(path, thresholds)))
    return doc


def test_run_facts(healthy_log: Path) -> None:
    doc = summary(healthy_log / "events.jsonl")
    run = doc["run"]
    assert run["run_id"] == "run-test"
    assert (run["env_id"], run["seed"], run["trainer"], run["schema"]) == (
        "CartPole-v1",
        3,
        "test-trainer 0.1",
        1,
    )
    assert (run["status"], run["updates"], run["global_step"], run["total_steps"]) == (
        "completed",
        20,
        10240,
        10240,
    )
    assert run["events"] == 42
    assert run["duration_seconds"] == 60.0  # from run_finished
    # the last 10 rollouts hold the last 20 episodes: means 30..39; the best rollout's 39
    assert (run["episode_return_final"], run["episode_return_best"]) == (34.5, 39.0)
    assert run["max_kl"] == 0.03
    assert doc["verdict"] == "OK"


def test_the_final_return_has_the_trainers_definition_and_label(tmp_path: Path) -> None:
    """The final return is ``ppo train``'s (the mean of the latest rollouts holding 20+
    episodes), labelled as it labels it, of the run described only (the earlier run in the
    same file is left out); the best is named as one rollout's mean."""
    path = tmp_path / "e.jsonl"
    write_two_runs(path)  # run-b: 4 rollouts of 2 episodes, means 20..23
    text = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    assert f"8 episodes; {FINAL_RETURN} 21.50, best rollout mean 23.00" in text, text
    assert summary(path)["run"]["episode_return_final"] == 21.5


def test_final_and_worst_values(tmp_path: Path) -> None:
    kls = [0.004, 0.6, 0.05, 0.06]  # far past critical once, then past warning twice
    path = write_run(
        tmp_path / "e.jsonl",
        updates=4,
        overrides=lambda u: {
            "approx_kl": kls[u],
            "entropy": None if u == 3 else 0.5 - u / 10,
            "value_loss": math.inf if u == 1 else 3.0,
        },
    )
    doc = summary(path, PLAIN_KL)
    kl_rule = doc["rules"][0]
    assert (
        kl_rule["final"],
        kl_rule["final_level"],
        kl_rule["worst"],
        kl_rule["worst_update"],
    ) == (0.06, "warning", 0.6, 1)
    assert (kl_rule["updates_warning"], kl_rule["updates_critical"]) == (2, 1)
    entropy = doc["metrics"]["entropy"]
    assert (entropy["final"], entropy["final_update"], entropy["measured"]) == (0.3, 2, 3)
    assert (entropy["minimum"], entropy["maximum"]) == (0.3, 0.5)
    loss = doc["metrics"]["value_loss"]
    assert (loss["nonfinite"], loss["first_nonfinite"], loss["maximum"]) == (1, 1, 3.0)
    assert doc["metrics"]["kl_coef"]["measured"] == 0
    assert doc["metrics"]["kl_coef"]["final"] is None
    text = format_text(build_summary(path, PLAIN_KL))
    assert "kl_coef                not measured" in text
    assert "value_loss" in text
    assert "1, first at update 1" in text


def test_early_stops_with_reasons(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(TEXT_LIST_LIMIT + 5):
        log.update(early_stop_update(u, kl=0.04 + u / 10000))
    log.finish()
    log.close()
    doc = summary(path)
    assert doc["early_stops"]["count"] == TEXT_LIST_LIMIT + 5
    first = doc["early_stops"]["listed"][0]
    assert first == {
        "update": 0,
        "reason": "approx_kl 0.0400 > max_kl 0.0300 at epoch 2 minibatch 3 (minibatch not applied)",
    }
    text = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    assert "  update 1: approx_kl 0.0401 > max_kl 0.0300" in text
    assert "... and 5 more" in text


def test_skipped_lines_with_line_numbers(corrupt_log: Path, unknown_kind_log: Path) -> None:
    doc = summary(corrupt_log)
    counts = (doc["skipped_lines"], doc["skipped_malformed"], doc["skipped_unknown_kind"])
    assert counts == (2, 2, 0)
    assert [s["line"] for s in doc["skipped"]] == [4, 7]
    unknown = summary(unknown_kind_log)["skipped"]
    assert [(s["line"], s["kind"], s["type"]) for s in unknown] == [
        (4, "unknown_kind", "gpu_stats"),
        (5, "unknown_kind", "gpu_stats"),
    ]
    assert "'gpu_stats'" in unknown[0]["detail"]
    text = format_text(build_summary(corrupt_log, DEFAULT_THRESHOLDS))
    assert "skipped lines (2 malformed, 0 unknown kind)" in text
    assert "  line 4 malformed:" in text


def test_unfinished_run_says_so(unfinished_log: Path) -> None:
    doc = summary(unfinished_log)
    assert doc["run"]["status"] == "running"
    text = format_text(build_summary(unfinished_log, DEFAULT_THRESHOLDS))
    assert "no run_finished (still running, or cut off)" in text


def test_anomalies_listed(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    log.anomaly("critical", "grad_norm", math.nan, update=0)
    log.close()
    doc = summary(path)
    assert doc["anomalies"]["critical"] == 1
    assert doc["anomalies"]["listed"][0]["value"] == "NaN"
    text = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    assert "update 0 critical grad_norm = NaN: optimizer step skipped" in text


def test_an_anomaly_without_an_update_is_listed_without_one(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    log.update(0)
    log.anomaly("critical", "grad_norm", math.nan, update=None)
    log.close()
    text = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    assert "  critical grad_norm = NaN: optimizer step skipped" in text
    assert "None" not in text


def test_a_log_with_only_run_started_summarises_and_checks(tmp_path: Path) -> None:
    """total_steps declared, no step yet: no arithmetic on a missing global_step."""
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()  # CONFIG declares total_steps
    log.close()
    doc = summary(path)
    assert (doc["run"]["global_step"], doc["run"]["total_steps"]) == (None, 10240)
    text = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    assert "progress  0 updates, no step yet of 10240 planned, 1 event" in text
    result = run_check(path, DEFAULT_THRESHOLDS, allow_unfinished=True)
    assert result.exit_code == 0
    assert {r.name: r.message for r in result.rows}["approx_kl"] == "not measured in this run"
    assert run_check(path, DEFAULT_THRESHOLDS).exit_code == 1  # unfinished, not an error
    assert main(["summary", str(path)]) == 0


def test_a_log_holding_two_runs_summarises_the_last_and_names_the_earlier(
    tmp_path: Path,
) -> None:
    path = tmp_path / "both.jsonl"
    write_two_runs(path)
    doc = summary(path)
    assert (doc["run"]["run_id"], doc["run"]["updates"]) == ("run-b", 4)
    kl = doc["rules"][0]
    # run-b's KL per clip fraction; run-a's critical KL is not here
    assert (kl["worst"], kl["updates_critical"]) == (0.001 / HEALTHY["clip_fraction"], 0)
    assert doc["metrics"]["value_loss"]["nonfinite"] == 0
    assert (doc["early_stops"]["count"], doc["anomalies"]["critical"]) == (0, 0)
    assert doc["earlier_runs"] == [
        {
            "run_id": "run-a",
            "updates": 6,
            "why": "a new run run-b started in the same log",
            "new_run": True,
        }
    ]
    text = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    assert "earlier   1 earlier run in this file not summarised: run-a (6 updates)" in text


def test_summary_and_check_write_the_worst_kl_alike(tmp_path: Path) -> None:
    breach = {"approx_kl": 0.41234, "clip_fraction": 0.0}  # 41.234 per clip fraction
    path = write_run(tmp_path / "e.jsonl", overrides=kl_breach(5, breach))
    check_text = check_report.format_text(run_check(path, DEFAULT_THRESHOLDS))
    summary_text = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    kl_rows = [
        line.split()
        for line in (check_text + summary_text).splitlines()
        if line.startswith("KL approx_kl")
    ]
    assert len(kl_rows) == 2
    assert "41.2" in kl_rows[0] and "41.2" in kl_rows[1]  # the rule's format in both


def test_a_file_that_grows_while_summarised_is_summarised_up_to_its_size_at_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_run(tmp_path / "events.jsonl", updates=5, finish=None)
    size = path.stat().st_size
    writer = RunLog(path)
    writer.emitter._seq = itertools.count(12)
    append_after_each_read(monkeypatch, writer, first_update=5)
    doc = build_summary(path, DEFAULT_THRESHOLDS)
    writer.close()
    assert (doc["run"]["updates"], doc["judged_bytes"], doc["grew_while_read"]) == (5, size, True)
    assert f"(it grew while read: summarised up to byte {size})" in format_text(doc)


def test_a_final_value_its_rule_did_not_judge_is_marked_with_the_reason(tmp_path: Path) -> None:
    """EV -8.377 on returns nearly constant: not judged, and the summary says why; every
    KL figure is written as the dashboard writes it."""
    flat = {"explained_variance": -8.377, "return_std": 0.0}
    path = write_run(tmp_path / "events.jsonl", 12, lambda u: flat)
    lines = format_text(build_summary(path, DEFAULT_THRESHOLDS)).splitlines()
    ev = next(line for line in lines if line.startswith("EV explained_variance"))
    assert ev.split()[2] == "-8.377*"
    assert "* EV not judged: returns nearly constant" in lines
    kl = next(line for line in lines if line.startswith("approx_kl "))
    assert kl.split()[1:4] == ["0.0050"] * 3


def test_each_return_figure_has_one_label_and_value_in_every_view(tmp_path: Path) -> None:
    """The latest rollout's mean, its episodes' min..max and the run's best rollout mean
    read with the same labels and figures in the dashboard's words (``--once``) and in
    ``summary``; the best is the whole run's, even when it is older than the series a
    live view keeps; progress past the total reads 100% in both."""
    path = tmp_path / "e.jsonl"
    log = RunLog(path)
    log.start()
    updates = SERIES_LEN + 5
    for u in range(updates):
        mean = 900.0 if u == 0 else 20.0 + u % 7  # the best, then out of the kept series
        log.emit(
            RolloutPayload(
                update=u,
                global_step=(u + 1) * 512,
                episodes=2,
                episode_return_mean=mean,
                episode_return_min=mean - 5,
                episode_return_max=mean + 5,
            )
        )
        log.emit(ppo_update(u, global_step=(u + 1) * 512))
    log.finish()
    log.close()
    doc = summary(path)
    assert doc["run"]["episode_return_best"] == 900.0
    text = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    assert f"{BEST_ROLLOUT_MEAN} 900.00" in text
    once = " ".join(once_text(read_snapshot(path, DEFAULT_THRESHOLDS), path).split())
    last = 20.0 + (updates - 1) % 7
    low, high = format_value(last - 5), format_value(last + 5)
    assert f"{ROLLOUT_MEAN} {format_value(last)}" in once and f"min…max {low}…{high}" in once
    assert f"{BEST_ROLLOUT_MEAN} {format_value(900.0)}" in once
    overshoot = f"({updates * 512 / CONFIG['total_steps']:.0%})"  # the steps past the total
    assert "(100%)" in text and overshoot not in text


def _facts(text: str) -> tuple[str, str]:
    lines = text.splitlines()
    progress = next(line for line in lines if line.startswith("progress "))
    speed = next(line for line in lines if line.startswith("speed "))
    return progress, speed


def test_a_run_that_counts_tokens_says_tokens(tmp_path: Path) -> None:
    path = write_run(tmp_path / "events.jsonl", updates=6, step_unit="tokens")
    doc = build_summary(path, DEFAULT_THRESHOLDS)
    assert doc["run"]["step_unit"] == "tokens"
    progress, speed = _facts(format_text(doc))
    assert ", 3072 / 10240 tokens (30%), " in progress
    assert speed == "speed     4000 tokens/s (last rollout)"


def test_a_log_without_a_step_unit_reads_as_environment_steps(tmp_path: Path) -> None:
    path = write_run(tmp_path / "events.jsonl", updates=6)
    doc = build_summary(path, DEFAULT_THRESHOLDS)
    assert doc["run"]["step_unit"] is None
    progress, speed = _facts(format_text(doc))
    assert ", 3072 / 10240 steps (30%), " in progress
    assert speed == "speed     4000 steps/s (last rollout)"


def test_the_text_lists_only_what_the_runs_kind_can_have_and_keeps_its_rows_aligned(
    tmp_path: Path,
) -> None:
    """A CartPole run lists no completion lengths, rewards or reference KL as "not
    measured" (nor their rules), the recorded token-level run does; every row's figures
    start in one column however long its name (``completion_truncated_frac``)."""
    path = tmp_path / "classic.jsonl"
    log = RunLog(path)
    log.start()
    for u in range(3):
        log.emit(ppo_update(u))
    log.finish()
    log.close()
    classic = format_text(build_summary(path, DEFAULT_THRESHOLDS))
    only_some = [m for m in RUNS_OF if m in PPO_METRICS]
    assert not any(line.split(" ")[0] in only_some for line in classic.splitlines())
    assert "RefKL" not in classic and "Length" not in classic
    assert "clip_fraction_lower    not measured" in classic  # any PPO run can have it
    tokens = RECORDED / "tokens-s1" / "events.jsonl"
    text = format_text(build_summary(tokens, DEFAULT_THRESHOLDS)).splitlines()
    assert any(line.startswith("completion_truncated_frac ") for line in text)
    assert any(line.startswith("Length completion_truncated_frac ") for line in text)
    header = next(line for line in text if line.startswith("metric "))
    end = header.index("final") + len("final")  # where every final figure ends (right-aligned)
    rows = text[text.index(header) + 1 :]
    table = rows[: rows.index("")] if "" in rows else rows
    measured = [line for line in table if "not measured" not in line]
    assert measured and all(line[end - 1] != " " and line[end] == " " for line in measured)
