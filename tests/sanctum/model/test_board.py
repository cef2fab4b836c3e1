"""Several runs without a screen: finding them, one row each, seeds grouped, the table's
words and the overlay's picture. Logs are real (written through the real writer) and read
through the run table's own follower."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from sanctum.charts.overlay import OverlayCanvas, Series
from sanctum.cli import main, with_default_command
from sanctum.health.levels import Level
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.board_feed import EPISODE_RETURN, RunFollower
from sanctum.model.aggregator import SanctumAggregator
from sanctum.model.board import (
    RunRow,
    Spread,
    group_rows,
    run_labels,
    spread_of,
    worst_kl,
)
from sanctum.model.snapshot import Connection
from sanctum.run_files import UsageError, find_runs
from sanctum.text.run_table import (
    GROUP_COLUMNS,
    NAME_MIN,
    RUN_COLUMNS,
    fit_middle,
    fit_words,
    group_line,
    group_verdict,
    layout,
    range_text,
    run_line,
    status_text,
)
from telemetry.eventlog import ReadBatch
from telemetry.events import Event
from tests.sanctum.logs import KL_HOLDS, KL_WARNING, kl_breach, kl_spike, write_run
from tests.sanctum.sweep_logs import SWEEP, events_in, kl_at, return_at, write_sweep

NOW_AFTER = 2.0
"""Seconds after a log's last event at which its rows are taken."""


def rows_of(folder: Path) -> list[RunRow]:
    """One row per run of the sweep under ``folder``, read as the run table reads them."""
    logs = write_sweep(folder)
    now = max(log.now for log in logs) + NOW_AFTER
    rows = []
    for path, label in zip(events_in(folder), run_labels(events_in(folder)), strict=True):
        follower = RunFollower(path, label, DEFAULT_THRESHOLDS)
        assert follower.read()[0]
        rows.append(follower.row(now))
    return rows


# -- which runs ----------------------------------------------------------------------------


def test_all_lists_every_run_folder_sorted(tmp_path: Path) -> None:
    write_sweep(tmp_path / "sweep")
    found = find_runs([], str(tmp_path / "sweep"))
    assert [p.parent.name for p in found] == sorted(r.run_id for r in SWEEP)
    assert all(p.name == "events.jsonl" for p in found)


def test_runs_given_are_resolved_like_sanctum_run(tmp_path: Path) -> None:
    write_sweep(tmp_path)
    a, b = tmp_path / "lr3e-3-s1", tmp_path / "lr3e-4-s2" / "events.jsonl"
    assert find_runs([str(a), str(b)], None) == [a / "events.jsonl", b]


@pytest.mark.parametrize(
    ("runs", "all_dir", "message"),
    [
        ([], "empty", "no run under empty/ (looked for empty/*/events.jsonl)"),
        ([], "missing", "--all missing: no such folder"),
        (["x"], "empty", "give RUNs or --all DIR, not both"),
        (["a", "a/events.jsonl"], None, "a/events.jsonl is named twice"),
    ],
)
def test_unusable_run_lists_say_why(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    runs: list[str],
    all_dir: str | None,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "a").mkdir()
    with pytest.raises(UsageError) as caught:
        find_runs(runs, all_dir)
    assert str(caught.value) == message


def test_labels_are_folder_names_made_distinct_by_their_parents() -> None:
    paths = [Path("x/a/events.jsonl"), Path("y/a/events.jsonl"), Path("y/b/events.jsonl")]
    assert run_labels(paths) == ["x/a", "y/a", "b"]
    assert run_labels([Path("logs/one.jsonl")]) == ["one.jsonl"]


def test_the_command_line_opens_the_table_for_several_runs_and_refuses_bad_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert with_default_command(["--all", "runs/"]) == ["watch", "--all", "runs/"]
    assert with_default_command(["runs/a", "runs/b"]) == ["watch", "runs/a", "runs/b"]
    (tmp_path / "empty").mkdir()
    assert main(["--all", str(tmp_path / "empty")]) == 2
    assert "sanctum: error: no run under" in capsys.readouterr().err
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), "--once"]) == 2
    assert "--once shows one run: give one RUN" in capsys.readouterr().err


