"""Token-level rollout records in words: what ``sanctum rollouts`` prints and what the
dashboard's rollouts screen shows, one home for both.

Token names come from the run's ``run_started.config["vocab"]`` when it recorded one (else
ids are shown). Every string from the files is untrusted: it is made visible
(:func:`telemetry.text.visible`) here, and a view shows the result as text, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

from sanctum.formatting import EMPTY_CELL, KL_QUANTITIES, format_kl, format_value, plural, visible
from sanctum.health.levels import Level, band_of
from sanctum.model.rollouts import RolloutsFrame, UpdateSamples
from sanctum.model.snapshot import SanctumSnapshot
from sanctum.text.panels import verdict_line
from telemetry.rollouts import RolloutRecord

STEP_DECIMALS: Final = 3
"""Decimals of a per-step log-prob, entropy or value."""
STEP_ROWS: Final = ("token", "logp", "entropy", "value")
"""The rows of a rollout's per-step table: the sampled token, ``logp_old``, the sampling
distribution's entropy and the critic's value before the token."""


def token_name(token: int, vocab: Sequence[str] | None) -> str:
    """One token id as the run named it (``?42`` for an id outside the vocabulary)."""
    if vocab is None:
        return str(token)
    return visible(vocab[token]) if 0 <= token < len(vocab) else f"?{token}"


def tokens_text(ids: Sequence[int], vocab: Sequence[str] | None) -> str:
    """Token ids as the run named them, space-separated."""
    return " ".join(token_name(i, vocab) for i in ids)


def sample_line(r: RolloutRecord, vocab: Sequence[str] | None) -> str:
    """``#35  1 2 6 1 0 + 8 =  ->  Z7 Z7 <ANSWER>  (3 tokens, stopped by answer)``."""
    return (
        f"#{r.id}  {tokens_text(r.input_ids, vocab)}  ->  {tokens_text(r.generated_ids, vocab)}"
        f"  ({r.num_generated} tokens, stopped by {r.terminated_by})"
    )


def prompt_line(r: RolloutRecord, vocab: Sequence[str] | None) -> str:
    """``#35  prompt 1 2 6 1 0 + 8 =  ->  6 tokens, stopped by answer`` (the tokens in a
    per-step table below it)."""
    return (
        f"#{r.id}  prompt {tokens_text(r.input_ids, vocab)}  ->  "
        f"{plural(r.num_generated, 'token')}, stopped by {r.terminated_by}"
    )


def answer_line(r: RolloutRecord) -> str:
    """The digit heads' answer against the truth, and which positions counted: ``applied
    x.x..`` marks the digits this rollout's reward scores (the task keeps each with its
    ``keep_prob``), said on the line so it reads without the docs."""
    mask = "".join("x" if m else "." for m in r.applied_mask)
    return (
        f"answer {''.join(map(str, r.digit_pred))}  true {''.join(map(str, r.digit_true))}"
        f"  applied {mask} (x: scored)  correct {r.correct_count}/{r.applied_count}"
    )


def no_figures_text(snapshot: SanctumSnapshot | None, update: int) -> str:
    """Why :func:`figures_at` has nothing for ``update``: older than the updates the
    dashboard keeps, not read yet, or no ruled figure measured in it."""
    kept = () if snapshot is None else snapshot.series_updates
    if kept and update < kept[0]:
        return f"older than the last {len(kept)} updates the dashboard keeps (summary has all)"
    if not kept or update > kept[-1]:
        return "its figures are not read yet"
    return "no ruled figure measured in it"


def reward_line(r: RolloutRecord) -> str:
    """``reward_final 0.240 = partial 0.300 (0.5 x 3/5) - 0.01 x 6 tokens``: every term."""
    return (
        f"reward_final {r.reward_final:.3f} = "
        f"{'full 1.0' if r.reward_full == 1.0 else _partial(r)}"
        f" - {r.length_penalty:g} x {r.num_generated} tokens"
    )


def _partial(r: RolloutRecord) -> str:
    if r.terminated_by == "max_new_tokens":
        return "0 (no answer)"
    share = f"{r.correct_count}/{r.applied_count}"
    return f"partial {r.reward_partial:.3f} ({r.partial_scale:g} x {share})"


