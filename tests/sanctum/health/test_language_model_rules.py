"""The rules of language-model RL runs, fitted to what each run declares (issue 29).

Each log is GRPO-shaped (or PPO-shaped where the classic table must hold), written by the
project's Recorder, and judged by ``sanctum check`` in a process of its own: the rows a
run shows, and the verdict that names the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sanctum.health.thresholds import DEFAULT_THRESHOLDS, RunKind
from telemetry.events import KLMeasure, PPOUpdatePayload, RunStartedPayload, TrainerInfo
from telemetry.testing import LogBuilder
from tests.sanctum.recorded import check_report

Fields = Callable[[int], Mapping[str, Any]]

REF_TOKEN = {"ref_kl": KLMeasure(against="reference", estimator="k3", unit="token")}
REF_SEQUENCE = {"ref_kl": KLMeasure(against="reference", estimator="k1", unit="sequence")}


def healthy_grpo(u: int) -> dict[str, Any]:
    """A GRPO update that every rule passes: the reward creeps up, lengths stay short."""
    return {
        "ref_kl": 0.02,
        "entropy": 3.5 - 0.005 * u,
        "grad_norm": 1.0,
        "reward_mean": 0.3 + 0.005 * u,
        "reward_std": 0.3,
        "reward_zero_std_frac": 0.1,
        "completion_length_mean": 40.0,
        "completion_truncated_frac": 0.05,
        "clip_fraction_region": 0.0,
    }


def write_run(
    path: Path,
    fields: Fields = healthy_grpo,
    updates: int = 40,
    algorithm: str = "grpo",
    kl: Mapping[str, KLMeasure] | None = REF_TOKEN,
    policy_epochs: int | None = 1,
    seconds: Callable[[int], float] = lambda u: 3.0,
) -> Path:
    """A finished run: ``run_started`` as declared, then one update per ``fields(u)``, each
    ``seconds(u)`` after the one before."""
    log = LogBuilder(path, run_id="grpo-test", tick=0.0)
    log.emit(
        RunStartedPayload(
            schema=1,
            trainer=TrainerInfo(name="trl", version="1.16"),
            algorithm=algorithm,
            kl=dict(kl) if kl is not None else None,
            policy_epochs=policy_epochs,
        )
    )
    for u in range(updates):
        log.now += seconds(u)
        log.emit(PPOUpdatePayload(update=u, global_step=u + 1, early_stopped=False, **fields(u)))
    log.finish()
    log.close()
    return path


def rows(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["label"]: row for row in report["rows"] if row.get("rule")}


def with_(base: Fields, **changes: Callable[[int], Any]) -> Fields:
    """``base`` with some fields computed otherwise (a value None: not measured)."""
    return lambda u: {**base(u), **{k: f(u) for k, f in changes.items()}}


# -- which rules a run shows ---------------------------------------------------------------


def test_a_healthy_grpo_run_passes_with_the_rules_its_algorithm_fits(tmp_path: Path) -> None:
    report = check_report(write_run(tmp_path / "e.jsonl"))
    assert report["exit_code"] == 0, report["verdict_text"]
    assert report["verdict_text"] == "OK"
    shown = rows(report)
    # critic-free: no EV; one pass per batch and no approx_kl: the ratio is 1, no KL or Clip
    assert "EV" not in shown and "KL" not in shown and "Clip" not in shown
    assert {"RefKL", "Length", "Entropy fall", "Equal rewards", "Reward std", "Grad"} <= set(shown)
    assert shown["Length"]["updates_measured"] == 40


def test_a_classic_ppo_run_keeps_the_classic_table() -> None:
    assert DEFAULT_THRESHOLDS.for_run(RunKind()) is DEFAULT_THRESHOLDS
    facts = RunKind("grpo", REF_TOKEN, policy_epochs=2)
    fitted = DEFAULT_THRESHOLDS.for_run(facts)
    assert fitted.rule("explained_variance") is None
    clip = fitted.rule("clip_fraction")
    assert clip is not None and clip.span == 2
    assert clip.describe() == "median of 10 max of each 2 clip_fraction > 0.5 (warns only)"


def test_every_rule_of_a_language_model_run_says_what_it_judges() -> None:
    fitted = DEFAULT_THRESHOLDS.for_run(RunKind("grpo", REF_SEQUENCE, policy_epochs=1))
    described = {r.label: r.describe() for r in fitted.rules}
    assert described["Length"] == (
        "median of 5 completion_truncated_frac > 0.9 / > 0.95, 2 updates in a row; critical "
        "only after a rise of 0.25 from its lowest median while the median reward_mean "
        "rose; without it, warns after 10 updates"
    )
    assert described["Entropy fall"] == (
        "entropy / median of the run's first 10 < 0.3 (warns only), 3 updates in a row"
    )
    assert described["Reward"] == (
        "reward_components: one rising while another falls, over 20 > 0.2 (warns only), "
        "3 updates in a row; reward_mean missing once measured is critical"
    )
    assert described["Equal rewards"] == (
        "median of 10 reward_zero_std_frac > 0.5 / > 0.8, 3 updates in a row"
    )
    assert described["RefKL"] == (
        "ref_kl / completion_length_mean (at least 1) > 0.6 / > 1, 2 updates in a row "
        "(at once past 3), only with completion_length_mean"
    )


# -- clip: the region share, and the passes per batch ----------------------------------------


def test_clip_judges_the_worst_pass_of_each_batch(tmp_path: Path) -> None:
    """num_iterations 2: every other update's ratio is 1 by construction (clip 0); the
    max over each 2 updates shows the batch's clipping, so the rule warns."""
    clipping = with_(healthy_grpo, clip_fraction_region=lambda u: 0.9 if u % 2 else 0.0)
    report = check_report(write_run(tmp_path / "e.jsonl", clipping, policy_epochs=2))
    assert report["verdict_text"].startswith("WARN: Clip"), report["verdict_text"]
    assert rows(report)["Clip"]["updates_warning"] > 0


