"""The judge: statistics, persistence, warm-up, not-judged updates and range contracts, each
at its edges; and its fast column path against an obvious per-value loop."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sanctum.health.judge import FIELDS_KEPT, HealthJudge, MetricStats, returns_vary
from sanctum.health.levels import Level, level_of
from sanctum.health.rule import Rule, ThresholdsError
from sanctum.health.rule_judge import RETURNS_FLAT, RETURNS_UNKNOWN, RuleJudge, measured
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, Thresholds
from sanctum.metrics import PPO_METRICS

KL = Rule("approx_kl", "KL", "above", 0.04, 0.1, persist=2, far=0.5)
GRAD = Rule("grad_norm", "Grad", "above", 100.0, 1000.0, statistic="jump", window=20, persist=2)
EV = Rule(
    "explained_variance",
    "EV",
    "below",
    -0.1,
    -0.5,
    warmup_updates=10,
    statistic="median",
    window=10,
    persist=3,
    min_return_spread=0.05,
)


SHIFT = Rule("entropy", "Shift", "above", 2.0, 4.0, statistic="shift", window=20, persist=2)
"""A Gaussian policy's entropy, in nats: a shift of 4 either way from its recent median."""
WARN_ONLY = Rule(
    "clip_fraction", "Clip", "above", 0.4, None, statistic="median", window=10, persist=2
)
"""A rule that only warns: no critical line."""
VALUE = Rule("value_loss", "Value loss", "above", 100.0, 1000.0, statistic="high", window=5)
"""The value loss over the largest before it, from the sixth value."""


def levels(rule: Rule, values: Sequence[float | None], start: int = 0) -> list[Level]:
    """The level of each update when folded one batch per value."""
    judge = RuleJudge(rule)
    out = []
    for i, value in enumerate(values):
        judge.fold([start + i], [value])
        assert judge.latest is not None
        out.append(judge.latest.level)
    return out


H, W, C, P = Level.HEALTHY, Level.WARNING, Level.CRITICAL, Level.PENDING


def test_a_level_fires_only_after_it_persisted() -> None:
    assert levels(KL, [0.01, 0.05, 0.01, 0.05, 0.05]) == [H, H, H, H, W]
    assert levels(KL, [0.05, 0.2, 0.2, 0.05]) == [H, W, C, W]
    assert levels(KL, [0.2, 0.01, 0.2]) == [H, H, H]  # isolated spikes never fire


def test_exactly_at_a_line_does_not_count_just_past_does() -> None:
    assert levels(KL, [0.1, 0.1]) == [H, W]  # at critical: past warning only
    past = math.nextafter(0.1, 1.0)
    assert levels(KL, [past, past]) == [H, C]


def test_far_past_critical_fires_at_once_and_non_finite_always() -> None:
    assert levels(KL, [0.01, 0.5]) == [H, H]  # at far: not past it
    assert levels(KL, [0.01, 0.51]) == [H, C]
    assert levels(KL, [0.01, math.nan, 0.01]) == [H, C, H]
    assert levels(EV, [math.inf]) == [C]  # even inside the warm-up


def test_a_band_not_yet_persisted_says_so() -> None:
    judge = RuleJudge(KL)
    judge.fold([0, 1], [0.01, 0.2])
    assert judge.latest is not None
    assert (judge.latest.band, judge.latest.level, judge.latest.note) == (C, H, "crit 1/2")


def test_not_measured_is_pending_and_not_counted() -> None:
    judge = RuleJudge(KL)
    judge.fold([0, 1, 2], [0.2, None, 0.2])
    assert judge.latest is not None and judge.latest.level is C  # a gap does not break it
    assert (judge.measured, judge.judged) == (2, 2)


