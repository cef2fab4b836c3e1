"""The help screen (``?``): keys, the rules in force, and how every number is computed.

The glossary is the contract's own definitions (``telemetry.events``, the same text as the
JSON Schema and the docs' field tables): a user staring at a KL of 0.031 deserves to know,
without leaving the terminal, that it is the mean over minibatches of the k3 estimator
before each optimizer step, and what threshold made it red.
"""

from __future__ import annotations

from typing import ClassVar, Final

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from sanctum.charts.glyphs import (
    BELOW_MARK,
    CLIPPED_MARK,
    CRITICAL_LINE,
    NONFINITE_MARK,
    WARNING_LINE,
)
from sanctum.health.thresholds import Thresholds
from telemetry.events import PPOUpdatePayload, field_docs

READING_NOTES: Final = {
    "grad_norm": "Its scale is the run's own (10-50 is normal with unnormalised returns: the "
    "critic dominates), so the rule judges its jump over the median of the previous "
    "updates (x12.3).",
    "explained_variance": "Judged on the median of recent updates (med 0.93), and not "
    "judged while returns are nearly constant (return_std small against return_mean): "
    "then it is noise.",
}
"""How the dashboard shows a metric, added after its definition in the glossary."""


def _glossary() -> tuple[tuple[str, str], ...]:
    """Every ``ppo_update`` field's definition, read from the contract (no second copy)."""
    rows = []
    for doc in field_docs(PPOUpdatePayload):
        unit = doc.facts.get("unit")
        text = doc.description + (f" In {unit}." if unit else "")
        rows.append((doc.name, " ".join((text, READING_NOTES.get(doc.name, ""))).strip()))
    return tuple(rows)


GLOSSARY: Final[tuple[tuple[str, str], ...]] = _glossary()
"""Metric -> how it is computed: the ``about(...)`` of each field of the contract."""