def test_the_kl_rule_divides_by_the_region_share_when_the_clip_fraction_is_absent(
    tmp_path: Path,
) -> None:
    """A PPO run (with a critic) that reports only the region share: KL 0.1 per a clip
    share of 0.5 is 0.2, healthy; per the floor (0.01) it would be 10, a warning."""
    ppo = with_(
        healthy_grpo,
        approx_kl=lambda u: 0.1,
        clip_fraction_region=lambda u: 0.5,
        explained_variance=lambda u: 0.5,
    )
    report = check_report(write_run(tmp_path / "e.jsonl", ppo, algorithm="ppo", policy_epochs=4))
    shown = rows(report)
    assert shown["KL"]["updates_warning"] == 0 and shown["KL"]["worst"] == 0.2
    assert shown["Clip"]["updates_measured"] == 40


# -- the reference KL in its unit -------------------------------------------------------------


def test_a_per_sequence_reference_kl_is_judged_per_token(tmp_path: Path) -> None:
    """TRL PPO's objective/kl: 12 nats over a 60-token response is 0.2 per token."""
    per_sequence = with_(healthy_grpo, ref_kl=lambda u: 12.0, completion_length_mean=lambda u: 60.0)
    report = check_report(
        write_run(tmp_path / "e.jsonl", per_sequence, algorithm="ppo", kl=REF_SEQUENCE)
    )
    assert report["exit_code"] == 0, report["verdict_text"]
    assert rows(report)["RefKL"]["worst"] == 0.2


def test_a_per_sequence_reference_kl_without_lengths_is_not_judged(tmp_path: Path) -> None:
    per_sequence = with_(
        healthy_grpo,
        ref_kl=lambda u: 12.0,
        completion_length_mean=lambda u: None,
        completion_truncated_frac=lambda u: None,
    )
    report = check_report(write_run(tmp_path / "e.jsonl", per_sequence, kl=REF_SEQUENCE))
    ref = rows(report)["RefKL"]
    assert ref["passed"] and ref["updates_critical"] == 0
    assert "per-sequence KL without completion lengths" in ref["message"]


# -- length: the truncated share together with the reward -----------------------------------


def test_an_untrained_start_at_the_cap_is_no_alarm(tmp_path: Path) -> None:
    start = with_(healthy_grpo, completion_truncated_frac=lambda u: 1.0 if u < 9 else 0.05)
    report = check_report(write_run(tmp_path / "e.jsonl", start))
    assert report["verdict_text"] == "OK"


def test_the_padding_hack_fails_length(tmp_path: Path) -> None:
    """Responses run to the cap while the reward pays for it."""
    hack = with_(
        healthy_grpo,
        completion_truncated_frac=lambda u: min(1.0, 0.1 + 0.05 * u),
        reward_mean=lambda u: 0.2 + 0.02 * u,
    )
    report = check_report(write_run(tmp_path / "e.jsonl", hack))
    assert report["exit_code"] == 1
    assert report["verdict_text"].startswith("FAIL: Length"), report["verdict_text"]


def test_the_truncated_share_alone_warns(tmp_path: Path) -> None:
    """At the cap, but the reward does not rise with it: a warning, not the hack."""
    capped = with_(
        healthy_grpo,
        completion_truncated_frac=lambda u: 0.1 if u < 15 else 0.95,
        reward_mean=lambda u: 0.5,
    )
    report = check_report(write_run(tmp_path / "e.jsonl", capped))
    assert report["exit_code"] == 0
    assert report["verdict_text"].startswith("WARN: Length"), report["verdict_text"]


