"""``ppo train`` on bad input: one line naming the file or field, exit 2, no traceback."""

from __future__ import annotations

import copy
import datetime
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
import torch

from ppo.cli import build_parser, main
from ppo.cli.train import train as cli_train
from telemetry import RunStarted, read_events
from tests import processes
from tests.cli_runner import run_main


def train(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["train", "--headless", "--total-steps", "512", *args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip()


@pytest.mark.parametrize("run_id", ["../../x", "/abs/x", "a/b", "..", ".hidden", "-x", "a b", ""])
def test_a_run_id_is_a_name_not_a_path(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, run_id: str
) -> None:
    code, err = train(capsys, "--run-dir", str(tmp_path), f"--run-id={run_id}")
    assert code == 2 and err.startswith(f"ppo train: run id {run_id!r} is not a name")
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere


def test_a_taken_run_id_is_refused_before_training(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert train(capsys, "--run-dir", str(tmp_path), "--run-id", "once")[0] == 0
    assert [p.name for p in tmp_path.iterdir()] == ["once"]  # the write probe is gone
    code, err = train(capsys, "--run-dir", str(tmp_path), "--run-id", "once")
    assert (code, err) == (
        2,
        f"ppo train: {tmp_path / 'once'} already holds a run; pick another --run-id",
    )


def test_a_toml_file_that_is_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'env_id = "\xff\xfe"\n')
    code, err = train(capsys, "--config", str(bad))
    assert (code, err) == (2, f"ppo train: {bad}: config file is not UTF-8 text (byte 10)")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "the file is empty"),
        (bytes(range(256)) * 4, "not a checkpoint (not a file torch.save wrote)"),
        (b'{"type":"run_started","run_id":"r","seq":1}\n', "not a checkpoint"),
        (b"PK\x03\x04" + b"\x00" * 60, "a damaged checkpoint"),
    ],
    ids=["empty", "random-bytes", "an-event-log", "cut-zip"],
)
def test_a_file_that_is_no_checkpoint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes, says: str
) -> None:
    path = tmp_path / "x.pt"
    path.write_bytes(content)
    code, err = train(capsys, "--resume", str(path))
    assert code == 2 and err.startswith(f"ppo train: {path}") and says in err


def test_a_checkpoint_that_would_run_code_is_refused_without_torch_advice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"format": 1, "payload": datetime.timedelta(days=1)}, path)
    code, err = train(capsys, "--resume", str(path))
    assert code == 2 and "refused" in err and "could run code" in err
    assert "weights_only" not in err  # never the advice to load it unsafely


