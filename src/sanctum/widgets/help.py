"""The help screen (``?``): keys, the rules in force, and how every number is computed.

The glossary repeats DESIGN.md section 4 on purpose: a user staring at a KL of 0.031
deserves to know, without leaving the terminal, that it is the mean over minibatches of
the k3 estimator before each optimizer step, and what threshold made it red.
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

from sanctum.thresholds import Thresholds

GLOSSARY: Final[tuple[tuple[str, str], ...]] = (
    (
        "approx_kl",
        "Mean over the minibatches evaluated in this update of the configured KL "
        "estimator (default k3 = (r-1) - log r, r = pi_new/pi_old), computed before each "
        "minibatch's optimizer step; nats, KL(pi_old || pi_new).",
    ),
    ("approx_kl_max", "The largest minibatch approx_kl of the update."),
    (
        "kl_final",
        "The same estimator over the whole batch after the last step: how far the "
        "update really moved the policy.",
    ),
    (
        "clip_fraction",
        "Fraction of samples with |r - 1| > clip_range, mean over minibatches "
        "(the SB3/CleanRL definition).",
    ),
    ("grad_norm", "Global gradient norm before clipping, mean over optimizer steps."),
    (
        "explained_variance",
        "1 - Var(R - V) / Var(R) on the rollout: 1 is a perfect critic, "
        "0 or less is useless. Not measured when Var(R) = 0.",
    ),
    ("entropy", "Mean policy entropy, nats. A collapse means the policy stopped exploring."),
    ("policy_loss", "Clipped-surrogate loss, mean over applied minibatches."),
    ("value_loss", "Value-function loss, mean over applied minibatches."),
    ("learning_rate", "Learning rate in force for this update."),
    ("kl_coef", "KL penalty coefficient in force (changes when adaptive)."),
    (
        "early stop",
        "The update stopped before its planned minibatches because approx_kl "
        "passed max_kl; the event log shows the trainer's reason verbatim.",
    ),
)
"""Metric -> how it is computed (DESIGN.md section 4)."""

SCREEN_NOTES: Final[tuple[tuple[str, str], ...]] = (
    (
        "levels",
        "pending (no data or warm-up; never shown as healthy), healthy, warning, "
        "critical. NaN or Inf in any metric is critical.",
    ),
    (
        "verdict",
        "OK, WARN: KL (+1) or FAIL: KL (+2): the first rule at the worst level, "
        "and how many other metrics fired.",
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
        "approx_kl per update on a fixed scale; ┄ is the warning line, ━ the "
        "critical line, ▲ a value above the scale, × NaN.",
    ),
    ("not measured", "The trainer did not report this field. It is never read as zero."),
)
KEYS: Final = (
    ("?", "this help"),
    ("p", "pause / resume the display"),
    ("q", "quit (under ppo train, while training: stop it, detach, or cancel)"),
)


def _two_columns(rows: tuple[tuple[str, str], ...], title: str) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(ratio=1)
    for name, text in rows:
        table.add_row(name, text)
    table.title = title
    table.title_justify = "left"
    table.title_style = "bold underline"
    return table


def help_renderable(thresholds: Thresholds) -> Group:
    """Keys, the rule table in force, and the glossary, as one Rich group."""
    rules = tuple((r.metric, f"{r.label}: {r.describe()}") for r in thresholds.rules)
    rules += (("stale", f"no event for more than {thresholds.stale_seconds:g} s"),)
    return Group(
        _two_columns(KEYS, "Keys"),
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

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(id="help")
        self.thresholds = thresholds

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(help_renderable(self.thresholds), id="help-text")

    def on_mount(self) -> None:
        self.query_one("#help-body").border_title = "Sanctum help"
        self.query_one("#help-body").border_subtitle = "↑↓ scroll · escape closes"
