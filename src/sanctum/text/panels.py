"""What the dashboard says, as text: one home for the words of every panel.

The banner's two lines, the health panel's rows and facts, the episode-return lines and
the timeline's entries are pure functions of a :class:`~sanctum.model.snapshot.SanctumSnapshot`.
The widgets draw them (with colour, from the stylesheet); ``sanctum RUN --once`` prints
them. No Textual here, so printing the state once starts fast and needs no terminal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sanctum.charts.glyphs import ARROWS, sparkline
from sanctum.formatting import (
    KL_QUANTITIES,
    NOT_JUDGED,
    NOT_MEASURED,
    format_count,
    format_duration,
    format_kl,
    format_metric,
    format_range,
    format_value,
    steps_count,
    steps_rate,
    visible,
)
from sanctum.health.levels import Level
from sanctum.health.rule import Rule
from sanctum.health.thresholds import Thresholds
from sanctum.metrics import KL_METRIC, RUNS_OF, short_name
from sanctum.model.snapshot import Connection, MetricSnapshot, SanctumSnapshot, TimelineEntry
from telemetry.events import LANGUAGE_MODEL_RUNS
from telemetry.returns import BEST_ROLLOUT_MEAN, ROLLOUT_MEAN

"""KL in the banner: 3 decimals (the health panel uses the rule's 4); docs/design.md, section 6."""


CONNECTION_MARK = {
    Connection.WAITING: "◌",
    Connection.LIVE: "●",
    Connection.STALE: "◐",
    Connection.FINISHED: "■",
    Connection.FAILED: "✖",
    Connection.INTERRUPTED: "■",
}


def connection_word(state: Connection) -> str:
    """``● LIVE``, ``◐ STALE``, ``✖ FAILED``: a connection state's mark and name."""
    return f"{CONNECTION_MARK[state]} {state.value.upper()}"


def connection_text(snapshot: SanctumSnapshot) -> str:
    """``● LIVE``, ``◐ STALE · silent 0:42``, ``✖ FAILED``..."""
    state = snapshot.connection
    text = connection_word(state)
    last = snapshot.run.last_event_ts
    if state is Connection.STALE and last is not None:
        text += f" · silent {format_duration(snapshot.now - last)}"
    return text


def run_text(snapshot: SanctumSnapshot, path: Path) -> str:
    """Run id and environment; while waiting, which file is awaited; after a failure, why:
    one line, made visible (a line break in a run id or a reason is shown escaped)."""
    run = snapshot.run
    if snapshot.connection is Connection.WAITING:
        return visible(f"waiting for {path}…")
    parts = [run.run_id or "(no run id)"]
    if run.env_id:
        parts.append(run.env_id)
    if run.reason and snapshot.connection in (Connection.FAILED, Connection.INTERRUPTED):
        parts.append(run.reason)
    return visible("  ".join(parts))


def clock_text(snapshot: SanctumSnapshot, replay_speed: float | None = None) -> str:
    """``update 42  3:12``: the latest update index and the elapsed time (run time in a
    replay, which says so: ``replay ×4  update 42  3:12``)."""
    update = "update —" if snapshot.update is None else f"update {snapshot.update}"
    text = f"{update}  {format_duration(snapshot.run.elapsed(snapshot.now))}"
    return text if replay_speed is None else f"replay ×{replay_speed:g}  {text}"


def now_verdict_text(snapshot: SanctumSnapshot) -> str | None:
    """``now WARN: KL``: the verdict at the latest update, while the run is unfinished
    (what is happening now); None once it finished, or before it started."""
    return f"now {snapshot.verdict}" if snapshot.run.status == "running" else None


def run_verdict_text(snapshot: SanctumSnapshot) -> str:
    """The run's verdict, ``sanctum check``'s, with its first failing (or warning) row and
    how many more: ``run FAIL: KL 22x (+1)`` while the run is unfinished (its verdict so
    far), ``FAIL: KL 22x (+1)`` once it finished (``--json`` and ``check`` list them all)."""
    text = snapshot.run_verdict.short
    return f"run {text}" if snapshot.run.status == "running" else text


def verdict_line(snapshot: SanctumSnapshot) -> str:
    """``now OK · run FAIL: KL 22x`` while the run is unfinished (a spike that has passed
    stays in sight), the run's verdict alone once it finished: the banner's verdict."""
    now = now_verdict_text(snapshot)
    run = run_verdict_text(snapshot)
    return run if now is None else f"{now} · {run}"


def fired_text(snapshot: SanctumSnapshot) -> str | None:
    """``fired         KL 8x, Stall 1x``: every item of the run's verdict (the rows that
    failed it, or those that warned), the banner's ``FAIL: KL 8x (+1)`` in full; None when
    the verdict has none (OK, PENDING)."""
    items = snapshot.run_verdict.items
    return f"{'fired':<{FACT_LABEL}}{', '.join(items)}" if items else None


def judged_text(snapshot: SanctumSnapshot) -> str | None:
    """``judged        KL, Clip (2 of 7 rules; Grad, EV, ... not measured)``: the rules the
    run's verdict rests on, which the banner's ``OK · 2/7 rules`` counts; None when every
    expected rule measured something (or the verdict is a FAIL or PENDING)."""
    coverage = snapshot.run_verdict.coverage
    return f"{'judged':<{FACT_LABEL}}{coverage.removeprefix('judged: ')}" if coverage else None


def kl_text(snapshot: SanctumSnapshot) -> str:
    """``KL 0.041↑!``: value, trend arrow, and ``!`` once KL is at warning or worse."""
    metric = snapshot.metric(KL_METRIC)
    if metric.value is None:
        return "KL —"
    alarm = "!" if metric.level >= Level.WARNING else ""
    arrow = ARROWS[metric.direction].strip()
    return f"KL {format_kl(metric.value, kl_decimals(snapshot.thresholds))}{arrow}{alarm}"


def kl_decimals(thresholds: Thresholds) -> int | None:
    """The KL rule's decimals (None: no KL rule, the formatter's own)."""
    rule = thresholds.rule(KL_METRIC)
    return None if rule is None else rule.decimals


def steps_text(snapshot: SanctumSnapshot, width: int | None = None) -> str:
    """``12,345/100,000 steps  2,345 sps`` (total and rate only when known), in the unit
    the run declares (``12,345 tokens  2,345 tokens/s``). Given a ``width``, the longest
    form that fits it: the total goes first, then the step count, so the rate is the last
    to go (``12,345 steps  2,345 sps``, ``2,345 sps``)."""
    run = snapshot.run
    if run.global_step is None and run.total_steps is None:
        return ""
    steps, unit = format_count(run.global_step), run.step_unit
    rate = run.steps_per_second
    sps = "" if rate is None or not math.isfinite(rate) else steps_rate(f"{rate:,.0f}", unit, True)
    forms = []
    if run.total_steps is not None:
        forms.append(steps_count(f"{steps}/{format_count(run.total_steps)}", unit))
    forms.append(steps_count(steps, unit))
    forms = [f"{form}  {sps}" if sps else form for form in forms]
    if sps:
        forms.append(sps)
    return next((form for form in forms if width is None or len(form) <= width), forms[-1])


EXTRA_METRICS = (
    "approx_kl_max",
    "kl_final",
    "entropy",
    "policy_loss",
    "value_loss",
    "learning_rate",
    "kl_coef",
    "full_reward_rate",
    "max_new_tokens_rate",
)
"""Shown without a rule: context for reading the ruled metrics (a row whose metric the run
does not report hides once updates arrive)."""


SHOWN_WHEN_MEASURED = frozenset({"full_reward_rate", "max_new_tokens_rate"})
"""Context rows only some runs report (token-level PPO): no row until a value arrives."""


FACT_LABEL: Final = 14
"""Cells of a fact line's label (``early stops   0``): the figures start in one column."""

SPARK_WIDTH = 10
"""One cell per update of the 10-update history."""


def panel_metrics(thresholds: Thresholds) -> tuple[str, ...]:
    """The metrics that always have a row: the ruled ones first, then the context."""
    ruled = thresholds.metrics
    return ruled + tuple(m for m in EXTRA_METRICS if m not in ruled)


NAME_CELLS: Final = 18
"""Cells of a row's metric name (the health panel's first column): a longer name is shown
by its short form (:func:`sanctum.metrics.short_name`)."""

VALUE_CELLS: Final = 12
"""Cells of a row's value (the health panel's column): a longer note stays out of it."""


def pending_note(metric: MetricSnapshot) -> str | None:
    """The short note a pending metric's row can show in place of its value (``warm-up``,
    ``median 2/5``: why it is not judged yet); None when it has none that fits."""
    note = metric.note
    if metric.level is not Level.PENDING or note is None:
        return None
    return note if ":" not in note and len(note) <= VALUE_CELLS else None


@dataclass(frozen=True)
class MetricRow:
    """What one row shows: the metric's value, sparkline or note, arrow and level."""

    metric: str
    value: str
    note: str
    arrow: str
    level: Level
    display: bool
    """Whether the row is on screen (a metric the run does not report has none)."""
    narrow_value: str
    """The value cell of a table without its note column: :func:`pending_note`, else the
    value (other notes are then fact lines: :func:`rule_notes`)."""
    label: str
    """The row's name as shown: what the value is (:func:`row_label`)."""


def row_label(rule: Rule | None, metric: str) -> str:
    """What a row's value is: ``KL/clip`` where the rule judges the metric per another (a
    ratio, not the metric in its units), else the metric's (short) name."""
    if rule is not None and rule.per is not None:
        return f"{rule.label}/{rule.per.split('_')[0]}"
    return short_name(metric)


def metric_row(snapshot: SanctumSnapshot, name: str) -> MetricRow:
    """The row of metric ``name`` in ``snapshot``."""
    metric = snapshot.metric(name)
    rule = snapshot.thresholds.rule(name)
    value = value_text(snapshot, metric)
    if name in SHOWN_WHEN_MEASURED or (rule is not None and rule.only_when_measured):
        display = any(v is not None for v in metric.series)
    else:
        display = rule is not None or metric.value is not None or snapshot.update is None
    return MetricRow(
        name,
        value,
        note_text(metric),
        ARROWS[metric.direction],
        metric.level,
        display,
        pending_note(metric) or value,
        row_label(rule, name),
    )


def level_word(snapshot: SanctumSnapshot, name: str) -> str:
    """The word for where metric ``name`` stands: ``not measured`` when the latest update
    did not measure it, ``not judged`` when no rule judges it (a metric without a rule, or
    a rule that says it does not judge this run), else its level (``pending`` in a
    warm-up, ``healthy``, ``warning``, ``critical``: a non-finite value is critical, ruled
    or not)."""
    metric = snapshot.metric(name)
    level: str = metric.level.value
    if snapshot.update is None or metric.level in (Level.WARNING, Level.CRITICAL):
        return level
    if metric.value is None:
        return NOT_MEASURED
    note = metric.note or ""
    if snapshot.thresholds.rule(name) is None or note.startswith(NOT_JUDGED):
        return NOT_JUDGED
    return level


def pending_row(name: str) -> MetricRow:
    """A row before the first snapshot."""
    return MetricRow(name, "pending", "", "", Level.PENDING, True, "pending", short_name(name))


def value_text(snapshot: SanctumSnapshot, metric: MetricSnapshot) -> str:
    """What the rule judges: the value at the rule's decimals, ``x1.3`` for a jump over the
    recent median, ``med 0.930`` for a rolling median (the raw values are the sparkline);
    ``pending`` before any update, ``not measured``."""
    if snapshot.update is None:
        return "pending"
    rule = snapshot.thresholds.rule(metric.name)
    if metric.name in KL_QUANTITIES and (rule is None or rule.statistic == "value"):
        decimals = kl_decimals(snapshot.thresholds) if rule is None else rule.decimals
        return format_kl(metric.value, decimals)
    if rule is None:
        return format_metric(metric.name, metric.value)
    if (rule.statistic != "value" or rule.per is not None) and metric.statistic is not None:
        text = rule.format(metric.statistic)  # per another: the row's label says so
        return f"med {text}" if rule.statistic == "median" else text
    return format_value(metric.value, rule.decimals)


def history_values(metric: MetricSnapshot) -> list[float]:
    """The measured values of the history (updates that did not measure it are left out)."""
    return [v for v in metric.history if v is not None]


def note_text(metric: MetricSnapshot) -> str:
    """The rule's note when it has one (``warm-up``, ``not judged``, ``crit 1/2``: a band
    not yet persisted), else the sparkline of the raw values."""
    if metric.note is not None:
        return metric.note.split(":")[0]  # the reason, in full, is a fact line below
    return sparkline(history_values(metric), SPARK_WIDTH)


def rule_notes(snapshot: SanctumSnapshot, *, short: bool = False) -> list[str]:
    """Full sentences for notes too long for a row: ``EV not judged: returns nearly ...``.
    With ``short``, for a table without its note column, the notes a row cannot show in
    place of its value (:func:`pending_note`) too, such as ``Grad crit 1/2`` (a line
    crossed, not for long enough yet), one line per note naming its rules."""
    lines: list[str] = []
    grouped: dict[str, list[str]] = {}
    for rule in snapshot.thresholds.rules:
        metric = snapshot.metric(rule.metric)
        if metric.note is None:
            continue
        if ":" in metric.note:
            lines.append(f"{rule.label} {metric.note}")
        elif short and pending_note(metric) is None:
            grouped.setdefault(metric.note, []).append(rule.label)
    return lines + [f"{', '.join(labels)} {note}" for note, labels in grouped.items()]


def facts_lines(snapshot: SanctumSnapshot, *, short_notes: bool = False) -> list[str]:
    """The policy's health beyond single metrics: why a rule does not judge (with
    ``short_notes``, every rule's note: see :func:`rule_notes`), drift, trust region,
    stops, anomalies; first, when some rule the run's kind expects measured nothing, what
    its verdict rests on (:func:`judged_text`)."""
    judged = judged_text(snapshot)
    lines = [*([judged] if judged else []), *rule_notes(snapshot, short=short_notes)]
    drift = snapshot.policy_drift_rate
    if drift is not None:
        sign = "+" if drift >= 0 else ""
        lines.append(f"KL drift      {sign}{format_value(drift)} per update")
    if snapshot.trust_region_health is not None and snapshot.max_kl is not None:
        share = format_value(100 * snapshot.trust_region_health, 0)
        lines.append(f"trust region  {share}% of max_kl {snapshot.max_kl:g}")
    stops = f"early stops   {snapshot.early_stops}"
    if snapshot.early_stops and snapshot.timeline:
        last = next((e for e in reversed(snapshot.timeline) if e.kind == "early_stop"), None)
        if last is not None and last.update is not None:
            stops += f", last at update {last.update}"
    lines.append(stops)
    run = snapshot.run
    lines.append(
        f"anomalies     {run.anomalies_critical} critical, {run.anomalies_warning} warning"
    )
    skipped = snapshot.skipped
    if skipped.malformed or skipped.unknown_kind or skipped.resets:
        lines.append(
            f"log           {skipped.malformed} malformed, {skipped.unknown_kind} unknown kind, "
            f"{skipped.resets} resets"
        )
    return lines


def language_model_run(snapshot: SanctumSnapshot) -> bool:
    """A run whose "episodes" are a language model's completions, each scored once: it
    counts its steps in tokens, samples or optimizer steps (``step_unit``), or it measured a
    figure only such runs have (the contract's ``runs``; a log before ``step_unit``)."""
    if snapshot.run.step_unit is not None:
        return True
    return any(
        kind == LANGUAGE_MODEL_RUNS
        and name in snapshot.metrics
        and any(v is not None for v in snapshot.metrics[name].series)
        for name, kind in RUNS_OF.items()
    )


def returns_title(snapshot: SanctumSnapshot) -> str:
    """The returns panel's title: ``Reward per rollout`` for a language-model run
    (:func:`language_model_run`), else ``Episode return``."""
    return "Reward per rollout" if language_model_run(snapshot) else "Episode return"


def returns_lines(
    snapshot: SanctumSnapshot, width: int, line_width: int | None = None
) -> list[str]:
    """The latest rollout's mean return with its trend and its episodes' min..max, a
    sparkline ``width`` cells wide, counts and the run's best rollout mean (the labels of
    :mod:`telemetry.returns`, the same in every view): three lines, or up to five laid out
    for ``line_width`` cells (a figure moves to a line of its own rather than wrap)."""
    run = snapshot.run
    episodes = "completions" if language_model_run(snapshot) else "episodes"
    if run.episode_return is None:
        return [f"no {episodes[:-1]} finished yet", f"{episodes} {format_count(run.episodes)}"]

    def pair(first: str, second: str) -> list[str]:  # one line where both fit, else two
        fits = line_width is None or len(first) + 2 + len(second) <= line_width
        return [f"{first}  {second}"] if fits else [first, second]

    return [  # laid out for the width, never wrapped: a wrap pushes the last line off
        *pair(
            f"{ROLLOUT_MEAN} {format_value(run.episode_return)} "
            f"{ARROWS[snapshot.return_direction]}",
            f"min…max {format_range(run.episode_return_min, run.episode_return_max)}",
        ),
        sparkline(run.episode_return_series, width),
        *pair(
            f"{episodes} {format_count(run.episodes)}  length {format_value(run.episode_length)}",
            f"{BEST_ROLLOUT_MEAN} {format_value(run.episode_return_best)}",
        ),
    ]


KIND_LABEL = {
    "start": "start",
    "early_stop": "early stop",
    "anomaly": "anomaly",
    "finish": "finish",
    "reset": "reset",
    "skipped": "skipped",
    "gap": "gap",
    "trainer": "trainer",
    "waiting": "waiting",
    "bug": "bug",
    "stall": "stall",
}


def when_text(entry: TimelineEntry, started_ts: float | None) -> str:
    """``u12`` for an entry of an update, else ``+m:ss`` since the start, else blank."""
    if entry.update is not None:
        return f"u{entry.update}"
    if entry.ts is not None and started_ts is not None:
        return f"+{format_duration(entry.ts - started_ts)}"
    return ""


def entry_text(entry: TimelineEntry, started_ts: float | None) -> str:
    """One line: when, what kind, the text (early-stop reasons verbatim)."""
    kind = KIND_LABEL.get(entry.kind, entry.kind)
    return visible(f"{when_text(entry, started_ts):<7} {kind:<10} {entry.text}")
