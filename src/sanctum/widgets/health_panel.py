"""HealthStatusPanel: one row per metric, coloured by the level the rule table gave it.

Rows: every metric with a rule (in rule order; a rule for a metric only some runs have,
such as the reference KL, only in runs that measure it), then the other PPO statistics
worth a glance, then any further metric that went non-finite (the verdict may name it, so
it must be on screen). Each row shows the latest value, a sparkline of the last 10 updates
and a trend arrow; its ``level-*`` CSS class carries the colour. A metric not measured by
the trainer reads "not measured"; before the first update every row reads "pending",
never a healthy zero.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, Static

from sanctum.health import Level
from sanctum.renderables import ARROWS, format_value, sparkline
from sanctum.snapshot import MetricSnapshot, SanctumSnapshot
from sanctum.thresholds import Thresholds
from sanctum.widgets.base import SnapshotView, plain
from sanctum.widgets.display import LEVEL_CLASSES, level_class, set_one_class

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
SPARK_WIDTH = 10
"""One cell per update of the 10-update history."""


def panel_metrics(thresholds: Thresholds) -> tuple[str, ...]:
    """The metrics that always have a row: the ruled ones first, then the context."""
    ruled = thresholds.metrics
    return ruled + tuple(m for m in EXTRA_METRICS if m not in ruled)


def value_text(snapshot: SanctumSnapshot, metric: MetricSnapshot) -> str:
    """What the rule judges: the value at the rule's decimals, ``x1.3`` for a jump over the
    recent median, ``med 0.930`` for a rolling median (the raw values are the sparkline);
    ``pending`` before any update, ``not measured``."""
    if snapshot.update is None:
        return "pending"
    rule = snapshot.thresholds.rule(metric.name)
    if rule is None:
        return format_value(metric.value)
    if rule.statistic != "value" and metric.statistic is not None:
        text = rule.format(metric.statistic)
        return text if rule.statistic == "jump" else f"med {text}"
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


def rule_notes(snapshot: SanctumSnapshot) -> list[str]:
    """Full sentences for notes too long for a row: ``EV not judged: returns nearly ...``."""
    return [
        f"{rule.label} {note}"
        for rule in snapshot.thresholds.rules
        if (note := snapshot.metric(rule.metric).note) is not None and ":" in note
    ]


def facts_lines(snapshot: SanctumSnapshot) -> list[str]:
    """The policy's health beyond single metrics: why a rule does not judge, drift, trust
    region, stops, anomalies."""
    lines = rule_notes(snapshot)
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


class MetricRow(Horizontal):
    """Name, value, sparkline, arrow; the ``level-*`` class colours it."""

    def __init__(self, metric: str, snapshot: SanctumSnapshot | None = None) -> None:
        super().__init__(classes="metric-row level-pending", id=f"row-{metric}")
        self.metric = metric
        self._initial = snapshot

    def compose(self) -> ComposeResult:
        yield Label(self.metric, classes="name")
        yield Label("pending", classes="value")
        yield Label("", classes="spark")
        yield Label("", classes="arrow")

    def on_mount(self) -> None:
        if self._initial is not None:  # a row added for a metric that just went bad
            self.show(self._initial)

    def show(self, snapshot: SanctumSnapshot) -> None:
        metric = snapshot.metric(self.metric)
        self.query_one(".value", Label).update(value_text(snapshot, metric))
        self.query_one(".spark", Label).update(note_text(metric))
        rule = snapshot.thresholds.rule(self.metric)
        if self.metric in SHOWN_WHEN_MEASURED or (rule is not None and rule.only_when_measured):
            self.display = any(v is not None for v in metric.series)
        else:
            self.display = rule is not None or metric.value is not None or snapshot.update is None
        self.query_one(".arrow", Label).update(ARROWS[metric.direction])
        set_one_class(self, LEVEL_CLASSES, level_class(metric.level))

    @property
    def level(self) -> Level:
        """The level this row currently shows."""
        return next(level for level in Level if self.has_class(level_class(level)))


class HealthStatusPanel(SnapshotView):
    """The metric table."""

    def __init__(self, thresholds: Thresholds, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.metrics = panel_metrics(thresholds)

    def compose(self) -> ComposeResult:
        with Horizontal(classes="metric-header"):
            yield Label("metric", classes="name")
            yield Label("value", classes="value")
            yield Label("last 10", classes="spark")
            yield Label("", classes="arrow")
        for metric in self.metrics:
            yield MetricRow(metric)
        yield Static(id="health-facts")

    def on_mount(self) -> None:
        self.border_title = "Health"

    def show(self, snapshot: SanctumSnapshot) -> None:
        fired = [
            m for m in snapshot.health.fired if m not in self.metrics and m in snapshot.metrics
        ]  # run-wide checks (bug, stall) are not metrics: the banner and the log show them
        if fired:  # a metric outside the table went bad: it gets a row from now on
            self.metrics = self.metrics + tuple(fired)
            self.mount_all(
                [MetricRow(m, snapshot) for m in fired], before=self.query_one("#health-facts")
            )
        for row in self.query(MetricRow):
            if row.is_mounted:
                row.show(snapshot)
        self.query_one("#health-facts", Static).update(plain("\n".join(facts_lines(snapshot))))

    def row(self, metric: str) -> MetricRow:
        """The row of ``metric`` (for tests and key navigation)."""
        return self.query_one(f"#row-{metric}", MetricRow)
