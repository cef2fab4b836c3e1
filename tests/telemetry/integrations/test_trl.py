"""SanctumCallback: real TRL GRPO runs on CPU (a tiny Llama and a character tokenizer built
here, nothing downloaded), recorded and judged.

Each figure is checked against what TRL itself logged (a callback after ours keeps TRL's
log lines). TRL 1.16 ships no PPOTrainer; its PPO mapping is checked by replaying the hooks
TRL 1.0's PPOTrainer calls, with the keys its ``train()`` logs.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from telemetry import Event, Heartbeat, KLMeasure, PPOUpdate, RunFinished, RunStarted, read_events
from telemetry.events import Anomaly
from telemetry.halting import Halter
from telemetry.integrations import trl as trl_door
from telemetry.integrations import trl_figures
from tests import processes
from tests.import_graph import edges_of
from tests.sanctum.recorded import check_report
from tests.telemetry.halted_runs import FiresAt

needs_trl = pytest.mark.skipif(
    importlib.util.find_spec("trl") is None or importlib.util.find_spec("transformers") is None,
    reason="needs the trl extra: pip install 'sanctum-ppo[trl]'",
)
pytestmark = [
    # transformers 5 warns of its own renamed gradient-checkpointing API inside Trainer
    pytest.mark.filterwarnings(
        r"ignore:`\w*gradient_checkpointing\w*` is deprecated:FutureWarning"
    ),
]
REPO = Path(__file__).resolve().parents[3]


@dataclass
class Recorded:
    """One run: its events and the lines TRL logged."""

    path: Path
    events: list[Event]
    logged: list[dict[str, Any]] = field(default_factory=list)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e.payload for e in self.events if isinstance(e, kind)]


def _train(tmp: Path, run: Any, **callback: Any) -> Recorded:
    from bench.lib.trl_runs import trainer
    from transformers import TrainerCallback

    from telemetry.integrations.trl import SanctumCallback

    logged: list[dict[str, Any]] = []

    class Logged(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            logged.append(dict(logs or {}))

    cb = SanctumCallback(run_dir=tmp, run_id=run.name, **callback)
    trainer(run, [cb, Logged()], output_dir=str(tmp / "out")).train()
    path = tmp / run.name / "events.jsonl"
    return Recorded(path, list(read_events(path).events), logged)


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    from bench.lib.trl_runs import HEALTHY

    return _train(tmp_path_factory.mktemp("healthy"), HEALTHY)


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """Two iterations, no reference, and a reward function that sleeps once."""
    from bench.lib.trl_runs import SLOW_STEP

    from telemetry.integrations import trl_callback

    run = SLOW_STEP.varied(num_iterations=2, beta=0.0, slow_seconds=1.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trl_callback, "HEARTBEAT_SECONDS", 0.1)
        return _train(tmp_path_factory.mktemp("slow"), run)


@pytest.fixture(scope="module")
def hack(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    from bench.lib.trl_runs import PADDING_HACK

    return _train(tmp_path_factory.mktemp("hack"), PADDING_HACK)


# -- what is recorded ----------------------------------------------------------------------


@needs_trl
def test_run_started_declares_grpo_and_its_reference_kl(healthy: Recorded) -> None:
    started = healthy.events[0]
    assert isinstance(started, RunStarted)
    p = started.payload
    assert p.algorithm == "grpo"
    assert p.step_unit == "optimizer steps"  # TRL's state.global_step
    assert p.kl == {"ref_kl": KLMeasure(against="reference", estimator="k3", unit="token")}
    assert p.policy_epochs == 1
    assert p.trainer.name == "trl"
    assert p.trainer.version == importlib.metadata.version("trl")
    assert p.seed == 0
    for name, value in {
        "learning_rate": 1e-4,
        "beta": 0.04,
        "num_generations": 4,
        "num_iterations": 1,
        "max_completion_length": 12,
        "epsilon": 0.2,
        "loss_type": "dapo",
    }.items():
        assert p.config[name] == value, name


@needs_trl
def test_one_update_per_training_log_line(healthy: Recorded) -> None:
    lines = [logs for logs in healthy.logged if "train_runtime" not in logs]
    updates = healthy.of(PPOUpdate)
    assert len(lines) == len(updates) == 4
    assert [u.update for u in updates] == [0, 1, 2, 3]
    assert [u.global_step for u in updates] == [1, 2, 3, 4]
    finished = healthy.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "completed"
    assert finished.payload.updates == 4


@needs_trl
def test_figures_are_what_trl_logged(healthy: Recorded) -> None:
    from bench.lib.trl_runs import char_tokenizer

    lines = [logs for logs in healthy.logged if "train_runtime" not in logs]
    log_vocab = math.log(len(char_tokenizer()))
    for logs, update in zip(lines, healthy.of(PPOUpdate), strict=True):
        for key, name in trl_door.GRPO_FIELDS.items():
            assert getattr(update, name) == logs.get(key), (key, name)
        assert update.reward_components == {"vowel_share": logs["rewards/vowel_share/mean"]}
        assert update.entropy_normalized == pytest.approx(logs["entropy"] / log_vocab)
        assert update.ref_kl_coef == 0.04
        assert update.approx_kl is None  # GRPO measures no KL to the old policy
        assert update.clip_fraction is None  # TRL counts only the sign-aware share
        assert update.ref_kl is not None
        assert update.completion_truncated_frac is not None


@needs_trl
def test_a_healthy_run_passes_check(healthy: Recorded) -> None:
    report = check_report(healthy.path)
    assert report["exit_code"] == 0, report
    rows = {row["name"]: row for row in report["rows"]}
    assert rows["ref_kl"]["updates_measured"] == 4
    # GRPO, one pass per batch: the ratio is 1 by construction, no KL or Clip row to show
    assert "approx_kl" not in rows and "clip_fraction" not in rows


@needs_trl
def test_two_iterations_and_no_reference(slow: Recorded) -> None:
    started = slow.events[0]
    assert isinstance(started, RunStarted)
    assert started.payload.policy_epochs == 2
    assert started.payload.kl is None  # beta 0: no KL at all
    updates = slow.of(PPOUpdate)
    assert all(u.ref_kl is None and u.ref_kl_coef is None for u in updates)
    assert all(u.clip_fraction_region is not None for u in updates)


@needs_trl
def test_an_rloo_run_declares_its_k1_reference_kl(tmp_path: Path) -> None:
    from bench.lib.trl_runs import HEALTHY

    rec = _train(tmp_path, HEALTHY.varied(name="rloo", algorithm="rloo", steps=2))
    started = rec.events[0]
    assert isinstance(started, RunStarted)
    assert started.payload.algorithm == "rloo"
    assert started.payload.kl == {
        "ref_kl": KLMeasure(against="reference", estimator="k1", unit="token")
    }
    lines = [logs for logs in rec.logged if "train_runtime" not in logs]
    updates = rec.of(PPOUpdate)
    assert [u.ref_kl for u in updates] == [logs["kl"] for logs in lines]
    assert check_report(rec.path)["exit_code"] == 0


@needs_trl
def test_a_slow_step_is_covered_by_heartbeats(slow: Recorded) -> None:
    """The reward function sleeps once (in the step TRL timed as the slowest): heartbeats
    come between that update and the one before, and the log passes check's stall row."""
    positions = [i for i, e in enumerate(slow.events) if isinstance(e, PPOUpdate)]
    updates = slow.of(PPOUpdate)
    slowest = max(range(len(updates)), key=lambda i: updates[i].update_seconds or 0.0)
    assert slowest > 0
    between = slow.events[positions[slowest - 1] : positions[slowest]]
    assert any(isinstance(e, Heartbeat) for e in between)
    assert not any(t.name == "sanctum-heartbeat" for t in threading.enumerate())
    report = check_report(slow.path)
    stall = next(row for row in report["rows"] if row["name"] == "stall")
    assert stall["passed"]


