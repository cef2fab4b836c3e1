"""Token-level PPO end to end: ``ppo train --config examples/token_ppo.toml`` (shortened)
records events and rollouts; every learning signal is recomputed from rollouts.jsonl and
matches what the ppo_update events say; ``sanctum check`` and ``sanctum rollouts`` read it."""

from __future__ import annotations

import contextlib
import io
import math
from collections import defaultdict
from pathlib import Path

import msgspec
import pytest

from ppo.cli import main as ppo_main
from sanctum.cli import main as sanctum_main
from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.tui.app import SanctumApp
from sanctum.tui.widgets import HealthStatusPanel
from telemetry import PPOUpdate, RunStarted, read_events
from telemetry.rollouts import RolloutRecord, iter_records
from tests.sanctum.app_support import wait_until
from tests.schema_support import assert_valid_log

SHORT = [
    "--set", "updates=4", "--set", "rollouts_per_update=32", "--set", "warm_start_steps=40",
    "--set", "max_new_tokens=7", "--set", "length_penalty=0.01",
]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    argv = ["train", "--config", "examples/token_ppo.toml", "--headless"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = ppo_main([*argv, "--run-dir", str(runs), "--run-id", "tok", *SHORT])
    assert code == 0
    (runs / "printed.txt").write_text(printed.getvalue(), encoding="utf-8")
    return runs / "tok"


def _records(run: Path) -> list[RolloutRecord]:
    items = list(iter_records(run / "rollouts.jsonl"))
    assert all(isinstance(r, RolloutRecord) for r in items)
    return items  # type: ignore[return-value]


def test_every_record_has_exactly_the_design_fields(run: Path) -> None:
    design = {
        "id", "input_ids", "generated_ids", "terminated_by", "num_generated", "digit_probs",
        "digit_pred", "digit_true", "reward_full", "partial_scale", "keep_prob",
        "applied_mask", "applied_count", "correct_count", "reward_partial", "length_penalty",
        "reward_final", "actions", "logp_old", "entropy", "values",
    }  # fmt: skip
    lines = (run / "rollouts.jsonl").read_bytes().splitlines()
    assert len(lines) == 4 * 32
    assert all(set(msgspec.json.decode(line)) == design for line in lines)
    assert [r.id for r in _records(run)] == list(range(128))


def _reward(r: RolloutRecord, answer_id: int) -> float:
    """The design's reward, from the record's own fields."""
    assert (r.terminated_by == "answer") == (r.generated_ids[-1] == answer_id)
    assert r.digit_pred == [max(range(10), key=p.__getitem__) for p in r.digit_probs]
    assert all(m for m, t in zip(r.applied_mask, r.digit_true, strict=True) if t != 0)
    right = [p == t for p, t in zip(r.digit_pred, r.digit_true, strict=True)]
    applied = sum(r.applied_mask)
    correct = sum(a and ok for a, ok in zip(r.applied_mask, right, strict=True))
    assert (r.applied_count, r.correct_count) == (applied, correct)
    partial = r.partial_scale * correct / applied if applied else 0.0
    assert r.reward_partial == pytest.approx(partial)
    full = 1.0 if all(right) and r.terminated_by == "answer" else 0.0
    assert r.reward_full == full
    reward = 0.0 if r.terminated_by == "max_new_tokens" else (full or partial)
    return reward - r.length_penalty * r.num_generated


def test_rewards_recomputed_from_the_file_match(run: Path) -> None:
    events = read_events(run / "events.jsonl").events
    started = events[0]
    assert isinstance(started, RunStarted)
    answer_id = started.payload.config["vocab"].index("<ANSWER>")
    for r in _records(run):
        assert r.num_generated == len(r.generated_ids) == len(r.actions) == len(r.logp_old)
        assert len(r.entropy) == len(r.values) == r.num_generated <= 7
        assert all(0.0 <= h <= math.log(11) + 1e-6 for h in r.entropy)
        assert all(lp <= 0.0 for lp in r.logp_old)
        assert r.reward_final == pytest.approx(_reward(r, answer_id), abs=1e-6)


def test_update_figures_recomputed_from_the_file_match(run: Path) -> None:
    by_update: dict[int, list[RolloutRecord]] = defaultdict(list)
    for r in _records(run):
        by_update[r.id // 32].append(r)
    updates = [
        e.payload for e in read_events(run / "events.jsonl").events if isinstance(e, PPOUpdate)
    ]
    assert [u.update for u in updates] == [0, 1, 2, 3]
    for u in updates:
        rs = by_update[u.update]
        returns = [r.reward_final for r in rs]
        assert u.return_mean == pytest.approx(sum(returns) / len(returns), abs=1e-6)
        # the episodic advantage A_t = R - V_t: every generated token of a rollout has its R
        tokens = [(r.reward_final, v) for r in rs for v in r.values]
        values = [v for _, v in tokens]
        assert u.value_mean == pytest.approx(sum(values) / len(values), abs=1e-5)
        rets = [g for g, _ in tokens]
        mean_r = sum(rets) / len(rets)
        var_r = sum((g - mean_r) ** 2 for g in rets) / len(rets)
        errs = [g - v for g, v in tokens]
        mean_e = sum(errs) / len(errs)
        var_e = sum((e - mean_e) ** 2 for e in errs) / len(errs)
        assert u.explained_variance == pytest.approx(1 - var_e / var_r, abs=1e-4)
        stopped = sum(r.terminated_by == "max_new_tokens" for r in rs) / len(rs)
        assert u.max_new_tokens_rate == pytest.approx(stopped)
        assert u.full_reward_rate == pytest.approx(sum(r.reward_full for r in rs) / len(rs))
        # ref_kl_loss_coef 0: the reference KL is measured, its loss term is off (absent)
        assert u.ref_kl is not None and u.ref_kl_coef is None and u.ref_kl_loss is None


def test_sanctum_reads_the_run(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sanctum_main(["check", str(run)]) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    printed = (run.parent / "printed.txt").read_text(encoding="utf-8").splitlines()
    assert printed[-1] == f"verdict: {said}  (sanctum check {run})"  # ppo train's last line
    assert sanctum_main(["rollouts", str(run), "--worst", "2"]) == 0
    out = capsys.readouterr().out
    assert "128 rollouts; the 2 lowest-reward" in out
    assert (
        out.count("reward_final") == 2 and "<ANSWER>" in out
    ) or "stopped by max_new_tokens" in out


async def test_the_dashboard_shows_the_token_figures(run: Path) -> None:
    app = SanctumApp(run / "events.jsonl", DEFAULT_THRESHOLDS)
    async with app.run_test(size=(120, 36)) as pilot:
        snapshot = await wait_until(pilot, lambda s: s.update == 3, "the run's last update")
        panel = app.query_one(HealthStatusPanel)
        # the Length rule's row (the truncated share) shows the token trainer's max_length_rate
        for metric in (
            "ref_kl",
            "completion_truncated_frac",
            "full_reward_rate",
            "max_new_tokens_rate",
        ):
            assert panel.row(metric).display, metric
            assert snapshot.metric(metric).value is not None, metric
        assert not panel.row("kl_final").display  # not reported by token-level runs
        assert snapshot.run.episode_length is not None and snapshot.run.episode_return is not None


def test_every_line_is_valid_against_the_schema(run: Path) -> None:
    assert_valid_log(run / "events.jsonl")
