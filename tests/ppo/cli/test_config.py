"""``ppo config`` (and ``ppo train --help-config``): every field listed from the config
itself; names from other libraries answered with ours. A reader that went away is a real
pipe of real processes."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from pathlib import Path

import pytest

from ppo.cli import main
from ppo.config import PPOConfig
from ppo.config.peers import PEER_NAMES
from ppo.exits import EXIT_OK, EXIT_USAGE
from ppo.tokens.config import TokenPPOConfig
from tests import processes
from tests.cli_runner import Ran, run_main


def ppo(*args: str, cwd: Path) -> Ran:
    return run_main(main, *args, cwd=cwd)


@pytest.mark.parametrize(
    ("args", "config"),
    [
        ([], PPOConfig),
        (["--algorithm", "token_ppo"], TokenPPOConfig),
        (["--algorithm", "grpo"], TokenPPOConfig),
    ],
)
def test_json_lists_every_field_with_its_default_allowed_values_and_doc(
    tmp_path: Path, args: list[str], config: type[PPOConfig] | type[TokenPPOConfig]
) -> None:
    result = ppo("config", "--json", *args, cwd=tmp_path)
    assert result.returncode == EXIT_OK, result.stderr
    doc = json.loads(result.stdout)
    fields = dataclasses.fields(config)  # type: ignore[arg-type]
    assert [f["name"] for f in doc["fields"]] == [f.name for f in fields]
    defaults = config().to_dict()
    if "algorithm" in defaults:  # the one asked for: a TOML file that names it says so
        defaults["algorithm"] = args[1]
    assert [f["default"] for f in doc["fields"]] == list(defaults.values())
    assert [f["doc"] for f in doc["fields"]] == [f.metadata["doc"] for f in fields]
    assert [f["allowed"] for f in doc["fields"]] == [
        f.metadata["validator"].allowed for f in fields
    ]
    by_name = {f["name"]: f for f in doc["fields"]}
    assert by_name["seed"]["type"] == "int"
    assert by_name["max_kl"] == {
        "name": "max_kl",
        "type": "float or none",
        "default": None,
        "allowed": "> 0 or none",
        "doc": by_name["max_kl"]["doc"],
    }
    assert {p["name"] for p in doc["peer_names"]} <= {p.name for p in PEER_NAMES}


def test_text_names_every_field_and_the_peer_names(tmp_path: Path) -> None:
    result = ppo("config", cwd=tmp_path)
    assert result.returncode == EXIT_OK
    lines = result.stdout.splitlines()
    for f in dataclasses.fields(PPOConfig):
        assert any(line.startswith(f"{f.name}: ") for line in lines), f.name
    assert "max_kl: float or none = none   (> 0 or none)" in lines
    assert "heartbeat_seconds: float = 5.0   ((0, 5])" in lines
    assert "device: str = cpu   (one of auto, cpu, cuda)" in lines
    peer = "  target_kl (SB3, CleanRL): max_kl = 1.5 x target_kl"
    assert any(line.startswith(peer) for line in lines)


def test_chosen_fields_only_and_a_peer_name_answered_in_one_line(tmp_path: Path) -> None:
    chosen = ppo("config", "max_kl", "early_stop_scope", cwd=tmp_path)
    assert chosen.returncode == EXIT_OK
    listed = [line for line in chosen.stdout.splitlines() if line and not line.startswith(" ")]
    assert [line.split(":")[0] for line in listed[1:]] == ["max_kl", "early_stop_scope"]
    peer = ppo("config", "target_kl", cwd=tmp_path)
    assert peer.returncode == EXIT_USAGE and peer.stdout == ""
    assert peer.stderr.count("\n") == 1
    assert peer.stderr.startswith("ppo config: unknown config key 'target_kl': ")
    assert "`--set max_kl=<1.5 x target_kl>`" in peer.stderr


def test_train_help_points_at_ppo_config_and_help_config_lists(tmp_path: Path) -> None:
    helped = ppo("train", "--help", cwd=tmp_path)
    assert "ppo_config.py" not in helped.stdout
    assert "`ppo config` lists every field" in helped.stdout
    listed = ppo("train", "--help-config", cwd=tmp_path)
    assert listed.returncode == EXIT_OK
    assert listed.stdout == ppo("config", cwd=tmp_path).stdout


def test_train_with_sb3_target_kl_says_max_kl_at_one_and_a_half(tmp_path: Path) -> None:
    result = ppo("train", "--headless", "--set", "target_kl=0.02", cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    assert "`--set max_kl=0.03` is SB3's target_kl=0.02 (SB3 stops at 1.5x target_kl)" in (
        result.stderr
    )
    assert not (tmp_path / "runs").exists()


def test_grpo_lists_the_token_level_config_as_token_ppo_does(tmp_path: Path) -> None:
    """The README's ``algorithm = "grpo"`` is a name ``ppo config`` knows; the listing is
    token_ppo's but for the algorithm it lists, which is the one asked for."""
    grpo = ppo("config", "--algorithm", "grpo", cwd=tmp_path)
    assert (grpo.returncode, grpo.stderr) == (EXIT_OK, "")
    token = ppo("config", "--algorithm", "token_ppo", cwd=tmp_path).stdout
    assert "algorithm: str = grpo   (one of token_ppo, grpo)" in grpo.stdout
    assert "algorithm: str = token_ppo   (one of token_ppo, grpo)" in token
    assert grpo.stdout.replace("= grpo   (", "= token_ppo   (") == token
    helped = ppo("config", "--help", cwd=tmp_path)
    assert "token_ppo or grpo" in " ".join(helped.stdout.split())


@pytest.mark.parametrize("args", [["config"], ["config", "--json"]])
def test_a_reader_that_went_away_ends_the_listing_quietly(tmp_path: Path, args: list[str]) -> None:
    """``ppo config | head -1`` with head already gone: exit 0 and nothing on stderr, as
    ``git log | head`` (a pipe whose reader has closed, so every write breaks)."""
    read, write = os.pipe()
    os.close(read)
    try:
        result = processes.python_m("ppo", *args, cwd=tmp_path, stdout=write)
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (EXIT_OK, "")


def test_ppo_config_piped_into_head_says_nothing_on_stderr(tmp_path: Path) -> None:
    """The shell's own ``ppo config | head -1``: the first line, nothing else."""
    command = f"{shlex.quote(processes.PYTHON)} -m ppo config | head -1"
    result = processes.run(
        ["bash", "-o", "pipefail", "-c", command], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.stdout.startswith("PPOConfig: ") and result.stdout.count("\n") == 1
    assert (result.returncode, result.stderr) == (EXIT_OK, "")
