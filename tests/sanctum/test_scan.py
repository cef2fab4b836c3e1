"""The whole-log scan's fast column passes agree with ``level_of`` applied value by value."""

from __future__ import annotations

import math
import random

import pytest

from sanctum.health import Level, level_of
from sanctum.scan import MetricStats, RuleTally, measured
from sanctum.thresholds import DEFAULT_THRESHOLDS, Rule

SPECIALS = [None, math.nan, math.inf, -math.inf]


def column(rng: random.Random, rule: Rule, n: int, specials: bool) -> list[float | None]:
    """Values around the rule's thresholds, exact edges included, and some specials."""
    edges = [
        rule.warning,
        rule.critical,
        math.nextafter(rule.warning, math.inf),
        math.nextafter(rule.critical, -math.inf),
    ]
    out: list[float | None] = []
    for _ in range(n):
        r = rng.random()
        if specials and r < 0.05:
            out.append(rng.choice(SPECIALS))
        elif r < 0.15:
            out.append(rng.choice(edges))
        else:
            out.append(rng.uniform(2 * min(rule.critical, 0) - 1, 2 * max(rule.critical, 1)))
    return out


def reference(rule: Rule, batches: list[tuple[list[int], list[float | None]]]) -> dict[str, object]:
    """The obvious loop: level_of on every value; the worst is the first most extreme."""
    out: dict[str, object] = dict(
        measured=0,
        judged=0,
        at_warning=0,
        at_critical=0,
        first_warning=None,
        first_critical=None,
        worst=None,
        worst_update=None,
    )
    for updates, values in batches:
        for u, v in zip(updates, values, strict=True):
            if v is None:
                continue
            out["measured"] += 1  # type: ignore[operator]
            level = level_of(rule, v, u)
            if level is Level.PENDING:
                continue
            out["judged"] += 1  # type: ignore[operator]
            if level is not Level.HEALTHY:
                key = "critical" if level is Level.CRITICAL else "warning"
                out[f"at_{key}"] += 1  # type: ignore[operator]
                if out[f"first_{key}"] is None:
                    out[f"first_{key}"] = u
            worst = out["worst"]
            assert worst is None or isinstance(worst, float)
            if worst is None or (
                math.isfinite(worst) and (not math.isfinite(v) or rule.is_worse(v, worst))
            ):
                out["worst"], out["worst_update"] = v, u
    return out


def tally_of(rule: Rule, batches: list[tuple[list[int], list[float | None]]]) -> dict[str, object]:
    tally = RuleTally(rule)
    for updates, values in batches:
        numbers, total = measured(values)
        tally.add(updates, values, numbers, total)
    return {k: getattr(tally, k) for k in reference(rule, [])}


def same(a: dict[str, object], b: dict[str, object]) -> bool:
    def norm(x: object) -> object:
        return "nan" if isinstance(x, float) and math.isnan(x) else x

    return {k: norm(v) for k, v in a.items()} == {k: norm(v) for k, v in b.items()}


@pytest.mark.parametrize("rule", DEFAULT_THRESHOLDS.rules, ids=lambda r: r.metric)
@pytest.mark.parametrize("specials", [False, True])
def test_tally_matches_level_of_on_every_value(rule: Rule, specials: bool) -> None:
    rng = random.Random(f"{rule.metric}{specials}")
    for trial in range(30):
        batches, start = [], 0
        for _ in range(rng.randint(1, 4)):
            n = rng.randint(0, 40)
            batches.append((list(range(start, start + n)), column(rng, rule, n, specials)))
            start += n
        assert same(tally_of(rule, batches), reference(rule, batches)), (trial, batches)


def test_tally_healthy_column_takes_the_fast_path_and_keeps_the_worst() -> None:
    kl = DEFAULT_THRESHOLDS.rule("approx_kl")
    assert kl is not None
    values: list[float | None] = [0.001, 0.004, 0.002, 0.004]
    result = tally_of(kl, [([0, 1, 2, 3], values)])
    assert result == dict(
        measured=4,
        judged=4,
        at_warning=0,
        at_critical=0,
        first_warning=None,
        first_critical=None,
        worst=0.004,
        worst_update=1,
    )


def test_metric_stats_match_a_plain_loop() -> None:
    rng = random.Random(7)
    stats = MetricStats()
    seen: list[tuple[int, float]] = []
    start = 0
    for _ in range(20):
        n = rng.randint(0, 30)
        values = [
            rng.choice(SPECIALS) if rng.random() < 0.1 else rng.uniform(-5, 5) for _ in range(n)
        ]
        updates = list(range(start, start + n))
        start += n
        numbers, total = measured(values)
        stats.add(updates, values, numbers, total, floats=True)
        seen += [(u, v) for u, v in zip(updates, values, strict=True) if v is not None]
    finite = [v for _, v in seen if math.isfinite(v)]
    bad = [u for u, v in seen if not math.isfinite(v)]
    assert stats.measured == len(seen)
    assert stats.final_update == seen[-1][0]
    assert stats.final is not None
    assert stats.final == seen[-1][1] or (math.isnan(stats.final) and math.isnan(seen[-1][1]))
    assert (stats.minimum, stats.maximum) == (min(finite), max(finite))
    assert (stats.nonfinite, stats.first_nonfinite) == (len(bad), bad[0])


def test_measured_spots_missing_values() -> None:
    complete: list[float | None] = [1.0, 2.0]
    numbers, total = measured(complete)
    assert numbers is complete
    assert total == 3.0
    assert measured([1.0, None, 2.5]) == ([1.0, 2.5], 3.5)
    assert measured([None]) == ([], 0)
