"""``sanctum import tensorboard`` without ``--map``: TRL's and OpenRLHF's tags, and the map
file's global step, several targets per tag and refused scales.

Logs are written by torch's ``SummaryWriter`` (the writer transformers' TensorBoardCallback
and OpenRLHF use) with the tags, texts and steps those trainers write; one real TRL GRPO
run writes its own through ``report_to="tensorboard"``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from telemetry import KLMeasure, PPOUpdate, RunStarted, read_events
from tests.sanctum.importers.test_tensorboard import sanctum, write_tb
from tests.schema_support import assert_valid_log

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None,
    reason="needs the tensorboard extra: pip install 'sanctum-ppo[tensorboard]'",
)
STEPS = range(1, 9)


def texts(folder: Path, **values: dict[str, Any]) -> None:
    """JSON texts at step 0, as TensorBoardCallback writes ``args`` and ``model_config``."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder))
    for tag, value in values.items():
        writer.add_text(tag, json.dumps(value), 0, walltime=time.time() - 100)
    writer.close()


def imported(
    folder: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[RunStarted, list[PPOUpdate], str]:
    """Import ``folder/tb`` into ``folder/out``: the header, the updates and the report."""
    out = folder / "out"
    code, printed, err = sanctum(
        *("import", "tensorboard", str(folder / "tb"), "--out", str(out), "--outcome"),
        *("completed", *extra),
        capsys=capsys,
    )
    assert code == 0, err
    assert_valid_log(out / "events.jsonl")
    events = read_events(out / "events.jsonl").events
    assert isinstance(events[0], RunStarted)
    return events[0], [e for e in events if isinstance(e, PPOUpdate)], printed


def check(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, printed, _ = sanctum("check", str(folder / "out"), capsys=capsys)
    return code, printed


def grpo_tags(kl: float = 0.01) -> dict[str, list[tuple[int, float]]]:
    """What GRPOTrainer's log lines hold, as TensorBoardCallback writes them."""
    return {
        "train/kl": [(s, kl * s) for s in STEPS],
        "train/reward": [(s, 0.1 * s) for s in STEPS],
        "train/reward_std": [(s, 0.3) for s in STEPS],
        "train/frac_reward_zero_std": [(s, 0.25) for s in STEPS],
        "train/rewards/vowel_share/mean": [(s, 0.1 * s) for s in STEPS],
        "train/completions/mean_length": [(s, 10.0) for s in STEPS],
        "train/completions/clipped_ratio": [(s, 0.0) for s in STEPS],
        "train/entropy": [(s, 3.0) for s in STEPS],
        "train/grad_norm": [(s, 0.5) for s in STEPS],
        "train/learning_rate": [(s, 1e-4) for s in STEPS],
        "train/loss": [(s, 0.01) for s in STEPS],
        "train/epoch": [(s, 0.1 * s) for s in STEPS],
    }


GRPO_ARGS = {"beta": 0.04, "num_iterations": 2, "seed": 3, "loss_type": "dapo", "epsilon": 0.2}


def test_trl_grpo_tags_import_as_the_callback_records_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts(tmp_path / "tb", args=GRPO_ARGS, model_config={"vocab_size": 34})
    write_tb(tmp_path / "tb", grpo_tags(), time.time(), histogram=False)
    started, updates, printed = imported(tmp_path, capsys)
    assert "trl-grpo tags" in printed
    assert "imported 8 updates" in printed
    header = started.payload
    assert (header.algorithm, header.policy_epochs, header.seed) == ("grpo", 2, 3)
    assert header.kl == {"ref_kl": KLMeasure(against="reference", estimator="k3", unit="token")}
    assert (header.config["beta"], header.config["loss_type"]) == (0.04, "dapo")
    assert header.config["tensorboard_tags"]["train/rewards/vowel_share/mean"] == (
        "reward_components.vowel_share"
    )
    assert "train/epoch" in header.config["tensorboard_ignored_tags"]
    first = updates[0].payload
    assert (first.update, first.global_step) == (0, 1)
    assert (first.approx_kl, first.clip_fraction, first.ref_kl) == (None, None, 0.01)
    assert (first.ref_kl_coef, first.reward_zero_std_frac) == (0.04, 0.25)
    assert first.reward_components == {"vowel_share": pytest.approx(0.1)}
    assert first.entropy_normalized == pytest.approx(3.0 / math.log(34))
    assert first.total_loss == pytest.approx(0.01)
    assert check(tmp_path, capsys)[0] == 0


def test_a_trl_grpo_log_whose_reference_kl_blows_up_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts(tmp_path / "tb", args=GRPO_ARGS)
    write_tb(tmp_path / "tb", grpo_tags(kl=0.5), time.time(), histogram=False)
    imported(tmp_path, capsys)
    code, printed = check(tmp_path, capsys)
    assert code == 1
    assert "RefKL" in printed


def test_an_rloo_config_reads_as_rloo_with_its_k1_reference_kl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts(tmp_path / "tb", args={"beta": 0.05, "num_iterations": 1, "normalize_advantages": 1})
    write_tb(tmp_path / "tb", grpo_tags(), time.time(), histogram=False)
    started, _, _ = imported(tmp_path, capsys)
    assert started.payload.algorithm == "rloo"
    assert started.payload.step_unit == "optimizer steps"
    assert started.payload.kl == {
        "ref_kl": KLMeasure(against="reference", estimator="k1", unit="token")
    }


def test_trl_ppo_tags_take_their_global_step_from_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    texts(tmp_path / "tb", args={"kl_estimator": "k3", "num_ppo_epochs": 4, "kl_coef": 0.05})
    write_tb(
        tmp_path / "tb",
        {
            "train/objective/kl": [(s, 0.5) for s in STEPS],  # summed over ~20 tokens
            "train/policy/approxkl_avg": [(s, 0.002) for s in STEPS],
            "train/policy/clipfrac_avg": [(s, 0.05) for s in STEPS],
            "train/policy/entropy_avg": [(s, 2.0) for s in STEPS],
            "train/loss/value_avg": [(s, 0.3) for s in STEPS],
            "train/objective/scores": [(s, 0.1 * s) for s in STEPS],
            "train/lr": [(s, 3e-6) for s in STEPS],
            "train/episode": [(s, 64.0 * s) for s in STEPS],
        },
        time.time(),
        histogram=False,
    )
    started, updates, _ = imported(tmp_path, capsys)
    header = started.payload
    assert header.config["tensorboard_mapping"] == "trl-ppo"
    assert header.config["tensorboard_tags"]["train/episode"] == "global_step"
    assert (header.algorithm, header.policy_epochs) == ("ppo", 4)
    assert header.step_unit == "samples"  # TRL's episode
    assert header.kl is not None
    assert header.kl["ref_kl"] == KLMeasure(against="reference", estimator="k3", unit="sequence")
    assert header.kl["approx_kl"].estimator == "k2"
    assert [u.payload.global_step for u in updates] == [64 * s for s in STEPS]
    last = updates[-1].payload
    assert (last.approx_kl, last.clip_fraction_region, last.ref_kl) == (0.002, 0.05, 0.5)
    assert last.ref_kl_reward_coef == 0.05
    assert check(tmp_path, capsys)[0] == 0


def openrlhf_tags(critic: bool, kl: float = 0.01) -> dict[str, list[tuple[int, float]]]:
    """One OpenRLHF training step's status per step, under ``train/``; with a critic its
    first step trains only the critic (``--critic.freezing_steps 1``)."""
    actor = STEPS[1:] if critic else STEPS
    tags = {
        "train/policy_loss": [(s, -0.01) for s in actor],
        "train/actor_lr": [(s, 5e-7) for s in actor],
        "train/actor_grad_norm": [(s, 0.8) for s in actor],
        "train/ppo_kl": [(s, 0.001) for s in actor],
        "train/ppo_clip_ratio": [(s, 0.02) for s in actor],
        "train/entropy_loss": [(s, 1.5) for s in actor],
        "train/kl": [(s, kl * s) for s in STEPS],
        "train/reward": [(s, 0.1 * s) for s in STEPS],
        "train/return": [(s, 0.1 * s) for s in STEPS],
        "train/response_length": [(s, 200.0) for s in STEPS],
        "train/truncated": [(s, 0.0) for s in STEPS],
        "train/total_length": [(s, 300.0) for s in STEPS],
        "train/rollout/reward_mean": [(s, 0.1 * s) for s in STEPS],
        "train/timing/step_total": [(s, 30.0) for s in STEPS],
    }
    if critic:
        tags["train/critic_loss"] = [(s, 0.2) for s in STEPS]
        tags["train/values"] = [(s, 0.05) for s in STEPS]
    else:
        tags["train/group_reward_std"] = [(s, 0.4) for s in STEPS]
    return tags


def test_openrlhf_ppo_tags_import_with_a_critic_and_a_frozen_actor_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tb(tmp_path / "tb", openrlhf_tags(critic=True), time.time(), histogram=False)
    started, updates, printed = imported(tmp_path, capsys)
    assert "openrlhf tags" in printed
    assert "imported 7 updates" in printed and "1 step(s) lacked approx_kl" in printed
    header = started.payload
    assert header.algorithm == "ppo"
    assert header.kl is not None and header.kl["approx_kl"].estimator == "k1"
    assert header.kl["ref_kl"] == KLMeasure(against="reference", estimator="unknown", unit="token")
    assert header.config["tensorboard_unmapped_tags"] == []
    first = updates[0].payload
    assert (first.update, first.global_step, first.approx_kl) == (0, 2, 0.001)
    assert (first.clip_fraction_region, first.entropy, first.value_loss) == (0.02, 1.5, 0.2)
    assert (first.value_mean, first.learning_rate, first.completion_length_mean) == (
        0.05,
        5e-7,
        200.0,
    )
    assert check(tmp_path, capsys)[0] == 0


def test_openrlhf_critic_free_tags_read_as_grpo_and_a_kl_blow_up_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tb(tmp_path / "tb", openrlhf_tags(critic=False, kl=0.5), time.time(), histogram=False)
    started, updates, _ = imported(tmp_path, capsys)
    assert started.payload.algorithm == "grpo"
    assert started.payload.step_unit == "training steps"
    assert len(updates) == 8 and updates[0].payload.reward_std == 0.4
    code, printed = check(tmp_path, capsys)
    assert code == 1
    assert "RefKL" in printed


MAP = """
global_step = "ppo/samples"
algorithm = "grpo"
[tags]
"ppo/ref_kl" = ["ref_kl", { field = "config.first_ref_kl", scale = 2.0 }]
"ppo/entropy" = "entropy"
"ppo/loss" = { field = "policy_loss", scale = 0 }
"reward/acc" = "reward_components.acc"
"""


def test_a_map_file_names_the_global_step_tag_and_feeds_one_tag_to_two_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tb(
        tmp_path / "tb",
        {
            "ppo/ref_kl": [(s, 0.01 * s) for s in STEPS],
            "ppo/entropy": [(s, 1.0) for s in STEPS],
            "ppo/loss": [(s, 5.0) for s in STEPS],
            "reward/acc": [(s, 0.5) for s in STEPS],
            "ppo/samples": [(s, 100.0 * s) for s in STEPS],
        },
        time.time(),
        histogram=False,
    )
    (tmp_path / "map.toml").write_text(MAP)
    started, updates, _ = imported(tmp_path, capsys, "--map", str(tmp_path / "map.toml"))
    config = started.payload.config
    assert started.payload.algorithm == "grpo"
    assert started.payload.step_unit is None  # a mapping file declares no unit
    assert config["first_ref_kl"] == 0.02 and config["first_ref_kl_end"] == 0.16
    assert config["tensorboard_tags"]["ppo/ref_kl"] == "ref_kl, config.first_ref_kl (x 2)"
    assert [u.payload.global_step for u in updates] == [100 * s for s in STEPS]
    first = updates[0].payload
    assert (first.ref_kl, first.policy_loss, first.reward_components) == (0.01, 0.0, {"acc": 0.5})


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ('"ppo/kl" = { field = "approx_kl", scale = 0 }', "scale 0 would write every approx_kl"),
        (
            '"ppo/kl" = { field = "approx_kl", scale = 1e-300 }',
            "scale 1e-300 would write every approx_kl 1e-300 times its logged size",
        ),
        ('"ppo/kl" = { field = "grad_norm", scale = -1e7 }', "scale -1e+07 would write every"),
        ('"ppo/kl" = ["ref_kl", "ref_kl"]', "feeds ref_kl more than once"),
        ('"ppo/kl" = ["ref_kl", "ignore"]', "ignore in a list with other targets"),
        ('"ppo/kl" = []', "an empty list feeds nothing"),
    ],
)
def test_a_map_file_that_makes_a_judged_field_vanish_or_repeats_a_target_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, says: str
) -> None:
    write_tb(tmp_path / "tb", {"ppo/kl": [(1, 0.01)]}, time.time(), histogram=False)
    (tmp_path / "map.toml").write_text(f"[tags]\n{entry}\n")
    code, _, err = sanctum(
        *("import", "tensorboard", str(tmp_path / "tb"), "--out", str(tmp_path / "out")),
        *("--outcome", "completed"),
        *("--map", str(tmp_path / "map.toml")),
        capsys=capsys,
    )
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{tmp_path / 'map.toml'}: tags.'ppo/kl'" in err and says in err
    assert not (tmp_path / "out").exists()


