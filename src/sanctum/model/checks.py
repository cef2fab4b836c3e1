"""Every check of ``sanctum check``, as rows, over a judged run (docs/design.md, section 6).

The checks read the judged run through :class:`JudgedRun`, the few things they need of it
(the aggregator is one): each rule's tally over every update, non-finite values, logging
bugs, stalls, anomalies, update lines that could not be read (and, once nothing can still
be writing the file, bytes after its last newline), whether the log holds the whole run and
only it (events lost from ``seq``, ``seq`` that does not increase, updates missing from the
head (a run starts at update 0, or where its recorded ``config.resumed_from`` says), fewer
or more updates than ``run_finished`` says, events of another run id, a ``run_started`` of
this run again, an import that could not read all of its source), and how the run finished
(a run that ever reported ``failed`` has failed, whatever it reported after; a run finishes
once, with nothing after its ``run_finished``; a finished run with no update was not
judged, and fails). :func:`~sanctum.model.verdict.verdict_of` makes the run's word from
these rows.

Whether a log without ``run_finished`` is a live run, judged so far (as ``check
--allow-unfinished`` judges it: being unfinished is no failure while it runs), or a run
that was cut off, judged as ``check`` judges it, depends on its silence and pace, which
the aggregator holds: it says which by ``allow_unfinished``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Final, Protocol

from sanctum.exits import EXIT_FAILED, EXIT_OK, EXIT_UNUSABLE
from sanctum.formatting import SHORT_ABSENT, format_anomaly, plural
from sanctum.health.judge import HealthJudge
from sanctum.health.levels import Level
from sanctum.health.rule import Rule
from sanctum.health.rule_judge import RuleTally
from sanctum.health.thresholds import Thresholds
from sanctum.model.integrity import LogIntegrity
from sanctum.model.ledger import RunRecords
from sanctum.model.pace import limit_words, over_words, seconds_text
from sanctum.model.snapshot import RunFacts
from sanctum.model.verdict import CheckRow
from telemetry.text import visible

_describe = lru_cache(maxsize=256)(Rule.describe)
"""A rule in words, once per rule: the live views make the rows every frame."""


class JudgedRun(Protocol):
    """What the checks read of a run, every update of it judged: read only. The aggregator
    is one (its ``judge`` judges what is waiting before it answers)."""

    @property
    def run(self) -> RunFacts[Any]:
        """The facts of the run as a whole."""

    @property
    def judge(self) -> HealthJudge:
        """Every rule's judgement of every update, non-finite values, logging bugs."""

    @property
    def thresholds(self) -> Thresholds:
        """The table the run is judged by (its stall limit, in words)."""

    @property
    def records(self) -> RunRecords:
        """The anomalies the trainer reported, one by one."""

    @property
    def integrity(self) -> LogIntegrity:
        """What the reader could not read of the log (lines, a torn last line)."""


