"""``sanctum``'s commands for scripts load no Textual (nor torch, nor ppo): ``check``,
``summary``, ``--once``, ``diff`` and ``import`` start fast and work without a terminal.
(That the probe sees a loaded library is shown in tests/ppo/cli/test_startup.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.startup import heavy_loaded

HEAVY = ("textual", "torch", "ppo")
RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "recorded"


def test_the_commands_for_scripts_load_no_textual(tmp_path: Path) -> None:
    for name in ("base-s1", "base-s2"):
        shutil.copytree(RECORDED / name, tmp_path / name)
    runs = [
        ["--help"],
        ["check", "base-s1"],
        ["check", "base-s1", "--json"],
        ["summary", "base-s1"],
        ["summary", "base-s1", "--json"],
        ["base-s1", "--once"],
        ["diff", "base-s1", "base-s2"],
        ["import", "--help"],
        ["import", "missing.tfevents", "--out", "imported"],
        ["chek", "base-s1"],
        ["watch", "--headless", "base-s1"],
        ["alerts", "base-s1"],
    ]
    loaded = heavy_loaded("sanctum.cli", runs, HEAVY, tmp_path)
    assert loaded == {" ".join(argv): [] for argv in runs}