def test_warm_up_and_flat_returns_are_pending_with_a_reason() -> None:
    judge = RuleJudge(EV)
    judge.fold(list(range(10)), [-5.0] * 10)
    assert judge.latest is not None
    assert (judge.latest.level, judge.latest.note, judge.judged) == (P, "warm-up", 0)
    judge.fold([10, 11, 12], [-5.0] * 3, [RETURNS_FLAT] * 3)
    assert judge.latest is not None
    assert judge.latest.level is P
    assert judge.latest.note == "not judged: returns nearly constant"
    assert judge.at_critical == 0


def test_a_gate_on_the_returns_never_judges_blind() -> None:
    gate = returns_vary([None, 1.0, 0.0, 0.01, 5.0], [10.0, None, 0.0, 10.0, 10.0], 0.05)
    assert gate == [RETURNS_UNKNOWN, RETURNS_UNKNOWN, RETURNS_FLAT, RETURNS_FLAT, None]
    judge = HealthJudge(Thresholds(rules=(EV,)))
    column = dict.fromkeys(PPO_METRICS, [None] * 12)
    judge.fold(list(range(12)), {**column, "explained_variance": [-5.0] * 12})
    latest = judge.rules["explained_variance"].latest
    assert latest is not None and latest.level is P
    assert latest.note == "not judged: return spread not recorded"


def test_median_statistic_smooths_single_updates() -> None:
    ev = [0.8] * 10 + [0.9] * 4 + [-3.0, 0.9, -3.0, 0.9, -3.0] + [-3.0] * 6
    got = levels(EV, ev)
    assert got[:14] == [P] * 14  # warm-up, then the median needs 5 of its 10 values
    assert got[14:19] == [H] * 5  # the median of 0.9s and a few -3s stays 0.9
    assert got[-1] is C  # once most of the window is -3
    judge = RuleJudge(EV)
    judge.fold([10, 11], [0.5, 0.5])
    assert judge.latest is not None and judge.latest.note == "median 2/5"
    judge = RuleJudge(EV)
    judge.fold(list(range(15)), [0.5] * 10 + [0.1, 0.2, 0.3, 0.4, 0.6])
    assert judge.latest is not None
    assert judge.latest.statistic == pytest.approx(0.3)


def test_jump_statistic_against_the_previous_median() -> None:
    judge = RuleJudge(GRAD)
    judge.fold([0, 1], [30.0, 40.0])
    assert judge.latest is not None and judge.latest.note == "baseline 2/3"
    judge.fold([2, 3], [20.0, 60.0])
    assert judge.latest is not None
    assert judge.latest.statistic == pytest.approx(60.0 / 30.0)  # median of 30, 40, 20
    judge.fold([4, 5], [40_000.0, 50_000.0])  # 1000x-plus, twice: critical
    assert judge.latest is not None
    assert judge.latest.level is C and judge.first_critical == 5
    judge.fold([6], [45_000.0])  # critical values never became the baseline
    assert judge.latest is not None and judge.latest.level is C


def test_entropy_converging_is_healthy_and_collapsing_is_critical() -> None:
    entropy = DEFAULT_THRESHOLDS.rule("entropy_normalized")
    assert entropy is not None and entropy.statistic == "jump"
    # a policy sharpening toward the one right answer: -10% per update, 0.9 down to 0.002
    converging = [0.9 * 0.9**u for u in range(60)]
    assert converging[-1] < 0.005 and set(levels(entropy, converging)) <= {P, H}
    # a collapse from a steady 0.6 to 0.005 (under 0.03x): critical once it held two
    # updates, and it stays critical, since collapsed values never join the baseline
    collapsed = levels(entropy, [0.6] * 20 + [0.005] * 10)
    assert collapsed[20] is H and set(collapsed[21:]) == {C}


def test_a_steady_norm_of_any_size_is_healthy() -> None:
    assert levels(GRAD, [30.0] * 30)[-1] is H
    assert levels(GRAD, [30.0] * 10 + [1000.0] * 5)[-1] is H  # 33x: a jump, not a fault


