"""Pure health levels and verdicts: each threshold edge, pending vs zero, non-finite,
warm-up, and how levels make one verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest

from sanctum.health.judge import HealthJudge
from sanctum.health.levels import HealthReport, Level, health_report, level_of
from sanctum.health.rule import Rule
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, Thresholds
from sanctum.metrics import PPO_METRICS

PLAIN = Thresholds(
    (
        Rule("approx_kl", "KL", "above", 0.015, 0.03),
        Rule("clip_fraction", "Clip", "above", 0.25, 0.30),
        Rule("grad_norm", "Grad", "above", 5.0, 10.0),
        Rule("explained_variance", "EV", "below", 0.3, 0.0, warmup_updates=10),
    )
)
"""Plain rules (each value on its own, no persistence): the verdict logic, nothing else."""


def evaluate(
    values: Mapping[str, float | None], thresholds: Thresholds, update: int | None
) -> HealthReport:
    """One update judged alone by a fresh judge."""
    judge = HealthJudge(thresholds)
    columns = {m: (values.get(m),) for m in PPO_METRICS}
    judge.fold((update if update is not None else 0,), columns)
    return health_report(judge.levels(values), thresholds)


def default_rule(metric: str) -> Rule:
    rule = DEFAULT_THRESHOLDS.rule(metric)
    assert rule is not None
    return rule


KL = default_rule("approx_kl")
EV = default_rule("explained_variance")


def past(x: float, direction: str) -> float:
    """The next float past ``x`` in the bad direction."""
    return math.nextafter(x, math.inf if direction == "above" else -math.inf)


@pytest.mark.parametrize("rule", DEFAULT_THRESHOLDS.rules, ids=lambda r: r.metric)
def test_each_edge_exactly_at_and_just_past(rule: Rule) -> None:
    u = rule.warmup_updates  # first judged update
    assert level_of(rule, rule.warning, u) is Level.HEALTHY
    assert level_of(rule, past(rule.warning, rule.direction), u) is Level.WARNING
    if rule.critical is None:  # a rule that only warns: however far past its line
        far = rule.warning + (1e9 if rule.direction == "above" else -1e9)
        assert level_of(rule, far, u) is Level.WARNING
        return
    assert level_of(rule, rule.critical, u) is Level.WARNING
    assert level_of(rule, past(rule.critical, rule.direction), u) is Level.CRITICAL


def test_not_measured_is_pending_and_zero_is_judged() -> None:
    assert level_of(KL, None, 5) is Level.PENDING
    assert level_of(KL, 0.0, 5) is Level.HEALTHY
    assert level_of(EV, None, 50) is Level.PENDING
    assert level_of(EV, EV.warning, 50) is Level.HEALTHY  # at the line, not past it
    assert level_of(EV, past(EV.warning, "below"), 50) is Level.WARNING
    assert level_of(EV, 0.0, 50) is Level.HEALTHY


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_is_critical_always(value: float) -> None:
    assert level_of(KL, value, 0) is Level.CRITICAL
    assert level_of(EV, value, 0) is Level.CRITICAL  # even inside the warm-up
    assert level_of(EV, value, None) is Level.CRITICAL


def test_warm_up_is_pending_until_its_last_update() -> None:
    assert level_of(EV, -5.0, 0) is Level.PENDING
    assert level_of(EV, -5.0, 9) is Level.PENDING
    assert level_of(EV, -5.0, 10) is Level.WARNING  # judged from update 10 (EV only warns)
    assert level_of(EV, -5.0, None) is Level.PENDING
    assert KL.critical is not None
    too_far = past(KL.critical, KL.direction)
    assert level_of(KL, too_far, None) is Level.CRITICAL  # no warm-up: judged without an index


def test_levels_are_ordered_and_named_for_css() -> None:
    assert Level.PENDING < Level.HEALTHY < Level.WARNING < Level.CRITICAL
    assert max([Level.WARNING, Level.CRITICAL, Level.PENDING]) is Level.CRITICAL
    assert [lvl.value for lvl in Level] == ["pending", "healthy", "warning", "critical"]
    assert Level.WARNING >= Level.WARNING
    assert not Level.HEALTHY > Level.WARNING


def test_verdict_ok_warn_fail() -> None:
    ok = evaluate({"approx_kl": 0.01, "clip_fraction": 0.1}, PLAIN, 3)
    assert (ok.verdict, ok.fired, ok.worst) == ("OK", (), Level.HEALTHY)
    warn = evaluate({"approx_kl": 0.02, "clip_fraction": 0.1}, PLAIN, 3)
    assert (warn.verdict, warn.fired) == ("WARN: KL", ("approx_kl",))
    two = evaluate({"approx_kl": 0.02, "clip_fraction": 0.26}, PLAIN, 3)
    assert two.verdict == "WARN: KL (+1)"


def test_fail_names_the_first_rule_at_the_worst_level_and_counts_the_rest() -> None:
    values = {"approx_kl": 0.02, "clip_fraction": 0.5, "grad_norm": 11.0}
    report = evaluate(values, PLAIN, 3)
    assert report.verdict == "FAIL: Clip (+2)"
    assert report.fired == ("approx_kl", "clip_fraction", "grad_norm")
    assert report.level("approx_kl") is Level.WARNING
    assert report.worst is Level.CRITICAL


def test_a_non_finite_metric_without_a_rule_fails_by_its_name() -> None:
    report = evaluate({"approx_kl": 0.001, "entropy": math.nan}, PLAIN, 3)
    assert report.verdict == "FAIL: entropy"
    assert report.level("entropy") is Level.CRITICAL
    assert report.level("value_loss") is Level.PENDING  # not in the values: not evaluated


def test_unmeasured_metrics_without_a_rule_do_not_count() -> None:
    report = evaluate({"approx_kl": 0.001, "entropy": None}, PLAIN, 3)
    assert report.verdict == "OK"
    assert report.level("entropy") is Level.PENDING


def test_nothing_measured_is_pending_not_ok() -> None:
    report = health_report({}, PLAIN)
    assert report.verdict == "PENDING"
    assert report.worst is Level.PENDING
    assert set(report.levels) == set(PLAIN.metrics)
    assert all(lvl is Level.PENDING for lvl in report.levels.values())


def test_report_covers_every_rule_even_when_absent() -> None:
    report = evaluate({"approx_kl": 0.001}, PLAIN, 20)
    assert report.level("grad_norm") is Level.PENDING
    assert report.verdict == "OK"


def test_the_verdict_follows_the_table_it_is_given() -> None:
    strict = Thresholds((Rule("approx_kl", "KL", "above", 0.001, 0.002),))
    assert evaluate({"approx_kl": 0.0015}, strict, 0).verdict == "WARN: KL"
    assert evaluate({"approx_kl": 0.0015}, PLAIN, 0).verdict == "OK"


def test_report_levels_are_read_only() -> None:
    report = evaluate({"approx_kl": 0.001}, PLAIN, 0)
    with pytest.raises(TypeError):
        report.levels["approx_kl"] = Level.CRITICAL  # type: ignore[index]


def test_run_wide_checks_come_after_the_rules_and_name_themselves() -> None:
    levels = {"approx_kl": Level.HEALTHY, "clip_fraction": Level.WARNING}
    checks = {"stall": ("Stall", Level.CRITICAL), "bug": ("Bug", Level.CRITICAL)}
    report = health_report(levels, PLAIN, checks)
    assert report.verdict == "FAIL: Stall (+2)"
    assert report.fired == ("clip_fraction", "stall", "bug")
    ruled_only = health_report({"approx_kl": Level.HEALTHY}, PLAIN, {"bug": ("Bug", Level.PENDING)})
    assert ruled_only.verdict == "OK"  # a check that did not fire does not count
