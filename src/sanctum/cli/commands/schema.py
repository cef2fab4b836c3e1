"""``sanctum schema``: the JSON Schema of one line of an event log."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from sanctum.cli.command import Command
from sanctum.cli.output import emit
from sanctum.exits import EXIT_OK

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds

_DESCRIPTION: Final = (
    "Print the JSON Schema (draft 2020-12) of one line of events.jsonl, "
    "generated from the event types: validate a log written by another program with "
    "any JSON Schema validator, one line at a time."
)


def _add_arguments(schema: argparse.ArgumentParser) -> None:
    """No options: the schema is the one the event types give."""


def _run(args: argparse.Namespace, thresholds: Thresholds) -> int:
    from telemetry.schema import shipped_schema_text

    emit(shipped_schema_text().rstrip("\n"))
    return EXIT_OK


COMMAND = Command(
    "schema",
    "print the JSON Schema of one event-log line",
    _add_arguments,
    _run,
    description=_DESCRIPTION,
    judges=False,
)