def test_tallies_count_fired_levels_and_keep_the_worst_statistic() -> None:
    judge = RuleJudge(KL)
    judge.fold(list(range(6)), [0.01, 0.05, 0.05, 0.2, 0.3, 0.02])
    tally = judge.tally
    assert (tally.measured, tally.judged, tally.at_warning, tally.at_critical) == (6, 6, 2, 1)
    assert (tally.first_warning, tally.first_critical) == (2, 4)
    assert (tally.worst, tally.worst_update) == (0.3, 4)
    assert tally.reached(Level.WARNING) == 3


# ------------------------------------------------------- the fast path against a loop


def reference(rule: Rule, values: Sequence[float | None]) -> tuple[list[Level], int, int]:
    """The obvious loop, written apart from the judge: levels, judged count, critical count."""
    window: list[float] = []
    top: float | None = None  # the record, for ``high``
    seen = 0
    streak_w = streak_c = 0
    out, judged, critical = [], 0, 0
    for update, value in enumerate(values):
        if value is None:
            out.append(P)
            continue
        if not math.isfinite(value):
            streak_w, streak_c = streak_w + 1, streak_c + 1
            out.append(C)
            judged, critical = judged + 1, critical + 1
            continue
        if update < rule.warmup_updates:
            out.append(P)
            continue
        if rule.statistic == "median":
            window = [*window, value][-rule.window :]
            need = (rule.window + 1) // 2
            stat: float | None = statistics.median(window) if len(window) >= need else None
        elif rule.statistic in ("jump", "shift"):
            stat = None
            if len(window) >= 3:
                base = statistics.median(window)
                stat = value / base if rule.statistic == "jump" else abs(value - base)
            band_now = None if stat is None else level_of(rule, stat, update)
            if band_now is not C:
                window = [*window, value][-rule.window :]
        elif rule.statistic == "high":
            stat = value / top if seen >= rule.window and top is not None and top > 0 else None
            if stat is None or level_of(rule, stat, update) is not C:
                top = value if top is None else max(top, value)
            seen += 1
        else:
            stat = value
        if stat is None:
            out.append(P)
            continue
        band = level_of(rule, stat, update)
        streak_w = streak_w + 1 if band >= W else 0
        streak_c = streak_c + 1 if band >= C else 0
        far = rule.far is not None and band is C and rule.is_worse(stat, rule.far)
        level = C if far or streak_c >= rule.persist else W if streak_w >= rule.persist else H
        out.append(level)
        judged += 1
        critical += level is C
    return out, judged, critical


def random_column(rng: random.Random, rule: Rule, n: int) -> list[float | None]:
    base = {
        "approx_kl": (0.0, 0.3),
        "grad_norm": (5.0, 50.0),
        "explained_variance": (-1, 1),
        "clip_fraction": (0.0, 1.0),
        "entropy": (-1.0, 1.5),
        "value_loss": (1e-4, 50.0),
        "entropy_normalized": (0.0, 1.0),
    }
    low, high = base[rule.metric]
    out: list[float | None] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.04:
            out.append(rng.choice([None, math.nan, math.inf]))
        elif r < 0.08 and rule.statistic in ("jump", "high"):
            out.append(rng.uniform(5e3, 1e5))
        elif r < 0.12:
            out.append(rng.choice([rule.warning, rule.critical]))
        else:
            out.append(rng.uniform(low, high))
    return out


@pytest.mark.parametrize("rule", [KL, GRAD, EV, WARN_ONLY, SHIFT, VALUE], ids=lambda r: r.metric)
def test_batched_folds_match_the_obvious_loop(rule: Rule) -> None:
    rng = random.Random(rule.metric)
    for trial in range(40):
        values = random_column(rng, rule, rng.randint(1, 120))
        expected, judged, critical = reference(rule, values)
        judge, start = RuleJudge(rule), 0
        while start < len(values):  # random batch sizes: the fast path and the loop mix
            end = min(len(values), start + rng.randint(1, 30))
            judge.fold(list(range(start, end)), values[start:end])
            start = end
        assert (judge.judged, judge.at_critical) == (judged, critical), trial
        assert levels(rule, values) == expected, trial  # value by value, too


