"""The learner side of ``telemetry.integrations.rllib``: RLlib's PPO torch learner, measuring
what it does not log. Imports ray (and so torch, through RLlib), never torch itself: it reads
RLlib's tensors through their own methods. Loaded only by the integration (and by each
learner process RLlib starts, which builds its learner from this class).

Per minibatch, before its optimizer step (the definitions of our ``approx_kl`` and
``clip_fraction``): k3 = (r - 1) - log r and the share of |r - 1| > ``clip_param`` over the
minibatch's valid samples, r = pi_new / pi_old from RLlib's own action logps, and the
ratio's extremes; per gradient computation, the global L2 norm of the gradients as backward
left them, before ``grad_clip``. Logged in RLlib's MetricsLogger under the module's key with
the ``sanctum_`` prefix, reduced per training iteration (RLlib 2.60's stats start again at
each reduce: means, max, min) and, with several learners, across them by RLlib.
"""

from __future__ import annotations

import math
from typing import Any, Final

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule

PREFIX: Final = "sanctum_"
"""Prefix of the learner metrics this module logs."""
ALL_MODULES: Final = "__all_modules__"


class SanctumPPOTorchLearner(PPOTorchLearner):
    """RLlib's PPO torch learner, plus the figures the health rules judge (module doc)."""

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> Any:
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        # read from detached tensors: nothing here enters the loss's graph
        module: RLModule = self.module[module_id].unwrapped()
        dist = module.get_train_action_dist_cls().from_logits(
            fwd_out[Columns.ACTION_DIST_INPUTS].detach()
        )
        logp: Any = dist.logp(batch[Columns.ACTIONS])  # a torch tensor, in a torch learner
        log_r = logp.detach() - batch[Columns.ACTION_LOGP]
        if Columns.LOSS_MASK in batch:
            log_r = log_r[batch[Columns.LOSS_MASK]]
        ratio = log_r.exp()
        k3 = (ratio - 1 - log_r).mean()
        clipped = ((ratio - 1).abs() > config.clip_param).float().mean()
        log = self.metrics.log_value
        log((module_id, PREFIX + "approx_kl"), k3, reduce="mean")
        log((module_id, PREFIX + "approx_kl_max"), k3, reduce="max")
        log((module_id, PREFIX + "clip_fraction"), clipped, reduce="mean")
        log((module_id, PREFIX + "ratio_min"), ratio.min(), reduce="min")
        log((module_id, PREFIX + "ratio_max"), ratio.max(), reduce="max")
        space = getattr(module, "action_space", None)
        actions = getattr(space, "n", None)
        if actions is not None and int(actions) > 1:
            log((module_id, PREFIX + "log_actions"), math.log(int(actions)), reduce="max")
        return loss

    def compute_gradients(self, loss_per_module: dict[str, Any], **kwargs: Any) -> Any:
        grads = super().compute_gradients(loss_per_module, **kwargs)
        found = [g.detach().double().pow(2).sum() for g in grads.values() if g is not None]
        if found:
            norm = sum(found[1:], found[0]).sqrt()
            log = self.metrics.log_value
            log((ALL_MODULES, PREFIX + "grad_norm"), norm, reduce="mean")
            log((ALL_MODULES, PREFIX + "grad_norm_max"), norm, reduce="max")
            log((ALL_MODULES, PREFIX + "grad_steps"), 1, reduce="sum")
            limit = getattr(self.config, "grad_clip", None)
            if limit and getattr(self.config, "grad_clip_by", None) == "global_norm":
                scale = (limit / norm).clamp(max=1.0)
                log((ALL_MODULES, PREFIX + "grad_clip_scale"), scale, reduce="mean")
        return grads