def test_a_global_step_tag_missing_from_the_log_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_tb(tmp_path / "tb", {"ppo/kl": [(1, 0.01)]}, time.time(), histogram=False)
    (tmp_path / "map.toml").write_text('global_step = "ppo/samples"\n[tags]\n"ppo/kl" = "ref_kl"\n')
    code, _, err = sanctum(
        *("import", "tensorboard", str(tmp_path / "tb"), "--out", str(tmp_path / "out")),
        *("--outcome", "completed"),
        *("--map", str(tmp_path / "map.toml")),
        capsys=capsys,
    )
    assert code == 2
    assert "the global_step tag ppo/samples of mapping file map.toml is not in the log" in err


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("trl") is None,
    reason="needs the trl extra: pip install 'sanctum-ppo[trl]'",
)
# transformers 5 warns of its own renamed gradient-checkpointing API inside Trainer
@pytest.mark.filterwarnings(r"ignore:`\w*gradient_checkpointing\w*` is deprecated:FutureWarning")
def test_a_real_trl_grpo_run_reporting_to_tensorboard_imports_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.lib.trl_runs import HEALTHY, trainer

    run = HEALTHY.varied(extra={"report_to": "tensorboard"})
    trainer(run, output_dir=str(tmp_path / "tb")).train()
    started, updates, printed = imported(tmp_path, capsys)
    assert "trl-grpo tags" in printed
    header = started.payload
    assert (header.algorithm, header.policy_epochs, header.seed) == ("grpo", 1, 0)
    assert header.kl == {"ref_kl": KLMeasure(against="reference", estimator="k3", unit="token")}
    assert [u.payload.global_step for u in updates] == list(range(1, run.steps + 1))
    last = updates[-1].payload
    assert last.approx_kl is None and last.ref_kl is not None and last.ref_kl_coef == run.beta
    assert last.entropy_normalized is not None and last.reward_components is not None
    assert set(last.reward_components) == {"vowel_share"}
    assert check(tmp_path, capsys)[0] == 0
