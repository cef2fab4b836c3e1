"""The headless watcher: runs followed until they end, each change of their health acted on.

``sanctum watch RUN... --notify URL`` without a terminal (or with ``--headless``) runs
this loop instead of the dashboard, with no Textual: every run is read by a
:class:`~sanctum.live.board_feed.RunFollower` (the dashboard's fold), its alerts come from
an :class:`~sanctum.model.alerts.AlertTracker`, and each alert is printed (one line on
standard output), appended to the run's ``alerts.jsonl``, posted to the webhooks and, on a
run's first FAIL, handed to ``--on-critical``. Diagnostics go to standard error.

It stops when every run has finished (or cannot be read), with ``check``'s exit code for
the worst of them: 1 when one fails its verdict, 2 when one could not be judged, else 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sanctum.exits import EXIT_OK, EXIT_UNUSABLE
from sanctum.formatting import visible
from sanctum.health.levels import Level
from sanctum.health.thresholds import Thresholds
from sanctum.live.board_feed import RunFollower
from sanctum.live.notifier import Notifier
from sanctum.live.on_critical import OnCritical
from sanctum.live.pacing import POLL_INTERVAL
from sanctum.model.alert_history import append_alerts, read_alerts
from sanctum.model.alerts import Alert, AlertTracker
from sanctum.model.checks import exit_code_of, judge_rows

ALERT_POLL: float = 0.25
"""Seconds between two reads of quiet logs (a watcher is no screen: a quarter second is
soon enough for a message, and costs nothing)."""


@dataclass
class Actions:
    """What the watcher does with each alert, besides printing it."""

    notifier: Notifier | None = None
    wanted: Callable[[Alert], bool] = lambda _alert: True
    """Which alerts the notifier gets (``--notify-level``)."""
    on_critical: OnCritical | None = None
    history: bool = True
    """Append to each run's ``alerts.jsonl``."""


class _Watched:
    """One run: its follower, its tracker, and the alerts its history already holds."""

    def __init__(self, path: Path, thresholds: Thresholds, fail_on: Level) -> None:
        self.follower = RunFollower(path, path.parent.name, thresholds, fail_on)
        self.tracker = AlertTracker(self.follower.aggregator, path)
        self.follower.after = self.tracker.after
        self.recorded = {_key(a) for a in read_alerts(path) or ()}

    @property
    def finished(self) -> bool:
        status = self.follower.aggregator.run.status
        return self.follower.problem is not None or status not in (None, "running")


def _key(alert: Alert) -> tuple[object, ...]:
    return (alert.change, alert.rule, alert.update, alert.ts)


class Watcher:
    """Follows ``paths`` and acts on their alerts (see the module docstring)."""

    def __init__(
        self,
        paths: Sequence[Path],
        thresholds: Thresholds,
        actions: Actions,
        *,
        fail_on: Level = Level.CRITICAL,
        say: Callable[[str], None],
        out: Callable[[str], None],
        clock: Callable[[], float] = time.time,
        poll_interval: float = ALERT_POLL,
    ) -> None:
        self.runs = [_Watched(path, thresholds, fail_on) for path in paths]
        self.actions = actions
        self.say = say
        self.out = out
        self.clock = clock
        self.poll_interval = max(poll_interval, POLL_INTERVAL)
        self._history_failed = False

    def look(self) -> bool:
        """Read every run once and act on its alerts; whether every run has finished."""
        for run in self.runs:
            _, notices = run.follower.read()
            for text, _severity in notices:
                self.say(f"sanctum: {visible(text)}")
            for alert in run.tracker.at(self.clock()):
                self._act(run, alert)
        return all(run.finished for run in self.runs)

    def watch(self) -> int:
        """Look until every run has finished; the exit code (see the module docstring)."""
        while not self.look():
            time.sleep(self.poll_interval)
        return self.exit_code()

    def beside(self, stop: threading.Event) -> None:
        """Look until ``stop`` is set (the watcher beside a dashboard)."""
        while not stop.is_set():
            try:
                self.look()
            except Exception as exc:  # noqa: BLE001 (the dashboard goes on; say it once)
                self.say(f"sanctum: the alert watcher stopped: {visible(repr(exc))}")
                return
            stop.wait(self.poll_interval)

    def exit_code(self) -> int:
        """``check``'s exit code for the worst run (:func:`~sanctum.model.checks.
        exit_code_of` over its rows, as ``check`` judges a finished run), 2 for a log that
        could not be read."""
        codes = [EXIT_OK]
        for run in self.runs:
            if run.follower.problem is not None:
                codes.append(EXIT_UNUSABLE)
                continue
            agg = run.follower.aggregator
            codes.append(exit_code_of(judge_rows(agg, agg.fail_on, allow_unfinished=False)))
        return max(codes)

    def _act(self, run: _Watched, alert: Alert) -> None:
        """Print ``alert``; unless an earlier watch recorded it in the run's history,
        append it there, post it and run ``--on-critical``: watching a run again sends
        nothing twice and runs no command again."""
        self.out(alert.line)
        if _key(alert) in run.recorded:
            return
        run.recorded.add(_key(alert))
        actions = self.actions
        if actions.history:
            try:
                append_alerts(Path(alert.path), (alert,))
            except OSError as exc:
                if not self._history_failed:
                    self._history_failed = True
                    self.say(f"sanctum: cannot write the alert history: {visible(str(exc))}")
        if actions.notifier is not None and actions.wanted(alert):
            actions.notifier.send(alert)
        if actions.on_critical is not None:
            actions.on_critical.alert(alert)

    def close(self, wait: float) -> None:
        """Let the webhooks and commands finish, for at most ``wait`` seconds each."""
        if self.actions.notifier is not None:
            self.actions.notifier.close(wait)
        if self.actions.on_critical is not None:
            self.actions.on_critical.close(wait)