# -- broken runs ---------------------------------------------------------------------------


@needs_trl
def test_the_padding_hack_shows_in_the_figures(hack: Recorded) -> None:
    """Reward for length at a high learning rate: completions run to the cap while the
    reward climbs, the policy leaves its reference and its entropy falls."""
    updates = hack.of(PPOUpdate)
    first, last = updates[0], updates[-1]
    assert last.completion_truncated_frac == 1.0
    assert first.completion_truncated_frac is not None and first.completion_truncated_frac < 1
    assert last.reward_mean is not None and first.reward_mean is not None
    assert last.reward_mean > first.reward_mean
    assert last.ref_kl is not None and first.ref_kl is not None
    assert last.ref_kl > first.ref_kl
    assert last.entropy is not None and first.entropy is not None
    assert last.entropy < first.entropy


@needs_trl
def test_the_padding_hack_fails_check(hack: Recorded) -> None:
    report = check_report(hack.path)
    assert report["exit_code"] == 1, report


@needs_trl
def test_a_constant_reward_leaves_every_group_with_equal_rewards(tmp_path: Path) -> None:
    """The equal-rewards fault of the LLM calibration corpus: GRPO has nothing to learn."""
    from bench.lib.trl_runs import HEALTHY

    updates = _train(tmp_path, HEALTHY.varied(constant_reward=1.0)).of(PPOUpdate)
    assert len(updates) == HEALTHY.steps
    for u in updates:
        assert (u.reward_mean, u.reward_std, u.reward_zero_std_frac) == (1.0, 0.0, 1.0)


