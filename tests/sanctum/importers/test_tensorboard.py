"""``sanctum import tensorboard``: mapping files, grouping by step, and unusable input.

Logs are written by torch's ``SummaryWriter`` (the writer SB3 and CleanRL use) with chosen
steps and wall times; the imported log is read back with the real reader.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sanctum.cli import main as sanctum_main
from sanctum.importers.tensorboard.reader import masked_crc32c
from telemetry import (
    Anomaly,
    PPOUpdate,
    Rollout,
    RunFinished,
    RunStarted,
    read_events,
)
from tests import processes
from tests.cli_runner import run_main
from tests.schema_support import assert_valid_log

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None,
    reason="needs the tensorboard extra: pip install 'sanctum-ppo[tensorboard]'",
)

MAP = """
trainer = "my-trainer"
[tags]
"ppo/kl" = "approx_kl"
"ppo/clip" = "clip_fraction"
"ppo/entropy_loss" = { field = "entropy", scale = -1.0 }
"ppo/stopped" = "early_stopped"
"ppo/clip_range" = "config.clip_range"
"ep/return" = "episode_return"
"ep/len" = "episode_length"
"debug/ignored" = "ignore"
"""
UNMAPPED = "debug/\x1b[2Jx"
"""A tag nothing maps, with a control character a terminal would obey."""


def write_tb(
    folder: Path, scalars: dict[str, list[tuple[int, float]]], t0: float, histogram: bool = True
) -> None:
    """Scalars as (step, value) per tag, each at wall time ``t0 + step / 100`` (and a
    histogram at step 100)."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder))
    rows = sorted((step, tag, value) for tag, points in scalars.items() for step, value in points)
    for step, tag, value in rows:
        writer.add_scalar(tag, value, step, walltime=t0 + step / 100)
    if histogram:
        writer.add_histogram("weights", np.array([0.1, 0.2, 0.3]), 100)
    writer.close()


def custom_log(folder: Path, t0: float) -> None:
    write_tb(
        folder,
        {
            "ppo/kl": [(100, 0.01), (200, 0.02), (300, 0.03)],
            "ppo/clip": [(100, 0.1), (200, 0.2)],  # step 300 lacks it
            "ppo/entropy_loss": [(100, -0.6), (200, -0.5)],
            "ppo/stopped": [(100, 0.0), (200, 1.0)],
            "ppo/clip_range": [(100, 0.2), (200, 0.1)],
            "ep/return": [(50, 10.0), (100, 30.0), (150, 20.0), (350, 40.0)],
            "ep/len": [(50, 10.0), (100, 30.0), (150, 20.0), (350, 40.0)],
            "debug/ignored": [(100, 1.0)],
            UNMAPPED: [(100, 1.0)],
        },
        t0,
    )


def sanctum(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = sanctum_main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_mapping_file_imports_any_trainers_tags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t0 = time.time()
    custom_log(tmp_path / "tb", t0)
    (tmp_path / "map.toml").write_text(MAP)
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out)]
    args += ["--outcome", "completed"]
    code, printed, _ = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0
    assert "imported 2 updates, 3 rollouts, 4 episodes (to step 350)" in printed
    assert "unmapped tags (named in the run's config): debug/\\x1b[2Jx" in printed
    assert "not imported (histograms): weights" in printed
    assert_valid_log(out / "events.jsonl")
    events = read_events(out / "events.jsonl").events
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        *("RunStarted", "Rollout", "PPOUpdate", "Rollout", "PPOUpdate"),
        *("Anomaly", "Rollout", "RunFinished"),
    ]
    started, first, update0, second, update1, warning, last, finished = events
    assert isinstance(started, RunStarted) and isinstance(finished, RunFinished)
    assert started.payload.trainer.name == "my-trainer (imported from TensorBoard)"
    assert started.payload.env_id == "unknown"
    config = started.payload.config
    assert config["source"] == "tensorboard"
    assert config["tensorboard_unmapped_tags"] == [UNMAPPED]
    assert config["tensorboard_ignored_tags"] == {"debug/ignored": "ignored by the mapping file"}
    assert config["tensorboard_other_data"] == {"histograms": ["weights"]}
    assert (config["clip_range"], config["clip_range_end"]) == (0.2, 0.1)
    assert not any("early_stopped" in note for note in config["tensorboard_notes"])
    assert isinstance(first, Rollout) and isinstance(second, Rollout) and isinstance(last, Rollout)
    # episodes count in the first step with figures at or after their own
    assert (first.payload.update, first.payload.global_step, first.payload.episodes) == (0, 100, 2)
    assert (first.payload.episode_return_mean, first.payload.episode_return_max) == (20.0, 30.0)
    assert (second.payload.update, second.payload.global_step, second.payload.episodes) == (
        1,
        200,
        1,
    )
    assert (last.payload.update, last.payload.global_step, last.payload.episodes) == (2, 350, 1)
    assert isinstance(update0, PPOUpdate) and isinstance(update1, PPOUpdate)
    assert (update0.payload.entropy, update0.payload.early_stopped) == (0.6, False)
    assert (update1.payload.approx_kl, update1.payload.early_stopped) == (0.02, True)
    assert update1.ts == t0 + 2.0  # TensorBoard's wall time
    assert isinstance(warning, Anomaly)
    assert warning.payload.severity == "warning"
    assert "step 300 has update figures but no clip_fraction" in warning.payload.message
    assert (finished.payload.updates, finished.payload.global_step) == (2, 350)
    assert sanctum("check", str(out), capsys=capsys)[0] == 0
    assert sanctum("check", str(out), "--fail-on", "warning", capsys=capsys)[0] == 1


