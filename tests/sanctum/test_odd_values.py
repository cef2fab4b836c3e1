"""Odd values in a log are shown, or read as "not measured", never a crash.

``run_started.config`` is free-form JSON and ``ts`` any finite time from 0 on: a
``kl_estimator`` holding an object used to crash check, summary, --once, diff and the run
table (one such run took the whole ``--all`` table down), and a start time of 1e300 (or of
Infinity, before the contract refused it) crashed ``summary``. Every view reads a config
value for what it is, whatever its type; a ``ts`` that is not a time (NaN, infinite,
negative) makes its line unreadable, and a log whose ``run_started`` is unreadable is
refused in one line.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sanctum.cli import main
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.board_feed import RunFollower
from sanctum.model.board import group_rows
from sanctum.text.run_table import GROUP_COLUMNS, RUN_COLUMNS, group_line, layout, run_line
from sanctum.tui.app import SanctumApp
from telemetry.events import POLICY_EPOCHS_MAX, policy_epochs_of
from tests.waiting import settle

CONFIG_KEYS = (
    "kl_estimator",
    "ref_kl_loss_estimator",
    "ref_kl_reward_estimator",
    "seed",
    "total_timesteps",
    "total_steps",
    "max_kl",
    "vocab",
    "env_id",
    "learning_rate",
    "hyperparameters",
)
"""Keys the views read from ``run_started.config``, and a few they only show."""

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
configs = st.dictionaries(st.sampled_from(CONFIG_KEYS) | st.text(max_size=8), json_values)
timestamps = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e300, -1e300, 0.0, -1.0, 1e18, 2**63, 1_700_000_000.5]),
    st.sampled_from(['"Infinity"', '"-Infinity"', '"NaN"']),  # the contract's spellings
)

UPDATE = {
    "update": 0,
    "global_step": 8,
    "approx_kl": 0.01,
    "clip_fraction": 0.1,
    "early_stopped": False,
}
ROLLOUT = {"update": 0, "global_step": 8, "episodes": 1, "episode_return_mean": 1.0}


def line(kind: str, seq: int, ts: Any, payload: dict[str, Any]) -> str:
    stamp = ts if isinstance(ts, str) else json.dumps(ts)
    body = json.dumps(payload)
    return f'{{"type":"{kind}","run_id":"odd","seq":{seq},"ts":{stamp},"payload":{body}}}\n'


def write_log(
    path: Path, config: dict[str, Any], stamps: list[Any], header: dict[str, Any] | None = None
) -> Path:
    started = {"trainer": {"name": "odd"}, "env_id": "CartPole-v1", "config": config}
    started |= header or {}
    lines = [
        line("run_started", 1, stamps[0], started),
        line("rollout", 2, stamps[1], ROLLOUT),
        line("ppo_update", 3, stamps[2], UPDATE),
        line("run_finished", 4, stamps[3], {"status": "completed", "duration_seconds": 1.0}),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def run(*argv: str) -> tuple[int, str, str]:
    """``sanctum ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def strict_json(text: str) -> object:
    """``text`` parsed as strict JSON (a bare NaN or Infinity token is an error)."""

    def refuse(token: str) -> object:
        raise ValueError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def table_text(*paths: Path) -> str:
    """The run table's rows and group rows, as the ``--all`` table draws them."""
    rows = []
    for i, path in enumerate(paths):
        follower = RunFollower(path, f"run{i}", DEFAULT_THRESHOLDS)
        follower.read()
        rows.append(follower.row(1.8e9))
    groups, _ = group_rows(rows)
    lines = [run_line(layout(RUN_COLUMNS, 116), row, i) for i, row in enumerate(rows)]
    lines += [group_line(layout(GROUP_COLUMNS, 116), g, i) for i, g in enumerate(groups)]
    return "\n".join("".join(text for text, _ in cells) for cells in lines)


EXITS = {"check": {0, 1}, "summary": {0}, "--once": {0}, "diff": {0}, "gate": {0, 1, 2}}
"""What each command exits with on a log it can read (2 only when it cannot; the learning
gate says so, one line, when it cannot compare the runs)."""


def a_time(ts: Any) -> bool:
    """Whether the contract reads ``ts`` (a JSON number or spelling) as a time."""
    return not isinstance(ts, str) and 0 <= ts and math.isfinite(ts)


