"""The classic trainer on CUDA: the policy, its update and the reference on the GPU, the
rollout's actor a CPU copy; a checkpoint written there resumes on the CPU and back."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ppo.model import checkpoint
from ppo.run.trainer import Trainer
from telemetry import PPOUpdate, RunFinished, RunStarted, read_events
from tests.ppo.run.test_trainer import small

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _started(path: Path) -> RunStarted:
    started = read_events(path).events[0]
    assert isinstance(started, RunStarted)
    return started


@needs_cuda
def test_a_classic_run_with_a_reference_trains_on_cuda(tmp_path: Path) -> None:
    cfg = small(device="cuda", ref_kl_loss_coef=0.1, max_kl=0.05, normalize_obs=True)
    trainer = Trainer(cfg, run_dir=tmp_path)
    result = trainer.run()
    assert trainer.device.type == "cuda"
    assert _started(result.events_path).payload.config["device_used"] == "cuda"
    events = read_events(result.events_path).events
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [u.update for u in updates] == [0, 1, 2, 3]
    assert all(u.ref_kl is not None and u.approx_kl == u.approx_kl for u in updates)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.payload.status == "completed"
    assert result.checkpoint_path is not None
    state = checkpoint.load(result.checkpoint_path)  # mapped to the CPU
    assert all(t.device.type == "cpu" for t in state["model"].values())


@needs_cuda
@pytest.mark.parametrize(("first", "then"), [("cuda", "cpu"), ("cpu", "cuda")])
def test_a_checkpoint_resumes_on_the_other_device(tmp_path: Path, first: str, then: str) -> None:
    cfg = small(device=first)
    run = Trainer(cfg, run_dir=tmp_path / "a").run().events_path.parent
    longer = cfg.with_overrides([f"device={then}", "total_steps=384"])
    resumed = Trainer(longer, run_dir=tmp_path / "b", resume=run).run()
    started = _started(resumed.events_path)
    assert started.payload.config["device_used"] == then
    assert started.payload.config["resumed_from"]["update"] == 4
    events = read_events(resumed.events_path).events
    updates = [e.payload for e in events if isinstance(e, PPOUpdate)]
    assert [(u.update, u.global_step) for u in updates] == [(4, 320), (5, 384)]