def test_default_out_is_runs_logdir_tb_and_an_import_replaces_only_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_tb(
        tmp_path / "logs" / "run7",
        {"losses/approx_kl": [(1, 0.01)], "losses/clipfrac": [(1, 0.1)]},
        0.0,
    )
    args = ("import", "tensorboard", "logs")
    assert sanctum(*args, capsys=capsys)[0] == 0
    log = tmp_path / "runs" / "run7-tb" / "events.jsonl"
    started = read_events(log).events[0]
    assert isinstance(started, RunStarted)
    assert started.run_id == "run7-tb"
    assert started.payload.trainer.name == "cleanrl-ppo (imported from TensorBoard)"
    code, _, err = sanctum(*args, capsys=capsys)
    assert (code, err.count("\n")) == (2, 1)
    assert "an event log is already there" in err
    assert sanctum(*args, "--force", capsys=capsys)[0] == 0
    assert [p.name for p in log.parent.iterdir()] == ["events.jsonl"]  # no temporary left
    log.write_text(json.dumps({"type": "run_started", "payload": {"config": {}}}) + "\n")
    code, _, err = sanctum(*args, "--force", capsys=capsys)
    assert code == 2
    assert "not written by sanctum import" in err


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", "no such file or directory"),
        ("empty", "no TensorBoard event files"),
        ("no scalars", "its event files hold no scalars"),
        ("two runs", "holds the TensorBoard logs of 2 runs (a, b): import one of them"),
        ("unknown tags", "map them with --map FILE (scalar tags: my/kl)"),
        ("bad field", "tags.'my/kl': 'kl' is not a ppo_update or rollout field"),
        ("bad toml", "mapping file is not valid TOML"),
        ("no update tag", "mapping file map.toml maps no tag to a ppo_update field, so no"),
        (
            "absent update tag",
            "mapping file map.toml maps update/ent_loss; the log has no such tag (Tianshou's "
            "logger writes update/* every update_interval updates, 1,000 by default",
        ),
        ("actions", "--actions must be at least 2, got 1"),
        ("unwritable out", "cannot write the event log"),
        ("not an event", "TensorBoard cannot read its event files: DecodeError: "),
    ],
)
def test_unusable_input_is_one_line_and_exit_2(
    case: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir, extra = tmp_path / "tb", []
    (tmp_path / "map.toml").write_text(
        {
            "bad field": '[tags]\n"my/kl" = "kl"\n',
            "no update tag": '[tags]\n"my/kl" = "episode_return"\n',
            "absent update tag": 'trainer = "tianshou"\n[tags]\n"my/kl" = "episode_return"\n'
            '"update/ent_loss" = "entropy"\n',
        }.get(case, '[tags]\n"my/kl" = "approx_kl"\n')
    )
    if case == "empty":
        logdir.mkdir()
    elif case == "no scalars":
        logdir.mkdir()
        (logdir / "events.out.tfevents.1.host").write_bytes(b"")
    elif case == "two runs":
        for name in ("a", "b"):
            write_tb(logdir / name, {"train/approx_kl": [(1, 0.0)]}, 0.0)
    elif case != "missing":
        write_tb(logdir, {"my/kl": [(1, 0.01)]}, 0.0)
    if case in ("bad field", "bad toml", "no update tag", "absent update tag"):
        extra = ["--map", str(tmp_path / "map.toml")]
    if case == "bad toml":
        (tmp_path / "map.toml").write_text("[tags\n")
    if case == "actions":
        extra = ["--actions", "1"]
    if case == "not an event":  # a record whose checksums match, holding no event
        (file,) = logdir.iterdir()
        data = b"\xff\xfe not a protobuf"
        header = struct.pack("<Q", len(data))
        with file.open("ab") as fh:
            fh.write(header + struct.pack("<I", masked_crc32c(header)))
            fh.write(data + struct.pack("<I", masked_crc32c(data)))
    out = tmp_path / "out"
    if case == "unwritable out":  # a file where the run folder would go
        write_tb(logdir, {"train/approx_kl": [(1, 0.01)], "train/clip_fraction": [(1, 0.1)]}, 0.0)
        out.write_text("a file\n")
        out = out / "run"
    args = ["import", "tensorboard", str(logdir), "--out", str(out), *extra]
    code, printed, err = sanctum(*args, capsys=capsys)
    assert (code, printed) == (2, "")
    assert err.startswith("sanctum: error: ") and err.count("\n") == 1
    assert message in err
    assert not (out / "events.jsonl").exists()


def test_without_tensorboard_the_error_names_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tb(tmp_path / "tb", {"losses/approx_kl": [(1, 0.01)]}, 0.0)
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith("tensorboard."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    code, _, err = sanctum("import", "tensorboard", str(tmp_path / "tb"), capsys=capsys)
    assert code == 2
    assert err == (
        "sanctum: error: reading TensorBoard logs needs tensorboard: "
        "pip install 'sanctum-ppo[tensorboard]'\n"
    )


def test_the_record_checksum_is_tensorboards_own() -> None:
    stub = pytest.importorskip(
        "tensorboard.compat.tensorflow_stub.pywrap_tensorflow",
        reason="needs tensorboard: pip install 'sanctum-ppo[tensorboard]'",
    )
    for data in (b"", b"\x00" * 12, bytes(range(256)) * 40):
        assert masked_crc32c(data) == stub.masked_crc32c(data)


def test_reading_a_log_loads_neither_torch_nor_tensorflow(tmp_path: Path) -> None:
    write_tb(tmp_path / "tb", {"losses/approx_kl": [(1, 0.01)]}, 0.0)
    code = (
        "import json, sys; import sanctum.cli, sanctum.importers.tensorboard.command; "
        "before = 'tensorboard' in sys.modules; "
        "from sanctum.importers.tensorboard.reader import read_log; from pathlib import Path; "
        f"log = read_log(Path({str(tmp_path / 'tb')!r})); "
        "print(json.dumps([before, sorted(log.scalars), list(sys.modules)]))"
    )
    out = processes.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, tags, modules = json.loads(out.stdout)
    assert before is False  # the command loads tensorboard only to read
    assert tags == ["losses/approx_kl"]
    roots = {m.split(".")[0] for m in modules}
    assert "tensorboard" in roots
    assert {"torch", "tensorflow", "ppo"}.isdisjoint(roots)


KL_MAP = '[tags]\n"ppo/kl" = "approx_kl"\n"ppo/clip" = "clip_fraction"\n'


def damaged(logdir: Path, how: str) -> Path:
    """The event file of ``logdir``, cut in half or with one bit flipped a third in."""
    (file,) = logdir.iterdir()
    data = bytearray(file.read_bytes())
    if how == "cut in half":
        del data[len(data) // 2 :]
    else:
        data[len(data) // 3] ^= 0x10
    file.write_bytes(bytes(data))
    return file


@pytest.mark.parametrize("how", ["cut in half", "one bit flipped"])
def test_an_event_file_not_read_whole_is_said_and_fails_the_check(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """30 updates, KL critical in the last 20: what TensorBoard stops reading at a bad
    record (without a word) would hide them. The import says what it lost, on stderr and
    in the log; check fails it unless the loss is accepted with --allow-skipped."""
    healthy, critical = (0.005, 0.08), (0.5, 0.0)
    points = [(100 * (s + 1), healthy if s < 10 else critical) for s in range(30)]
    write_tb(
        tmp_path / "tb",
        {"ppo/kl": [(s, v[0]) for s, v in points], "ppo/clip": [(s, v[1]) for s, v in points]},
        time.time(),
    )
    (tmp_path / "map.toml").write_text(KL_MAP)
    whole = ["import", "tensorboard", str(tmp_path / "tb"), "--map", str(tmp_path / "map.toml")]
    assert sanctum(*whole, "--out", str(tmp_path / "whole"), capsys=capsys)[0] == 0
    assert sanctum("check", str(tmp_path / "whole"), capsys=capsys)[0] == 1  # the KL
    file = damaged(tmp_path / "tb", how)
    out = tmp_path / "damaged"
    code, printed, err = sanctum(*whole, "--out", str(out), capsys=capsys)
    assert code == 0
    assert err.startswith(f"sanctum import: could not read {file.name}: record ")
    assert ("cut short" if how == "cut in half" else "fails its checksum") in err
    assert err.count("\n") == 1 and "not read" in err
    assert "not read whole: 1 event file (recorded in the log" in printed
    started = read_events(out / "events.jsonl").events[0]
    assert isinstance(started, RunStarted)
    assert started.payload.config["source_unread"] == [err.strip().split("could not read ")[1]]
    code, printed, _ = sanctum("check", str(out), capsys=capsys)
    assert code == 1
    assert "FAIL  source: the import could not read all of its source" in printed
    code, printed, _ = sanctum("check", str(out), "--json", capsys=capsys)
    assert "source unread 1x" in json.loads(printed)["verdict_text"]
    _, printed, _ = sanctum("check", str(out), "--json", "--allow-skipped", capsys=capsys)
    source = next(row for row in json.loads(printed)["rows"] if row["name"] == "source")
    assert source["passed"] is True  # accepted explicitly
    assert source["message"].endswith(err.strip().split("could not read ")[1])


def test_two_runs_in_one_folder_are_refused_and_a_restart_still_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two event files of one folder that log the same steps (a KL-critical run, then a
    healthy one): TensorBoard shows only the later, so an import would pass the critical
    run. It is refused, naming both files. A restart (the later file resumes after the
    first step, as after a crash) imports as TensorBoard shows it."""
    (tmp_path / "map.toml").write_text(KL_MAP)
    steps = [100 * (s + 1) for s in range(10)]
    write_tb(
        tmp_path / "two",
        {"ppo/kl": [(s, 0.5) for s in steps], "ppo/clip": [(s, 0.0) for s in steps]},
        time.time(),
    )
    write_tb(
        tmp_path / "two",
        {"ppo/kl": [(s, 0.005) for s in steps], "ppo/clip": [(s, 0.08) for s in steps]},
        time.time(),
    )
    names = sorted(p.name for p in (tmp_path / "two").iterdir())
    args = ["import", "tensorboard", "--map", str(tmp_path / "map.toml"), "--out"]
    code, _, err = sanctum(*args, str(tmp_path / "out"), str(tmp_path / "two"), capsys=capsys)
    assert code == 2 and err.count("\n") == 1
    assert f"event files {names[0]} and {names[1]} both log ppo/" in err
    assert "two runs in one folder" in err
    assert not (tmp_path / "out").exists()
    write_tb(
        tmp_path / "restart",
        {"ppo/kl": [(s, 0.005) for s in steps], "ppo/clip": [(s, 0.08) for s in steps]},
        time.time(),
    )
    later = [100 * (s + 1) for s in range(5, 15)]  # resumed from step 600
    write_tb(
        tmp_path / "restart",
        {"ppo/kl": [(s, 0.006) for s in later], "ppo/clip": [(s, 0.08) for s in later]},
        time.time(),
        histogram=False,  # a restart logs from its resume step on
    )
    code, _, err = sanctum(*args, str(tmp_path / "out2"), str(tmp_path / "restart"), capsys=capsys)
    assert (code, err) == (0, "")


GRPO_MAP = """
trainer = "trl-grpo"

[tags]
"train/kl" = "ref_kl"
"train/reward" = "reward_mean"
"train/reward_std" = "reward_std"
"train/frac_reward_zero_std" = "reward_zero_std_frac"
"train/completions/clipped_ratio" = "completion_truncated_frac"
"train/entropy" = "entropy"
"train/grad_norm" = "grad_norm"
"""


def test_a_map_without_approx_kl_or_clip_fraction_imports_them_as_not_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A GRPO run logs no KL to the old policy: each tag goes on the field it means."""
    steps = range(1, 7)
    write_tb(
        tmp_path / "tb",
        {
            "train/kl": [(s, 0.001 * s) for s in steps],
            "train/reward": [(s, 0.1 * s) for s in steps],
            "train/reward_std": [(s, 0.3) for s in steps],
            "train/frac_reward_zero_std": [(s, 0.1) for s in steps],
            "train/completions/clipped_ratio": [(s, 0.0) for s in steps],
            "train/entropy": [(s, 1.1) for s in steps],
            "train/grad_norm": [(s, 0.7) for s in steps],
        },
        time.time(),
        histogram=False,
    )
    (tmp_path / "map.toml").write_text(GRPO_MAP)
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out)]
    args += ["--outcome", "completed"]
    code, printed, err = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0, err
    assert "imported 6 updates" in printed
    assert_valid_log(out / "events.jsonl")
    updates = [e for e in read_events(out / "events.jsonl").events if isinstance(e, PPOUpdate)]
    assert len(updates) == 6
    first = updates[0].payload
    assert (first.approx_kl, first.clip_fraction, first.ref_kl) == (None, None, 0.001)
    assert (first.reward_mean, first.reward_zero_std_frac) == (pytest.approx(0.1), 0.1)
    assert sanctum("check", str(out), capsys=capsys)[0] == 0


def test_a_step_without_its_kl_but_with_a_nan_figure_is_judged_not_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run going NaN may stop logging its KL first: the step with a NaN entropy and
    value loss but no KL point used to be dropped as "not an update", and check passed."""
    nan = float("nan")
    write_tb(
        tmp_path / "tb",
        {
            "ppo/kl": [(100, 0.01), (200, 0.01)],
            "ppo/entropy_loss": [(100, -0.6), (200, -0.6), (300, nan)],
            "ppo/value_loss": [(100, 1.0), (200, 1.0), (300, nan)],
        },
        time.time(),
        histogram=False,
    )
    mapping = '[tags]\n"ppo/kl" = "approx_kl"\n"ppo/value_loss" = "value_loss"\n'
    mapping += '"ppo/entropy_loss" = { field = "entropy", scale = -1.0 }\n'
    (tmp_path / "map.toml").write_text(mapping)
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out)]
    args += ["--outcome", "completed"]
    code, printed, _ = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0 and "imported 3 updates" in printed, printed
    updates = [
        e.payload for e in read_events(out / "events.jsonl").events if isinstance(e, PPOUpdate)
    ]
    assert updates[-1].approx_kl is None and math.isnan(updates[-1].value_loss or 0.0)
    code, text, _ = sanctum("check", str(out), capsys=capsys)
    assert code == 1 and "non-finite" in text.splitlines()[-1], text


@pytest.mark.parametrize("restart_step", [0, 15])
def test_points_tensorboard_drops_after_a_restart_are_counted_and_fail_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], restart_step: int
) -> None:
    """A ``SessionLog START`` part-way (what a restarted job writes): TensorBoard's reader
    drops every point it takes for orphaned, with only a log message. The import used to
    say "imported 15 updates" of 30, and a NaN among the dropped ones was never seen."""
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog
    from torch.utils.tensorboard import SummaryWriter

    t0 = time.time()
    writer = SummaryWriter(str(tmp_path / "tb"))
    for step in range(1, 31):
        if step == 16:
            start = SessionLog(status=SessionLog.START)
            writer.file_writer.add_event(Event(session_log=start, step=restart_step, wall_time=t0))
        value = float("nan") if step == 5 else 0.01
        writer.add_scalar("ppo/kl", value, step, walltime=t0 + step)
    writer.close()
    (tmp_path / "map.toml").write_text('[tags]\n"ppo/kl" = "approx_kl"\n')
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out)]
    args += ["--outcome", "completed"]
    code, printed, err = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0 and "not read whole" in printed and "Purging" not in err, (printed, err)
    started = read_events(out / "events.jsonl").events[0]
    assert isinstance(started, RunStarted)
    (dropped,) = [line for line in started.payload.config["source_unread"] if "drops" in line]
    assert f"SessionLog START at step {restart_step}" in dropped and "of 30 scalar" in dropped
    assert sanctum("check", str(out), capsys=capsys)[0] != 0  # never a pass


def _kl_log(folder: Path) -> None:
    """A log of 12 updates a map feeds KL, clip fraction and entropy from."""
    steps = range(100, 1300, 100)
    write_tb(
        folder,
        {
            "ppo/kl": [(s, 0.01) for s in steps],
            "ppo/clip": [(s, 0.1) for s in steps],
            "ppo/entropy_loss": [(s, -0.6) for s in steps],
        },
        time.time() - 3600,
        histogram=False,
    )


def test_an_import_without_its_outcome_says_so_in_every_view_and_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _kl_log(tmp_path / "tb")
    (tmp_path / "map.toml").write_text(MAP)
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out)]
    code, printed, err = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0, err
    assert "outcome: not recorded" in printed and "--exit-code N" in printed
    assert "rules the mapped tags feed: KL, Clip, Entropy shift (3 of 7)\n" in printed
    assert (
        "not fed: Grad (grad_norm), EV (explained_variance), Value loss (value_loss), Entropy "
        "(entropy_normalized): recording the run with torchprobe.probe's "
        "UpdateProbe around its update measures them (the value loss as the trainer computes "
        "it: measure.losses(value=...); or --actions N for Entropy)\n"
    ) in printed
    events = read_events(out / "events.jsonl").events
    assert not [e for e in events if isinstance(e, RunFinished)]  # nothing the log did not say
    assert "outcome_unknown" in events[0].payload.config
    code, printed, _ = sanctum("check", str(out), capsys=capsys)
    assert code == 1
    assert "FAIL  finished: outcome not recorded: the TensorBoard log does not say" in printed
    assert printed.endswith("\nFAIL: outcome unknown\n")  # check's last line: the verdict
    assert sanctum("check", str(out), "--allow-unfinished", capsys=capsys)[0] == 0
    code, printed, _ = sanctum("summary", str(out), capsys=capsys)
    assert "status    outcome not recorded (the TensorBoard log does not say" in printed
    for view in ([str(out), "--once"], ["--once", str(tmp_path)]):
        code, printed, _ = sanctum(*view, capsys=capsys)
        assert "FAIL: outcome unknown" in printed, view


@pytest.mark.parametrize(
    ("told", "status", "reason", "exit_code"),
    [
        (["--exit-code", "0"], "completed", "the trainer exited with code 0", 0),
        (["--exit-code", "1"], "failed", "the trainer exited with code 1", 1),
        (["--exit-code", "130"], "interrupted", "the trainer exited with code 130 (SIGINT)", 1),
        (["--exit-code", "-15"], "interrupted", "the trainer exited with code -15 (SIGTERM)", 1),
        (["--outcome", "failed"], "failed", "as sanctum import --outcome said", 1),
    ],
)
def test_the_outcome_told_at_import_is_the_runs_end(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    told: list[str],
    status: str,
    reason: str,
    exit_code: int,
) -> None:
    _kl_log(tmp_path / "tb")
    (tmp_path / "map.toml").write_text(MAP)
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out), *told]
    code, printed, err = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0, err
    assert f"outcome: {status} ({reason})" in printed
    (end,) = [
        e.payload for e in read_events(out / "events.jsonl").events if isinstance(e, RunFinished)
    ]
    assert (end.status, end.reason, end.updates) == (status, reason, 12)
    assert sanctum("check", str(out), capsys=capsys)[0] == exit_code


def test_outcome_and_exit_code_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _kl_log(tmp_path / "tb")
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--outcome", "completed"]
    done = run_main(sanctum_main, *args, "--exit-code", "0")
    assert (done.returncode, done.stdout) == (2, "")
    assert "argument --exit-code: not allowed with argument --outcome" in done.stderr


TIANSHOU_MAP = """
trainer = "tianshou"
[tags]
"update/ent_loss" = "entropy"
"update/kl" = "approx_kl"
"update/clip" = "clip_fraction"
"train/returns_stat/mean" = "episode_return"
"""


def test_update_tags_at_update_counts_are_placed_by_wall_time_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tianshou's shape: train/* at env steps (2,000 a collection), update/* at gradient
    steps (310 an update), each update logged right after its collection. Read by step,
    every update would land before the first rollout; placed by wall time, each follows its
    own rollout, and the import says so."""
    from torch.utils.tensorboard import SummaryWriter

    t0 = time.time() - 3600
    writer = SummaryWriter(str(tmp_path / "tb"))
    for k in range(1, 7):
        collected = t0 + 10 * k
        writer.add_scalar("train/returns_stat/mean", 20.0 + k, 2000 * k, walltime=collected)
        for tag, value in (("update/ent_loss", 0.6), ("update/kl", 0.01), ("update/clip", 0.1)):
            writer.add_scalar(tag, value, 310 * k, walltime=collected + 5)
    writer.close()
    (tmp_path / "map.toml").write_text(TIANSHOU_MAP)
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out), "--exit-code", "0"]
    code, printed, err = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0, err
    assert (
        "placed: the update tags are not at the rollout tags' steps (their steps, 310..1860"
        in printed
    )
    events = read_events(out / "events.jsonl").events
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [u.global_step for u in updates] == [2000 * k for k in range(1, 7)]
    order = [type(e).__name__ for e in events if isinstance(e, PPOUpdate | Rollout)]
    assert order == ["Rollout", "PPOUpdate"] * 6  # each update after the rollout it learned on
    started = events[0].payload
    assert any(
        n.startswith("the update tags are not at") for n in started.config["tensorboard_notes"]
    )


def test_logs_whose_tags_share_one_unit_are_not_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same tags, all at env steps: nothing is placed, nothing is said."""
    from torch.utils.tensorboard import SummaryWriter

    t0 = time.time() - 3600
    writer = SummaryWriter(str(tmp_path / "tb"))
    for k in range(1, 7):
        writer.add_scalar("train/returns_stat/mean", 20.0 + k, 2000 * k, walltime=t0 + 10 * k)
        for tag in ("update/ent_loss", "update/kl", "update/clip"):
            writer.add_scalar(tag, 0.1, 2000 * k, walltime=t0 + 10 * k + 5)
    writer.close()
    (tmp_path / "map.toml").write_text(TIANSHOU_MAP)
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out), "--exit-code", "0"]
    code, printed, err = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0, err
    assert "placed:" not in printed
    updates = [
        e.payload for e in read_events(out / "events.jsonl").events if isinstance(e, PPOUpdate)
    ]
    assert [u.global_step for u in updates] == [2000 * k for k in range(1, 7)]


def test_a_log_resumed_twice_is_not_taken_for_two_units(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A same-unit log whose run restarted from earlier steps twice: its rollouts go back
    with its updates, so nothing is placed by wall time."""
    from torch.utils.tensorboard import SummaryWriter

    t0 = time.time() - 3600
    writer = SummaryWriter(str(tmp_path / "tb"))
    wall = t0
    for start in (0, 4, 8):  # each restart goes back two updates
        for k in range(start, start + 6):
            wall += 10
            writer.add_scalar("train/returns_stat/mean", 20.0, 1000 * k, walltime=wall)
            for tag in ("update/ent_loss", "update/kl", "update/clip"):
                writer.add_scalar(tag, 0.1, 1000 * k, walltime=wall + 5)
    writer.close()
    (tmp_path / "map.toml").write_text(TIANSHOU_MAP)
    out = tmp_path / "imported"
    args = ["import", "tensorboard", str(tmp_path / "tb"), "--out", str(out), "--exit-code", "0"]
    code, printed, err = sanctum(*args, "--map", str(tmp_path / "map.toml"), capsys=capsys)
    assert code == 0, err
    assert "placed:" not in printed