def test_the_token_trainers_max_length_rate_is_the_truncated_share(tmp_path: Path) -> None:
    """A classic PPO run with the older field: the classic Length rule judges it."""
    ppo = with_(
        healthy_grpo,
        completion_truncated_frac=lambda u: None,
        max_length_rate=lambda u: 0.9 if u >= 20 else 0.0,
        approx_kl=lambda u: 0.01,
        clip_fraction=lambda u: 0.1,
        explained_variance=lambda u: 0.5,
    )
    report = check_report(write_run(tmp_path / "e.jsonl", ppo, algorithm="ppo", kl=None))
    assert report["verdict_text"].startswith("FAIL: Length"), report["verdict_text"]


# -- rewards all equal; entropy falling from its start; a slow step ----------------------------


def test_most_groups_with_equal_rewards_fail(tmp_path: Path) -> None:
    equal = with_(healthy_grpo, reward_zero_std_frac=lambda u: 1.0, reward_std=lambda u: 0.0)
    report = check_report(write_run(tmp_path / "e.jsonl", equal))
    assert report["verdict_text"].startswith("FAIL: Equal rewards"), report["verdict_text"]


def test_a_gradual_entropy_fall_warns(tmp_path: Path) -> None:
    """From 3.9 nats to a quarter of it, 3% an update: no jump, but a fall the jump rule
    misses. It warns only: a token task with one right answer converges to a near
    deterministic policy in healthy runs too (our token-level examples fall to 0.06 of
    their start), so the fall alone fails nothing."""
    falling = with_(healthy_grpo, entropy=lambda u: 3.9 * (0.97 ** max(0, u - 10)))
    report = check_report(write_run(tmp_path / "e.jsonl", falling, updates=60))
    assert report["exit_code"] == 0
    assert report["verdict_text"].startswith("WARN: Entropy fall"), report["verdict_text"]
    assert "Entropy shift" not in rows(report)


def test_one_slow_step_of_a_trl_paced_run_is_no_stall(tmp_path: Path) -> None:
    report = check_report(
        write_run(tmp_path / "e.jsonl", seconds=lambda u: 70.0 if u == 20 else 3.0)
    )
    assert report["verdict_text"] == "OK"


def test_reward_components_moving_apart_warn(tmp_path: Path) -> None:
    """Format pays more and more while correctness pays less: a warning (the total may
    still rise)."""
    apart = with_(
        healthy_grpo,
        reward_components=lambda u: {
            "format": min(1.0, 0.1 + 0.03 * u),
            "correct": max(0.0, 0.8 - 0.03 * u),
        },
    )
    report = check_report(write_run(tmp_path / "e.jsonl", apart))
    assert report["exit_code"] == 0
    assert report["verdict_text"].startswith("WARN: Reward 14x"), report["verdict_text"]
    together = with_(
        healthy_grpo,
        reward_components=lambda u: {"format": 0.1 + 0.01 * u, "correct": 0.2 + 0.01 * u},
    )
    assert check_report(write_run(tmp_path / "t.jsonl", together))["verdict_text"] == "OK"


def test_a_thresholds_file_tunes_the_form_a_run_gets() -> None:
    from sanctum.health.thresholds_toml import thresholds_from_mapping

    tuned = thresholds_from_mapping(
        {"completion_truncated_frac": {"critical": 0.9}, "explained_variance": {"warning": -1}},
        DEFAULT_THRESHOLDS,
    )
    fitted = tuned.for_run(RunKind("grpo", REF_TOKEN))
    length = fitted.rule("completion_truncated_frac")
    assert length is not None and (length.critical, length.rise_with) == (0.9, "reward_mean")
    assert fitted.rule("explained_variance") is None  # no critic: the file cannot bring it back


def test_a_reward_that_vanishes_fails(tmp_path: Path) -> None:
    """TRL logs a NaN reward as no reward at all: once measured, a missing reward fails."""
    vanishing = with_(
        healthy_grpo,
        reward_mean=lambda u: 0.3 if u < 6 else None,
        reward_std=lambda u: 0.3 if u < 6 else None,
    )
    report = check_report(write_run(tmp_path / "e.jsonl", vanishing))
    assert report["verdict_text"].startswith("FAIL: Reward 34x"), report["verdict_text"]
    assert rows(report)["Reward"]["first_critical"] == 6
    # two passes per batch: TRL logs the reward once per batch, every other update
    once_a_batch = with_(healthy_grpo, reward_mean=lambda u: None if u % 2 else 0.3)
    report = check_report(write_run(tmp_path / "b.jsonl", once_a_batch, policy_epochs=2))
    assert report["verdict"] == "OK", report["verdict_text"]
    assert report["verdict_unmeasured"] == ["KL"]  # two epochs: the KL rule fits, unfed