def test_fine_tuning_checkpoints_are_named_by_their_setting(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    runs = ["--run-dir", str(tmp_path)]
    missing = tmp_path / "nope"
    code, err = train(capsys, *runs, "--set", f"init_from={missing}")
    assert (code, err) == (2, f"ppo train: init_from: no run at {missing}")
    code, err = train(
        capsys, *runs, "--set", "ref_kl_loss_coef=0.1", "--set", f"reference={missing}"
    )
    assert (code, err) == (2, f"ppo train: reference: no run at {missing}")
    assert list(tmp_path.iterdir()) == []  # refused before anything was written
    assert train(capsys, *runs, "--run-id", "base")[0] == 0
    code, err = train(
        capsys, *runs, "--env", "Acrobot-v1", "--set", f"init_from={tmp_path / 'base'}"
    )
    assert code == 2
    assert err.startswith("ppo train: starting policy (init_from): ")
    assert err.endswith("(actor.0.weight is [64, 4] there and [64, 6] here)")


# ------------------------------------------------------------------ hostile input, round two

TOKEN_PPO = Path(__file__).resolve().parents[3] / "examples" / "token_ppo.toml"

HOSTILE = "\x1b]0;owned\x07\x1b[2JCartPole-v1"
"""Retitles the terminal (OSC 0 ... BEL) and clears the screen (CSI 2J) if shown raw."""


def ppo(*args: str, cwd: Path, steps: bool = True) -> tuple[int, str]:
    """``ppo train --headless [--total-steps 64]`` run from ``cwd``; its exit code and
    stderr."""
    short = ["--total-steps", "64"] if steps else []
    ran = run_main(main, "train", "--headless", *short, *args, cwd=cwd)
    assert "Traceback" not in ran.stderr
    return ran.returncode, ran.stderr


def ppo_process(*args: str, cwd: Path, stdout: int | IO[Any] = subprocess.PIPE) -> tuple[int, str]:
    """:func:`ppo` as a real process, for what only a process shows (a FIFO that would
    hang it, fails by timeout; standard output at /dev/full)."""
    proc = processes.run(
        [processes.PYTHON, "-m", "ppo", "train", "--headless", "--total-steps", "64", *args],
        cwd=cwd,
        stdout=stdout,
        stderr=subprocess.PIPE,
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err
    return proc.returncode, err


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err.strip()


@pytest.fixture(scope="module")
def real_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The state of a real checkpoint of a tiny run, to modify and save again."""
    runs = tmp_path_factory.mktemp("runs")
    small = ["--set", "num_envs=2", "--set", "num_steps=32", "--set", "hidden_sizes=8"]
    code = main(["train", "--headless", "--total-steps", "64", "--run-dir", str(runs), *small])
    assert code == 0
    (path,) = runs.glob("*/checkpoints/latest.pt")
    state: dict[str, Any] = torch.load(path, weights_only=True)
    return state


def saved(tmp_path: Path, state: dict[str, Any], **changes: Any) -> Path:
    """``state`` with dotted entries replaced (``counters__update=...``), saved to a file."""
    state = copy.deepcopy(state)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        holder = state
        for key in parents:
            holder = holder[key]
        holder[last] = value
    path = tmp_path / "modified.pt"
    torch.save(state, path)
    return path


@pytest.mark.parametrize("via", ["--env", "toml", "checkpoint"])
def test_a_hostile_env_id_is_shown_escaped(
    tmp_path: Path, via: str, real_checkpoint: dict[str, Any]
) -> None:
    if via == "--env":
        args = ["--env", HOSTILE]
    elif via == "toml":
        (tmp_path / "c.toml").write_text(f"env_id = {json.dumps(HOSTILE)}\n")
        args = ["--config", "c.toml"]
    else:
        path = saved(tmp_path, real_checkpoint, config__env_id=HOSTILE)
        args = ["--resume", str(path)]
    code, err = ppo(*args, "--run-dir", "runs", cwd=tmp_path)
    assert code == 2 and "\x1b" not in err and "\x07" not in err
    assert "\\x1b]0;owned\\x07\\x1b[2JCartPole-v1" in one_line(err)
    assert not (tmp_path / "runs").exists()  # refused before anything was built


def test_hostile_paths_and_config_keys_are_shown_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = train(capsys, "--config", str(tmp_path / "\x1b[2J.toml"))
    assert code == 2 and "\x1b" not in err and "\\x1b[2J.toml: no such config file" in err
    code, err = train(capsys, "--set", "\x1b[2J\u202e=1")
    assert code == 2 and "\x1b" not in err and "\u202e" not in err and "\\x1b[2J\\u202e" in err
    code, err = train(capsys, "--run-dir", str(tmp_path / "f\x1b]0;x\x07"), "--resume", "nope")
    assert code == 2 and "\x1b" not in err


@pytest.mark.parametrize("option", ["--config", "--resume", "--set init_from="])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_special_file_as_input_is_one_line_not_a_hang(
    tmp_path: Path, option: str, special: str
) -> None:
    path = "/dev/zero"
    if special == "fifo":
        path = str(tmp_path / "pipe")
        os.mkfifo(path)
    args = [option, path] if option != "--set init_from=" else ["--set", f"init_from={path}"]
    code, err = ppo_process(*args, "--run-dir", "runs", cwd=tmp_path)  # a hang fails by timeout
    kind = "a pipe (FIFO)" if special == "fifo" else "a device"
    assert code == 2 and one_line(err).endswith(f"it is {kind}")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "loop", "folder", "hostile"])
def test_a_reference_that_is_no_checkpoint_is_refused_even_when_unused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, target: str
) -> None:
    """No reference KL is on, yet a ``reference`` naming no checkpoint is a mistake: one
    line, exit 2, the name escaped, before anything is built."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "folder").mkdir()
    path = {"/dev/zero": "/dev/zero", "hostile": str(tmp_path / HOSTILE)}.get(
        target, str(tmp_path / target)
    )
    runs = tmp_path / "runs"
    code, err = train(capsys, "--set", f"reference={path}", "--run-dir", str(runs))
    assert code == 2 and err.startswith("ppo train: reference: ") and "\n" not in err
    if target == "hostile":
        assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;owned\\x07" in err
    else:
        assert path in err
    assert not runs.exists()


@pytest.mark.parametrize(
    ("nproc", "says"),
    [
        ("100000", "--nproc must be in [1, 64], got 100000"),
        ("0", "--nproc must be in [1, 64], got 0"),
        ("3", "num_envs (4) must be a multiple of the 3 processes"),
    ],
)
def test_nproc_out_of_bounds_is_refused_before_any_process_starts(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    nproc: str,
    says: str,
) -> None:
    def launched(*args: object) -> int:
        raise AssertionError("processes were started")

    monkeypatch.setattr("ppo.cli.run.launch", launched)
    code, err = train(capsys, "--nproc", nproc, "--run-dir", str(tmp_path))
    assert (code, err) == (2, f"ppo train: {says}")
    assert list(tmp_path.iterdir()) == []


def test_standard_streams_closed_or_full_do_not_change_the_exit_code(tmp_path: Path) -> None:
    """stdout closed (``>&-``) is refused like stdout at /dev/full: one line, exit 2,
    nothing recorded; a bad setting with stderr at /dev/full is still exit 2."""
    proc = processes.run(
        [processes.PYTHON, "-m", "ppo", "train", "--headless", "--run-dir", "runs"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),  # the child starts without stdout
    )
    err = proc.stderr.decode()
    assert (proc.returncode, one_line(err)) == (
        2,
        "ppo train: cannot write to standard output: it is closed",
    )
    assert not (tmp_path / "runs").exists()
    with open("/dev/full", "wb") as full:
        proc = processes.run(
            [processes.PYTHON, "-m", "ppo", "train", "--headless", "--set", "nokey=1"],
            cwd=tmp_path,
            stderr=full,
            stdout=subprocess.PIPE,
        )
    assert (proc.returncode, proc.stdout) == (2, b"")


def test_a_deeply_nested_toml_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    code, err = train(capsys, "--config", str(deep))
    assert (code, err) == (
        2,
        f"ppo train: {deep}: config file is nested more than 16 tables or arrays deep",
    )


def test_run_folders_that_cannot_be_used_are_refused_before_anything(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "taken").write_text("a file where the run folder would go\n")
    (tmp_path / "file").write_text("not a folder\n")
    cases = {
        ("--run-dir", "/dev/null"): "--run-dir /dev/null is a device, not a folder",
        ("--run-dir", "/dev/null/runs"): "--run-dir /dev/null/runs cannot be created: "
        "/dev/null is a device, not a folder",
        ("--run-dir", "file"): "--run-dir file is a file, not a folder",
        ("--run-dir", "file/runs"): "--run-dir file/runs cannot be created: file is a file, "
        "not a folder",
        ("--run-dir", "runs", "--run-id", "taken"): "run id 'taken' is taken: runs/taken is a "
        "file, not a run folder; pick another --run-id",
    }
    for args, says in cases.items():
        code, err = ppo(*args, cwd=tmp_path)
        assert (code, one_line(err)) == (2, f"ppo train: {says}")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["file", "runs", "taken"]


def test_a_read_only_runs_folder_is_refused_before_anything(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir(mode=0o555)
    if os.access(runs, os.W_OK):
        pytest.skip("this user can write in a read-only folder (root)")
    code, err = ppo("--run-dir", "runs", cwd=tmp_path)
    assert (code, one_line(err)) == (
        2,
        "ppo train: --run-dir runs: cannot write there (permission denied or a read-only "
        "file system)",
    )
    assert list(runs.iterdir()) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc file system")
@pytest.mark.parametrize("run_dir", ["/proc", "/proc/self/runs"])
def test_a_folder_the_file_system_refuses_is_one_line(
    capsys: pytest.CaptureFixture[str], run_dir: str
) -> None:
    """/proc takes no files, whoever asks (root too, whom its permissions let in): the
    probe file pre-flight creates fails, so the run is refused before anything (2)."""
    code, err = train(capsys, "--run-dir", run_dir, "--run-id", "a")
    assert code == 2 and err.count("\n") == 0
    assert err.startswith(f"ppo train: --run-dir {run_dir}") and "cannot " in err


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"counters__update": torch.tensor(1)}, "'counters.update' entry must be an integer"),
        ({"counters__update": -1}, "'counters.update' entry must be an integer in [0, 2^63-1]"),
        ({"counters__global_step": "128"}, "'counters.global_step' entry must be an integer"),
        ({"world_size": 2.0}, "'world_size' entry must be an integer in [1, 2^63-1]"),
        ({"config__num_envs": "four"}, "num_envs must be an integer in [1, 4096], got 'four'"),
        ({"config__num_envs": torch.tensor(2.5)}, "num_envs must be an integer in [1, 4096]"),
        ({"config__seed": 2**64 - 1}, "seed must be an integer in [0, 9223372036854775807]"),
        ({"config": [1, 2]}, "its 'config' entry is not a table of settings"),
        ({"model": "weights"}, "its 'model' entry does not fit this config"),
        ({"agent__generator": "state"}, "its 'agent' entry does not fit this config"),
        ({"agent__kl_coef": float("nan")}, "kl_coef must be a finite number >= 0"),
        ({"agent__optimizer__state": {0: {"step": torch.tensor(1.0)}}}, "exp_avg"),
        ({"rng__sampling": torch.tensor(1)}, "its 'rng.sampling' entry does not fit"),
        ({"rng__sampling__state__state": -1}, "its 'rng.sampling' entry does not fit"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, dict) else None,
)
def test_a_checkpoint_with_wrong_typed_values_is_one_error(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    real_checkpoint: dict[str, Any],
    change: dict[str, Any],
    says: str,
) -> None:
    path = saved(tmp_path, real_checkpoint, **change)
    code, err = train(capsys, "--resume", str(path), "--run-dir", str(tmp_path / "runs"))
    assert code == 2 and says in err and err.startswith("ppo train: ")
    assert err.count("\n") <= 1  # one line (a config error: a header and the field)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("seed", [str(2**64 - 1), str(2**63), "-1"])
