"""Hostile event logs and configs the gate must not pass: real logs from the writer, then
corrupted as a disk, a buggy exporter or an attacker would, judged by the real commands."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sanctum.cli import main as sanctum_main
from tests.cli_runner import run_main
from tests.faults.support import run
from tests.sanctum.logs import write_run

Line = dict[str, Any]


def corrupted(tmp_path: Path, change: Callable[[list[Line]], None]) -> Path:
    """A healthy 20-update run from the real writer, its lines then rewritten by ``change``."""
    path = write_run(tmp_path / "run" / "events.jsonl")
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    change(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def check(path: Path) -> tuple[int, str]:
    result = run(["-m", "sanctum", "check", str(path)])
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout


def check_here(path: Path) -> tuple[int, str]:
    """``check`` in this process (the same command, without a process's start-up)."""
    done = run_main(sanctum_main, "check", path)
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout


def last_of(lines: list[Line], kind: str) -> Line:
    return next(line for line in reversed(lines) if line["type"] == kind)


def test_the_untouched_log_passes(tmp_path: Path) -> None:
    assert check(corrupted(tmp_path, lambda lines: None))[0] == 0


def test_a_log_whose_timestamps_are_nan_is_not_passed(tmp_path: Path) -> None:
    def nan_times(lines: list[Line]) -> None:
        for line in lines:
            line["ts"] = "NaN"

    assert check(corrupted(tmp_path, nan_times))[0] in (1, 2)


@pytest.mark.parametrize(
    ("field", "value"), [("episode_return_mean", "NaN"), ("steps_per_second", "Infinity")]
)
def test_a_nonfinite_rollout_value_fails_the_check(tmp_path: Path, field: str, value: str) -> None:
    def spoil(lines: list[Line]) -> None:
        last_of(lines, "rollout")["payload"][field] = value

    code, out = check(corrupted(tmp_path, spoil))
    assert code == 1 and "FAIL  non-finite" in out


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reward_components", {"format": "NaN"}),
        (
            "early_stop",
            {
                "epoch": 0,
                "minibatch": 0,
                "kl": "NaN",
                "threshold": 0.03,
                "scope": "minibatch",
                "applied": False,
            },
        ),
    ],
)
def test_a_nonfinite_value_inside_a_nested_field_fails_the_check(
    tmp_path: Path, field: str, value: object
) -> None:
    def spoil(lines: list[Line]) -> None:
        last_of(lines, "ppo_update")["payload"][field] = value

    code, out = check(corrupted(tmp_path, spoil))
    assert code == 1 and "FAIL  non-finite" in out


def test_an_update_line_with_invalid_utf8_is_unreadable(tmp_path: Path) -> None:
    path = corrupted(tmp_path, lambda lines: None)
    data = path.read_bytes()
    at = data.rindex(b'"approx_kl"')
    path.write_bytes(data[:at] + b'"approx_kl\xff"' + data[at + len(b'"approx_kl"') :])
    code, out = check(path)
    assert code == 1 and "FAIL  unreadable" in out


@pytest.mark.parametrize(
    ("where", "field", "value"),
    [
        ("payload", "approx_kl", "0.5"),
        ("payload", "update", "1"),
        ("envelope", "seq", "5"),
        ("payload", "entropy", "Infinity1"),
    ],
)
@pytest.mark.parametrize("with_nan", [False, True])
def test_a_number_written_as_a_string_is_unreadable(
    tmp_path: Path, where: str, field: str, value: str, with_nan: bool
) -> None:
    """The shipped schema refuses "0.5" where a number belongs, and so does the reader: only
    "NaN", "Infinity" and "-Infinity" are numbers in a string (a NaN elsewhere in the line
    lets nothing else through)."""

    def quote(lines: list[Line]) -> None:
        update = last_of(lines, "ppo_update")
        (update if where == "envelope" else update["payload"])[field] = value
        if with_nan:
            update["payload"]["value_loss"] = "NaN"

    code, out = check_here(corrupted(tmp_path, quote))
    assert code == 1 and "FAIL  unreadable" in out, out


