"""The registry of ``sanctum`` commands is the one list: the parser's subcommands, the
dispatch and the scripted commands all come from it, and every command module is in it."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import sanctum.cli.commands as commands_package
from sanctum.cli import build_parser, main
from sanctum.cli.command import Command
from sanctum.cli.commands import BY_NAME, COMMANDS, NAMES, SCRIPTED
from sanctum.cli.parser import with_default_command

SRC = Path(__file__).resolve().parents[4] / "src"


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


def test_the_parser_and_the_dispatch_list_the_registry_in_its_order() -> None:
    names = [command.name for command in COMMANDS]
    assert _subcommands(build_parser()) == names == list(BY_NAME) == list(NAMES)
    assert names == [
        "watch",
        "replay",
        "check",
        "diff",
        "summary",
        "schema",
        "rollouts",
        "serve",
        "import",
        "alerts",
    ]


def test_every_command_module_is_in_the_registry_once() -> None:
    modules = [
        importlib.import_module(f"{commands_package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(commands_package.__path__)
    ]
    declared = [module.COMMAND for module in modules]
    assert all(isinstance(command, Command) for command in declared)
    assert sorted(c.name for c in declared) == sorted(c.name for c in COMMANDS)
    assert len(set(NAMES)) == len(COMMANDS)


def test_scripted_is_derived_and_the_dashboards_are_not_scripted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert SCRIPTED == (
        "check",
        "diff",
        "summary",
        "schema",
        "rollouts",
        "serve",
        "import",
        "alerts",
    )
    watch = build_parser().parse_args(with_default_command(["runs/a"]))
    once = build_parser().parse_args(with_default_command(["--once", "runs/a"]))
    headless = build_parser().parse_args(with_default_command(["--headless", "runs/a"]))
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    assert BY_NAME["watch"].reads_exit_code(watch)  # no terminal: the headless watcher
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    assert not BY_NAME["watch"].reads_exit_code(watch)
    assert BY_NAME["watch"].reads_exit_code(once)
    assert BY_NAME["watch"].reads_exit_code(headless)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_the_judging_options_come_with_judges_only(
    command: Command, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as shown:
        main([command.name, "--help"])
    assert shown.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: sanctum {command.name} ")
    assert ("--thresholds FILE" in text) == ("--fail-on" in text) == command.judges
    if command.description is not None:
        assert command.description in " ".join(text.split())


def test_json_and_the_judging_options_are_spelled_once_in_the_cli() -> None:
    sources = "".join(p.read_text() for p in sorted((SRC / "sanctum" / "cli").rglob("*.py")))
    for option in ("--json", "--thresholds", "--fail-on"):
        assert len(re.findall(rf'add_argument\(\s*"{option}"', sources)) == 1, option
