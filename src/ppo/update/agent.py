"""PPOAgent.update: epochs x minibatches with KL early stop, guards, and one reduction.

Per minibatch the loss breakdown goes into a preallocated statistics tensor that stays on
the device; the only per-minibatch host read is the three numbers the next decision needs
(KL for the early stop, loss and gradient norm for the non-finite guard). Everything else
is read once, at the end of the update, and becomes a telemetry ``PPOUpdatePayload``.

Early stop is data (an ``EarlyStop`` record whose ``describe()`` is the one reason text),
never a silent ``break``. ``minibatch`` scope checks each minibatch's KL before its
optimizer step and does not apply that step (SB3); ``epoch`` scope checks the mean KL of an
epoch after it (CleanRL checks only its last minibatch). There is no hidden factor on
``max_kl``, and a non-finite KL always stops.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from ppo.config import PPOConfig
from ppo.core import kl as kl_estimators
from ppo.core.advantages import normalize
from ppo.core.distributions import uniform_entropy
from ppo.core.gradients import GradNorms, clip_grad_norm
from ppo.core.kl_control import adapt_penalty, adapt_proportional
from ppo.core.losses import LossBreakdown, ppo_loss
from ppo.distributed.world import SINGLE, World
from ppo.model.policy import ActorCritic
from ppo.rollout.buffer import Batch
from ppo.update.payload import (
    Measured,
    PayloadContext,
    UpdateSummary,
    rollout_fields,
    summarise,
)
from ppo.update.state import InForce, UpdateState, early_stop, exceeds
from ppo.update.stats import COLUMNS, MinibatchStats, RolloutStats, UpdateStats, reduce_update

_REDUCED_BY = (
    (COLUMNS["ratio_min"], "min"),
    (COLUMNS["ratio_max"], "max"),
    (COLUMNS["nonfinite_ratios"], "sum"),
)
"""Columns of the statistics table reduced over ranks otherwise than by their mean."""


def make_adam(params: list[nn.Parameter], lr: float, eps: float) -> torch.optim.Adam:
    """Adam, fused (one kernel for all parameters instead of a loop) where torch has it.

    Fused Adam on CPU needs torch >= 2.4 and we support torch >= 2.2. Rather than compare
    versions, ask: an older torch refuses ``fused=True`` for CPU parameters in the
    constructor (RuntimeError), and then the foreach implementation does the same maths.
    """
    try:
        return torch.optim.Adam(params, lr=lr, eps=eps, fused=True)
    except RuntimeError:
        return torch.optim.Adam(params, lr=lr, eps=eps)


class PPOAgent:
    """Owns the optimizer, the minibatch generator and the (adaptive) KL coefficient."""

    def __init__(
        self,
        policy: ActorCritic,
        config: PPOConfig,
        generator: torch.Generator | None = None,
        world: World = SINGLE,
    ) -> None:
        self.policy = policy
        self.device = next(policy.parameters()).device
        """Where the policy, the batch and the statistics table live."""
        self.config = config
        self.world = world
        """Across processes: ``config`` is this rank's share and every figure and decision
        is reduced over ranks; gradients are averaged by DDP."""
        self.model: nn.Module = policy
        if world.distributed:
            self.model = nn.parallel.DistributedDataParallel(policy)
        self.optimizer = make_adam(list(policy.parameters()), config.learning_rate, config.adam_eps)
        self.generator = generator or torch.Generator().manual_seed(config.seed + 1)
        self.kl_coef = float(config.kl_penalty_coefficient)
        self.ref_kl_loss_coef = float(config.ref_kl_loss_coef)
        """The reference-KL loss coefficient in force (adapted toward ref_kl_target)."""
        self.ref_kl_reward_coef = float(config.ref_kl_reward_coef)
        """The reward penalty's coefficient in force (used when ref_kl_in_reward)."""
        self._groups = {
            name: [p for p in params if p.requires_grad]
            for name, params in policy.parameter_groups().items()
        }
        self.on_minibatch: Callable[[], None] | None = None
        """Called before each minibatch (the trainer sends heartbeats from it)."""

    # ------------------------------------------------------------------ update
    def update(self, batch: Batch, *, update: int = 0, global_step: int = 0) -> UpdateSummary:
        """Run one PPO update on ``batch`` and summarise it."""
        started = time.perf_counter()
        cfg = self.config
        in_force = InForce(
            update=update,
            global_step=global_step,
            learning_rate=cfg.learning_rate_at(update),
            entropy_coef=cfg.ent_coef_at(update),
            kl_coef=self.kl_coef,
        )
        state = UpdateState.start(in_force, cfg.update_epochs, cfg.num_minibatches, self.device)
        for group in self.optimizer.param_groups:
            group["lr"] = in_force["learning_rate"]
        rollout = RolloutStats.measure(self._global_rollout(batch))
        for epoch in range(cfg.update_epochs):
            state.epochs_started += 1
            order = torch.randperm(batch.size, generator=self.generator).to(self.device)
            shuffled = batch.select(order)  # one gather per epoch; minibatches are slices
            kls = self._epoch(shuffled, epoch, state)
            if state.stop is None:
                self._check_epoch(kls, epoch, state)
            if state.stop is not None:
                break
        kl_final = self.world.mean(self.measure_kl(batch), "kl_final") if cfg.kl_final else None
        rows = self._global_rows(state.stats[: state.evaluated])
        stats = reduce_update(rows, state.applied_rows, state.last_epoch, rollout, kl_final)
        reference = batch.logp_ref is not None
        in_loss, in_reward = reference and cfg.ref_kl_loss_coef > 0.0, cfg.ref_kl_in_reward
        context = PayloadContext(
            seconds=time.perf_counter() - started,
            entropy_normalized=self._normalized_entropy(stats.entropy, batch),
            ref_kl_loss_coef=self.ref_kl_loss_coef if in_loss else None,
            ref_kl_reward_coef=self.ref_kl_reward_coef if reference and in_reward else None,
        )
        assert stats.rollout is not None  # measured above
        rollout_figures = rollout_fields(stats.rollout, batch, reference and in_reward)
        summary = summarise(stats, state, self._measured(reference), context, rollout_figures)
        self._adapt(stats, batch.size)
        return summary

    def _measured(self, reference: bool) -> Measured:
        """Which of the table's figures this agent's updates measure."""
        cfg = self.config
        return Measured(
            old_policy_kl=True,
            critic=True,
            kl_penalty=True,
            dual_clip=cfg.clip_ratio_c is not None,
            split_clip=False,
            grouped="actor" in self._groups,
            clipped=cfg.max_grad_norm is not None,
            entropy_floor=cfg.min_entropy,
            reference=reference,
        )

    @property
    def reward_kl_coef(self) -> float | None:
        """The coefficient of the reward penalty in force (None: the penalty is off)."""
        return self.ref_kl_reward_coef if self.config.ref_kl_in_reward else None

    def _adapt(self, stats: UpdateStats, n_steps: int) -> None:
        """Move the adaptive coefficients for the next update (the payload has reported
        the ones this update used)."""
        cfg = self.config
        if cfg.kl_target is not None:
            measured = stats.approx_kl if stats.kl_final is None else stats.kl_final
            self.kl_coef = adapt_penalty(self.kl_coef, measured, cfg.kl_target)
        if cfg.ref_kl_target is not None:
            target, horizon = cfg.ref_kl_target, cfg.ref_kl_horizon
            if cfg.ref_kl_loss_coef > 0.0:
                self.ref_kl_loss_coef = adapt_proportional(
                    self.ref_kl_loss_coef, stats.ref_kl, target, n_steps, horizon
                )
            if cfg.ref_kl_in_reward:
                self.ref_kl_reward_coef = adapt_proportional(
                    self.ref_kl_reward_coef, stats.ref_kl, target, n_steps, horizon
                )

    def _epoch(self, batch: Batch, epoch: int, state: UpdateState) -> list[float]:
        """One pass over the minibatches until a stop; returns the KL measured on each."""
        kls: list[float] = []
        for minibatch, mb in enumerate(batch.split(self.config.num_minibatches)):
            kls.append(self._minibatch(mb, epoch, minibatch, state))
            if state.stop is not None:
                break
        return kls

    def _minibatch(self, mb: Batch, epoch: int, minibatch: int, state: UpdateState) -> float:
        """Evaluate one minibatch, then stop before it, skip it or step; returns its KL."""
        cfg = self.config
        if self.on_minibatch is not None:
            self.on_minibatch()
        update = state.in_force["update"]
        with self.world.guarded(f"update {update} gradients"):
            breakdown, norms = self._forward_backward(mb, state.in_force)
        state.record(epoch, minibatch, MinibatchStats.measure(breakdown, norms))
        # Across processes the KL, loss and norm are means over ranks (a NaN anywhere is NaN
        # everywhere), so every rank takes the same decision below and none waits alone.
        local = torch.stack(
            [breakdown.approx_kl.detach(), breakdown.total_loss.detach(), norms.total]
        )
        decide: list[float] = self.world.mean(local, f"update {update} decision").tolist()
        max_kl = cfg.max_kl if cfg.early_stop_scope == "minibatch" else None
        if state.settle(epoch, minibatch, decide, max_kl):
            self.optimizer.step()
        return decide[0]

    def _check_epoch(self, kls: list[float], epoch: int, state: UpdateState) -> None:
        """Epoch scope: stop when the epoch's mean KL broke the threshold (steps applied)."""
        cfg = self.config
        if cfg.early_stop_scope != "epoch" or epoch == cfg.update_epochs - 1:
            return  # after the last epoch there is nothing left to stop
        mean_kl = sum(kls) / len(kls)
        if exceeds(mean_kl, cfg.max_kl):
            assert cfg.max_kl is not None  # exceeds() is never true without a threshold
            state.stop = early_stop(epoch, len(kls) - 1, mean_kl, cfg.max_kl, "epoch")

    def _forward_backward(self, mb: Batch, in_force: InForce) -> tuple[LossBreakdown, GradNorms]:
        """Loss, gradients (clipped) and the pre-clip gradient norms of one minibatch."""
        cfg = self.config
        logp, entropy, values = self.model(mb.obs, mb.actions, mb.masks)
        advantages = normalize(mb.advantages, cfg.adv_std_min) if cfg.norm_adv else mb.advantages
        inputs = mb.loss_inputs(logp, entropy, values, advantages)
        entropy_coef, kl_coef = in_force["entropy_coef"], in_force["kl_coef"]
        loss, breakdown = ppo_loss(inputs, cfg, entropy_coef, kl_coef, self.ref_kl_loss_coef)
        self.optimizer.zero_grad(set_to_none=True)
        torch.autograd.backward(loss)
        return breakdown, clip_grad_norm(self._groups, cfg.max_grad_norm)

    def _global_rollout(self, batch: Batch) -> Batch:
        """The figures' view of the rollout: every rank's samples (this rank's in one process)."""
        world = self.world
        if not world.distributed:
            return batch
        measures = batch.measures
        if measures is not None:
            penalty = measures.reward_penalty
            measures = dataclasses.replace(
                measures,
                td_errors=world.gather(measures.td_errors, "rollout figures"),
                reward_penalty=None
                if penalty is None
                else world.gather(penalty, "rollout figures"),
            )
        return dataclasses.replace(
            batch,
            advantages=world.gather(batch.advantages, "rollout figures"),
            returns=world.gather(batch.returns, "rollout figures"),
            values=world.gather(batch.values, "rollout figures"),
            measures=measures,
        )

    def _global_rows(self, rows: Tensor) -> Tensor:
        """Per-minibatch figures over ranks: means, with the ratio extremes as extremes and the
        non-finite ratio count as a sum. Every rank evaluated the same minibatches."""
        world = self.world
        if not world.distributed:
            return rows
        out = world.mean(rows, "update figures")
        for column, op in _REDUCED_BY:
            out[:, column] = world.reduce(rows[:, column], op, "update figures")
        return out

    def _normalized_entropy(self, entropy: float, batch: Batch) -> float | None:
        """Mean entropy over that of the uniform policy (categorical policies only)."""
        action = self.policy.action
        if not action.discrete:
            return None
        uniform = uniform_entropy(action.n, batch.masks)
        return entropy / uniform if uniform > 0 else None

    def measure_kl(self, batch: Batch) -> Tensor:
        """The configured estimator over the whole batch with the current policy (0-d)."""
        with torch.no_grad():
            logp = self.policy.distribution(batch.obs, batch.masks).log_prob(batch.actions)
            return kl_estimators.estimate(
                logp, batch.logp, self.config.kl_estimator, self.config.log_ratio_clamp
            ).mean()

    # ------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Optimizer, KL coefficient and minibatch generator state (tensors and builtins)."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "kl_coef": self.kl_coef,
            "ref_kl_loss_coef": self.ref_kl_loss_coef,
            "ref_kl_reward_coef": self.ref_kl_reward_coef,
            "generator": self.generator.get_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved. Values of the wrong type or shape raise
        TypeError or ValueError here, never later in a step (a checkpoint is input)."""
        fused = [group.get("fused") for group in self.optimizer.param_groups]
        self.optimizer.load_state_dict(state["optimizer"])
        _check_adam(self.optimizer)
        # load_state_dict also restores the saved "fused" flag; keep what this torch supports
        # (a checkpoint from a newer torch must still resume on an older one).
        for group, flag in zip(self.optimizer.param_groups, fused, strict=True):
            group["fused"] = flag
        self.kl_coef = _coefficient(state["kl_coef"], "kl_coef")
        # checkpoints written before the reference KL existed start from the config's values
        self.ref_kl_loss_coef = _coefficient(
            state.get("ref_kl_loss_coef", self.ref_kl_loss_coef), "ref_kl_loss_coef"
        )
        self.ref_kl_reward_coef = _coefficient(
            state.get("ref_kl_reward_coef", self.ref_kl_reward_coef), "ref_kl_reward_coef"
        )
        self.generator.set_state(state["generator"])


def _coefficient(value: Any, name: str) -> float:
    """A saved coefficient: a finite number >= 0."""
    number = float(value)
    if not (math.isfinite(number) and number >= 0.0):
        raise ValueError(f"{name} must be a finite number >= 0, got {number!r}")
    return number


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_adam(optimizer: torch.optim.Optimizer) -> None:
    """The Adam state a checkpoint restored is usable: numeric hyperparameters, and
    moments of each parameter's shape (torch's own loading checks neither)."""
    for group in optimizer.param_groups:
        betas = group.get("betas")
        pair = isinstance(betas, (tuple, list)) and len(betas) == 2 and all(map(_real, betas))
        if not (pair and all(_real(group.get(key)) for key in ("lr", "eps", "weight_decay"))):
            raise ValueError("its optimizer's lr, eps, weight_decay or betas are not numbers")
        for param in group["params"]:
            moments = optimizer.state.get(param)
            if not moments:  # no step taken yet
                continue
            for key in ("exp_avg", "exp_avg_sq"):
                moment = moments.get(key)
                if not isinstance(moment, Tensor) or moment.shape != param.shape:
                    raise ValueError(f"its optimizer's {key} does not match a parameter's shape")
            step = moments.get("step")
            if not (isinstance(step, Tensor) and step.numel() == 1):
                raise ValueError("its optimizer's step is not a count")