# -- one row a run -------------------------------------------------------------------------


def test_a_row_holds_the_run_figures(tmp_path: Path) -> None:
    rows = {row.label: row for row in rows_of(tmp_path)}
    run = SWEEP[1]  # lr3e-4-s2: live, 14 updates
    row = rows[run.run_id]
    assert row.connection is Connection.LIVE
    assert row.update == run.updates - 1
    assert row.last_return == return_at(run, run.updates - 1)
    assert row.progress == pytest.approx(14 * 512 / CONFIG_TOTAL)
    assert row.steps_per_second == pytest.approx(4000.0)
    assert row.seed == run.seed
    expected = max(kl_at(run, u) for u in range(run.updates))
    assert row.worst_kl.value == pytest.approx(expected)
    assert rows["lr3e-3-s1"].connection is Connection.FINISHED


CONFIG_TOTAL = 20 * 512
"""``total_steps`` of the test config."""


def test_the_worst_kl_is_the_rules_worst_over_the_whole_run(tmp_path: Path) -> None:
    """The KL rule judges KL per clip fraction, not in nats: the column shows the run's
    largest KL, coloured by the worst level the rule reached over the whole run (after the
    run is healthy again, and not by a single large value the rule's median passes over)."""
    path = write_run(tmp_path / "w.jsonl", updates=12, overrides=kl_breach(3, KL_WARNING))
    follower = RunFollower(path, "w", DEFAULT_THRESHOLDS)
    follower.read()
    row = follower.row(1e12)
    assert row.worst_kl.value == pytest.approx(KL_WARNING["approx_kl"])
    assert row.worst_kl.level is Level.WARNING
    assert (row.verdict.word, row.verdict.items[0]) == ("WARN", f"KL {KL_HOLDS}x")
    spike = write_run(tmp_path / "s.jsonl", updates=12, overrides=kl_spike(3, 0.5))
    follower = RunFollower(spike, "s", DEFAULT_THRESHOLDS)
    follower.read()
    row = follower.row(1e12)
    assert (row.worst_kl.value, row.worst_kl.level) == (0.5, Level.HEALTHY)
    # one update of the median's five: the KL rule does not fire; but 17x the run's max_kl
    # with no early stop recorded warns that the early stop did not fire
    assert (row.verdict.word, row.verdict.items) == ("WARN", ("KL past max_kl 1x",))


def test_a_log_whose_fold_fails_costs_its_own_row_not_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug folding one run's log (injected: the fold raises for that log) is shown on
    that run's row as unreadable, with why; the other runs are read and judged."""
    good = write_run(tmp_path / "good.jsonl", updates=6)
    bad = write_run(tmp_path / "bad.jsonl", updates=6)
    followers = [RunFollower(p, p.stem, DEFAULT_THRESHOLDS) for p in (good, bad)]
    fold = SanctumAggregator.handle_batch

    def fold_or_fail(
        agg: SanctumAggregator, batch: ReadBatch, after: Callable[[Event], None] | None = None
    ) -> None:
        if agg is followers[1].aggregator:
            raise KeyError("\x1b]0;boom")
        fold(agg, batch, after)

    monkeypatch.setattr(SanctumAggregator, "handle_batch", fold_or_fail)
    changed, notices = followers[1].read()
    assert changed and notices[0][1] == "error" and "KeyError" in notices[0][0]
    assert followers[0].read()[0]
    good_row, bad_row = (f.row(1e12) for f in followers)
    assert good_row.problem is None and good_row.verdict.word == "OK"
    assert bad_row.problem is not None and status_text(bad_row) == "✖ UNREADABLE"
    assert followers[1].read() == (False, [])  # no longer read