@needs_trl
def test_a_nan_reward_from_a_step_on_leaves_no_reward_recorded(tmp_path: Path) -> None:
    """The NaN fault of the LLM calibration corpus: TRL reads a NaN reward as none and logs
    the reward as None from that step on, so the updates hold no reward from there."""
    from bench.lib.trl_runs import HEALTHY

    updates = _train(tmp_path, HEALTHY.varied(nan_at=2)).of(PPOUpdate)
    rewards = [u.reward_mean for u in updates]
    assert all(r is not None and math.isfinite(r) for r in rewards[:2]), rewards
    assert rewards[2:] == [None] * (HEALTHY.steps - 2), rewards


@needs_trl
def test_halt_on_critical_stops_the_run_within_three_updates(tmp_path: Path) -> None:
    from bench.lib.trl_runs import PADDING_HACK

    from sanctum.health.thresholds import DEFAULT_THRESHOLDS
    from sanctum.health.thresholds_toml import thresholds_from_mapping

    tight = thresholds_from_mapping(
        {
            "completion_truncated_frac": {
                "label": "Truncated",
                "direction": "above",
                "warning": 0.6,
                "critical": 0.8,
                "statistic": "value",
                "persist": 1,
                "warmup_updates": 0,
                "rise_with": False,
            }
        },
        DEFAULT_THRESHOLDS,
    )
    run = PADDING_HACK.varied(steps=20)
    from sanctum import HaltGate

    rec = _train(tmp_path, run, halter=HaltGate(tight, "critical"))
    updates = rec.of(PPOUpdate)
    fired = next(
        u.update for u in updates if (u.completion_truncated_frac or 0) > 0.8
    )  # the first update the rule goes critical at
    assert updates[-1].update - fired <= 3
    assert len(updates) < run.steps  # it stopped
    (anomaly,) = rec.of(Anomaly)
    assert anomaly.severity == "critical"
    assert anomaly.metric == "completion_truncated_frac"
    assert anomaly.update == fired
    finished = rec.events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "failed"
    assert finished.payload.reason is not None
    assert finished.payload.reason.startswith("halted: Truncated critical")
    assert check_report(rec.path)["exit_code"] == 1


