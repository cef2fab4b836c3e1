"""Every ``sanctum`` subcommand, each a module that owns its options and its run, listed
once here: the parser, the dispatch and the scripted commands are derived from this list.

Each module exposes ``COMMAND`` (a :class:`~sanctum.cli.command.Command`). Importing them
loads the standard library and sanctum's light modules only: what a command needs to run
(Textual, the reports, an importer) loads inside its run.
"""

from __future__ import annotations

from typing import Final

from sanctum.cli.command import Command
from sanctum.cli.commands import (
    alerts,
    check,
    diff,
    import_,
    replay,
    rollouts,
    schema,
    serve,
    summary,
    watch,
)

COMMANDS: Final[tuple[Command, ...]] = (
    watch.COMMAND,
    replay.COMMAND,
    check.COMMAND,
    diff.COMMAND,
    summary.COMMAND,
    schema.COMMAND,
    rollouts.COMMAND,
    serve.COMMAND,
    import_.COMMAND,
    alerts.COMMAND,
)
"""The subcommands, in the order ``sanctum --help`` lists them."""

BY_NAME: Final[dict[str, Command]] = {command.name: command for command in COMMANDS}
"""Each subcommand by its name: the dispatch."""

NAMES: Final = tuple(BY_NAME)
"""The subcommands' names: what ``sanctum WORD`` takes for a command, not a RUN."""

SCRIPTED: Final = tuple(command.name for command in COMMANDS if command.scripted)
"""Commands a script or CI job reads the exit code of: an internal error is exit 2 there."""