def assert_views_refuse(run_path: Path, field: str = "$.ts") -> None:
    """Every view exits 2 with one line naming ``field``: the log's ``run_started`` is
    unreadable."""
    for argv in (["check"], ["summary"], ["--once"], ["check", "--json"]):
        code, _, err = run(*argv, str(run_path))
        assert code == 2 and err.count("\n") == 1 and field in err, (argv, code, err)


def assert_views_survive(run_path: Path, plain: Path) -> None:
    for argv in (
        ["check", str(run_path)],
        ["check", "--json", str(run_path)],
        ["summary", str(run_path)],
        ["summary", "--json", str(run_path)],
        ["--once", str(run_path)],
        ["--once", "--json", str(run_path)],
        ["diff", str(run_path), str(plain)],
        ["check", str(run_path), "--baseline", str(plain)],
    ):
        code, out, err = run(*argv)
        assert "Traceback" not in err and "internal error" not in err, (argv, err)
        assert code in EXITS["gate" if "--baseline" in argv else argv[0]], (argv, code, err)
        if "--json" in argv:
            strict_json(out)
    assert "run0" in table_text(run_path, plain)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_log(tmp_path_factory.mktemp("plain") / "events.jsonl", {}, [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize(
    ("config", "stamps"),
    [
        ({"kl_estimator": {"name": "k3"}}, [1.0, 2.0, 3.0, 4.0]),
        ({"ref_kl_loss_estimator": ["k1"], "ref_kl_reward_estimator": 3}, [1.0, 2.0, 3.0, 4.0]),
        ({}, [1e300, 2.0, 3.0, 4.0]),
    ],
    ids=["kl-object", "ref-kl-list-and-number", "ts-1e300"],
)
def test_the_reported_odd_values_are_read_not_crashed_on(
    tmp_path: Path, plain: Path, config: dict[str, Any], stamps: list[Any]
) -> None:
    assert_views_survive(write_log(tmp_path / "odd" / "events.jsonl", config, stamps), plain)


@pytest.mark.parametrize("epochs", [2**70, 2**63, POLICY_EPOCHS_MAX + 1, 0, -3])
def test_a_declared_count_no_run_makes_is_a_refused_line_in_every_view(
    tmp_path: Path, plain: Path, epochs: int
) -> None:
    """``policy_epochs`` (PPO's epochs, GRPO's num_iterations) sizes the window of a rule;
    2^70 used to crash every view building it. Now the line is refused, and each view says
    so in one line; the run table and ``diff`` against it survive."""
    header = {"algorithm": "grpo", "policy_epochs": epochs}
    path = write_log(tmp_path / "odd" / "events.jsonl", {}, [1.0, 2.0, 3.0, 4.0], header)
    assert_views_refuse(path, "$.payload.policy_epochs")
    code, _, err = run("diff", str(path), str(plain))
    assert code == 2 and err.count("\n") == 1 and "policy_epochs" in err, err
    assert "run0" in table_text(path, plain)


def test_finite_extremes_in_one_series_are_read_not_crashed_on(tmp_path: Path, plain: Path) -> None:
    """+-1e308 in one series: their difference is past float's range (sparklines, axes)."""
    path = tmp_path / "extremes" / "events.jsonl"
    write_log(path, {}, [1.0, 2.0, 3.0, 4.0])
    text = path.read_text(encoding="utf-8").splitlines(keepends=True)
    extra = [
        line("ppo_update", 4 + u, 5.0 + u, {**UPDATE, "update": 1 + u, "value_loss": value})
        for u, value in enumerate([1e308, -1e308, 1.7e308, -1.7e308, 1e308])
    ]
    finished = text[-1].replace('"seq":4', f'"seq":{4 + len(extra)}')
    path.write_text("".join([*text[:-1], *extra, finished]), encoding="utf-8")
    assert_views_survive(path, plain)


async def test_the_dashboard_shows_a_refused_declared_count_as_a_skipped_line(
    tmp_path: Path,
) -> None:
    """The dashboard (and replay, which is the same app) reads the refused line as a
    skipped one: counted, shown, no crash."""
    header = {"algorithm": "grpo", "policy_epochs": 2**70}
    path = write_log(tmp_path / "odd" / "events.jsonl", {}, [1.0, 2.0, 3.0, 4.0], header)
    app = SanctumApp(path, DEFAULT_THRESHOLDS, clock=lambda: 10.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(
            pilot,
            lambda a: a.snapshot is not None and a.snapshot.run.skipped_lines > 0,
            "the skipped line",
            30.0,
        )
        assert app.return_code is None  # still running: nothing raised


def test_a_log_whose_seq_starts_past_1_lost_its_head_and_fails_the_gate(tmp_path: Path) -> None:
    """A run's seq counts 1, 2, 3...: one that starts at 101 lost 100 events (it used to
    pass as "seq has no gap")."""
    path = write_log(tmp_path / "head" / "events.jsonl", {}, [1.0, 2.0, 3.0, 4.0])
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    shifted = [text.replace(f'"seq":{i}', f'"seq":{i + 100}', 1) for i, text in enumerate(lines, 1)]
    path.write_text("".join(shifted), encoding="utf-8")
    code, out, _ = run("check", str(path))
    assert code == 1 and "100 events missing (first before seq 101)" in out, out


def test_rollouts_of_impossible_episode_counts_are_read_not_crashed_on(
    tmp_path: Path, plain: Path
) -> None:
    """An episode count of 10**400 used to overflow the final return's sum (a traceback in
    check, summary and diff); now its line is unreadable (no count passes 2**63 - 1), and
    every view still survives it."""
    path = write_log(tmp_path / "episodes" / "events.jsonl", {}, [1.0, 2.0, 3.0, 4.0])
    text = path.read_text(encoding="utf-8").replace('"episodes": 1', f'"episodes": {10**400}')
    path.write_text(text, encoding="utf-8")
    assert f"{10**400}" in text
    assert_views_survive(path, plain)


def test_a_writer_declares_only_a_count_a_reader_takes() -> None:
    assert [policy_epochs_of(v) for v in (1, 4, POLICY_EPOCHS_MAX)] == [1, 4, POLICY_EPOCHS_MAX]
    for hostile in (0, -1, 2**70, POLICY_EPOCHS_MAX + 1, True, 2.0, "4", None):
        assert policy_epochs_of(hostile) is None, hostile


@pytest.mark.parametrize("stamp", ['"Infinity"', '"NaN"', '"-Infinity"', -1.0])
def test_a_start_time_that_is_not_a_time_is_refused_in_one_line(tmp_path: Path, stamp: Any) -> None:
    assert_views_refuse(write_log(tmp_path / "r" / "events.jsonl", {}, [stamp, 2.0, 3.0, 4.0]))


def test_a_start_time_no_calendar_holds_is_shown_as_unknown(tmp_path: Path) -> None:
    path = write_log(tmp_path / "r" / "events.jsonl", {}, [1e300, 2.0, 3.0, 4.0])
    code, out, _ = run("summary", str(path))
    assert code == 0
    assert "started   unknown (ts 1e+300 is not a date);" in out


headers = st.fixed_dictionaries(
    {},
    optional={
        "env_id": st.none() | st.text(max_size=12),
        "seed": st.none() | st.integers(-(2**64), 2**64),
        "trainer": st.fixed_dictionaries(
            {"name": st.text(max_size=8)}, optional={"version": st.text(max_size=8)}
        ),
        "world_size": st.integers(-(2**63), 2**63),
        "schema_minor": st.integers(-5, 2**40),
        "host": st.text(max_size=8),
        "pid": st.integers(-(2**63), 2**63),
    },
)
"""The other fields of ``run_started``, each any value of its type (integers past 64 bits
included: the decoder takes them)."""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configs, stamps=st.lists(timestamps, min_size=4, max_size=4), header=headers)
def test_any_config_and_any_time_give_a_documented_exit(
    tmp_path_factory: pytest.TempPathFactory,
    config: dict[str, Any],
    stamps: list[Any],
    header: dict[str, Any],
) -> None:
    folder = tmp_path_factory.mktemp("odd")
    plain = write_log(folder / "plain" / "events.jsonl", {}, [1.0, 2.0, 3.0, 4.0])
    odd = write_log(folder / "odd" / "events.jsonl", config, stamps, header)
    if not a_time(stamps[0]):
        assert_views_refuse(odd)
    elif not 1 <= header.get("world_size", 1) <= 2**63 - 1:  # fewer than one process, or a
        assert_views_refuse(odd, "$.payload.world_size")  # count past what a log holds
    elif header.get("schema_minor", 0) < 0:  # no version is below 0
        assert_views_refuse(odd, "$.payload.schema_minor")
    else:
        assert_views_survive(odd, plain)