FLOOR_JUMP = Rule(
    "entropy_normalized",
    "Entropy",
    "below",
    0.5,
    0.2,
    statistic="jump",
    window=20,
    persist=2,
    floor=0.01,
    min_baseline=0.05,
)
"""A jump down with a floor and a least baseline: every branch of the jump loop."""


def _judge_state(judge: RuleJudge) -> str:
    """Everything a rule judge holds, as text (NaN equal to NaN)."""
    window = None if judge.window is None else (list(judge.window._order), judge.window._sorted)
    return repr((judge.tally, judge.latest, judge.streak_warning, judge.streak_critical, window))


@pytest.mark.parametrize(
    "rule", [KL, GRAD, EV, WARN_ONLY, SHIFT, VALUE, FLOOR_JUMP], ids=lambda r: r.metric
)
def test_the_steady_loop_leaves_what_the_value_by_value_path_leaves(
    rule: Rule, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long healthy stretches (where a batch takes the steady loop) between faults, folded
    in random batches, with and without the steady loop: the same state after each."""
    rng = random.Random(rule.metric)
    for _ in range(30):
        values: list[float | None] = [
            v if rng.random() < 0.1 else rng.uniform(0.3, 0.9)
            for v in random_column(rng, rule, rng.randint(40, 160))
        ]
        gate = [None if rng.random() < 0.9 else RETURNS_FLAT for _ in values]
        steady, slow = RuleJudge(rule), RuleJudge(rule)
        start = 0
        while start < len(values):
            end = min(len(values), start + rng.randint(1, 40))
            updates, column = list(range(start, end)), values[start:end]
            unjudged = gate[start:end] if rule.min_return_spread is not None else None
            steady.fold(updates, column, unjudged)
            with monkeypatch.context() as patch:
                patch.setattr(RuleJudge, "_steady", lambda *_: None)
                slow.fold(updates, column, unjudged)
            assert _judge_state(steady) == _judge_state(slow), (rule.metric, start)
            start = end


def test_a_collapse_before_any_baseline_is_judged_against_the_floor() -> None:
    """Normalised entropy at 1e-14 from the second update (SB3's CartPole at 100x its
    learning rate from the start): no healthy baseline ever forms, yet it fires after 2
    updates; a converged policy near 0 (MountainCar's 1e-4 dips, baseline under 0.05) is
    not judged, as before."""
    rule = DEFAULT_THRESHOLDS.rule("entropy_normalized")
    assert rule is not None and rule.floor == 1e-5
    assert levels(rule, [0.23, 3.8e-10, 1.3e-14, 5e-15]) == [P, H, C, C]  # 2 in a row
    converged = [0.04, 0.03, 0.02, 0.02, 0.01, 1e-4, 0.02, 8.7e-5, 0.01]
    assert set(levels(rule, converged)) <= {P, H}
    assert "a value under 1e-05 is judged as itself" in rule.describe()
    with pytest.raises(ThresholdsError, match=r"\[grad_norm\] floor: needs statistic = 'jump', "):
        Rule("grad_norm", "Grad", "above", 100.0, 1000.0, statistic="jump", window=5, floor=1.0)


def test_a_new_high_over_the_runs_record() -> None:
    """A converged critic's loss falls 1000x and swings back (a failed CartPole episode
    after perfect ones): never past its record, so healthy. Rewards x1e4 take it 1e8x past
    the record at once: critical, and the fault does not become the record, so it keeps
    firing until the loss is back under it. Nothing is judged before 5 values."""
    swings = [40.0, 55.0, 30.0, 20.0, 8.0, 1.0, 0.01, 0.002, 45.0, 0.001, 60.0]
    assert levels(VALUE, swings) == [P] * 5 + [H] * 6
    assert levels(VALUE, [*swings, 60.0 * 150, 2.0]) == [P] * 5 + [H] * 6 + [W, H]
    scaled = [*swings[:6], 1e8, 5e7, 30.0]
    assert levels(VALUE, scaled) == [P] * 5 + [H, C, C, H]
    judge = RuleJudge(VALUE)
    judge.fold(list(range(len(scaled))), scaled)
    assert (judge.worst, judge.at_critical) == (1e8 / 55.0, 2)
    assert VALUE.describe() == "value_loss / largest before it (after 5) > 100x / > 1000x"
    assert VALUE.format(1e8 / 55.0) == "x1.82e+06"


def test_a_shift_either_way_from_the_recent_median() -> None:
    """A Gaussian policy's entropy (nats) drifting down is healthy; leaping up 5 nats (a
    learning rate gone 100x widened the noise) or down 5 (a collapse) is critical, and a
    shift past critical does not join its baseline, so it keeps firing."""
    drift = [1.4 - 0.05 * i for i in range(30)]
    assert set(levels(SHIFT, drift)[3:]) == {H}
    assert levels(SHIFT, [1.5] * 5 + [6.9, 6.8, 6.7, 6.6]) == [P, P, P] + [H] * 3 + [C, C, C]
    assert levels(SHIFT, [1.5] * 5 + [-4.0] * 3)[-1] is C
    assert SHIFT.format(5.25) == "±5.25" and not SHIFT.in_metric_units
    assert SHIFT.describe() == ("|entropy - median of previous 20| > 2 / > 4, 2 updates in a row")


def test_a_jump_off_a_baseline_already_near_zero_is_not_judged() -> None:
    """A policy converged near-deterministic (normalised entropy 0.02, MountainCar) dips to
    0.0001 and back: not a collapse. The same dip from 0.5 is one."""
    rule = Rule(
        "entropy_normalized",
        "Entropy",
        "below",
        0.1,
        0.01,
        statistic="jump",
        window=20,
        persist=2,
        min_baseline=0.05,
    )
    judge = RuleJudge(rule)
    judge.fold(list(range(8)), [0.02, 0.02, 0.02, 0.02, 1e-4, 1e-4, 0.02, 0.02])
    assert (judge.at_critical, judge.judged) == (0, 0)
    assert judge.latest is not None and judge.latest.note == "not judged: recent median under 0.05"
    assert levels(rule, [0.5] * 4 + [1e-4] * 3)[-2:] == [C, C]
    assert rule.describe().endswith("while the median is at least 0.05")
    with pytest.raises(ThresholdsError, match="min_baseline"):
        Rule("approx_kl", "KL", "above", 0.1, 0.2, min_baseline=0.05)


def test_a_warn_only_rule_warns_and_never_fails() -> None:
    assert levels(WARN_ONLY, [0.9] * 12)[-1] is W
    judge = RuleJudge(WARN_ONLY)
    judge.fold(list(range(12)), [1.0] * 12)
    assert (judge.at_critical, judge.first_critical, judge.first_warning) == (0, None, 5)
    assert levels(WARN_ONLY, [0.1, math.nan])[-1] is C  # non-finite is critical all the same
    jump = Rule("grad_norm", "Grad", "above", 100.0, None, statistic="jump", window=20)
    assert levels(jump, [1.0, 1.0, 1.0, 1e9, 1e9])[-2:] == [W, W]


def test_a_rule_per_another_metric_judges_their_quotient() -> None:
    """KL per clip fraction: a large KL with clipping at work is healthy, a moderate KL the
    clip bounds nothing of is PPO's trust region gone."""
    rule = Rule(
        "approx_kl", "KL", "above", 5.0, 20.0, statistic="median", window=5, per="clip_fraction"
    )
    judge = HealthJudge(Thresholds(rules=(rule,)))
    column = dict.fromkeys(PPO_METRICS, [None] * 4)
    judge.fold(
        [0, 1, 2, 3],
        {**column, "approx_kl": [2.0, 3.0, 2.5, 2.0], "clip_fraction": [0.8, 0.7, 0.9, 0.8]},
    )
    kl = judge.rules["approx_kl"]
    assert kl.latest is not None and kl.latest.level is H
    assert kl.latest.value == 2.0 and kl.latest.statistic == pytest.approx((2.5 + 2.5 / 0.9) / 2)
    judge.fold(
        [4, 5, 6],
        {
            **dict.fromkeys(PPO_METRICS, [None] * 3),
            "approx_kl": [0.3] * 3,
            "clip_fraction": [0.0, None, 0.005],
        },
    )
    assert kl.latest is not None and kl.latest.level is C  # 0.3 / 0.01 = 30, thrice of five
    assert kl.tally.worst == pytest.approx(30.0) and kl.tally.first_critical == 6
    assert rule.format(kl.tally.worst) == "30.0"
    assert rule.describe() == ("median of 5 approx_kl / clip_fraction (at least 0.01) > 5 / > 20")
    assert not rule.in_metric_units