def test_a_seed_out_of_range_says_the_range(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, seed: str
) -> None:
    code, err = train(capsys, f"--seed={seed}", "--run-dir", str(tmp_path))
    assert code == 2 and f"seed must be an integer in [0, {2**63 - 1}], got {seed}" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        (["num_envs=1e8"], "num_envs must be an integer in [1, 4096], got 100000000"),
        (["num_envs=0"], "num_envs must be an integer in [1, 4096], got 0"),
        (
            ["num_envs=300", "vector_env=async"],
            "num_envs must be <= 256 with vector_env = 'async'",
        ),
    ],
)
def test_num_envs_out_of_bounds_is_refused_before_any_env_exists(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, settings: list[str], says: str
) -> None:
    overrides = [arg for s in settings for arg in ("--set", s)]
    code, err = train(capsys, *overrides, "--run-dir", str(tmp_path))
    assert code == 2 and says in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "settings",
    [["num_envs=4096", "num_steps=1000000000"], ["hidden_sizes=[1000000, 1000000]"]],
    ids=["batch", "network"],
)
def test_a_run_too_large_for_memory_is_refused_before_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, settings: list[str]
) -> None:
    """Petabytes (the batch: 4096 x 10^9 samples) and tens of terabytes (the network: two
    layers of 10^6 units) that no machine has."""
    overrides = [arg for s in settings for arg in ("--set", s)]
    code, err = train(capsys, *overrides, "--run-dir", str(tmp_path))
    assert code == 2 and err.count("\n") == 0
    assert re.fullmatch(
        r"ppo train: this run needs about [\d.]+ [PT]B of memory \(.*\) but [\d.]+ [kMGT]?B "
        r"is available; lower num_envs, num_steps or hidden_sizes",
        err,
    ), err
    assert list(tmp_path.iterdir()) == []


