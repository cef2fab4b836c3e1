"""The parts every report is made of, each typed once: a rule's tally, a run's facts, the
lines the reader skipped.

``check``, ``summary`` and ``diff`` each build their document from these (one scan, one
rule table), and every JSON output writes a part with the same keys: a rule's tally in
``check``'s ``rules`` is the object ``summary`` lists and ``diff`` shows for each run. The
text formatters read the same parts. Numbers stay numbers here (non-finite ones too);
:func:`sanctum.formatting.dumps` spells them for JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Final

from sanctum.formatting import NOT_JUDGED, SHORT_ABSENT, format_value
from sanctum.health.levels import Level
from sanctum.model.snapshot import SkipCounts
from sanctum.reports.scan import LogScan


@dataclass(frozen=True, slots=True)
class RuleTallyReport:
    """How one rule judged the run: its last value and its worst statistic, how many
    updates it measured, judged and found at each level, and the first of each."""

    metric: str
    label: str
    rule: str
    """The thresholds in words."""
    final: float | None
    """The metric's last value (None: never measured)."""
    final_text: str
    """``final`` as the rule spells it (``-``: none)."""
    final_update: int | None
    final_level: str
    """The rule's level at the latest update it saw (``pending`` before it judged one)."""
    final_note: str | None
    """Why the rule did not judge the latest update, when it says ``not judged: ...`` (EV
    on returns nearly constant); None otherwise."""
    worst: float | None
    """The worst statistic judged; a non-finite value is worse than any number."""
    worst_text: str
    """``worst`` as the rule spells its statistic (``0.0412``, ``x12.3``; ``-``: none)."""
    worst_update: int | None
    updates_measured: int
    updates_judged: int
    """Updates whose statistic was judged (not pending)."""
    updates_warning: int
    updates_critical: int
    first_warning: int | None
    first_critical: int | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def rule_tallies(scan: LogScan) -> tuple[RuleTallyReport, ...]:
    """Each rule's tally over the scanned run, in rule order."""
    judges = scan.aggregator.judge.rules
    rows = []
    for metric, tally in scan.tallies.items():
        rule, stats, latest = tally.rule, scan.stats[metric], judges[metric].latest
        rows.append(
            RuleTallyReport(
                metric=rule.metric,
                label=rule.label,
                rule=rule.describe(),
                final=stats.final,
                final_text=format_value(stats.final, rule.decimals, SHORT_ABSENT),
                final_update=stats.final_update,
                final_level=(Level.PENDING if latest is None else latest.level).value,
                final_note=_not_judged(latest.note if latest is not None else None),
                worst=tally.worst,
                worst_text=rule.format(tally.worst, SHORT_ABSENT),
                worst_update=tally.worst_update,
                updates_measured=tally.measured,
                updates_judged=tally.judged,
                updates_warning=tally.at_warning,
                updates_critical=tally.at_critical,
                first_warning=tally.first_warning,
                first_critical=tally.first_critical,
            )
        )
    return tuple(rows)


def _not_judged(note: str | None) -> str | None:
    return note if note is not None and note.startswith(NOT_JUDGED) else None


NOT_JUDGED_MARK: Final = "*"
"""Beside a final value its rule did not judge; a line under the table says why."""


def final_cell(tally: dict[str, Any]) -> str:
    """A rule tally's final value as a table shows it: marked when the rule did not judge
    it (``-8.377*``), so a value past a line never reads as a verdict it was not."""
    text: str = tally["final_text"]
    return text if tally["final_note"] is None else text + NOT_JUDGED_MARK


def not_judged_line(tally: dict[str, Any], side: str = "") -> str | None:
    """``* EV not judged: returns nearly constant`` (``side``: ``A: `` in a diff), or None."""
    note = tally["final_note"]
    return None if note is None else f"{NOT_JUDGED_MARK} {side}{tally['label']} {note}"


@dataclass(frozen=True, slots=True)
class RunFactsReport:
    """Who the run is and how far it got, as its log says."""

    run_id: str | None
    env_id: str | None
    trainer: str | None
    seed: int | None
    schema: int | None
    status: str | None
    reason: str | None
    started_ts: float | None
    global_step: int | None
    step_unit: str | None
    """What ``global_step``, ``total_steps`` and ``steps_per_second`` count
    (``run_started.step_unit``; None: environment steps)."""
    total_steps: int | None
    updates: int
    events: int
    steps_per_second: float | None
    episodes: int
    duration_seconds: float | None
    """From ``run_started`` to the finish, or to the last event of a run not finished."""
    episode_return_final: float | None
    """The run's final return: the episode-weighted mean return of its latest rollouts
    that hold :data:`~sanctum.metrics.FINAL_EPISODES` finished episodes or more
    (:func:`telemetry.returns.final_return`, the figure ``ppo train`` prints at the end,
    labelled :data:`~telemetry.returns.FINAL_RETURN`); None: no episode finished."""
    episode_return_best: float | None
    """The best mean return of one rollout (of the episodes that finished in it)."""
    max_kl: float | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


_DERIVED: Final = ("duration_seconds", "episode_return_final", "episode_return_best", "max_kl")
"""The facts a report works out; the others are the run's fields of the same name."""


def run_facts(scan: LogScan) -> RunFactsReport:
    """The facts of the scanned run."""
    agg = scan.aggregator
    run = agg.run
    kept = {f.name: getattr(run, f.name) for f in fields(RunFactsReport) if f.name not in _DERIVED}
    return RunFactsReport(
        **kept,
        duration_seconds=run.elapsed(run.last_event_ts or 0.0),
        episode_return_final=scan.final_return,
        episode_return_best=run.episode_return_best,
        max_kl=agg.tamiyo.max_kl,
    )


def skip_counts(scan: LogScan) -> SkipCounts:
    """The lines the scan skipped: all counted, the first listed with why."""
    return scan.aggregator.integrity.counts()


def skipped_fields(skipped: SkipCounts) -> dict[str, Any]:
    """The skipped lines in a JSON document: every JSON output spells them with these keys
    (``skipped_lines``: how many in all; ``skipped``: the listed ones, with why)."""
    return {
        "skipped_lines": skipped.malformed + skipped.unknown_kind,
        "skipped_malformed": skipped.malformed,
        "skipped_unknown_kind": skipped.unknown_kind,
        "skipped": [
            {"line": s.line_no, "kind": s.kind, "type": s.event_type, "detail": s.detail}
            for s in skipped.lines
        ],
    }


def early_stops(scan: LogScan) -> dict[str, Any]:
    """The run's early stops in a JSON document: how many, and the first with their
    reasons."""
    return {
        "count": scan.early_stop_count,
        "listed": [{"update": u, "reason": r} for u, r in scan.early_stops],
    }


def earlier_runs(scan: LogScan) -> list[dict[str, Any]]:
    """The runs the log held before the one described (``new_run``: still in the file;
    else the file was replaced after it), in a JSON document."""
    return [asdict(r) for r in scan.earlier_runs]