def judge_rows(
    agg: JudgedRun,
    fail_on: Level,
    allow_unfinished: bool,
    allow_skipped: bool = False,
    live: bool = False,
) -> tuple[CheckRow, ...]:
    """Every check of the judged run, in ``check``'s order: each rule, then non-finite
    values, logging bugs, stalls, anomalies, unreadable update lines, lost events, events
    of other runs, an import's unread source, and the finish. Pure: the run is only
    read. ``live``: judged as a run
    still being written (a live view), whose last line may be on its way; otherwise
    bytes after the file's last newline are a line that may be an update, not judged."""
    if fail_on not in (Level.WARNING, Level.CRITICAL):
        raise ValueError(f"fail_on must be warning or critical, got {fail_on.value}")
    rows = [_rule_row(judge.tally, fail_on) for judge in agg.judge.rules.values()]
    rows += [
        _nonfinite_row(agg),
        _bug_row(agg),
        _stall_row(agg),
        _anomaly_row(agg, fail_on),
        _max_kl_row(agg, fail_on),
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


def exit_code_of(rows: Sequence[CheckRow]) -> int:
    """``sanctum check``'s exit code for a run's rows: 0 every row passed, 1 one failed, 2
    when all that failed is that no rule could judge the run (the watcher exits with it
    too)."""
    failed = {row.name for row in rows if not row.passed}
    if failed == {UNJUDGED}:
        return EXIT_UNUSABLE
    return EXIT_FAILED if failed else EXIT_OK


def integrity_rows(agg: JudgedRun, allow_skipped: bool = False) -> tuple[CheckRow, ...]:
    """Whether the gate can vouch for what it judged: no event lost, none of another run,
    (for an import) a source read whole, and some rule measured something. A row that fails
    says what it could not see."""
    return (_lost_row(agg), _foreign_row(agg), _source_row(agg, allow_skipped), _judged_row(agg))


def _judged_row(agg: JudgedRun) -> CheckRow:
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


def doubts(agg: JudgedRun) -> list[str]:
    """Why the log cannot be vouched for, one line each (empty: it can): the failing
    integrity rows, and a run that reported failed before it reported otherwise. The
    summary lists them; ``check`` prints them as rows."""
    said = [row.message for row in integrity_rows(agg) if not row.passed]
    finish = _finish_row(agg, allow_unfinished=True)
    run = agg.run
    if (run.failures_reported and run.status != "failed") or run.finishes > 1 or run.after_finish:
        said.append(finish.message)
    return said


def lost_counts(agg: JudgedRun) -> tuple[int, int]:
    """(events lost from ``seq`` that no skipped line accounts for, updates fewer than
    ``run_finished.updates`` says): what the log lacks of the run, beyond lines it holds
    but could not read (the ``unreadable`` row) and the writes a full disk refused right
    before the run failed (the README's one gap; the run fails for it anyway)."""
    run = agg.run
    lost = max(0, run.seq_missing - run.refused - run.skipped_lines)
    base = update_base(agg)
    explained = agg.integrity.unreadable_total + run.refused
    short = 0
    if run.reported_updates is not None:
        expected = run.reported_updates - base  # a resumed run's count starts before its log
        short = max(0, expected - run.updates - explained)
    if run.first_update_index is not None:  # the updates before its first are not in the log
        short = max(short, run.first_update_index - base - explained)
    return lost, short


def update_base(agg: JudgedRun) -> int:
    """The index the run's updates start at: 0, or where a recorded resume starts
    (``config.resumed_from.update``). Every trainer that writes this contract (ppo, the
    Stable-Baselines3 callback, the CleanRL helper, the TensorBoard import) numbers its
    updates from 0; a log whose first update is later lost its head."""
    base = agg.run.resumed_from_update
    return 0 if base is None else base


def count_mismatch(agg: JudgedRun) -> str | None:
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


def _lost_row(agg: JudgedRun) -> CheckRow:
    """A gate never passes what the log lost: events missing from ``seq`` may have been
    updates (or the critical anomaly), and ``run_finished.updates`` says how many ran."""
    run = agg.run
    lost, short = lost_counts(agg)
    mismatch = count_mismatch(agg)
    skipped = 0 if lost or short else max(0, agg.judge.index_gaps - agg.integrity.unreadable_total)
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


def _foreign_row(agg: JudgedRun) -> CheckRow:
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


def _source_row(agg: JudgedRun, allow_skipped: bool) -> CheckRow:
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


def _nonfinite_row(agg: JudgedRun) -> CheckRow:
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


def _bug_row(agg: JudgedRun) -> CheckRow:
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


def _stall_row(agg: JudgedRun) -> CheckRow:
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


def _anomaly_row(agg: JudgedRun, fail_on: Level) -> CheckRow:
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
        warns=True,
    )