SCREEN_NOTES: Final[tuple[tuple[str, str], ...]] = (
    (
        "levels",
        "pending (no data or warm-up; never shown as healthy), healthy, warning, "
        "critical. A level fires once it held for the rule's number of updates in a row "
        "(crit 1/2: one of two so far); NaN or Inf in any metric is critical at once.",
    ),
    (
        "Bug",
        "A value that cannot happen (clip fraction outside [0, 1], a negative k3 KL or "
        "variance, an update index going backwards): a logging bug, critical at once.",
    ),
    (
        "Stall",
        "No event for longer than the stall limit while the run is unfinished: critical. "
        "The limit is 10x the run's own pace (the median of its recent intervals between "
        "updates and heartbeats), never under the floor; no stall before the run has a pace.",
    ),
    (
        "verdict",
        "The run's verdict, what sanctum check says: OK, WARN: KL 3x (a rule reached "
        "warning in 3 updates), FAIL: KL 22x, Stall 1x (every check that fails, with its "
        "count), or FAIL: interrupted. While the run is unfinished the banner reads "
        "now OK · run FAIL: KL 22x: the level at the latest update (the first rule at the "
        "worst level, and how many others fired: WARN: KL (+1)), then the run's verdict so "
        "far, so a spike that has passed stays in sight.",
    ),
    (
        "connection",
        "LIVE, STALE (no event for longer than the stale limit), FINISHED, "
        "FAILED, INTERRUPTED, WAITING (no event yet); under ppo train also TRAINER "
        "DOWN (the trainer process died: its exit code, and its stderr in Events).",
    ),
    (
        "last 10",
        "Sparkline of the last 10 updates, scaled to its own range. Arrow: the "
        "direction of the least-squares line through them, when its rise covers at least "
        "half their range (else →).",
    ),
    (
        "KL chart",
        "approx_kl per update on a log scale (a healthy 1e-5 and a dangerous 0.1 both "
        f"show); {WARNING_LINE} is the warning line, {CRITICAL_LINE} the critical line, "
        f"{CLIPPED_MARK} a value above the scale, {NONFINITE_MARK} NaN, {BELOW_MARK} a "
        "negative value.",
    ),
    (
        "chart (c)",
        "One metric, one bar per update on an axis fitted to the window (a log axis "
        "spans whole decades and takes in the rule's lines). A column that draws several "
        "updates is solid to the lowest of them and faint to the highest. The cursor's "
        "band is where the value lies against the rule's lines; the rule fires only once "
        "a band held for its number of updates in a row.",
    ),
    ("not measured", "The trainer did not report this field. It is never read as zero."),
)
KeyHelp = tuple[tuple[str, str], ...]
CHART_KEYS: Final[KeyHelp] = (
    ("c", "chart any metric over every update kept (escape returns); on the chart:"),
    ("  m", "choose the metric"),
    ("  + - 0", "zoom in / out over updates (or the mouse wheel); 0 shows every update"),
    ("  ← →", "pan older / newer; home, end: the oldest, the newest (follows a live run)"),
    ("  [ ]", "move the cursor (or click): it reads the update, the value and its band"),
    ("  l", "log scale (refused for a metric with a value at or below zero)"),
)
ROLLOUTS_KEY: Final = (
    "a token-level run's worst and best rollouts of an update, beside the verdict "
    "(runs with rollouts.jsonl; escape returns); on it:"
)
ROLLOUTS_STEPS: Final[KeyHelp] = (
    ("  [ ]", "an earlier / later update; end: the latest (follows a live run)"),
)
ROLLOUTS_KEYS: Final[KeyHelp] = (("r", ROLLOUTS_KEY), *ROLLOUTS_STEPS)
KEYS: Final[KeyHelp] = (
    ("?", "this help"),
    ("p", "pause / resume the display"),
    ("q", "quit (under ppo train, while training: stop it, detach, or cancel)"),
    *CHART_KEYS,
    *ROLLOUTS_KEYS,
)
"""The keys of the one-run dashboard."""
RUNS_KEYS: Final[KeyHelp] = (
    ("?", "this help"),
    ("q", "quit"),
    ("↑ ↓ / k j", "move the cursor"),
    ("enter", "open the run's dashboard (escape returns); on a group: its runs"),
    ("o", "the next metric of the overlay"),
    ("g", "group the seeds of one configuration / show every run"),
    ("c", "in a run's dashboard: chart any metric of that run (escape returns)"),
    ("r", f"in a run's dashboard: {ROLLOUTS_KEY}"),
    *ROLLOUTS_STEPS,
)
"""The keys of the run table (``sanctum RUN RUN ...``)."""


def _two_columns(rows: tuple[tuple[str, str], ...], title: str) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(ratio=1)
    for name, text in rows:  # as text, never markup: a rule's label is a thresholds file's
        table.add_row(Text(name), Text(text))
    table.title = title
    table.title_justify = "left"
    table.title_style = "bold underline"
    return table


def help_renderable(thresholds: Thresholds, keys: KeyHelp = KEYS) -> Group:
    """Keys, the rule table in force, and the glossary, as one Rich group."""
    rules = tuple((r.metric, f"{r.label}: {r.describe()}") for r in thresholds.rules)
    rules += (
        ("stale", f"no event for more than {thresholds.stale_seconds:g} s (banner only)"),
        (
            "stall",
            f"no event for more than {thresholds.stall_pace:g}x the run's median interval, "
            f"and more than {thresholds.stall_seconds:g} s, while unfinished: critical",
        ),
    )
    return Group(
        _two_columns(keys, "Keys"),
        Text(""),
        _two_columns(rules, "Rules in force (warning / critical)"),
        Text(""),
        _two_columns(GLOSSARY, "How each number is computed"),
        Text(""),
        _two_columns(SCREEN_NOTES, "Reading the screen"),
    )


class HelpScreen(ModalScreen[None]):
    """Scrollable help over the dimmed dashboard; any of escape, q, ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close help"),
    ]

    def __init__(self, thresholds: Thresholds, keys: KeyHelp = KEYS) -> None:
        super().__init__(id="help")
        self.thresholds = thresholds
        self.keys = keys

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(help_renderable(self.thresholds, self.keys), id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-body").border_title = "Sanctum help"
        self.query_one("#help-body").border_subtitle = "↑↓ scroll · escape closes"
