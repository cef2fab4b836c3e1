"""The fold: events become the run's state, judged, and frozen snapshots of it.

``handle`` runs once per event and must stay cheap (a ``ppo_update`` costs a few attribute
writes and three appends): an update waits in a queue to be judged. The queue is judged in
one batch, column by column, by :class:`~sanctum.health.judge.HealthJudge`, in one place
(``_judge_queued``): at the end of each reader batch (``handle_batch``), before a reset
drops the judge, and whenever anything reaches the judge through
:attr:`SanctumAggregator.judge`, the one way to it, which judges what is queued before it
answers. Every reader goes through it (the checks, the health report, the snapshot, the
reports), and so do the fold's own steps that tell the judge something (a ``run_started``
fits and configures it, a NaN in another event is tallied by it): the judge receives
everything in the order the log holds it, so what it says never depends on which reader
asked first, nor when. (Only where a logging bug's line lands in the timeline follows when
its batch was judged.)

The run's verdict (:meth:`SanctumAggregator.run_verdict`) is made from the rows ``sanctum
check`` prints (:mod:`sanctum.model.checks`), so every view says what ``check`` says. The
run's pace and its stall limit are :class:`~sanctum.model.pace.Pace`; what the reader could
not use is :class:`~sanctum.model.integrity.LogIntegrity`; each metric's part of a
snapshot is :class:`~sanctum.model.metrics_view.MetricsView`. No Textual, no torch: the
dashboard, ``check`` and ``summary`` share this code.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from types import MappingProxyType
from typing import Final

from sanctum.formatting import format_anomaly, plural
from sanctum.health.finite import WALKED, nonfinite_paths, update_paths
from sanctum.health.judge import HealthJudge
from sanctum.health.levels import HealthReport, Level, health_report
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, RunKind, Thresholds
from sanctum.model.checks import MAX_KL_SCOPE, PAST_MAX_KL, judge_rows
from sanctum.model.integrity import LogIntegrity
from sanctum.model.ledger import AnomalyRecord, EarlierRun, RunRecords
from sanctum.model.metrics_view import MetricsView
from sanctum.model.pace import Pace, over_words, seconds_text
from sanctum.model.snapshot import SanctumSnapshot, TimelineEntry, connection_of
from sanctum.model.state import (
    HISTORY_LEN,
    SERIES_LEN,
    TIMELINE_LEN,
    RunState,
    TamiyoState,
    early_stop_text,
    metric_columns,
)
from sanctum.model.trend import trend_of
from sanctum.model.verdict import PENDING, RunVerdict, verdict_of
from telemetry.eventlog import ReadBatch
from telemetry.events import (
    Anomaly,
    Event,
    Heartbeat,
    PPOUpdate,
    PPOUpdatePayload,
    Rollout,
    RunFinished,
    RunStarted,
    kind_of,
)
from telemetry.run_config import OUTCOME_UNKNOWN, RunConfig

BUG_LABEL, STALL_LABEL = "Bug", "Stall"
"""Verdict labels of the run-wide checks: a value out of its possible range, a stall."""

_FINISH_LEVEL = {"completed": Level.HEALTHY, "interrupted": Level.WARNING, "failed": Level.CRITICAL}

FOREIGN_KEPT: Final = 10
"""Run ids of foreign events named one by one (all such events are counted)."""


def new_run_reason(run_id: str) -> str:
    """Why the state started over at a ``run_started`` of another run in the same log."""
    return f"a new run {run_id} started in the same log"


class SanctumAggregator:
    """The one place events become state. Not thread-safe: one reader thread owns it."""

    def __init__(
        self,
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
        history_len: int = HISTORY_LEN,
        series_len: int = SERIES_LEN,
        timeline_len: int = TIMELINE_LEN,
        fail_on: Level = Level.CRITICAL,
    ) -> None:
        self.base_thresholds = thresholds
        """The table as given; :attr:`thresholds` is its form for the run (``for_run``)."""
        self.thresholds = thresholds
        self.fail_on = fail_on
        """The level at which a rule fails the run's verdict (``check --fail-on``)."""
        self._history_len = history_len
        self._series_len = series_len
        self.timeline: deque[TimelineEntry] = deque(maxlen=timeline_len)
        self.integrity = LogIntegrity()
        """What the reader could not use, across every run of the log."""
        self._clear()

    def _clear(self) -> None:
        self.tamiyo = TamiyoState(self._history_len, self._series_len)
        self.run = RunState()
        self.thresholds = self.base_thresholds
        self._judge = HealthJudge(self.thresholds)
        self._queued: list[PPOUpdatePayload] = []
        self._stops_at: float | None = None
        """The run's ``max_kl`` where it stops before each minibatch's step (the KL past
        max_kl check's line); None: not judged."""
        """Updates folded and not yet judged (:attr:`judge` judges them first)."""
        self.records = RunRecords()
        self.pace = Pace(self.thresholds)
        self._metrics = MetricsView()
        self._verdict_key: tuple[object, ...] | None = None
        self._verdict: RunVerdict = PENDING
        self._before_start: dict[str, int] = {}
        """Run ids of the events before the run's ``run_started`` (the first FOREIGN_KEPT):
        those of another run are foreign once it starts."""

    def reset(self, reason: str, new_run: bool = False) -> None:
        """Forget the run (the log restarted, or a new run began in it: ``new_run``); keep
        the event log and skip counts, and remember the run in the integrity ledger."""
        self._judge_queued()  # its logging bugs stay in the timeline
        self.integrity.forget(EarlierRun(self.run.run_id, self.run.updates, reason, new_run))
        self._clear()
        self.timeline.append(TimelineEntry("reset", Level.WARNING, reason))

    # -- judging ---------------------------------------------------------------------------

    @property
    def judge(self) -> HealthJudge:
        """The run's judge, every update folded so far judged: the one way to it."""
        if self._queued:
            self._judge_queued()
        return self._judge

    def _judge_queued(self) -> None:
        """Judge the updates folded since the last time, in one batch (and fold the pace's
        progress events in: whoever reads the judge bounds them, a ``handle``-only loop
        such as the halt gate's or a replay's too)."""
        queued = self._queued
        if not queued:
            return
        self._queued = []
        self.pace.settle()
        updates, columns = metric_columns(queued)
        steps = [p.global_step for p in queued]
        components = [p.reward_components for p in queued]
        elsewhere = update_paths(queued)
        violations = self._judge.fold(updates, columns, steps, components, elsewhere)
        for v in violations[:3]:
            self.timeline.append(
                TimelineEntry("bug", Level.CRITICAL, f"logging bug: {v.message}", update=v.update)
            )
        if len(violations) > 3:
            more = len(violations) - 3
            self.timeline.append(
                TimelineEntry(
                    "bug", Level.CRITICAL, f"logging bug: {more} more value(s) out of range"
                )
            )

    # -- folding ---------------------------------------------------------------------------

    def handle_batch(self, batch: ReadBatch, after: Callable[[Event], None] | None = None) -> None:
        """Fold one reader batch: a reset first, then its events, then its skipped lines;
        then judge its updates. ``after(event)`` is called once each event is folded (the
        alert watcher looks at the run's level there, update by update)."""
        if batch.reset is not None:
            self.reset(batch.reset)
        self.integrity.end_of_file(batch)
        for event in batch.events:
            self.handle(event)
            if after is not None:
                after(event)
        self.run.skipped_lines += self.integrity.skipped(batch)
        if n := batch.skipped_count:
            first = batch.skipped[0] if batch.skipped else None
            text = plural(n, "line") + " skipped"
            if first is not None:
                text += f" from line {first.line_no}: {first.detail}"
            self.timeline.append(TimelineEntry("skipped", Level.WARNING, text))
        self._judge_queued()
        self.pace.settle()

    def handle(self, event: Event) -> None:
        """Fold one event of any kind.

        An event of another run (other than the ``run_started`` that begins a new run) is
        not this run's and is left out; time and steps never move backwards in the state
        (a value that does is a logging bug, which the judge reports).
        """
        run, kind = self.run, type(event)
        if event.run_id != run.run_id and kind is not RunStarted:
            if run.run_id is not None:
                self._foreign(event)
                return
            early = self._before_start
            if event.run_id in early or len(early) < FOREIGN_KEPT:
                early[event.run_id] = early.get(event.run_id, 0) + 1
        run.events += 1
        if run.finishes:
            run.after_finish += 1
        ts, last = event.ts, run.last_event_ts
        if last is not None and ts - last > self.pace.stall_seconds and run.status == "running":
            limit = self.pace.stall_limit()
            if limit is not None and ts - last > limit:
                self._stall(ts - last, event)
        if last is None or ts > last:
            run.last_event_ts = ts
        seq, last_seq = event.seq, run.last_seq
        if last_seq is None or seq != last_seq + 1:
            if seq > (last_seq or 0) + 1:
                self._gap(last_seq or 0, event)  # a run's seq starts at 1: 101 lost 100
            elif last_seq is not None:  # at or before the last: it went back
                run.seq_back += 1
                if run.first_seq_back is None:
                    run.first_seq_back = seq
        run.last_seq = seq
        if run.status is None:
            run.status = "running"
        if type(event) is PPOUpdate:  # the hot path, inline: the update folded, its judging queued
            up = event.payload
            self.tamiyo.record(up)
            self._queued.append(up)
            if run.first_update_index is None:
                run.first_update_index = up.update
            run.updates += 1
            step = up.global_step
            if step is not None and (run.global_step is None or step > run.global_step):
                run.global_step = step  # progress moves forward only (as _advance)
            self.pace.arrived.append(ts)  # Pace.progress, without the call
            if up.early_stopped:
                self._early_stop(event)
            elif (
                self._stops_at is not None
                and up.early_stopped is False
                and up.approx_kl is not None
            ):
                self._past_max_kl(up.update, up.approx_kl / self._stops_at)
            return
        if WALKED[type(event.payload)]:
            self._nonfinite(event)
        match event:
            case Rollout():
                self._rollout(event)
            case Heartbeat(payload=p):
                self._advance(p.global_step)
                self.pace.arrived.append(ts)
            case Anomaly():
                self._anomaly(event)
            case RunStarted():
                self._run_started(event)
            case RunFinished():
                self._run_finished(event)

    def _early_stop(self, event: PPOUpdate) -> None:
        """An update that stopped early: recorded, and in the timeline."""
        p = event.payload
        text = early_stop_text(p)
        self.records.early_stop(p.update, text)
        self.timeline.append(
            TimelineEntry("early_stop", Level.WARNING, text, event.ts, event.seq, p.update)
        )

    def _past_max_kl(self, update: int, times: float) -> None:
        """Tally an update whose KL passed ``PAST_MAX_KL`` x ``max_kl`` with no early stop."""
        if not times > PAST_MAX_KL:  # NaN is the non-finite row's
            return
        run = self.run
        run.past_max_kl += 1
        if run.first_past_max_kl is None:
            run.first_past_max_kl = update
        run.most_past_max_kl = max(times, run.most_past_max_kl or 0.0)

    def _nonfinite(self, event: Event) -> None:
        """Tally a NaN or Inf in an event other than an update (updates are judged in
        batches, nested fields included)."""
        paths = nonfinite_paths(event.payload)
        if paths:
            update = getattr(event.payload, "update", None)
            self.judge.fold_event(kind_of(type(event)), update, paths)

    def _advance(self, global_step: int | None) -> None:
        """Progress moves forward only."""
        run = self.run
        if global_step is not None and (run.global_step is None or global_step > run.global_step):
            run.global_step = global_step

    def is_live(self, now: float | None) -> bool:
        """Whether the run may still be written at time ``now``: no ``run_finished`` yet,
        and silent no longer than its stall limit (``stall_seconds`` before it has a
        pace). A log silent longer was cut off, or its trainer hangs."""
        run = self.run
        if run.status != "running" or now is None or run.last_event_ts is None:
            return False
        if OUTCOME_UNKNOWN in run.config:  # an import (whatever it says): written once, whole
            return False
        limit = self.pace.stall_limit()
        if limit is None:
            limit = self.pace.stall_seconds
        return now - run.last_event_ts <= limit

    def _foreign(self, event: Event) -> None:
        first = not self.run.foreign_events
        self._count_foreign(event.run_id, 1)
        if first:
            text = (
                f"an event of another run ({event.run_id}, seq {event.seq}) is in this log: "
                "events of other runs are left out, and fail the run's verdict"
            )
            self.timeline.append(TimelineEntry("skipped", Level.WARNING, text, event.ts, event.seq))

    def _count_foreign(self, run_id: str, count: int) -> None:
        run = self.run
        run.foreign_events += count
        runs = dict(run.foreign_runs)
        if run_id in runs or len(runs) < FOREIGN_KEPT:
            runs[run_id] = runs.get(run_id, 0) + count
            run.foreign_runs = tuple(runs.items())

    def _rollout(self, event: Rollout) -> None:
        p = event.payload
        run = self.run
        self._advance(p.global_step)
        if p.steps_per_second is not None:
            run.steps_per_second = p.steps_per_second
        run.episodes += p.episodes
        if p.episode_return_mean is not None:  # a rollout without a finished episode says nothing
            self.records.episode_return(p.episode_return_mean)
            run.episode_return = p.episode_return_mean
            run.episode_return_min = p.episode_return_min
            run.episode_return_max = p.episode_return_max
            run.episode_return_best = self.records.best_return
            run.episode_length = p.episode_length_mean
            run.episode_returns.append(p.episode_return_mean)
            run.episode_return_series.append(p.episode_return_mean)
            run.episode_return_updates.append(p.update)

    def _anomaly(self, event: Anomaly) -> None:
        p = event.payload
        if p.severity == "critical":
            self.run.anomalies_critical += 1
        else:
            self.run.anomalies_warning += 1
        if p.global_step is not None:
            self.run.global_step = p.global_step
        self.records.anomaly(AnomalyRecord(p.update, p.severity, p.metric, p.value, p.message))
        level = Level.CRITICAL if p.severity == "critical" else Level.WARNING
        text = format_anomaly(p.metric, p.value, p.message)
        self.timeline.append(TimelineEntry("anomaly", level, text, event.ts, event.seq, p.update))

    def _run_started(self, event: RunStarted) -> None:
        p = event.payload
        if self.run.run_id is not None and self.run.run_id != event.run_id:
            self.reset(new_run_reason(event.run_id), new_run=True)
            self.run.events, self.run.status, self.run.last_event_ts = 1, "running", event.ts
        run = self.run
        if run.run_id == event.run_id:  # started again: a log written twice, or two runs
            run.starts_repeated += 1
            self.timeline.append(
                TimelineEntry(
                    "start",
                    Level.CRITICAL,
                    f"run {event.run_id} started again (seq {event.seq}): a run starts once",
                    event.ts,
                    event.seq,
                )
            )
            return
        if run.run_id is None:  # events of another run id came before it: not its own
            for run_id, count in self._before_start.items():
                if run_id != event.run_id:
                    self._count_foreign(run_id, count)
        run.run_id = event.run_id
        run.env_id = p.env_id
        run.trainer = f"{p.trainer.name} {p.trainer.version}".strip()
        run.seed = p.seed
        run.schema = p.schema
        run.config = MappingProxyType(dict(p.config))
        run.started_ts = event.ts
        run.step_unit = p.step_unit
        run.known = known = RunConfig.from_config(p.config)  # read once, here
        run.total_steps = known.total_steps
        run.source_unread = known.source_unread
        run.resumed_from_update = known.resumed_from
        self.tamiyo.max_kl = known.max_kl
        self._stops_at = known.max_kl if known.early_stop_scope == MAX_KL_SCOPE else None
        self._fit_rules(RunKind(p.algorithm, p.kl, p.policy_epochs, p.action_space))
        self.judge.configure(p.config, p.kl)
        details = ", ".join(
            f"{k} {v}"
            for k, v in (("env", p.env_id), ("seed", p.seed), ("trainer", run.trainer))
            if v is not None
        )
        self.timeline.append(
            TimelineEntry(
                "start",
                Level.HEALTHY,
                f"run {event.run_id} started ({details})",
                event.ts,
                event.seq,
            )
        )

    def _fit_rules(self, kind: RunKind) -> None:
        """Judge the run by the rules that fit what it declares (updates judged before its
        ``run_started`` keep the table they were judged by: a judgement is not redone)."""
        fitted = self.base_thresholds.for_run(kind)
        if fitted is self.thresholds or self.judge.last_update is not None:
            return
        self.thresholds = fitted
        self._judge = HealthJudge(fitted)

    def _run_finished(self, event: RunFinished) -> None:
        p = event.payload
        run = self.run
        run.finishes += 1
        if run.finishes == 1:
            run.first_status = p.status
        run.status = p.status
        run.reason = p.reason
        if p.updates is not None:
            run.reported_updates = p.updates
        if p.status == "failed":
            run.failures_reported += 1
            if run.failures_reported == 1:
                run.first_failure = p.reason or ""
        run.finished_ts = event.ts
        run.duration_seconds = p.duration_seconds
        self._advance(p.global_step)
        text = f"run {p.status}" + (f": {p.reason}" if p.reason else "")
        self.timeline.append(
            TimelineEntry("finish", _FINISH_LEVEL[p.status], text, event.ts, event.seq)
        )

    def _stall(self, seconds: float, event: Event) -> None:
        run = self.run
        run.stalls += 1
        latest = self.tamiyo.latest
        update = 0 if latest is None else latest.update + 1
        if run.first_stall_update is None:
            run.first_stall_update = update
        pace = self.pace.seconds
        if run.longest_stall is None or seconds >= run.longest_stall:
            run.longest_stall_pace = pace
        run.longest_stall = max(seconds, run.longest_stall or 0.0)
        self.pace.stalled()
        text = (
            f"stall: no event for {seconds_text(seconds)} during update {update}, "
            f"{over_words(self.thresholds, pace)}"
        )
        self.timeline.append(
            TimelineEntry("stall", Level.CRITICAL, text, event.ts, event.seq, update)
        )

    def _gap(self, last_seq: int, event: Event) -> None:
        run = self.run
        run.seq_gaps += 1
        missing = event.seq - last_seq - 1
        run.seq_missing += missing
        if run.first_gap_seq is None:
            run.first_gap_seq = event.seq
        if missing == 1 and isinstance(event, RunFinished) and event.payload.status == "failed":
            run.refused += 1  # the write a full disk refused, the trainer's last but one
        self.timeline.append(
            TimelineEntry(
                "gap",
                Level.WARNING,
                f"{plural(missing, 'event')} missing before seq {event.seq}",
                event.ts,
                event.seq,
            )
        )

    # -- snapshot --------------------------------------------------------------------------

    def health(self, now: float | None = None) -> HealthReport:
        """The health report at the latest update (PENDING before the first): what happens
        now. With ``now``, an unfinished run silent past its stall limit has stalled."""
        checks: dict[str, tuple[str, Level]] = {}
        if self.judge.latest_violations:
            checks["bug"] = (BUG_LABEL, Level.CRITICAL)
        run = self.run
        limit = self.pace.stall_limit()
        if (
            run.status == "running"
            and now is not None
            and run.last_event_ts is not None
            and limit is not None
            and now - run.last_event_ts > limit
        ):
            checks["stall"] = (STALL_LABEL, Level.CRITICAL)
        return health_report(self.judge.levels(self.tamiyo.values()), self.thresholds, checks)

    def run_verdict(self, now: float | None = None, fail_on: Level | None = None) -> RunVerdict:
        """The run's verdict (``sanctum check``'s, under ``fail_on``, default the
        aggregator's): a live run at ``now`` (see :meth:`is_live`) is judged so far, as
        ``check --allow-unfinished`` judges it; any other as ``check`` does. Cached until an
        event arrives or the run stops being live."""
        fail_on = self.fail_on if fail_on is None else fail_on
        run = self.run
        if run.status is None:
            return PENDING
        live = self.is_live(now)
        key = (
            id(run),
            run.events,
            run.foreign_events,
            run.skipped_lines,
            self.integrity.unreadable_total,
            self.integrity.tail,
            live,
            fail_on,
        )
        if key != self._verdict_key:
            rows = judge_rows(self, fail_on, allow_unfinished=live, live=live)
            self._verdict, self._verdict_key = verdict_of(rows, so_far=live), key
        return self._verdict

    def snapshot(self, now: float) -> SanctumSnapshot:
        """A frozen view of everything at time ``now`` (wall clock, or the replay clock)."""
        health = self.health(now)
        metrics, history_updates, series_updates = self._metrics.of(
            self.tamiyo, self.judge.rules, health
        )
        tamiyo = self.tamiyo
        run = self.run.snapshot()
        return SanctumSnapshot(
            now=now,
            connection=connection_of(run, now, self.thresholds.stale_seconds),
            run=run,
            update=None if tamiyo.latest is None else tamiyo.latest.update,
            metrics=metrics,
            history_updates=history_updates,
            series_updates=series_updates,
            health=health,
            run_verdict=self.run_verdict(now),
            return_direction=trend_of(run.episode_returns),
            early_stops=tamiyo.early_stops,
            last_early_stop_reason=tamiyo.last_early_stop_reason,
            policy_drift_rate=tamiyo.policy_drift_rate,
            trust_region_health=tamiyo.trust_region_health,
            max_kl=tamiyo.max_kl,
            timeline=tuple(self.timeline),
            skipped=self.integrity.counts(),
            thresholds=self.thresholds,
        )


def empty_snapshot(now: float, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> SanctumSnapshot:
    """The snapshot before any event: WAITING, every metric pending."""
    return SanctumAggregator(thresholds).snapshot(now)
