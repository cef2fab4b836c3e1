"""Token-level GRPO end to end: ``ppo train --config examples/token_grpo.toml`` (shortened)
records the schema 1.5 contract (algorithm, KL declarations, policy epochs, rewards,
equal-reward groups, lengths, tokens, clip regions), figures that match rollouts.jsonl,
and ``sanctum check`` passes it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from ppo.cli import main as ppo_main
from sanctum.cli import main as sanctum_main
from telemetry import PPOUpdate, RunStarted, read_events
from telemetry.rollouts import RolloutRecord, iter_records
from tests.schema_support import assert_valid_log

GROUP, BATCH, UPDATES = 4, 32, 3
SHORT = [
    "--set", f"updates={UPDATES}", "--set", f"rollouts_per_update={BATCH}",
    "--set", f"group_size={GROUP}", "--set", "warm_start_steps=40", "--set", "max_new_tokens=7",
]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    argv = ["train", "--config", "examples/token_grpo.toml", "--headless"]
    assert ppo_main([*argv, "--run-dir", str(runs), "--run-id", "grpo", *SHORT]) == 0
    return runs / "grpo"


def test_run_started_declares_grpo_its_kl_and_its_epochs(run: Path) -> None:
    started = read_events(run / "events.jsonl").events[0]
    assert isinstance(started, RunStarted)
    p = started.payload
    assert (p.algorithm, p.policy_epochs, p.config["group_size"]) == ("grpo", 2, GROUP)
    assert p.kl is not None
    assert (p.kl["ref_kl"].against, p.kl["ref_kl"].estimator) == ("reference", "low_var_kl")
    assert p.kl["approx_kl"].against == "old_policy"  # two epochs: r moves


def test_update_fields_match_the_samples(run: Path) -> None:
    records = [r for r in iter_records(run / "rollouts.jsonl") if isinstance(r, RolloutRecord)]
    by_update: dict[int, list[RolloutRecord]] = defaultdict(list)
    for r in records:
        by_update[r.id // BATCH].append(r)
    updates = [
        e.payload for e in read_events(run / "events.jsonl").events if isinstance(e, PPOUpdate)
    ]
    assert [u.update for u in updates] == list(range(UPDATES))
    for u in updates:
        rs = by_update[u.update]
        groups = [rs[i : i + GROUP] for i in range(0, BATCH, GROUP)]
        assert all(len({tuple(r.input_ids) for r in g}) == 1 for g in groups)  # one prompt each
        equal = sum(len({r.reward_final for r in g}) == 1 for g in groups) / len(groups)
        assert u.reward_zero_std_frac == pytest.approx(equal)
        rewards = [r.reward_final for r in rs]
        assert u.reward_mean == pytest.approx(sum(rewards) / BATCH, abs=1e-6)
        assert u.reward_std is not None and u.reward_std >= 0.0
        lengths = [r.num_generated for r in rs]
        assert u.tokens == sum(lengths)
        assert (u.completion_length_min, u.completion_length_max) == (min(lengths), max(lengths))
        assert u.completion_length_mean == pytest.approx(sum(lengths) / BATCH)
        cut = sum(r.terminated_by == "max_new_tokens" for r in rs) / BATCH
        assert u.completion_truncated_frac == pytest.approx(cut)
        assert u.clip_fraction_low is not None and u.clip_fraction_high is not None
        assert u.clip_fraction_region == pytest.approx(u.clip_fraction_low + u.clip_fraction_high)
        assert u.value_loss is None and u.explained_variance is None  # no critic
        assert u.ref_kl is not None and u.approx_kl is not None


def test_sanctum_check_passes_it_and_the_log_is_valid(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sanctum_main(["check", str(run)]) == 0
    capsys.readouterr()
    assert_valid_log(run / "events.jsonl")


def test_sanctum_says_its_global_step_counts_tokens(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = read_events(run / "events.jsonl").events
    started = events[0]
    assert isinstance(started, RunStarted) and started.payload.step_unit == "tokens"
    step = [e.payload for e in events if isinstance(e, PPOUpdate)][-1].global_step
    assert sanctum_main(["summary", str(run)]) == 0
    progress = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("progress"))
    assert f", {step} tokens, " in progress
    assert sanctum_main(["watch", str(run), "--once"]) == 0
    banner = capsys.readouterr().out.splitlines()[1]
    assert f"  {step:,} tokens  " in banner and banner.endswith(" tokens/s")