def test_a_healthy_column_takes_the_fast_path_and_keeps_the_worst() -> None:
    judge = RuleJudge(KL)
    judge.fold([0, 1, 2, 3], [0.001, 0.004, 0.002, 0.004])
    assert judge.tally.worst == 0.004 and judge.tally.worst_update == 1
    assert judge.latest is not None and judge.latest.level is H


# ---------------------------------------------------------------- stats and measured


def test_metric_stats_match_a_plain_loop() -> None:
    rng = random.Random(7)
    stats = MetricStats()
    seen: list[tuple[int, float]] = []
    start = 0
    for _ in range(20):
        n = rng.randint(0, 30)
        specials = [None, math.nan, math.inf, -math.inf]
        values = [
            rng.choice(specials) if rng.random() < 0.1 else rng.uniform(-5, 5) for _ in range(n)
        ]
        updates = list(range(start, start + n))
        start += n
        stats.fold(updates, values, floats=True)
        seen += [(u, v) for u, v in zip(updates, values, strict=True) if v is not None]
    finite = [v for _, v in seen if math.isfinite(v)]
    bad = [u for u, v in seen if not math.isfinite(v)]
    assert stats.measured == len(seen)
    assert stats.final_update == seen[-1][0]
    assert (stats.minimum, stats.maximum) == (min(finite), max(finite))
    assert (stats.nonfinite, stats.first_nonfinite) == (len(bad), bad[0])


