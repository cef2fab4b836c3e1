"""The repository's example scripts (``examples/*.py``) loaded as modules, for tests that run
their ``main(argv)`` in this process, and the payloads the runs they record hold."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from telemetry import read_events

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str) -> Any:
    """``examples/NAME.py`` as a module named NAME (registered, so that what it defines
    pickles by reference in this process)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def payloads(run: Path, kind: type[Any]) -> list[Any]:
    """The payloads of ``kind`` in the run folder's ``events.jsonl``, in order."""
    events = read_events(run / "events.jsonl").events
    return [e.payload for e in events if isinstance(e.payload, kind)]