def test_a_nonfinite_kl_is_the_worst(tmp_path: Path) -> None:
    path = write_run(tmp_path / "n.jsonl", updates=6, overrides=lambda u: nan_at_2(u))
    follower = RunFollower(path, "n", DEFAULT_THRESHOLDS)
    follower.read()
    kl = follower.row(1e12).worst_kl
    assert kl.value is not None and math.isnan(kl.value)
    assert kl.level is Level.CRITICAL


def nan_at_2(update: int) -> dict[str, float]:
    return {"approx_kl": math.nan} if update == 2 else {}


def test_without_a_kl_rule_the_worst_is_the_largest_value() -> None:
    assert worst_kl(None, 0.02, 0).value == 0.02
    assert worst_kl(None, 0.02, 0).level is Level.HEALTHY
    nan = worst_kl(None, 0.02, 1)
    assert nan.value is not None and math.isnan(nan.value) and nan.level is Level.CRITICAL
    assert worst_kl(None, None, 0).level is Level.PENDING


def test_an_unreadable_log_is_a_row_that_says_so(tmp_path: Path) -> None:
    path = write_run(tmp_path / "v2.jsonl", updates=1, finish=None)
    text = path.read_text().replace('"schema":1', '"schema":2', 1)
    path.write_text(text)
    follower = RunFollower(path, "v2", DEFAULT_THRESHOLDS)
    changed, notices = follower.read()
    assert changed and notices[0][1] == "error" and "schema" in notices[0][0]
    line = run_line(layout(RUN_COLUMNS, 100), follower.row(1e12), 0)
    assert "✖ UNREADABLE" in "".join(text for text, _ in line)


# -- seeds grouped -------------------------------------------------------------------------


def test_seeds_of_one_config_form_a_group_with_median_and_spread(tmp_path: Path) -> None:
    rows = rows_of(tmp_path)
    groups, group_of = group_rows(rows)
    labels = {g.label: g for g in groups}
    assert set(labels) == {"learning_rate=0.0003", "learning_rate=0.003"}
    small = labels["learning_rate=0.0003"]
    assert sorted(seed or 0 for seed in small.seeds) == [1, 2, 3]
    assert [group_of[i] for i in small.members] == [groups.index(small)] * 3
    finals = [return_at(r, r.updates - 1) for r in SWEEP[:3]]
    assert small.last_return == Spread(statistics.median(finals), min(finals), max(finals), 3)
    worst = [max(kl_at(r, u) for u in range(r.updates)) for r in SWEEP[:3]]
    assert small.worst_kl.median == pytest.approx(statistics.median(worst))
    assert small.worst_kl.high == pytest.approx(max(worst))
    big = labels["learning_rate=0.003"]
    assert big.connections == (Connection.FINISHED, Connection.LIVE)
    assert (big.level, big.at_level) == (Level.CRITICAL, 1)
    assert group_verdict(big) == "FAIL 1/2"
    assert group_verdict(small) == "OK"


def test_one_group_is_named_by_its_environment_and_a_run_not_started_by_its_label(
    tmp_path: Path,
) -> None:
    rows = rows_of(tmp_path)[3:]  # the two seeds of lr 3e-3
    waiting = RunFollower(tmp_path / "later" / "events.jsonl", "later", DEFAULT_THRESHOLDS)
    groups, _ = group_rows([*rows, waiting.row(1e12)])
    assert [g.label for g in groups] == ["CartPole-v1", "later (not started)"]