def test_stdout_at_dev_full_is_one_line_and_records_nothing(tmp_path: Path) -> None:
    with open("/dev/full", "wb") as full:
        code, err = ppo_process("--run-dir", "runs", cwd=tmp_path, stdout=full)
    assert (code, one_line(err)) == (
        2,
        "ppo train: cannot write to standard output: No space left on device",
    )
    assert not (tmp_path / "runs").exists()


class _Breaks(io.StringIO):
    """Standard output that goes away once the first line is out (a reader that quit)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines = 0

    def write(self, text: str) -> int:
        if self.lines >= 1:
            raise BrokenPipeError(32, "Broken pipe")
        self.lines += text.count("\n")
        return super().write(text)


def test_stdout_that_breaks_while_training_ends_in_one_line_and_a_recorded_run(
    tmp_path: Path,
) -> None:
    args = build_parser().parse_args(
        ["train", "--headless", "--total-steps", "1024", "--run-dir", str(tmp_path)]
    )
    out, err = _Breaks(), io.StringIO()
    code = cli_train(args, out, err)
    (events,) = tmp_path.glob("*/events.jsonl")
    assert code == 1 and out.getvalue().startswith("recording to ")
    assert err.getvalue() == (
        f"ppo train: training completed and is recorded in {events}, but standard output "
        "could not be written: Broken pipe\n"
    )
    assert '"status":"completed"' in events.read_text().splitlines()[-1]


def test_help_states_the_limits(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for limit in (
        "seed in [0, 2^63-1]",
        "num_envs in [1, 4096] (at most 256 with vector_env=async",
        "at most 1 MiB, nested at most 16 deep",
        "available now (MemAvailable)",
        "torch_threads in [1, 1024]",
        "hidden_sizes 1 to 64 layers of 1 to 1000000 units",
        "update_epochs in [1, 10000] and update_epochs x num_minibatches at most 100000",
        "--nproc in [1, 64], dividing num_envs",
        "--run-id a name (not empty)",
        'reference unless "init"',
        "a probe file is created and removed",
        "standard output broke while training: the run is recorded",
        "2 unusable input, or standard output closed or unwritable at the start",
        "N in [1, 64], dividing num_envs",
    ):
        assert limit in text


@pytest.mark.parametrize("rollouts", ["1000000000", "10000000000000"])
def test_a_token_run_whose_rollouts_exceed_memory_is_refused_before_it_starts(
    tmp_path: Path, rollouts: str
) -> None:
    """``rollouts_per_update = 1000000000`` used to pass the checks and die once started:
    the rollouts' floor (24 bytes a generated token) is checked against the memory
    available, one line and exit 2, nothing written."""
    huge = ["--set", f"rollouts_per_update={rollouts}", "--set", "warm_start_steps=0"]
    config = ["--config", str(TOKEN_PPO), "--run-dir", "runs", *huge]
    code, err = ppo(*config, cwd=tmp_path, steps=False)
    assert code == 2 and one_line(err).startswith("ppo train: this run's rollouts need at least")
    assert "lower rollouts_per_update or max_new_tokens" in err
    assert list(tmp_path.iterdir()) == []


def test_a_token_run_too_large_for_memory_ends_in_one_line_and_a_failed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Token PPO's model comes from its task, so its size is known only once built: past
    the rollouts' floor (here unknown: no reading of the memory available), an allocation
    that fails (4 x 10^13 bytes of rollouts) is one line, exit 1, and the run is recorded
    as failed."""
    monkeypatch.setattr("ppo.cli.tokens.memory_available", lambda: None)
    huge = ["--set", "rollouts_per_update=10000000000000", "--set", "warm_start_steps=0"]
    config = ["--config", str(TOKEN_PPO), "--run-dir", "runs", *huge]
    code, err = ppo(*config, cwd=tmp_path, steps=False)
    assert code == 1 and one_line(err).startswith("ppo train: training stopped: out of memory")
    (events,) = (tmp_path / "runs").glob("*/events.jsonl")
    assert '"status":"failed"' in events.read_text().splitlines()[-1]


