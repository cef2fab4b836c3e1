"""Runs of the trainers Sanctum measures from outside, for the calibration corpus: a plain
PyTorch loop through the probe, TorchRL, skrl and Tianshou through their integrations, each
its example (``examples/*_ppo.py``) at that example's published settings, run in the
recording process.

No rule was fitted to any of them: every case is ``heldout``. Their healthy runs are short
(tens of updates, minutes of CPU for the corpus): each example's settings, not a score
reached, so each has no target (the figures count them all).

Faults, each from a known update (the onset), or from the start:

- ``nan_obs`` and ``value_scale`` (rewards x1e4): a registered environment that wraps the
  example's in ``env_faults.FaultWrapper`` from the onset update's first step;
- ``lr_spike``: the learning rate x100 from the onset update on, set on the optimizer the
  probe holds, right before that update;
- ``wide_clip``: clip range 10 and 40 epochs, from the start;
- ``lr_start``: the learning rate x100 from the start (the commonest user error: a bad
  setting, with no healthy baseline before it);
- ``output_scale``: the policy's output layer (the last ``nn.Linear`` its distribution is
  computed through) x1000 right before the onset update: logits or means blown up.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch

from lib import EXAMPLES
from lib.env_faults import make_faulty
from torchprobe import probe as probe_module


@dataclass(frozen=True)
class Trainer:
    """How to run one trainer's example."""

    example: str
    needs: str | None
    """The module its extra provides (None: torch alone)."""
    steps: int
    """Steps each environment copy takes per update (the onset's first step follows)."""
    updates: list[str]
    """Arguments for the run's length ({n}: updates)."""
    lr: tuple[str, float]
    """The learning-rate option and its default."""
    wide: list[str]
    """Arguments for clip range 10 and 40 epochs."""


TRAINERS: dict[str, Trainer] = {
    "plain": Trainer(
        "probe_ppo",
        None,
        128,
        ["--updates", "{n}"],
        ("--learning-rate", 2.5e-4),
        ["--clip-range", "10", "--epochs", "40"],
    ),
    "torchrl": Trainer(
        "torchrl_ppo",
        "torchrl",
        1000,
        ["--batches", "{n}"],
        ("--learning-rate", 3e-4),
        ["--clip-epsilon", "10", "--epochs", "40"],
    ),
    "skrl": Trainer(
        "skrl_ppo",
        "skrl",
        1024,
        ["--timesteps", "{n1024}"],
        ("--learning-rate", 1e-3),
        ["--ratio-clip", "10", "--epochs", "40"],
    ),
    "tianshou": Trainer(
        "tianshou_ppo",
        "tianshou",
        100,
        ["--epochs", "1", "--epoch-num-steps", "{n2000}", "--num-envs", "20"],
        ("--learning-rate", 3e-4),
        ["--eps-clip", "10", "--repetitions", "40"],
    ),
}
"""The examples' own settings; Tianshou's 20 envs step 100 each per 2,000-step update."""

UPDATES = 30
ONSET = 12


def available(trainer: str) -> bool:
    """Whether this machine has the trainer's extra."""
    needs = TRAINERS[trainer].needs
    return needs is None or importlib.util.find_spec(needs) is not None


def _load(example: str) -> Any:
    spec = importlib.util.spec_from_file_location(example, EXAMPLES / f"{example}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[example] = module
    spec.loader.exec_module(module)
    return module


Fault = Callable[[probe_module.UpdateProbe, Any], None]
"""What a fault does to the trainer right before its onset update (given the probe and the
update's observations)."""


def _spike_lr(probe: probe_module.UpdateProbe, _: Any) -> None:
    """The learning rate x100, on the optimizer the probe holds."""
    for group in probe.optimizer.param_groups:
        group["lr"] = group["lr"] * 100.0


def _scale_output(probe: probe_module.UpdateProbe, observations: Any) -> None:
    """The policy's output layer x1000: the last ``nn.Linear`` a forward pass of its
    distribution goes through (found by a global forward hook; its tensors as used, so
    TorchRL's functional parameters are the ones scaled)."""
    used: list[tuple[torch.Tensor, ...]] = []

    def keep(module: torch.nn.Module, *_: Any) -> None:
        if isinstance(module, torch.nn.Linear):
            used.append(tuple(p for p in (module.weight, module.bias) if p is not None))

    handle = torch.nn.modules.module.register_module_forward_hook(keep)
    try:
        with torch.no_grad():
            probe.distribution(probe_module._head(observations, 1, 4))
    finally:
        handle.remove()
    with torch.no_grad():
        for tensor in used[-1]:
            tensor.mul_(1000.0)


FAULTS: dict[str, Fault] = {"lr_spike": _spike_lr, "output_scale": _scale_output}
"""The faults a probe injects, by name."""


def _faulty(onset: int, fault: Fault) -> type[probe_module.UpdateProbe]:
    class Faulty(probe_module.UpdateProbe):
        """The probe, which also applies ``fault`` right before update ``onset``."""

        @contextlib.contextmanager
        def update(self, recorder: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            if recorder.updates == onset:
                fault(self, args[0])
            with super().update(recorder, *args, **kwargs) as measure:
                yield measure

    return Faulty


def record(
    name: str,
    trainer: str,
    env_id: str,
    seed: int,
    run_dir: Path,
    fault: str | None = None,
    onset: int | None = None,
) -> Path:
    """Run ``trainer``'s example as case ``name``; return its events file."""
    torch.set_num_threads(1)
    spec = TRAINERS[trainer]
    module = _load(spec.example)
    argv = [a.format(n=UPDATES, n1024=1024 * UPDATES, n2000=2000 * UPDATES) for a in spec.updates]
    env = env_id
    if fault in ("nan_obs", "value_scale"):
        assert onset is not None
        env = f"SanctumIntegration/{name}-v0"
        args = {"factor": 1e4} if fault == "value_scale" else {}
        gym.register(
            id=env,
            entry_point=make_faulty,
            kwargs={"base": env_id, "fault": fault, "start": onset * spec.steps + 1, **args},
        )
    elif fault == "wide_clip":
        argv += spec.wide
    elif fault == "lr_start":
        argv += [spec.lr[0], str(spec.lr[1] * 100)]
    argv += ["--env-id", env, "--seed", str(seed), "--run-dir", str(run_dir), "--run-id", name]
    holder = (
        module
        if spec.needs is None
        else importlib.import_module(f"telemetry.integrations.{spec.needs}")
    )
    kept = holder.UpdateProbe
    if fault in FAULTS:
        assert onset is not None
        holder.UpdateProbe = _faulty(onset, FAULTS[fault])
    try:
        module.main(argv)
    except Exception as exc:  # noqa: BLE001 - a run its fault ended is recorded as failed
        print(f"  {name}: the trainer raised {type(exc).__name__}", file=sys.stderr)
    finally:
        holder.UpdateProbe = kept  # the next run in this process is not spiked
    return run_dir / name / "events.jsonl"