def test_group_names_lead_with_what_the_sweep_varies_and_stay_apart_when_cut(
    tmp_path: Path,
) -> None:
    """Three configs of one sweep over learning_rate, two of which also set anneal_lr and a
    long run name: each label starts with the setting that differs most, and cut to a
    narrow column the three still read apart (``learning_rate=0.001 +2``), never
    ``anneal_lr=t…eps=500000``."""
    rows = []
    for i, (lr, anneal) in enumerate(((0.001, True), (0.003, True), (0.01, False))):
        config = {"anneal_lr": anneal, "learning_rate": lr, "total_steps": 500_000 + i}
        path = write_run(tmp_path / f"c{i}" / "events.jsonl", updates=2, config=config)
        follower = RunFollower(path, f"c{i}", DEFAULT_THRESHOLDS)
        follower.read()
        rows.append(follower.row(1e12))
    groups, _ = group_rows(rows)
    labels = [g.label for g in groups]
    assert all(label.startswith("learning_rate=") for label in labels), labels
    assert labels[0].startswith("learning_rate=0.001 total_steps=500000 anneal_lr=")
    cut = [fit_words(label, 24) for label in labels]
    assert cut == ["learning_rate=0.001 +2", "learning_rate=0.003 +2", "learning_rate=0.01 +2"]
    assert fit_words("a=1 b=2", 7) == "a=1 b=2" and fit_words("abcdefghij b=2", 8) == "ab…ij +1"
    rows = []
    for i, sizes in enumerate(([64, 64], [256, 256])):
        config = {"hidden_sizes": sizes, "learning_rate": 0.001 * (i + 1), "clip": 0.2 + i}
        path = write_run(tmp_path / f"l{i}" / "events.jsonl", updates=2, config=config)
        follower = RunFollower(path, f"l{i}", DEFAULT_THRESHOLDS)
        follower.read()
        rows.append(follower.row(1e12))
    groups, _ = group_rows(rows)
    assert "hidden_sizes=[64,64]" in groups[0].label  # a list is one word: cut whole
    assert all(fit_words(g.label, 24).endswith(" +2") for g in groups), [g.label for g in groups]