# ------------------------------------------------- checked before anything starts (issue 28)


def ppo_with(
    *args: str, cwd: Path, shim: Path | None = None, steps: bool = True
) -> tuple[int, str, str]:
    """``ppo train ARGS`` with no terminal (``--tui`` then still chooses the dashboard);
    exit code, stdout, stderr. With ``shim``, a real process with that folder first on the
    path (a package that cannot be imported stands for a missing extra: only a fresh
    interpreter has not imported the real one)."""
    argv = ["train", *(["--total-steps", "64"] if steps else []), *args]
    if shim is None:
        ran = run_main(main, *argv, cwd=cwd)
        assert "Traceback" not in ran.stderr
        return ran.returncode, ran.stdout, ran.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), *sys.path])}
    proc = processes.python_m("ppo", *argv, cwd=cwd, env=env)
    assert "Traceback" not in proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("mode", ["--headless", "--tui"])
def test_a_misspelt_env_id_is_one_whole_line_before_the_dashboard(
    tmp_path: Path, mode: str
) -> None:
    code, out, err = ppo_with(mode, "--env", "CartPol-v1", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert one_line(err) == (
        "ppo train: unknown environment id 'CartPol-v1': Environment `CartPol` doesn't "
        "exist. Did you mean: `CartPole`?"
    )
    assert list(tmp_path.iterdir()) == []  # no runs/ folder, no probe file


@pytest.mark.parametrize(
    ("package", "args", "says"),
    [
        ("mujoco", ["--env", "InvertedPendulum-v5"], "pip install 'sanctum-ppo[mujoco]'"),
        ("envpool", ["--set", "vector_env=envpool"], "pip install 'sanctum-ppo[envpool]'"),
    ],
)
def test_a_missing_extra_is_named_in_one_line_before_the_dashboard(
    tmp_path: Path, package: str, args: list[str], says: str
) -> None:
    shim = tmp_path / "shim"
    (shim / package).mkdir(parents=True)
    (shim / package / "__init__.py").write_text(
        f"raise ModuleNotFoundError(\"No module named '{package}'\", name='{package}')\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    code, out, err = ppo_with("--tui", *args, cwd=work, shim=shim)
    assert (code, out) == (2, "")
    assert says in one_line(err)
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("mode", ["--headless", "--tui"])
def test_a_misspelt_token_task_is_refused_before_the_run_folder_and_the_dashboard(
    tmp_path: Path, mode: str
) -> None:
    config = TOKEN_PPO
    task = "task=ppo.tokens.digit_sum:make_tsk"
    code, out, err = ppo_with(
        mode, "--config", str(config), "--set", task, cwd=tmp_path, steps=False
    )
    assert code == 2
    assert "recording to" not in out and "warm start" not in out
    assert err.splitlines() == [
        "ppo train: invalid PPO config: task 'ppo.tokens.digit_sum:make_tsk': "
        "ppo.tokens.digit_sum has no function 'make_tsk'"
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_build_that_fails_never_announced_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A starting policy for another environment is found only when the network is built:
    refused (exit 2) without a "recording to" line for a folder that is never made."""
    runs = ["--run-dir", str(tmp_path)]
    assert main(["train", "--headless", "--total-steps", "64", *runs, "--run-id", "base"]) == 0
    capsys.readouterr()
    starting = f"init_from={tmp_path / 'base'}"
    code = main(["train", "--headless", *runs, "--env", "Acrobot-v1", "--set", starting])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith("ppo train: starting policy (init_from): ")
    assert "recording to" not in out
    assert [p.name for p in tmp_path.iterdir()] == ["base"]


def test_a_token_task_that_refuses_its_config_never_announced_a_folder(tmp_path: Path) -> None:
    """The task checks keep_prob against its answer's digits only when it is built (after
    its warm start): exit 2, the warm-start line, no "recording to", no run folder."""
    config = TOKEN_PPO
    settings = ["--set", "keep_prob=0.5,0.5", "--set", "warm_start_steps=1"]
    code, out, err = ppo_with(
        "--headless", "--config", str(config), *settings, cwd=tmp_path, steps=False
    )
    (line,) = err.splitlines()  # one line
    assert code == 2 and line.startswith("ppo train: invalid PPO config: keep_prob has 2 entries")
    assert out.splitlines() == ["warm start: 1 supervised steps"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
@pytest.mark.parametrize("nproc", [[], ["--nproc", "2"]], ids=["one-process", "nproc-2"])
def test_cuda_without_a_device_is_refused_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    nproc: list[str],
) -> None:
    def launched(*args: object) -> int:
        raise AssertionError("processes were started")

    monkeypatch.setattr("ppo.cli.run.launch", launched)
    code, err = train(capsys, "--set", "device=cuda", "--run-dir", str(tmp_path), *nproc)
    assert code == 2 and err.startswith("ppo train: invalid PPO config")
    assert err.splitlines() == [
        'ppo train: invalid PPO config: device = "cuda" but torch finds no CUDA device (use '
        '"auto" or "cpu")'
    ]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_a_checkpoint_written_on_cuda_resumes_here_on_the_cpu_when_told(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, real_checkpoint: dict[str, Any]
) -> None:
    path = saved(tmp_path, real_checkpoint, config__device="cuda")
    runs = tmp_path / "runs"
    code, err = train(capsys, "--resume", str(path), "--run-dir", str(runs))
    assert code == 2 and 'device = "cuda" but torch finds no CUDA device' in err
    assert not runs.exists()
    code, err = train(capsys, "--resume", str(path), "--run-dir", str(runs), "--set", "device=cpu")
    assert code == 0, err
    (events,) = runs.glob("*/events.jsonl")
    started = read_events(events).events[0]
    assert isinstance(started, RunStarted)
    assert started.payload.config["device"] == "cpu"
    assert started.payload.config["device_used"] == "cpu"


@pytest.mark.parametrize(
    ("task", "says"),
    [
        ("builtins:str", "returned str, not a TokenTask"),
        ("os:getcwd", "not a function of the config that returns a TokenTask"),
        ("builtins:dict", "not a function of the config that returns a TokenTask"),
    ],
)
def test_a_task_that_is_no_task_factory_is_one_line_and_exit_2(
    tmp_path: Path, task: str, says: str
) -> None:
    """A ``task`` naming a callable that takes no config or returns something else used
    to end ``ppo train`` in a traceback (AttributeError, TypeError)."""
    settings = ["--set", f"task={task}", "--set", "warm_start_steps=1"]
    config = ["--config", str(TOKEN_PPO), *settings]
    code, _, err = ppo_with("--headless", *config, cwd=tmp_path, steps=False)
    assert code == 2 and "Traceback" not in err
    said = f"task {task!r}" + (" " if "returned" in says else ": ") + says
    assert err.splitlines() == [f"ppo train: invalid PPO config: {said}"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "usage", "said"),
    [
        (["train", "--totl-steps", "1000"], "usage: ppo train", " (did you mean --total-steps?)"),
        (["train", "--total-steps=10", "--bogus"], "usage: ppo train", ""),
        (["config", "--jsn"], "usage: ppo config", " (did you mean --json?)"),
    ],
)
def test_an_option_its_command_does_not_know_is_refused_by_that_command(
    tmp_path: Path, argv: list[str], usage: str, said: str
) -> None:
    """argparse refused it at the top, with ppo's own usage and no hint."""
    done = run_main(main, *argv, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(usage), done.stderr
    unknown = " ".join(a for a in argv[1:] if a.startswith("--") and a != "--total-steps=10")
    last = done.stderr.splitlines()[-1]
    assert last.startswith(f"ppo {argv[0]}: error: unrecognized arguments: {unknown}")
    assert last.endswith(said or unknown)
    assert list(tmp_path.iterdir()) == []
