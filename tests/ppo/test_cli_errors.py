"""``ppo train`` on bad input: one line naming the file or field, exit 2, no traceback."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import torch

from ppo.cli import main


def train(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["train", "--headless", "--total-steps", "512", *args])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip()


@pytest.mark.parametrize("run_id", ["../../x", "/abs/x", "a/b", "..", ".hidden", "-x", "a b"])
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
    code, err = train(capsys, "--run-dir", str(tmp_path), "--run-id", "once")
    assert (code, err) == (
        2,
        f"ppo train: {tmp_path / 'once'} already holds a run; pick another --run-id",
    )


def test_a_toml_file_that_is_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'env_id = "\xff\xfe"\n')
    code, err = train(capsys, "--config", str(bad))
    assert code == 2 and f"cannot read {bad}: not UTF-8 text" in err


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