PAST_MAX_KL: Final = 2.0
"""``approx_kl`` over this many times the run's ``max_kl``, in an update of a run that checks
it before each minibatch's step (``early_stop_scope = "minibatch"``: ours by default, SB3's
target_kl) and records no early stop, warns: there every minibatch stays under ``max_kl``
unless the update stops, so their mean does, and the early stop did not fire. A run that
checks after each epoch (CleanRL, ``early_stop_scope = "epoch"``) or declares no scope is not
judged: its last epoch is never checked. No run of the calibration corpus declares
``max_kl`` (the shipped defaults leave early stopping off). A KL far past the run's own
median cannot warn instead: healthy runs there reach 258x their median two updates in a
row (RL Zoo's single-env CartPole), 972x for one."""
MAX_KL_SCOPE: Final = "minibatch"
"""The ``early_stop_scope`` under which :data:`PAST_MAX_KL` is judged."""


def _max_kl_row(agg: JudgedRun, fail_on: Level) -> CheckRow:
    """Updates whose KL passed :data:`PAST_MAX_KL` x the run's ``max_kl`` and recorded no
    early stop: the early stop did not fire. A warning (it fails at ``--fail-on warning``)."""
    run, name = agg.run, "KL past max_kl"
    if not run.past_max_kl:
        return CheckRow("max_kl", name, True, _MAX_KL_OK, warns=True)
    counted = run.past_max_kl if fail_on is Level.WARNING else 0
    return CheckRow(
        "max_kl",
        name,
        counted == 0,
        f"approx_kl over {PAST_MAX_KL:g} x max_kl with no early stop recorded in "
        f"{plural(run.past_max_kl, 'update')}, first at update {run.first_past_max_kl}, "
        f"up to {run.most_past_max_kl:.3g} x max_kl: the early stop did not fire",
        updates_warning=run.past_max_kl,
        first_warning=run.first_past_max_kl,
        verdict_name="KL past max_kl",
        counted=counted,
        warns=True,
    )


_MAX_KL_OK: Final = (
    f"no update's KL passed {PAST_MAX_KL:g} x max_kl unstopped (or the run declares none)"
)


def torn_tail(agg: JudgedRun, live: bool) -> str | None:
    """Why the bytes after the file's last newline count as an unreadable line (None:
    there are none, or a live run may still be writing them): after ``run_finished``
    nothing can still be writing, and a judge of the log as it is (``check``) cannot wait."""
    tail = agg.integrity.tail
    if tail is None or (live and agg.run.finishes == 0):
        return None
    line, size = tail
    after = " after run_finished" if agg.run.finishes else ""
    return (
        f"line {line} ({plural(size, 'byte')}{after}) has no newline: a line torn or cut "
        "off, that may be a ppo_update"
    )


def _unreadable_row(agg: JudgedRun, allow_skipped: bool, tail: str | None) -> CheckRow:
    """A gate never passes what it could not read: an update line that did not decode, or
    a last line without its newline when nothing may still be writing it (``tail``)."""
    total = agg.integrity.unreadable_total
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
    listed = agg.integrity.unreadable
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


def outcome_unknown(agg: JudgedRun) -> str | None:
    """Why the log cannot say how its run ended (:data:`telemetry.run_config.
    OUTCOME_UNKNOWN`), while it holds no ``run_finished``; None otherwise."""
    run = agg.run
    return run.known.outcome_unknown if run.status == "running" else None


def _finish_row(agg: JudgedRun, allow_unfinished: bool) -> CheckRow:
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
    unread = agg.integrity.unreadable_total
    if status in ("completed", "interrupted") and not run.updates and not unread:
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
    why = run.known.no_run_finished
    if why is not None:  # the source cannot say; what it says is judged
        return CheckRow(
            "run_finished",
            "finished",
            True,
            f"no run_finished: {visible(why)}; judged as it stands, "
            f"{plural(run.updates, 'update')}",
        )
    text = "no run_finished: the run is still going or was cut off"
    return CheckRow("run_finished", "finished", allow_unfinished, text, verdict_name="unfinished")