def test_measured_spots_missing_values() -> None:
    complete: list[float | None] = [1.0, 2.0]
    numbers, total = measured(complete)
    assert numbers is complete and total == 3.0
    assert measured([1.0, None, 2.5]) == ([1.0, 2.5], 3.5)


# ------------------------------------------------------------------- range contracts


def fold_one(judge: HealthJudge, update: int, **values: float | None) -> list[str]:
    columns = {m: (values.get(m),) for m in PPO_METRICS}
    return [v.message for v in judge.fold((update,), columns)]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"clip_fraction": 1.2}, "clip_fraction 1.2 outside [0, 1]"),
        ({"clip_fraction": -0.01}, "clip_fraction -0.01 outside [0, 1]"),
        ({"approx_kl": -0.002}, "approx_kl -0.002 outside >= 0"),
        ({"kl_final": -1.0}, "kl_final -1 outside >= 0"),
        ({"value_loss": -3.0}, "value_loss -3 outside >= 0"),
        ({"explained_variance": 1.5}, "explained_variance 1.5 outside <= 1"),
        ({"entropy_normalized": 1.3}, "entropy_normalized 1.3 outside [0, 1]"),
        ({"entropy": -0.2, "entropy_normalized": 0.5}, "entropy -0.2 < 0 for a categorical"),
        ({"skipped_steps": -1}, "skipped_steps -1 outside >= 0"),
    ],
)
def test_impossible_values_are_a_logging_bug(values: dict[str, float], expected: str) -> None:
    judge = HealthJudge(DEFAULT_THRESHOLDS)
    messages = fold_one(judge, 0, **values)
    assert len(messages) == 1 and messages[0].startswith(expected)
    assert judge.latest_violations and judge.first_violation is not None


