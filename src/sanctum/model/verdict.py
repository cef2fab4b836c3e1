"""The verdict on a run: every check of ``sanctum check`` as rows, and the one word every
view shows (docs/design.md, section 6).

A run has one verdict, computed once, here, from the judged run the aggregator holds:
each rule's tally over every update, non-finite values, logging bugs, stalls, anomalies,
update lines that could not be read (and, once nothing can still be writing the file,
bytes after its last newline), whether the log holds the whole run and only it (events
lost from ``seq``, ``seq`` that does not increase, updates missing from the head (a run
starts at update 0, or where its recorded ``config.resumed_from`` says), fewer or more
updates than ``run_finished`` says, events of another run id, a ``run_started`` of this
run again, an import that could not read all of its source), and how the run finished (a
run that ever reported ``failed`` has failed, whatever it reported after; a run finishes
once, with nothing after its ``run_finished``; a finished run with no update was not
judged, and fails). ``sanctum check`` prints
the rows; the banner, the run table, ``summary``, ``--once`` and ``diff`` print the
:class:`RunVerdict` made from the same rows under the same ``fail_on``:

- ``FAIL`` exactly when the check fails, naming each failing row (``FAIL: KL 22x, Stall 1x``:
  the rule and the updates it failed in, or the stalls, the impossible values...);
- ``WARN`` when the check passes but a rule reached warning at some update, or the trainer
  recorded a warning anomaly (``WARN: KL 3x``);
- ``PENDING`` while no rule has judged an update;
- ``OK`` otherwise.

Whether a log without ``run_finished`` is a live run, judged so far (as ``check
--allow-unfinished`` judges it: being unfinished is no failure while it runs), or a run
that was cut off, judged as ``check`` judges it, depends on its silence and pace, which
the aggregator holds: it says which by ``allow_unfinished``. What happens *now* (the level
at the latest update) is the :class:`~sanctum.health.levels.HealthReport`, not this.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, Literal

from sanctum.formatting import SHORT_ABSENT, format_anomaly, plural
from sanctum.health.levels import Level
from sanctum.health.rule import Rule
from sanctum.health.rule_judge import RuleTally
from telemetry.text import visible

if TYPE_CHECKING:
    from sanctum.health.thresholds import Thresholds
    from sanctum.model.aggregator import SanctumAggregator

_describe = lru_cache(maxsize=256)(Rule.describe)
"""A rule in words, once per rule: the live views make the rows every frame."""

NO_END: Final = "no_run_finished"
"""``run_started.config`` key where a reader of another tool's log says why that log never
holds a ``run_finished`` (verl's file logger records no end): the finish row says so and
judges the log as it stands (the source cannot say more; every other row still judges what
it does say: lines it could not read, lost steps, the rules)."""

OUTCOME_UNKNOWN: Final = "outcome_unknown"
"""``run_started.config`` key where an import whose source does not say how the run ended
(a TensorBoard log holds no end of run) says so, and how to record it: the import writes
no ``run_finished`` of its own invention, every view says "outcome not recorded", and the
finish row fails as an unfinished run does (``check --allow-unfinished`` accepts it); a
log that never grows is never live."""

Word = Literal["PENDING", "OK", "WARN", "FAIL"]

WORD_LEVEL: Final[dict[str, Level]] = {
    "PENDING": Level.PENDING,
    "OK": Level.HEALTHY,
    "WARN": Level.WARNING,
    "FAIL": Level.CRITICAL,
}
"""The level a verdict's word stands for (its colour)."""


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One line of the verdict: a rule, non-finite values, anomalies or the finish."""

    name: str
    """``approx_kl`` ... for rules, then ``nonfinite``, ``bug``, ``stall``, ``anomalies``,
    ``skipped``, ``lost``, ``foreign``, ``source``, ``run_finished``."""
    label: str
    passed: bool
    message: str
    """Why it failed, or what it saw when it passed."""
    rule: str | None = None
    """The thresholds in words, for rule rows."""
    worst: float | None = None
    worst_update: int | None = None
    updates_measured: int = 0
    updates_warning: int = 0
    updates_critical: int = 0
    first_warning: int | None = None
    first_critical: int | None = None
    worst_text: str | None = None
    """``worst`` as the rule spells its statistic (``0.0412``, ``x12.3``)."""
    updates_judged: int = 0
    """Updates the rule judged (not pending): a verdict with none judged is PENDING."""
    verdict_name: str | None = None
    """What the verdict calls this row when it fails or warns (``Stall``, ``interrupted``);
    None: its ``label``."""
    counted: int = 0
    """What the verdict counts for a failing row (``KL 22x``): the updates at ``fail_on``,
    the stalls, the impossible values...; 0: no count."""
    optional: bool = False
    """A rule row of a rule that judges only runs that measure its metric (the reference
    KL, the length rate): a run without it is not less covered."""

    @property
    def covers(self) -> bool:
        """A rule row that counts in the run's coverage: a rule every run of its kind is
        expected to feed, or an optional one this run fed."""
        return self.rule is not None and (not self.optional or self.updates_measured > 0)


@dataclass(frozen=True, slots=True)
class RunVerdict:
    """The run's verdict: one word, and the rows that made it."""

    word: Word
    items: tuple[str, ...] = ()
    """The failing rows (for FAIL) or those that warned (for WARN), each named with its
    count: ``KL 22x``, ``Stall 1x``, ``interrupted``."""
    so_far: bool = False
    """Judged as a live run (no ``run_finished`` yet, and not silent past its stall
    limit): being unfinished was not counted against it."""
    judged_on: tuple[str, ...] = ()
    """The rules (labels) that measured some update of the run: what the verdict rests on."""
    unmeasured: tuple[str, ...] = ()
    """The rules the run's kind expects that measured nothing (the trainer did not log
    their metric): what an OK or WARN could not look at."""

    @property
    def coverage(self) -> str:
        """``judged: KL, Entropy (2 of 7 rules; Clip, Grad, EV, Value loss, Entropy shift not
        measured)``; empty when every rule measured something, or for FAIL and PENDING (a
        failure rests on its rows; nothing was judged yet)."""
        if not self.unmeasured or self.word not in ("OK", "WARN"):
            return ""
        total = len(self.judged_on) + len(self.unmeasured)
        judged = ", ".join(self.judged_on) or "nothing"
        return (
            f"judged: {judged} ({len(self.judged_on)} of {total} rules; "
            f"{', '.join(self.unmeasured)} not measured)"
        )

    @property
    def level(self) -> Level:
        """The level of the word: CRITICAL for FAIL, WARNING for WARN..."""
        return WORD_LEVEL[self.word]

    @property
    def text(self) -> str:
        """``FAIL: KL 22x, Stall 1x``; the word alone for OK and PENDING; an OK or WARN of
        a run some expected rule could not measure says what it rests on (``OK · judged:
        KL, Entropy (2 of 7 rules; ...)``: :attr:`coverage`)."""
        said = self.word if not self.items else f"{self.word}: {', '.join(self.items)}"
        return f"{said} · {self.coverage}" if self.coverage else said

    @property
    def rules_judged(self) -> str:
        """``2/7 rules`` when :attr:`coverage` has something to say; else empty."""
        if not self.coverage:
            return ""
        return f"{len(self.judged_on)}/{len(self.judged_on) + len(self.unmeasured)} rules"

    @property
    def short(self) -> str:
        """``FAIL: KL 22x (+1)``: the first item and how many more, for a narrow column;
        ``OK · 2/7 rules`` when some expected rule measured nothing."""
        said: str = self.word
        if self.items:
            more = len(self.items) - 1
            said = f"{self.word}: {self.items[0]}" + (f" (+{more})" if more else "")
        return f"{said} · {self.rules_judged}" if self.rules_judged else said

    def fields(self) -> dict[str, Any]:
        """The verdict in a JSON document: every JSON output spells it with these keys."""
        return {
            "verdict": self.word,
            "verdict_text": self.text,
            "verdict_level": self.level.value,
            "verdict_so_far": self.so_far,
            "verdict_judged_on": list(self.judged_on),
            "verdict_unmeasured": list(self.unmeasured),
        }


PENDING: Final = RunVerdict("PENDING")
"""The verdict before anything was judged."""


def verdict_of(rows: Sequence[CheckRow], so_far: bool = False) -> RunVerdict:
    """The verdict from the check's rows (those of :func:`judge_rows`, and any the learning
    gate adds): FAIL iff a row failed, else WARN if any warned, else PENDING if no rule
    judged an update, else OK."""
    covering = [row for row in rows if row.covers]
    judged_on = tuple(row.label for row in covering if row.updates_measured)
    unmeasured = tuple(row.label for row in covering if not row.updates_measured)
    failed = tuple(_item(row, row.counted) for row in rows if not row.passed)
    if failed:
        return RunVerdict("FAIL", failed, so_far, judged_on, unmeasured)
    warned = tuple(_item(row, row.updates_warning) for row in rows if _warned(row))
    if warned:
        return RunVerdict("WARN", warned, so_far, judged_on, unmeasured)
    if not any(row.updates_judged for row in rows if row.rule is not None):
        return RunVerdict("PENDING", (), so_far, judged_on, unmeasured)
    return RunVerdict("OK", (), so_far, judged_on, unmeasured)


def _warned(row: CheckRow) -> bool:
    """A rule at warning at some update, or a warning anomaly (rows that passed)."""
    return row.updates_warning > 0 and (row.rule is not None or row.name == "anomalies")


def _item(row: CheckRow, count: int) -> str:
    name = row.verdict_name or row.label
    return f"{name} {count}x" if count else name


# -- the rows ------------------------------------------------------------------------------


def judge_rows(
    agg: SanctumAggregator,
    fail_on: Level,
    allow_unfinished: bool,
    allow_skipped: bool = False,
    live: bool = False,
) -> tuple[CheckRow, ...]:
    """Every check of the run the aggregator holds, in ``check``'s order: each rule, then
    non-finite values, logging bugs, stalls, anomalies, unreadable update lines, lost
    events, events of other runs, an import's unread source, and the finish. Pure: the
    aggregator is only read (its pending updates judged first). ``live``: judged as a run
    still being written (a live view), whose last line may be on its way; otherwise
    bytes after the file's last newline are a line that may be an update, not judged."""
    if fail_on not in (Level.WARNING, Level.CRITICAL):
        raise ValueError(f"fail_on must be warning or critical, got {fail_on.value}")
    agg.judge_pending()
    rows = [_rule_row(judge.tally, fail_on) for judge in agg.judge.rules.values()]
    rows += [
        _nonfinite_row(agg),
        _bug_row(agg),
        _stall_row(agg),
        _anomaly_row(agg, fail_on),
        _unreadable_row(agg, allow_skipped, torn_tail(agg, live)),
        *integrity_rows(agg, allow_skipped),
        _finish_row(agg, allow_unfinished),
    ]
    return tuple(rows)


INTEGRITY_ROWS: Final = ("lost", "foreign", "source", "judged")
"""The rows that say whether the log holds the whole run, and only it: events lost from
``seq``, events of another run, a source an import could not read whole; and whether any
rule could judge what it holds."""

UNJUDGED: Final = "judged"
"""The row that fails when the run's updates carry no metric any rule judges: the gate
could not judge the run (``check`` exits 2 when it is the only failing row)."""


def integrity_rows(agg: SanctumAggregator, allow_skipped: bool = False) -> tuple[CheckRow, ...]:
    """Whether the gate can vouch for what it judged: no event lost, none of another run,
    (for an import) a source read whole, and some rule measured something. A row that fails
    says what it could not see."""
    return (_lost_row(agg), _foreign_row(agg), _source_row(agg, allow_skipped), _judged_row(agg))


def _judged_row(agg: SanctumAggregator) -> CheckRow:
    """A run whose updates carry none of the metrics the rules judge (a GRPO log of
    rewards alone, an import whose map fed no judged field) was not judged, and a gate does
    not pass what it did not judge. A rule still in its warm-up measured its metric: the
    verdict is then PENDING, as for a run that just began."""
    updates = agg.run.updates
    if not updates or any(j.measured for j in agg.judge.rules.values()):
        return CheckRow(UNJUDGED, "judged", True, "some rule measured this run's updates")
    metrics = ", ".join(agg.judge.rules)
    return CheckRow(
        UNJUDGED,
        "judged",
        False,
        f"could not judge: no rule measured anything in this run ({plural(updates, 'update')}"
        f" without {metrics}), and the gate does not pass a run it did not judge",
        verdict_name="not judged",
    )


def doubts(agg: SanctumAggregator) -> list[str]:
    """Why the log cannot be vouched for, one line each (empty: it can): the failing
    integrity rows, and a run that reported failed before it reported otherwise. The
    summary lists them; ``check`` prints them as rows."""
    said = [row.message for row in integrity_rows(agg) if not row.passed]
    finish = _finish_row(agg, allow_unfinished=True)
    run = agg.run
    if (run.failures_reported and run.status != "failed") or run.finishes > 1 or run.after_finish:
        said.append(finish.message)
    return said


def lost_counts(agg: SanctumAggregator) -> tuple[int, int]:
    """(events lost from ``seq`` that no skipped line accounts for, updates fewer than
    ``run_finished.updates`` says): what the log lacks of the run, beyond lines it holds
    but could not read (the ``unreadable`` row) and the writes a full disk refused right
    before the run failed (the README's one gap; the run fails for it anyway)."""
    run = agg.run
    lost = max(0, run.seq_missing - run.refused - run.skipped_lines)
    base = update_base(agg)
    explained = agg.unreadable_total + run.refused
    short = 0
    if run.reported_updates is not None:
        expected = run.reported_updates - base  # a resumed run's count starts before its log
        short = max(0, expected - run.updates - explained)
    if run.first_update_index is not None:  # the updates before its first are not in the log
        short = max(short, run.first_update_index - base - explained)
    return lost, short


def update_base(agg: SanctumAggregator) -> int:
    """The index the run's updates start at: 0, or where a recorded resume starts
    (``config.resumed_from.update``). Every trainer that writes this contract (ppo, the
    Stable-Baselines3 callback, the CleanRL helper, the TensorBoard import) numbers its
    updates from 0; a log whose first update is later lost its head."""
    base = agg.run.resumed_from_update
    return 0 if base is None else base


def count_mismatch(agg: SanctumAggregator) -> str | None:
    """Why ``run_finished.updates`` cannot be the log's count (None: it can): fewer than
    the updates the log holds, or below the index a resume starts at. (More than the log
    holds is what :func:`lost_counts` counts.)"""
    run = agg.run
    if run.reported_updates is None:
        return None
    expected = run.reported_updates - update_base(agg)
    if expected < 0 or run.updates > expected:
        resumed = (
            f" from update {run.resumed_from_update} (its resume)"
            if run.resumed_from_update
            else ""
        )
        return (
            f"run_finished says {plural(run.reported_updates, 'update')}{resumed}, the log "
            f"holds {run.updates}: the log does not match the run's own count"
        )
    return None


def _lost_row(agg: SanctumAggregator) -> CheckRow:
    """A gate never passes what the log lost: events missing from ``seq`` may have been
    updates (or the critical anomaly), and ``run_finished.updates`` says how many ran."""
    run = agg.run
    lost, short = lost_counts(agg)
    mismatch = count_mismatch(agg)
    skipped = 0 if lost or short else max(0, agg.judge.index_gaps - agg.unreadable_total)
    # skipped indices that neither missing events nor unreadable lines account for
    if run.seq_back or mismatch or skipped:
        said = [mismatch] if mismatch else []
        if skipped and agg.judge.first_index_gap is not None:
            before, after = agg.judge.first_index_gap
            said.append(
                f"update indices skip {plural(skipped, 'update')} (first from {before} to "
                f"{after}): updates the log does not hold"
            )
        if run.seq_back:
            said.append(
                f"seq did not increase {plural(run.seq_back, 'time')} (first at seq "
                f"{run.first_seq_back}): events repeated or out of order"
            )
        if lost or short:
            said.append(f"{plural(max(lost, short), 'event')} missing")
        count = max(lost, short, run.seq_back, skipped, 1)
        return CheckRow(
            "lost",
            "lost events",
            False,
            "; ".join(said) + ": the gate cannot vouch for a log whose order or count it "
            "cannot trust",
            updates_critical=count,
            verdict_name="lost",
            counted=count,
        )
    if not lost and not short:
        if run.refused:
            return CheckRow(
                "lost",
                "lost events",
                True,
                "1 event missing right before run_finished failed (a write the disk "
                "refused): the run fails for it",
            )
        if run.seq_gaps:
            return CheckRow(
                "lost",
                "lost events",
                True,
                f"seq has {plural(run.seq_gaps, 'gap')}, each a line the reader skipped "
                "(counted above), none lost",
            )
        return CheckRow("lost", "lost events", True, "no event missing: seq has no gap")
    said = []
    if short and run.reported_updates is not None:
        said.append(
            f"run_finished says {plural(run.reported_updates, 'update')}, the log holds "
            f"{run.updates}"
            + (f" from update {run.first_update_index}" if run.first_update_index else "")
            + f" ({short} not in it)"
        )
    elif short:
        said.append(
            f"the first update in the log is {run.first_update_index}, and run_started "
            + (
                f"records a resume from update {run.resumed_from_update}"
                if run.resumed_from_update is not None
                else "records no resume (config.resumed_from), so the run began at update 0"
            )
            + f" ({short} not in it)"
        )
    if lost:
        said.append(
            f"seq has {plural(run.seq_gaps, 'gap')}: {plural(lost, 'event')} missing "
            f"(first before seq {run.first_gap_seq}) that no skipped line accounts for"
        )
    return CheckRow(
        "lost",
        "lost events",
        False,
        "; ".join(said) + ": the log lost events that may be updates, and the gate does not "
        "pass what it did not see",
        updates_critical=max(lost, short),
        verdict_name="lost",
        counted=max(lost, short),
    )


def _foreign_row(agg: SanctumAggregator) -> CheckRow:
    """Events of another run id in the run's log: two runs' events mixed in one file."""
    run = agg.run
    if run.starts_repeated and not run.foreign_events:
        return CheckRow(
            "foreign",
            "other runs",
            False,
            f"run_started of {run.run_id} again {plural(run.starts_repeated, 'time')} after "
            "its first: a run starts once, so this log holds two runs under one id (or was "
            "written twice), and the gate does not pass a mix of runs",
            updates_critical=run.starts_repeated,
            verdict_name="run started again",
            counted=run.starts_repeated,
        )
    if not run.foreign_events:
        return CheckRow("foreign", "other runs", True, "every event is this run's")
    named = ", ".join(f"{run_id} ({n}x)" for run_id, n in run.foreign_runs)
    more = run.foreign_events - sum(n for _, n in run.foreign_runs)
    named += f", and {more} of other run ids" if more else ""
    if run.starts_repeated:
        named += f"; and run_started of {run.run_id} again {plural(run.starts_repeated, 'time')}"
    return CheckRow(
        "foreign",
        "other runs",
        False,
        f"{plural(run.foreign_events, 'event')} of another run in this log: {named}; "
        "the log is not this run's alone, and the gate does not pass a mix of runs",
        updates_critical=run.foreign_events,
        verdict_name="other run",
        counted=run.foreign_events,
    )


def _source_row(agg: SanctumAggregator, allow_skipped: bool) -> CheckRow:
    """An import that could not read all of its source (a TensorBoard record cut short, a
    checksum that does not match): what it lost was not judged."""
    unread = agg.run.source_unread
    if not unread:
        return CheckRow("source", "source", True, "the log is not an import, or read it whole")
    allowed = " (passed by --allow-skipped)" if allow_skipped else ""
    more = f"; and {len(unread) - 1} more" if len(unread) > 1 else ""
    return CheckRow(
        "source",
        "source",
        allow_skipped,
        f"the import could not read all of its source, so what it lost was not judged"
        f"{allowed}: {unread[0]}{more}",
        updates_critical=len(unread),
        verdict_name="source unread",
        counted=len(unread),
    )


def _rule_row(t: RuleTally, fail_on: Level) -> CheckRow:
    rule = t.rule
    failing = t.reached(fail_on)
    if t.measured == 0:
        message = "not measured in this run"
    elif t.judged == 0 and rule.statistic == "split":
        message = f"not judged: no two reward_components over {rule.window} updates"
    elif t.judged == 0 and t.pending is not None and t.pending.startswith("not judged"):
        message = f"{t.pending} ({plural(t.measured, 'update')})"
    elif t.judged == 0:
        message = f"not judged: all {plural(t.measured, 'update')} within the warm-up"
    elif failing:
        first = _first_reaching(t, fail_on)
        message = (
            f"{rule.label} reached {fail_on.value} in {plural(failing, 'update')}, "
            f"first at update {first}; worst {rule.format(t.worst)} at update {t.worst_update}"
        )
    else:
        message = f"worst {rule.format(t.worst)} over {plural(t.judged, 'update')}"
    return CheckRow(
        name=rule.metric,
        label=rule.label,
        passed=failing == 0,
        message=message,
        rule=_describe(rule),
        worst=t.worst,
        worst_update=t.worst_update,
        updates_measured=t.measured,
        updates_warning=t.at_warning,
        updates_critical=t.at_critical,
        first_warning=t.first_warning,
        first_critical=t.first_critical,
        worst_text=rule.format(t.worst, SHORT_ABSENT),
        updates_judged=t.judged,
        counted=failing,
        optional=rule.only_when_measured,
    )


def _first_reaching(t: RuleTally, level: Level) -> int | None:
    """The first update at ``level`` or worse."""
    firsts = [t.first_critical] + ([t.first_warning] if level is Level.WARNING else [])
    return min((u for u in firsts if u is not None), default=None)


def _nonfinite_row(agg: SanctumAggregator) -> CheckRow:
    """NaN or Inf in any measurement of the log (:mod:`sanctum.health.finite`), each field
    named by its kind and path: ``ppo_update.approx_kl (2x, first at update 5)``."""
    judge = agg.judge
    named = [
        (f"ppo_update.{m}", s.nonfinite, s.first_nonfinite)
        for m, s in judge.stats.items()
        if s.nonfinite
    ]
    named += [(p, t.count, t.first_update) for p, t in judge.nonfinite_fields.items()]
    named.sort(key=lambda n: (n[2] is None, n[2] or 0, n[0]))  # as the log has them, in any batches
    if not named and not judge.nonfinite_unlisted:
        return CheckRow("nonfinite", "non-finite", True, "every measured value is finite")
    fields = ", ".join(
        visible(path) + f" ({n}x" + (f", first at update {first})" if first is not None else ")")
        for path, n, first in named
    )
    if judge.nonfinite_unlisted:
        fields += f", {plural(judge.nonfinite_unlisted, 'more value')} in other fields"
    updates, others = judge.nonfinite_updates, judge.nonfinite_events
    where = plural(updates, "update")
    if others:
        kinds = {"ppo_update": updates, **others}
        where = (
            f"{plural(sum(kinds.values()), 'event')} ("
            + ", ".join(f"{n} {kind}" for kind, n in kinds.items() if n)
            + ")"
        )
    firsts = [u for u in (judge.first_nonfinite_update, *(f for _, _, f in named)) if u is not None]
    return _critical_row(
        "nonfinite",
        "non-finite",
        f"NaN or Inf in {where}: {fields}",
        times=updates + sum(others.values()),
        first=min(firsts, default=None),
    )


def _critical_row(
    name: str,
    label: str,
    message: str,
    *,
    times: int,
    first: int | None,
    verdict_name: str | None = None,
) -> CheckRow:
    """A run-wide check that failed ``times`` times, the first during update ``first``:
    each time counts as critical, and the verdict counts them."""
    return CheckRow(
        name,
        label,
        False,
        message,
        updates_critical=times,
        first_critical=first,
        verdict_name=verdict_name,
        counted=times,
    )


def _bug_row(agg: SanctumAggregator) -> CheckRow:
    judge = agg.judge
    first = judge.first_violation
    if first is None:
        return CheckRow("bug", "bug", True, "every value within its possible range")
    return _critical_row(
        "bug",
        "bug",
        f"{plural(judge.violations, 'impossible value')} (a logging bug, not data); "
        f"first at update {first.update}: {first.message}",
        times=judge.violations,
        first=first.update,
        verdict_name="Bug",
    )


def _stall_row(agg: SanctumAggregator) -> CheckRow:
    run, thresholds = agg.run, agg.thresholds
    if not run.stalls:
        return CheckRow(
            "stall", "stall", True, f"no silence past the stall limit ({limit_words(thresholds)})"
        )
    longest = run.longest_stall or 0.0
    return _critical_row(
        "stall",
        "stall",
        f"{plural(run.stalls, 'silence')} past the stall limit while running; longest: no "
        f"event for {seconds_text(longest)}, {over_words(thresholds, run.longest_stall_pace)}; "
        f"first during update {run.first_stall_update}",
        times=run.stalls,
        first=run.first_stall_update,
        verdict_name="Stall",
    )


def _anomaly_row(agg: SanctumAggregator, fail_on: Level) -> CheckRow:
    run = agg.run
    counted = run.anomalies_critical + (run.anomalies_warning if fail_on is Level.WARNING else 0)
    first = next(
        (a for a in agg.records.anomalies if a.severity == "critical" or fail_on is Level.WARNING),
        None,
    )
    summary = f"{run.anomalies_critical} critical, {run.anomalies_warning} warning"
    if run.anomalies_warning and fail_on is Level.WARNING:
        summary += " (warning anomalies fail the check under --fail-on warning)"
    message = (
        summary
        if first is None
        else (
            f"{summary}; first"
            + ("" if first.update is None else f" at update {first.update}")
            + f": {format_anomaly(first.metric, first.value, first.message)}"
        )
    )
    return CheckRow(
        "anomalies",
        "anomalies",
        counted == 0,
        message,
        updates_warning=run.anomalies_warning,
        updates_critical=run.anomalies_critical,
        verdict_name="anomaly",
        counted=counted,
    )


def torn_tail(agg: SanctumAggregator, live: bool) -> str | None:
    """Why the bytes after the file's last newline count as an unreadable line (None:
    there are none, or a live run may still be writing them): after ``run_finished``
    nothing can still be writing, and a judge of the log as it is (``check``) cannot wait."""
    tail = agg.tail
    if tail is None or (live and agg.run.finishes == 0):
        return None
    line, size = tail
    after = " after run_finished" if agg.run.finishes else ""
    return (
        f"line {line} ({plural(size, 'byte')}{after}) has no newline: a line torn or cut "
        "off, that may be a ppo_update"
    )


def _unreadable_row(agg: SanctumAggregator, allow_skipped: bool, tail: str | None) -> CheckRow:
    """A gate never passes what it could not read: an update line that did not decode, or
    a last line without its newline when nothing may still be writing it (``tail``)."""
    total = agg.unreadable_total
    allowed = " (passed by --allow-skipped)" if allow_skipped else ""
    if tail is not None and not total:
        return CheckRow(
            "skipped",
            "unreadable",
            allow_skipped,
            f"{tail}; not judged{allowed}",
            updates_critical=1,
            counted=1,
        )
    if not total:
        return CheckRow("skipped", "unreadable", True, "every update line was read")
    total += tail is not None
    listed = agg.unreadable
    numbers = ", ".join(str(s.line_no) for s in listed[:20]) + (", ..." if total > 20 else "")
    where = f"line {numbers}" if total == 1 else f"lines {numbers}; the first"
    where = where if tail is None else f"{where} (and {tail})"
    return CheckRow(
        "skipped",
        "unreadable",
        allow_skipped,
        f"{plural(total, 'line')} could not be read, so what "
        f"{'it holds was' if total == 1 else 'they hold was'} not judged{allowed}: "
        f"{where}: {listed[0].detail}",
        updates_critical=total,
        counted=total,
    )


def outcome_unknown(agg: SanctumAggregator) -> str | None:
    """Why the log cannot say how its run ended (:data:`OUTCOME_UNKNOWN`), while it holds
    no ``run_finished``; None otherwise."""
    run = agg.run
    why = run.config.get(OUTCOME_UNKNOWN) if run.config and run.status == "running" else None
    return why if isinstance(why, str) else None


def _finish_row(agg: SanctumAggregator, allow_unfinished: bool) -> CheckRow:
    run = agg.run
    status, reason = run.status, run.reason
    because = f": {reason}" if reason else ""
    if run.failures_reported and status != "failed":
        first = f": {run.first_failure}" if run.first_failure else ""
        return CheckRow(
            "run_finished",
            "finished",
            False,
            f"run failed{first}; then run_finished {status}: a run that reported failed has failed",
            verdict_name="run failed",
        )
    if run.finishes > 1 or run.after_finish:
        return CheckRow(
            "run_finished",
            "finished",
            False,
            f"run_finished {run.first_status}, then {plural(run.after_finish, 'more event')}"
            f" ({plural(run.finishes, 'run_finished')} in all, the last {status}): a run "
            "finishes once, and the gate does not vouch for a log that goes on after its end",
            verdict_name="finished twice" if run.finishes > 1 else "events after finish",
        )
    if status in ("completed", "interrupted") and not run.updates and not agg.unreadable_total:
        resumed = run.resumed_from_update is not None
        return CheckRow(
            "run_finished",
            "finished",
            False,
            f"run_finished {status}, but the log holds no ppo_update: no update was judged, "
            "and the gate does not pass a run it did not judge"
            + (
                f" (a resume from update {run.resumed_from_update} that ran none: was "
                "--total-steps already reached? resume with a larger --total-steps)"
                if resumed
                else ""
            ),
            verdict_name="no update",
        )
    if status == "completed":
        return CheckRow("run_finished", "finished", True, "run_finished: completed")
    if status == "failed":
        return CheckRow(
            "run_finished", "finished", False, f"run failed{because}", verdict_name="run failed"
        )
    if status == "interrupted":
        return CheckRow(
            "run_finished",
            "finished",
            allow_unfinished,
            f"run interrupted{because}",
            verdict_name="interrupted",
        )
    unknown = outcome_unknown(agg)
    if unknown is not None:
        return CheckRow(
            "run_finished",
            "finished",
            allow_unfinished,
            f"outcome not recorded: {visible(unknown)}",
            verdict_name="outcome unknown",
        )
    why = run.config.get(NO_END) if run.config else None
    if isinstance(why, str):  # the source cannot say; what it says is judged
        return CheckRow(
            "run_finished",
            "finished",
            True,
            f"no run_finished: {visible(why)}; judged as it stands, "
            f"{plural(run.updates, 'update')}",
        )
    text = "no run_finished: the run is still going or was cut off"
    return CheckRow("run_finished", "finished", allow_unfinished, text, verdict_name="unfinished")


# -- the stall limit in words --------------------------------------------------------------


def seconds_text(seconds: float) -> str:
    """``412 s``, ``7.5 s``, ``0.05 s``: a silence or an interval in seconds."""
    if not math.isfinite(seconds):
        return f"{seconds} s"
    if abs(seconds) >= 10:
        return f"{seconds:.0f} s"
    return f"{seconds:.1f} s" if abs(seconds) >= 1 else f"{seconds:.2g} s"


def over_words(thresholds: Thresholds, pace: float | None) -> str:
    """Which limit a silence went past: ``over 10x the run's median interval of 30 s``
    when the run's pace set it, else ``over the 120 s floor``."""
    if pace is not None and thresholds.stall_pace * pace > thresholds.stall_seconds:
        return f"over {thresholds.stall_pace:g}x the run's median interval of {seconds_text(pace)}"
    return f"over the {thresholds.stall_seconds:g} s floor"


def limit_words(thresholds: Thresholds) -> str:
    """The stall limit in words: ``120 s, or 10x the run's median interval if longer``."""
    return (
        f"{thresholds.stall_seconds:g} s, or {thresholds.stall_pace:g}x the run's median "
        "interval if longer"
    )