@needs_trl
def test_an_exception_in_training_is_recorded_as_failed(tmp_path: Path) -> None:
    from bench.lib.trl_runs import HEALTHY, trainer

    from telemetry.integrations.trl import SanctumCallback

    run = HEALTHY.varied(fail_at=2)
    with (
        pytest.raises(RuntimeError, match="reward function failed"),
        SanctumCallback(run_dir=tmp_path, run_id="r") as cb,
    ):
        trainer(run, [cb], output_dir=str(tmp_path / "out")).train()
    events = read_events(tmp_path / "r" / "events.jsonl").events
    assert [e.payload.update for e in events if isinstance(e, PPOUpdate)] == [0, 1]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "failed"
    assert finished.payload.reason == "RuntimeError: reward function failed at call 2"


SCRIPT = """
import sys
from bench.lib.trl_runs import HEALTHY, trainer
from telemetry.integrations.trl import SanctumCallback

callback = SanctumCallback(run_dir=sys.argv[1], run_id="r")
run = trainer(HEALTHY.varied(fail_at=1), [callback], output_dir=sys.argv[1] + "/out")
if sys.argv[2] == "uncaught":
    run.train()
try:
    run.train()
except RuntimeError:
    pass  # the script goes on, and ends without train() having ended
"""


@needs_trl
@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("uncaught", "RuntimeError: reward function failed at call 1"),
        ("caught", "the process exited while train() was running"),
    ],
)
def test_without_the_context_manager_a_crash_is_still_recorded(
    tmp_path: Path, how: str, reason: str
) -> None:
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = processes.run(
        [sys.executable, "-W", "ignore::FutureWarning", str(script), str(tmp_path), how],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{REPO}"},
    )
    assert done.returncode == (1 if how == "uncaught" else 0), done.stderr[-2000:]
    finished = read_events(tmp_path / "r" / "events.jsonl").events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "failed"
    assert finished.payload.reason == reason


# -- the callback's edges ------------------------------------------------------------------


