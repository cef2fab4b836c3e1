"""A CPU meter by stage inside the ``sanctum`` process ``bench/screen_stages.py`` starts.

Loaded through ``PYTHONPATH`` (Python imports ``sitecustomize`` at start-up) and idle
unless ``SANCTUM_STAGES_OUT`` names a file. SIGUSR1 opens the measured window, SIGUSR2
closes it and writes that file (JSON): each stage's CPU seconds (thread CPU time,
exclusive: a stage called inside another is charged to itself alone), the calls of each,
the whole process's CPU seconds, the collector's, and the window's wall time.

The stages wrap the calls that make them: the reader's read (``tail/read``), the fold of
a batch (``fold``), the verdict, the snapshot less its verdict, the app's drawing of a
snapshot into its widgets (``widgets``), and Textual's layout and render of the screen
(``render/layout``; private Textual methods, looked up by name, skipped when absent).
What no stage holds (the event loop, timers, the collector, the terminal's writer
thread) is the rest.
"""

from __future__ import annotations

import os

if os.environ.get("SANCTUM_STAGES_OUT"):
    import gc
    import importlib
    import json
    import signal
    import sys
    import time
    from pathlib import Path
    from typing import Any

    TARGETS = (
        ("tail/read", "telemetry.eventlog.reader", "EventLogReader", "read_new"),
        ("fold", "sanctum.model.aggregator", "SanctumAggregator", "handle_batch"),
        ("verdict", "sanctum.model.aggregator", "SanctumAggregator", "run_verdict"),
        ("snapshot", "sanctum.model.aggregator", "SanctumAggregator", "snapshot"),
        ("snapshot", "sanctum.live.board_feed", "RunsFeed", "board"),
        ("widgets", "sanctum.tui.app", "SanctumApp", "_show"),
        ("widgets", "sanctum.tui.runs_app", "RunsApp", "_draw"),
        ("render/layout", "textual.screen", "Screen", "_refresh_layout"),
        ("render/layout", "textual.screen", "Screen", "_compositor_refresh"),
        ("render/layout", "textual.app", "App", "_display"),
    )
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/, for lib
    from lib.stopwatch import Stopwatch

    _watch = Stopwatch()
    _collector = {"seconds": 0.0, "started": 0.0}
    _window: dict[str, Any] = {}

    def _patch() -> None:
        for stage, module, owner, name in TARGETS:
            try:
                cls = getattr(importlib.import_module(module), owner)
            except (ImportError, AttributeError):
                continue
            if name in cls.__dict__ and not hasattr(cls.__dict__[name], "__wrapped__"):
                setattr(cls, name, _watch.wrap(stage, cls.__dict__[name]))

    def _on_collect(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            _collector["started"] = time.thread_time()
        else:
            _collector["seconds"] += time.thread_time() - _collector["started"]

    def _state() -> dict[str, Any]:
        times = os.times()
        return {
            "spent": dict(_watch.seconds),
            "calls": dict(_watch.calls),
            "process": times.user + times.system,
            "collector": _collector["seconds"],
            "wall": time.perf_counter(),
        }

    def _open(*_: Any) -> None:
        _patch()
        if _on_collect not in gc.callbacks:
            gc.callbacks.append(_on_collect)
        _window.update(_state())

    def _close(*_: Any) -> None:
        end = _state()
        result = {
            "wall": end["wall"] - _window["wall"],
            "process": end["process"] - _window["process"],
            "collector": end["collector"] - _window["collector"],
            "stages": {k: v - _window["spent"].get(k, 0.0) for k, v in end["spent"].items()},
            "calls": {k: v - _window["calls"].get(k, 0) for k, v in end["calls"].items()},
        }
        with open(os.environ["SANCTUM_STAGES_OUT"], "w") as out:
            json.dump(result, out)

    signal.signal(signal.SIGUSR1, _open)
    signal.signal(signal.SIGUSR2, _close)
