"""A run's alert history: ``alerts.jsonl`` beside its event log, one :class:`Alert` a line.

The watcher appends each change it sent; ``sanctum alerts`` reads them back. A line that
is not an alert (a torn last line, an edit by hand) is skipped, as the event log's reader
skips what it cannot decode. Lines are written whole, one write each, with every hidden
character escaped (``telemetry.text.json_visible``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

import msgspec

from sanctum.model.alerts import Alert
from telemetry.text import json_visible

ALERTS_FILE: Final = "alerts.jsonl"
"""The history's name, in the run's folder."""

_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(Alert)


def history_path(events: Path) -> Path:
    """The alert history of the run whose event log is ``events``."""
    return events.parent / ALERTS_FILE


def append_alerts(events: Path, alerts: Iterable[Alert]) -> None:
    """Append ``alerts`` to the history of the run at ``events`` (OSError when it cannot)."""
    text = "".join(json_visible(_ENCODER.encode(a).decode()) + "\n" for a in alerts)
    if text:
        with history_path(events).open("a", encoding="utf-8") as out:
            out.write(text)


def read_alerts(events: Path) -> list[Alert] | None:
    """The history of the run at ``events``, oldest first; None when it has none."""
    try:
        lines = history_path(events).read_bytes().splitlines()
    except FileNotFoundError:
        return None
    alerts = []
    for line in lines:
        try:
            alerts.append(_DECODER.decode(line))
        except msgspec.DecodeError:
            continue
    return alerts