@needs_trl
def test_a_process_other_than_the_main_one_writes_nothing(tmp_path: Path) -> None:
    from transformers import TrainerControl, TrainerState
    from trl import GRPOConfig

    from telemetry.integrations.trl import SanctumCallback

    args = GRPOConfig(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    state = TrainerState(is_world_process_zero=False, is_local_process_zero=False)
    control = TrainerControl()
    threads = threading.active_count()
    cb = SanctumCallback(run_dir=tmp_path / "runs", run_id="r", halter=FiresAt(0))
    cb.on_train_begin(args, state, control)
    cb.on_step_begin(args, state, control)
    cb.on_log(args, state, control, logs={"loss": 0.1, "reward": 1.0, "kl": 0.01})
    cb.on_train_end(args, state, control)
    assert not (tmp_path / "runs").exists()
    assert threading.active_count() == threads
    assert cb.recorder is None
    assert not control.should_training_stop


@needs_trl
def test_a_grpo_global_step_stays_the_optimizer_step_it_declares(tmp_path: Path) -> None:
    from transformers import TrainerControl, TrainerState
    from trl import GRPOConfig

    from telemetry.integrations.trl import SanctumCallback

    args = GRPOConfig(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    state, control = TrainerState(), TrainerControl()
    cb = SanctumCallback(run_dir=tmp_path, run_id="grpo")
    cb.on_train_begin(args, state, control)
    for step in (1, 2):
        state.global_step = step
        cb.on_log(args, state, control, logs={"loss": 0.1, "reward": 1.0, "episode": 64 * step})
    cb.on_train_end(args, state, control)
    events = read_events(tmp_path / "grpo" / "events.jsonl").events
    started = events[0]
    assert isinstance(started, RunStarted) and started.payload.step_unit == "optimizer steps"
    assert [e.payload.global_step for e in events if isinstance(e, PPOUpdate)] == [1, 2]


@needs_trl
def test_other_trainers_are_refused(tmp_path: Path) -> None:
    from transformers import TrainerControl, TrainerState
    from trl import SFTConfig

    from telemetry.integrations.trl import SanctumCallback

    args = SFTConfig(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    cb = SanctumCallback(run_dir=tmp_path)
    with pytest.raises(TypeError, match="records GRPOTrainer, RLOOTrainer and PPOTrainer; got"):
        cb.on_train_begin(args, TrainerState(), TrainerControl())


@needs_trl
def test_bad_settings_are_refused_before_training(tmp_path: Path) -> None:
    from telemetry.integrations.trl import SanctumCallback

    with pytest.raises(TypeError, match=r"^halter: needs a telemetry.halting.Halter .* got str"):
        SanctumCallback(run_dir=tmp_path, halter="critical")  # type: ignore[arg-type]


def test_without_transformers_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # import fails, as uninstalled
    monkeypatch.delitem(sys.modules, "telemetry.integrations.trl_callback", raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'sanctum-ppo\[trl\]'") as info:
        _ = trl_door.SanctumCallback
    assert "\n" not in str(info.value)


# -- TRL's PPOTrainer, replayed ------------------------------------------------------------


@dataclass
class PPOConfig:
    """The settings of TRL 1.0's ``trl.experimental.ppo.PPOConfig`` the callback reads."""

    learning_rate: float = 3e-6
    seed: int = 1
    num_ppo_epochs: int = 4
    num_mini_batches: int = 1
    kl_coef: float = 0.05
    kl_estimator: str = "k3"
    cliprange: float = 0.2
    vf_coef: float = 0.1
    response_length: int = 53
    world_size: int = 1


def _ppo_metrics(step: int) -> dict[str, float]:
    """The dict TRL 1.0's ``PPOTrainer.train()`` logs after each batch."""
    return {
        "eps": 12,
        "objective/kl": 2.5 + step,
        "objective/entropy": 40.0,
        "objective/non_score_reward": -0.1,
        "objective/rlhf_reward": 0.4,
        "objective/scores": 0.5 + step / 10,
        "policy/approxkl_avg": 0.002,
        "policy/clipfrac_avg": 0.01,
        "loss/policy_avg": -0.03,
        "loss/value_avg": 0.6,
        "val/clipfrac_avg": 0.2,
        "policy/entropy_avg": 1.5,
        "val/ratio": 1.0001,
        "val/ratio_var": 1e-6,
        "val/num_eos_tokens": 3,
        "lr": 3e-6,
        "episode": 64 * (step + 1),
        "epoch": 0.1 * (step + 1),
    }


@needs_trl
def test_ppo_trainer_logs_are_recorded_in_their_units(tmp_path: Path) -> None:
    from transformers import TrainerControl, TrainerState

    from telemetry.integrations.trl import SanctumCallback

    class Config:  # the policy's config, as PPOTrainer's model wrapper exposes it
        vocab_size = 1000

    class Model:
        config = Config()

    args, state, control = PPOConfig(), TrainerState(), TrainerControl()
    cb = SanctumCallback(run_dir=tmp_path, run_id="ppo")
    cb.on_train_begin(args, state, control, model=Model())  # type: ignore[arg-type]
    for step in range(3):
        state.global_step = step + 1
        cb.on_log(args, state, control, logs=_ppo_metrics(step))  # type: ignore[arg-type]
        cb.on_step_end(args, state, control)  # type: ignore[arg-type]
    cb.on_train_end(args, state, control)  # type: ignore[arg-type]

    events = read_events(tmp_path / "ppo" / "events.jsonl").events
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.payload.algorithm == "ppo"
    assert started.payload.step_unit == "samples"  # TRL's episode
    assert started.payload.kl == {
        "ref_kl": KLMeasure(against="reference", estimator="k3", unit="sequence"),
        "approx_kl": KLMeasure(against="old_policy", estimator="k2", unit="token"),
    }
    assert started.payload.policy_epochs == 4
    assert started.payload.config["ref_kl_reward_estimator"] == "k3"
    assert "kl_estimator" not in started.payload.config  # ours names approx_kl's estimator
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [u.global_step for u in updates] == [64, 128, 192]
    for step, u in enumerate(updates):
        logs = _ppo_metrics(step)
        for key, name in trl_door.PPO_FIELDS.items():
            assert getattr(u, name) == logs[key], (key, name)
        assert u.entropy_normalized == pytest.approx(1.5 / math.log(1000))
        assert u.ref_kl_reward_coef == 0.05
        assert u.clip_fraction is None
        assert u.value_loss == 0.6
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "completed"


@needs_trl
def test_a_ppo_trainer_that_goes_on_after_the_stop_is_halted_by_raising(tmp_path: Path) -> None:
    from transformers import TrainerControl, TrainerState

    from sanctum import HaltGate
    from sanctum.health.thresholds import DEFAULT_THRESHOLDS
    from sanctum.health.thresholds_toml import thresholds_from_mapping
    from telemetry.integrations.trl import SanctumCallback, TrainingHalted

    tight = thresholds_from_mapping(
        # judged as logged: TRL PPO logs no completion lengths to judge it per token by
        {"ref_kl": {"warning": 3.0, "critical": 4.0, "persist": 1, "far": False, "per": False}},
        DEFAULT_THRESHOLDS,
    )
    args, state, control = PPOConfig(), TrainerState(), TrainerControl()
    cb = SanctumCallback(run_dir=tmp_path, run_id="ppo", halter=HaltGate(tight, "critical"))
    cb.on_train_begin(args, state, control)  # type: ignore[arg-type]

    def ppo_step(step: int) -> None:  # PPOTrainer's loop never reads should_training_stop
        state.global_step = step + 1
        cb.on_log(args, state, control, logs=_ppo_metrics(step))  # type: ignore[arg-type]

    for step in range(3):
        ppo_step(step)
    assert control.should_training_stop  # critical at the third update
    with pytest.raises(TrainingHalted, match=r"^halted: RefKL critical"):
        ppo_step(3)
    events = read_events(tmp_path / "ppo" / "events.jsonl").events
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [u.ref_kl for u in updates] == [2.5, 3.5, 4.5]  # critical at the third: stop
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.payload.status == "failed"
    assert finished.payload.reason is not None
    assert finished.payload.reason.startswith("halted: RefKL critical")


@needs_trl
def test_any_halter_stops_the_run_and_names_its_reason(tmp_path: Path) -> None:
    """The callback halts through the protocol alone: a halter that is not sanctum's stops
    the run at the update it fires on, and the run ends with its status and reason."""
    from transformers import TrainerControl, TrainerState

    from telemetry.integrations.trl import SanctumCallback, TrainingHalted

    halter = FiresAt(1)
    assert isinstance(halter, Halter)
    args, state, control = PPOConfig(), TrainerState(), TrainerControl()
    cb = SanctumCallback(run_dir=tmp_path, run_id="ppo", halter=halter)
    cb.on_train_begin(args, state, control)  # type: ignore[arg-type]
    for step in range(2):
        state.global_step = step + 1
        cb.on_log(args, state, control, logs=_ppo_metrics(step))  # type: ignore[arg-type]
    assert control.should_training_stop
    assert isinstance(halter.seen[0], RunStarted)  # subscribed before the run started
    with pytest.raises(TrainingHalted, match=r"^halted: test at 1; the trainer went on"):
        cb.on_log(args, state, control, logs=_ppo_metrics(2))  # type: ignore[arg-type]
    events = read_events(tmp_path / "ppo" / "events.jsonl").events
    assert [e.payload.update for e in events if isinstance(e, PPOUpdate)] == [0, 1]
    (anomaly,) = [e.payload for e in events if isinstance(e, Anomaly)]
    assert (anomaly.message, anomaly.update, anomaly.global_step) == ("stop", 1, 128)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert (finished.payload.status, finished.payload.reason) == ("failed", "halted: test at 1")


def test_the_callback_imports_no_sanctum_module() -> None:
    """It knows the halting protocol, not who implements it: no import of sanctum at all,
    deferred or for the type checker."""
    imported = {edge.imported for edge in edges_of("telemetry.integrations.trl_callback")}
    assert "telemetry.halting" in imported  # the reader sees its imports
    assert sorted(m for m in imported if m.split(".")[0] != "telemetry") == []


# -- the documented table ------------------------------------------------------------------


def _documented() -> set[tuple[str, str]]:
    """(TRL key, field) of each row of the module docstring's table naming one of each."""
    lines = (trl_door.__doc__ or "").splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("====")]
    rows = set()
    for line in lines[rules[0] : rules[-1]]:
        cells = line.split()
        if len(cells) >= 2 and cells[0].startswith("``") and cells[1].startswith("``"):
            rows.add((cells[0].strip("`"), cells[1].strip("`")))
    return rows


def test_the_documented_table_is_the_mapping() -> None:
    mapped = set(trl_door.GRPO_FIELDS.items()) | set(trl_door.PPO_FIELDS.items())
    derived = {
        ("entropy", "entropy_normalized"),
        ("rewards/<f>/mean", "reward_components[<f>]"),
        ("episode", "global_step"),
    }
    documented = {(k, f) for k, f in _documented() if (k, f) not in derived}
    assert documented == mapped


# ------------------------------------------------------------------ values from a trainer
def test_numpy_and_torch_scalars_are_read_as_numbers_nan_included() -> None:
    """What a trainer's logs may hold before TRL rounds them: a NaN as numpy.float32 or a
    0-d tensor used to read as "not measured", so a NaN passed the gate."""
    import numpy as np
    import torch

    read = trl_figures._number
    assert math.isnan(read(np.float32("nan")) or 0.0)
    assert math.isnan(read(torch.tensor(float("nan"))) or 0.0)
    assert read(np.float32(0.5)) == 0.5 and read(torch.tensor(2)) == 2.0
    assert read(np.array(1.5)) == 1.5  # a 0-d array
    for unread in (torch.tensor([1.0, 2.0]), np.array([1.0]), np.bool_(True), "0.5", None, True):
        assert read(unread) is None, unread
    whole = trl_figures.whole_number
    assert [whole(v) for v in (3, np.int64(4), torch.tensor(5), 6.0)] == [3, 4, 5, 6]
    assert [whole(v) for v in (None, 2.5, "7", True, float("nan"))] == [None] * 5


@needs_trl
def test_an_odd_step_or_world_size_never_raises_into_training(tmp_path: Path) -> None:
    """A global_step of None or 2.5, or a world_size that is no number, used to raise into
    the trainer: an observer never stops the run it observes. The update is placed after
    the latest step, and a NaN logged as a numpy scalar is recorded as NaN."""
    import numpy as np
    from transformers import TrainerControl, TrainerState
    from trl import GRPOConfig

    from telemetry.integrations.trl import SanctumCallback

    args = GRPOConfig(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    args.__class__ = type("GRPOConfig", (GRPOConfig,), {"world_size": "two"})  # a property
    state, control = TrainerState(), TrainerControl()
    cb = SanctumCallback(run_dir=tmp_path, run_id="odd")
    cb.on_train_begin(args, state, control)
    for step in (3, None, 2.5):
        state.global_step = step  # type: ignore[assignment]
        cb.on_log(args, state, control, logs={"loss": 0.1, "reward": 1.0, "kl": np.float32("nan")})
    cb.on_train_end(args, state, control)
    events = read_events(tmp_path / "odd" / "events.jsonl").events
    started = events[0]
    assert isinstance(started, RunStarted) and started.payload.world_size == 1
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [u.global_step for u in updates] == [3, 3, 3]
    assert all(u.ref_kl is not None and math.isnan(u.ref_kl) for u in updates)
    assert check_report(tmp_path / "odd")["exit_code"] == 1  # the NaN fails the gate