def test_possible_values_at_their_bounds_are_not_bugs() -> None:
    judge = HealthJudge(DEFAULT_THRESHOLDS)
    edges = dict(clip_fraction=1.0, approx_kl=0.0, explained_variance=1.0, entropy=-0.5)
    assert fold_one(judge, 0, **edges) == []  # a Gaussian's entropy may be negative
    assert fold_one(judge, 1, clip_fraction=math.nan) == []  # non-finite: its own rule
    # SB3 with RL Zoo's lin_ schedule: the last rollout overshoots, the rate goes below 0
    assert fold_one(judge, 2, learning_rate=-9.6e-7) == []


def test_a_k1_run_may_log_a_negative_kl() -> None:
    judge = HealthJudge(DEFAULT_THRESHOLDS)
    judge.configure({"kl_estimator": "k1"})
    assert fold_one(judge, 0, approx_kl=-0.01) == []


def test_update_indices_must_increase() -> None:
    judge = HealthJudge(DEFAULT_THRESHOLDS)
    assert fold_one(judge, 5) == []
    assert fold_one(judge, 3) == ["update index 3 after 5: not increasing"]
    assert fold_one(judge, -1)[0] == "update index -1 is negative"
    assert judge.violations == 2


def test_a_violation_is_critical_only_while_it_is_the_latest() -> None:
    judge = HealthJudge(Thresholds(()))
    fold_one(judge, 0, clip_fraction=2.0)
    assert judge.latest_violations
    fold_one(judge, 1, clip_fraction=0.1)
    assert not judge.latest_violations and judge.violations == 1


def test_reference_kl_bounds_follow_the_estimators_the_run_names() -> None:
    judge = HealthJudge(DEFAULT_THRESHOLDS)
    assert fold_one(judge, 0, ref_kl=-0.01, ref_kl_reward_penalty=-0.1) == []  # unknown
    judge.configure({"ref_kl_loss_estimator": "low_var_kl", "ref_kl_reward_estimator": "k1+"})
    assert fold_one(judge, 1, ref_kl=-0.01, ref_kl_reward_penalty=-0.1) == [
        "ref_kl -0.01 outside >= 0 (the low_var_kl KL estimator is never negative; if this "
        'log\'s is signed, declare it: ref_kl_loss_estimator = "k1" in run_started.config, or '
        "in the import map)"
    ]
    assert fold_one(judge, 2, ref_kl_coef=-1.0)[0].startswith("ref_kl_coef -1 outside >= 0")
    assert fold_one(judge, 3, approx_kl=-0.5)[0].startswith("approx_kl -0.5 outside >= 0")


# ------------------------------------------------- one update at a time = the whole run at once

JUDGED = (
    "approx_kl", "clip_fraction", "grad_norm", "explained_variance", "entropy_normalized",
    "entropy", "ref_kl", "max_length_rate", "return_std", "return_mean", "value_loss",
    "learning_rate", "ratio_min",
)  # fmt: skip
"""Metrics the property's runs measure (every shipped rule's, the returns that gate EV, a
few unruled ones with range contracts); every other column is not measured."""
_VALUE = st.one_of(
    st.none(),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, math.nan, math.inf, -math.inf, 0.5, 2.0]),
    st.floats(min_value=-5.0, max_value=5.0),
)
_UPDATE = st.fixed_dictionaries({metric: _VALUE for metric in JUDGED})


def _state(judge: HealthJudge) -> str:
    """Everything the judge holds that a verdict reads, as text (NaN equal to NaN)."""
    rules = {
        metric: (
            rule.tally,
            rule.latest,
            rule.streak_warning,
            rule.streak_critical,
            None if rule.window is None else list(rule.window._order),
        )
        for metric, rule in judge.rules.items()
    }
    scalars = (
        judge.nonfinite_updates,
        judge.first_nonfinite_update,
        judge.violations,
        judge.first_violation,
        judge.latest_violations,
        judge.last_update,
        judge.last_step,
    )
    return repr((rules, {m: vars(s) for m, s in judge.stats.items()}, scalars))