def test_the_spellings_of_nonfinite_floats_still_read(tmp_path: Path) -> None:
    """Beside a key named "NaN" (a reward component), a spelled NaN is a NaN: non-finite."""

    def spelled(lines: list[Line]) -> None:
        update = last_of(lines, "ppo_update")["payload"]
        update["reward_components"] = {"NaN": 1.0, "Infinity": "-Infinity"}
        update["value_loss"] = "NaN"

    code, out = check_here(corrupted(tmp_path, spelled))
    assert code == 1 and "FAIL  non-finite" in out and "unreadable" not in out.split("FAIL")[-1]


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        ("rollout", "episodes", -1),
        ("rollout", "global_step", -64),
        ("rollout", "update", -1),
        ("heartbeat", "global_step", -5),
        ("anomaly", "update", -3),
        ("run_finished", "updates", -1),
        ("run_started", "world_size", 0),
        ("rollout", "episodes", 2**64),
        ("run_finished", "global_step", 10**400),
        ("ppo_update", "global_step", 10**400),
        ("ppo_update", "update", 2**63),
        ("run_started", "world_size", 2**64),
        ("run_started", "schema_minor", -1),
    ],
)
def test_a_count_no_event_can_hold_is_not_passed(
    tmp_path: Path, kind: str, field: str, value: int
) -> None:
    """Counts and indices no event can hold (negative outside ppo_update, or past 2**63 - 1
    anywhere): the line is unreadable (a run_started that is one leaves no readable run at
    all: exit 2)."""

    def spoil(lines: list[Line]) -> None:
        if kind in ("heartbeat", "anomaly"):
            at = next(i for i, line in enumerate(lines) if line["type"] == "ppo_update")
            payload: dict[str, Any] = {"global_step": 10}
            if kind == "anomaly":
                payload = {"severity": "warning", "metric": "m", "message": "x"}
            lines.insert(at, {**lines[at], "type": kind, "payload": payload})
            for seq, line in enumerate(lines, 1):
                line["seq"] = seq
        last_of(lines, kind)["payload"][field] = value

    code, out = check_here(corrupted(tmp_path, spoil))
    if kind == "run_started":
        assert code == 2, out
    else:
        assert code == 1 and "FAIL  unreadable" in out, out


@pytest.mark.parametrize("tag", ["rollout", "heartbeat"])
def test_an_update_whose_tag_names_another_kind_is_not_passed(tmp_path: Path, tag: str) -> None:
    def retag(lines: list[Line]) -> None:
        update = last_of(lines, "ppo_update")
        update["type"] = tag
        update["payload"]["approx_kl"] = "NaN"

    assert check(corrupted(tmp_path, retag))[0] in (1, 2)


@pytest.mark.parametrize("setting", ['norm_adv = "true"', 'total_steps = "512"'])
def test_a_toml_config_value_of_the_wrong_type_is_refused(tmp_path: Path, setting: str) -> None:
    config = tmp_path / "bad.toml"
    extra = "" if setting.startswith("total_steps") else "\ntotal_steps = 512"
    config.write_text(setting + extra + "\n")
    result = run(
        ["-m", "ppo", "train", "--headless", "--config", str(config), "--run-dir", str(tmp_path)]
    )
    assert result.returncode == 2, result.stderr[-500:]
    assert result.stderr.count("\n") <= 3 and setting.split()[0] in result.stderr


@pytest.mark.parametrize("schema", [0, -5])
def test_a_run_started_schema_below_1_is_refused_in_one_line(tmp_path: Path, schema: int) -> None:
    def unschema(lines: list[Line]) -> None:
        lines[0]["payload"]["schema"] = schema

    result = run(["-m", "sanctum", "check", str(corrupted(tmp_path, unschema))])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and f"schema {schema} is not a schema" in result.stderr
