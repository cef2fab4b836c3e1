"""One training run for ``learning_bench.py``: ours, SB3's or CleanRL's script.

Every runner measures the same things the same way: the mean return of the last 20
finished episodes (raw rewards, whatever normalisation the trainer applies), when it
stops and, when asked, at ``probe_at`` steps; and the wall seconds from the start of the
run (environment creation included) to the first time that mean reaches the solved line.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ppo.config import PPOConfig
from ppo.run.trainer import Progress, Trainer
from telemetry.returns import FINAL_EPISODES as RECENT


@dataclass
class Outcome:
    """What one run reached."""

    final_return: float | None = None
    probe_return: float | None = None
    solved_step: int | None = None
    solved_seconds: float | None = None
    steps: int = 0
    seconds: float = 0.0

    def describe(self) -> str:
        final = "n/a" if self.final_return is None else f"{self.final_return:.1f}"
        text = f"return {final} after {self.steps} steps, {self.seconds:.0f} s"
        if self.probe_return is not None:
            text += f" (at probe {self.probe_return:.1f})"
        if self.solved_step is not None:
            text += f"; solved at {self.solved_step} steps, {self.solved_seconds:.1f} s"
        return text


class Watch:
    """Probe, solved line and budget, checked after each update of any trainer."""

    def __init__(self, steps: int, line: float | None, probe_at: int | None) -> None:
        self.steps, self.line, self.probe_at = steps, line, probe_at
        self.outcome = Outcome()
        self.started = time.perf_counter()

    def should_stop(self, step: int, recent: float | None) -> bool:
        out = self.outcome
        if self.probe_at is not None and out.probe_return is None and step >= self.probe_at:
            out.probe_return = recent
        if self.line is not None and recent is not None and recent >= self.line:
            out.solved_step, out.solved_seconds = step, time.perf_counter() - self.started
            return True
        return step >= self.steps

    def finish(self, step: int, recent: float | None) -> Outcome:
        self.outcome.final_return, self.outcome.steps = recent, step
        self.outcome.seconds = time.perf_counter() - self.started
        return self.outcome


def run_ours(
    config: PPOConfig,
    steps: int,
    seed: int,
    line: float | None,
    probe_at: int | None,
    run_dir: Path,
) -> Outcome:
    """Our trainer on ``config`` (its own schedule), stopped at ``steps`` or the line."""
    torch.set_num_threads(1)
    watch = Watch(steps, line, probe_at)
    trainer = Trainer(dataclasses.replace(config, seed=seed), run_dir=run_dir)

    def on_progress(p: Progress) -> None:
        if watch.should_stop(p.global_step, p.recent_return_mean):
            trainer.request_stop("learning_bench: budget or solved line reached")

    trainer.on_progress = on_progress
    result = trainer.run()
    return watch.finish(result.global_step, result.recent_return_mean)


def run_sb3(
    config: PPOConfig, steps: int, seed: int, line: float | None, probe_at: int | None
) -> Outcome:
    """SB3's PPO with the same hyperparameters (``VecNormalize`` where we normalise)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(1)
    watch = Watch(steps, line, probe_at)
    env = _sb3_env(config, seed)
    model = PPO("MlpPolicy", env, seed=seed, device="cpu", **sb3_hyperparameters(config))

    def recent() -> float | None:
        episodes = [float(info["r"]) for info in list(model.ep_info_buffer)[-RECENT:]]
        return sum(episodes) / len(episodes) if episodes else None

    class Stop(BaseCallback):  # type: ignore[misc]
        def _on_step(self) -> bool:
            return not self.stop

        def _on_rollout_end(self) -> None:
            self.stop = watch.should_stop(self.num_timesteps, recent())

        stop = False

    model.learn(config.total_steps, callback=Stop())  # the schedule of config's total steps
    model.get_env().close()
    return watch.finish(model.num_timesteps, recent())


def _sb3_env(config: PPOConfig, seed: int) -> Any:
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    env = make_vec_env(config.env_id, n_envs=config.num_envs, seed=seed)
    if config.normalize_obs or config.normalize_returns:
        clip_reward = config.reward_clip if config.reward_clip is not None else float("inf")
        env = VecNormalize(
            env,
            norm_obs=config.normalize_obs,
            norm_reward=config.normalize_returns,
            clip_obs=config.obs_clip,
            clip_reward=clip_reward,
            gamma=config.gamma,
        )
    return env


def sb3_hyperparameters(config: PPOConfig) -> dict[str, Any]:
    """SB3 ``PPO`` keyword arguments for the hyperparameters of ``config``."""
    lr = config.learning_rate
    hidden = list(config.hidden_sizes)
    activation = torch.nn.Tanh if config.activation == "tanh" else torch.nn.ReLU
    return {
        "n_steps": config.num_steps,
        "batch_size": config.batch_size // config.num_minibatches,
        "n_epochs": config.update_epochs,
        "learning_rate": (lambda left: lr * left) if config.anneal_lr else lr,
        "gamma": config.gamma,
        "gae_lambda": config.gae_lambda,
        "clip_range": config.clip_range,
        "clip_range_vf": config.clip_range_vf,
        "ent_coef": config.ent_coef,
        "vf_coef": config.vf_coef,
        "max_grad_norm": config.max_grad_norm if config.max_grad_norm is not None else 1e12,
        "normalize_advantage": config.norm_adv,
        "policy_kwargs": {"net_arch": {"pi": hidden, "vf": hidden}, "activation_fn": activation},
        "verbose": 0,
    }


EPISODE_LINE = re.compile(r"global_step=(\d+), episodic_return=\[?([-0-9.e+]+)")
"""What CleanRL's ppo.py prints for each finished episode."""


def run_cleanrl(
    script: str, python: str, env_id: str, steps: int, seed: int, line: float
) -> Outcome:
    """CleanRL's single-file ``ppo.py`` (its own defaults) run by ``python``, read from its
    printed episodes; stopped at the solved line or ``steps``. Its times leave out starting
    the interpreter and importing its libraries (measured just before), which the
    in-process runs do not pay either."""
    imports = "import gymnasium, torch, tyro; from torch.utils.tensorboard import SummaryWriter"
    started = time.perf_counter()
    one = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([python, "-c", imports], check=True, capture_output=True, env=one)
    startup = time.perf_counter() - started
    watch = Watch(steps, line, None)
    watch.started += startup
    returns: deque[float] = deque(maxlen=RECENT)
    step = 0
    with tempfile.TemporaryDirectory() as cwd:  # it writes runs/ (TensorBoard) where it runs
        script_path = str(Path(script).resolve())
        command = [python, script_path, "--env-id", env_id, "--seed", str(seed)]
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=one,  # one torch thread, as every other run here
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdout is not None
        for text in proc.stdout:
            match = EPISODE_LINE.search(text)
            if match is None:
                continue
            step = int(match.group(1))
            returns.append(float(match.group(2)))
            if watch.should_stop(step, sum(returns) / len(returns)):
                break
        proc.kill()
        proc.wait()
    return watch.finish(step, sum(returns) / len(returns) if returns else None)