def describe(r: RolloutRecord, vocab: Sequence[str] | None) -> str:
    """Three lines: tokens; answer against truth; the reward's terms."""
    return f"{sample_line(r, vocab)}\n    {answer_line(r)}\n    {reward_line(r)}"


def _step(values: Sequence[float], i: int) -> str:
    return format_value(values[i], STEP_DECIMALS) if i < len(values) else EMPTY_CELL


def step_columns(
    r: RolloutRecord, vocab: Sequence[str] | None, limit: int
) -> list[tuple[str, str, str, str]]:
    """The first ``limit`` generated tokens, one column each: the token and the
    :data:`STEP_ROWS` figures recorded for it (:data:`~sanctum.formatting.EMPTY_CELL`
    where the record holds fewer than tokens)."""
    return [
        (token_name(token, vocab), _step(r.logp_old, i), _step(r.entropy, i), _step(r.values, i))
        for i, token in enumerate(r.generated_ids[:limit])
    ]


def file_line(path: Path, frame: RolloutsFrame) -> str:
    """``runs/x/rollouts.jsonl: 36 rollouts, 1 unreadable line skipped (line 5: ...)``."""
    text = f"{visible(str(path))}: {plural(frame.records, 'rollout')}"
    if frame.reading:
        text += " so far (reading on)"
    if frame.skipped:
        first = frame.skipped_lines[0] if frame.skipped_lines else None
        text += f", {plural(frame.skipped, 'unreadable line')} skipped"
        if first is not None:
            text += f" (line {first.line_no}: {visible(first.detail)})"
    if frame.resets:
        text += f", read again from the start {plural(frame.resets, 'time')} (file replaced)"
    return text


def update_line(samples: UpdateSamples, index: int, frame: RolloutsFrame) -> str:
    """``update 2 (3 of 3 kept)  12 rollouts  mean reward 0.104``."""
    where = f"{index + 1} of {len(frame.updates)} kept"
    if frame.dropped_updates:
        where += f", {frame.dropped_updates} older not kept"
    name = "all rollouts" if samples.update is None else f"update {samples.update}"
    return (
        f"{name} ({where})  {plural(samples.count, 'rollout')}"
        f"  mean reward {format_value(samples.reward_mean, 3)}"
    )


def health_line(snapshot: SanctumSnapshot | None) -> str:
    """The dashboard's verdict (the banner's words: there is one verdict) and the rules that
    fired: the run's verdict items with their counts, and, while it runs, those firing at
    its latest update."""
    if snapshot is None:
        return "health: no event read yet"
    labels = {r.metric: r.label for r in snapshot.thresholds.rules}
    fired = ", ".join(snapshot.run_verdict.items) or "none"
    text = f"health: {verdict_line(snapshot)} · rules fired: {fired}"
    if snapshot.run.status == "running":
        now = ", ".join(labels.get(m, m) for m in snapshot.health.fired) or "none"
        text += f"; at update {snapshot.update}: {now}"
    return visible(text)


def figures_at(snapshot: SanctumSnapshot | None, update: int | None) -> list[tuple[str, Level]]:
    """Each ruled metric the trainer measured at ``update`` (those firing now first), as
    ``RefKL 0.0175`` with the band its value lies in; empty when the dashboard no longer
    keeps that update (or never had it)."""
    if snapshot is None or update is None or update not in snapshot.series_updates:
        return []
    at = snapshot.series_updates.index(update)
    fired = set(snapshot.health.fired)
    rules = sorted(snapshot.thresholds.rules, key=lambda r: r.metric not in fired)
    out: list[tuple[str, Level]] = []
    for rule in rules:
        metric = snapshot.metrics.get(rule.metric)
        value = None if metric is None or at >= len(metric.series) else metric.series[at]
        if value is None:
            continue
        fmt = format_kl if rule.metric in KL_QUANTITIES else format_value
        out.append(
            (f"{visible(rule.label)} {fmt(value, rule.decimals)}", band_of(rule, value, update))
        )
    return out