def _columns(rows: Sequence[dict[str, float | None]]) -> dict[str, list[float | None]]:
    return {m: [row.get(m) for row in rows] for m in PPO_METRICS}


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(_UPDATE, min_size=1, max_size=40), cuts=st.sets(st.integers(1, 39)))
def test_folding_one_update_at_a_time_equals_folding_the_run_at_once(
    rows: list[dict[str, float | None]], cuts: set[int]
) -> None:
    """The one-update path (what a live gate folds) and the column path (what ``check``
    folds) leave the same judgement, found violations included; so do any batches."""
    updates = list(range(len(rows)))
    steps = [10 * u for u in updates]
    whole = HealthJudge(DEFAULT_THRESHOLDS)
    found_whole = whole.fold(updates, _columns(rows), steps)
    single = HealthJudge(DEFAULT_THRESHOLDS)
    found_single = []
    for u, row in zip(updates, rows, strict=True):
        found_single += single.fold([u], _columns([row]), [10 * u])
    assert _state(single) == _state(whole)
    assert repr(found_single) == repr(found_whole)
    batched = HealthJudge(DEFAULT_THRESHOLDS)
    bounds = [0, *sorted(c for c in cuts if c < len(rows)), len(rows)]
    for low, high in itertools.pairwise(bounds):
        batched.fold(updates[low:high], _columns(rows[low:high]), steps[low:high])
    assert _state(batched) == _state(whole)


# ------------------------------------------------------- non-finite outside the columns


def test_an_update_nonfinite_in_a_column_and_a_nested_field_counts_once() -> None:
    judge = HealthJudge(DEFAULT_THRESHOLDS)
    columns = {m: [0.01, math.nan if m == "approx_kl" else 0.01, 0.01] for m in PPO_METRICS}
    paths = ["ppo_update.reward_components.format"]
    judge.fold([0, 1, 2], columns, elsewhere=[(1, paths), (2, paths)])
    assert (judge.nonfinite_updates, judge.first_nonfinite_update) == (2, 1)
    tally = judge.nonfinite_fields["ppo_update.reward_components.format"]
    assert (tally.count, tally.first_update) == (2, 1)
    one = HealthJudge(DEFAULT_THRESHOLDS)
    one.fold([5], {m: [0.01] for m in PPO_METRICS}, elsewhere=[(5, paths)])
    assert (one.nonfinite_updates, one.first_nonfinite_update) == (1, 5)


def test_nonfinite_events_of_other_kinds_are_tallied_by_kind_and_path() -> None:
    judge = HealthJudge(DEFAULT_THRESHOLDS)
    judge.fold_event("rollout", 4, ["rollout.steps_per_second"])
    judge.fold_event("rollout", 6, ["rollout.steps_per_second", "rollout.episode_return_mean"])
    judge.fold_event("run_finished", None, ["run_finished.duration_seconds"])
    assert judge.nonfinite_events == {"rollout": 2, "run_finished": 1}
    fields = {p: (t.count, t.first_update) for p, t in judge.nonfinite_fields.items()}
    assert fields == {
        "rollout.steps_per_second": (2, 4),
        "rollout.episode_return_mean": (1, 6),
        "run_finished.duration_seconds": (1, None),
    }
    assert judge.nonfinite_updates == 0


def test_paths_past_the_kept_number_are_counted_not_named() -> None:
    judge = HealthJudge(DEFAULT_THRESHOLDS)
    paths = [f"ppo_update.reward_components.k{i}" for i in range(FIELDS_KEPT + 5)]
    judge.fold([0], {m: [0.01] for m in PPO_METRICS}, elsewhere=[(0, paths)])
    assert len(judge.nonfinite_fields) == FIELDS_KEPT and judge.nonfinite_unlisted == 5