def test_spread_takes_the_middle_and_the_ends() -> None:
    assert spread_of([3.0, None, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0, 3)
    assert spread_of([4.0, 1.0, 2.0, 3.0]) == Spread(2.5, 1.0, 4.0, 4)
    assert spread_of([None]) == Spread()
    nan = spread_of([0.1, math.nan, 0.2])
    assert nan.high is not None and math.isnan(nan.high) and nan.median == 0.2


# -- the table's words ---------------------------------------------------------------------


def test_strings_from_a_log_are_shown_as_text(tmp_path: Path) -> None:
    hostile = "[red]x\x1b[2J\u202e"
    rows = []
    for name, note in (("a", hostile), ("b", "plain")):
        path = write_run(tmp_path / name / "events.jsonl", updates=2, config={"note": note})
        follower = RunFollower(path, f"{name}[b]\x07", DEFAULT_THRESHOLDS)
        follower.read()
        rows.append(follower.row(1e12))
    groups, _ = group_rows(rows)
    assert groups[0].label == f"note={hostile}"  # the data, as it is
    line = group_line(layout(GROUP_COLUMNS, 160), groups[0], 0)
    text = "".join(text for text, _ in line)
    assert "[red]x\\x1b[2J\\u202e" in text and "\x1b" not in text
    run = "".join(text for text, _ in run_line(layout(RUN_COLUMNS, 116), rows[0], 0))
    assert "a[b]\\x07" in run


def test_a_narrow_table_drops_the_least_needed_columns_first() -> None:
    narrow = [c.title for c in layout(RUN_COLUMNS, 76)]
    assert "steps/s" not in narrow and "worst KL" in narrow and "verdict" in narrow
    wide = layout(RUN_COLUMNS, 116)
    assert [c.title for c in wide] == [c.title for c in RUN_COLUMNS]
    name = next(c for c in layout(GROUP_COLUMNS, 76) if c.title == "group")
    assert name.width >= NAME_MIN


def test_names_are_cut_in_the_middle_and_ranges_fit_their_column() -> None:
    assert fit_middle("CartPole-v1-20261121-153012-a3f9", 15) == "CartPol…12-a3f9"
    assert fit_middle("short", 15) == "short"
    assert range_text(Spread(0.01, 0.00412, 0.0615, 3), 15) == "0.00412…0.0615"
    assert range_text(Spread(0.01, 0.00412, 0.0615, 3), 11) == "0.004…0.06"
    assert range_text(Spread(), 11) == "—"


# -- the overlay's picture -----------------------------------------------------------------


def text_of(rows: list[list[tuple[str, int | str]]]) -> list[str]:
    return ["".join(text for text, _ in row) for row in rows]


def test_the_overlay_draws_each_run_as_a_line_on_shared_axes() -> None:
    rising = Series.raw(range(4), [0.0, 1.0, 2.0, 3.0], 0)
    flat = Series.raw(range(2, 4), [1.0, 1.0], 1)
    rows = OverlayCanvas().rows([rising, flat], 16, 6)
    assert text_of(rows) == [
        "3┤        ⣀⡴⠃   ",
        " │     ⢀⡤⠞⠁     ",
        " │  ⢀⣠⠖⠋ ⠤⠤⠤⠄   ",
        "0┤⣠⠴⠋           ",
        " └──────────────",
        "  0  updates   4",
    ]
    assert rows[2][2:] == [("  ", ""), ("⢀⣠⠖⠋", 0), (" ", ""), ("⠤⠤⠤⠄", 1), ("   ", "")]


def test_gaps_and_nonfinite_values_are_shown_not_joined() -> None:
    series = Series.raw(range(6), [1.0, 2.0, None, math.nan, 2.0, 1.0], 0)
    assert text_of(OverlayCanvas().rows([series], 20, 5)) == [
        "2┤  ⢠⠇     × ⠈⢧     ",
        " │ ⣰⠋         ⠈⢧⡀   ",
        "1┤⣰⠃            ⢳   ",
        " └──────────────────",
        "  0    updates     6",
    ]
    assert OverlayCanvas().rows([Series((), 0)], 20, 2)[0] == [("no update yet       ", "axis")]


def test_a_canvas_kept_across_frames_draws_what_a_fresh_one_draws() -> None:
    canvas = OverlayCanvas()
    wave = [0.01 * (1.5 + math.sin(u / 3)) for u in range(40)]
    rise = [0.001 * 1.1**u for u in range(40)]
    for n in range(1, 40, 3):  # a frame every three updates, the axes changing on the way
        frame = [Series.raw(range(n), wave[:n], 0), Series.raw(range(5, n), rise[5:n], 1)]
        kept = canvas.rows(frame, 40, 10, log=True, lines=(0.04, 0.1))
        assert text_of(kept) == text_of(
            OverlayCanvas().rows(frame, 40, 10, log=True, lines=(0.04, 0.1))
        )


def test_the_return_overlay_follows_the_rollouts_by_update(tmp_path: Path) -> None:
    write_sweep(tmp_path)
    follower = RunFollower(events_in(tmp_path)[2], "x", DEFAULT_THRESHOLDS)
    follower.read()
    run = SWEEP[0]  # lr3e-4-s1, third in folder order
    line = follower.line(EPISODE_RETURN)
    assert [b.last for b in line.buckets] == list(range(run.updates))
    assert [b.value for b in line.buckets] == [return_at(run, u) for u in range(run.updates)]
    kl = follower.line("approx_kl")
    assert [b.value for b in kl.buckets] == [kl_at(run, u) for u in range(run.updates)]


def test_a_silent_run_reads_stale_with_how_long_it_has_been_silent(tmp_path: Path) -> None:
    path = tmp_path / "quiet" / "events.jsonl"
    write_run(path, updates=3, finish=None)  # unfinished, then nothing more
    follower = RunFollower(path, "quiet", DEFAULT_THRESHOLDS)
    assert follower.read()[0]
    last = follower.aggregator.run.last_event_ts
    assert last is not None
    row = follower.row(last + 42.0)
    assert row.connection is Connection.STALE
    assert status_text(row).startswith("◐ STALE 0:4")  # silent since its last event


def test_the_worst_kl_is_written_at_the_kl_rules_decimals(tmp_path: Path) -> None:
    row = rows_of(tmp_path)[0]
    assert row.worst_kl.value is not None
    columns = layout(RUN_COLUMNS, 116)
    for decimals in (2, 5):
        text = "".join(t for t, _ in run_line(columns, row, 0, decimals))
        assert text.rstrip().endswith(f"{row.worst_kl.value:.{decimals}f}")
