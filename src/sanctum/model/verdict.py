"""The verdict on a run: its rows (:class:`CheckRow`) and the one word every view shows
(:class:`RunVerdict`; docs/design.md, section 6).

A run has one verdict, computed once from the rows of ``sanctum check``
(:mod:`sanctum.model.checks` makes them from the judged run). ``sanctum check`` prints the
rows; the banner, the run table, ``summary``, ``--once`` and ``diff`` print the
:class:`RunVerdict` made from the same rows under the same ``fail_on``:

- ``FAIL`` exactly when the check fails, naming each failing row (``FAIL: KL 22x, Stall 1x``:
  the rule and the updates it failed in, or the stalls, the impossible values...);
- ``WARN`` when the check passes but a rule reached warning at some update, or the trainer
  recorded a warning anomaly (``WARN: KL 3x``);
- ``PENDING`` while no rule has judged an update;
- ``OK`` otherwise.

What happens *now* (the level at the latest update) is the
:class:`~sanctum.health.levels.HealthReport`, not this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from sanctum.health.levels import Level

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
    warns: bool = False
    """A row that is not a rule but warns when it passes with ``updates_warning``
    (anomalies the trainer reported as warnings, a KL past ``max_kl`` unstopped)."""
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
    counts: tuple[int, ...] = ()
    """Each item's count, aligned with ``items`` (0: an item without one, ``interrupted``)."""

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
        """``FAIL: Entropy 379x (+1)``: the :attr:`headline` item and how many more, for a
        narrow column;
        ``OK · 2/7 rules`` when some expected rule measured nothing."""
        said: str = self.word
        if self.items:
            more = len(self.items) - 1
            said = f"{self.word}: {self.items[self.headline]}" + (f" (+{more})" if more else "")
        return f"{said} · {self.rules_judged}" if self.rules_judged else said

    @property
    def headline(self) -> int:
        """The item a one-line verdict names: the rule that fired in the most updates
        (``Entropy 379x`` before ``KL 8x``), the first of equals; an item without a count
        (``interrupted``, ``unfinished``) only where no item has one (the banner's
        connection word already says how the run ended)."""
        counts = self.counts or (0,) * len(self.items)
        return max(range(len(counts)), key=lambda i: (counts[i], -i)) if counts else 0

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
    """The verdict from the check's rows (those of :func:`~sanctum.model.checks.judge_rows`,
    and any the learning
    gate adds): FAIL iff a row failed, else WARN if any warned, else PENDING if no rule
    judged an update, else OK."""
    covering = [row for row in rows if row.covers]
    judged_on = tuple(row.label for row in covering if row.updates_measured)
    unmeasured = tuple(row.label for row in covering if not row.updates_measured)
    failed = [row for row in rows if not row.passed]
    if failed:
        counts = tuple(row.counted for row in failed)
        items = tuple(_item(row, n) for row, n in zip(failed, counts, strict=True))
        return RunVerdict("FAIL", items, so_far, judged_on, unmeasured, counts)
    warned = [row for row in rows if _warned(row)]
    if warned:
        counts = tuple(row.updates_warning for row in warned)
        items = tuple(_item(row, n) for row, n in zip(warned, counts, strict=True))
        return RunVerdict("WARN", items, so_far, judged_on, unmeasured, counts)
    if not any(row.updates_judged for row in rows if row.rule is not None):
        return RunVerdict("PENDING", (), so_far, judged_on, unmeasured)
    return RunVerdict("OK", (), so_far, judged_on, unmeasured)


def _warned(row: CheckRow) -> bool:
    """A rule at warning at some update, or a warning anomaly (rows that passed)."""
    return row.updates_warning > 0 and (row.rule is not None or row.warns)


def _item(row: CheckRow, count: int) -> str:
    name = row.verdict_name or row.label
    return f"{name} {count}x" if count else name
