"""Pre-clip gradient norms per parameter group, and global-norm clipping in the same pass.

What a user needs to read clipping: the global norm before clipping (what the optimizer
would have seen), the share of it that belongs to the actor and to the critic (in an
actor-critic with separate networks the critic's regression of unnormalised returns
dominates the norm, and clipping the global norm then shrinks the policy step too), and
the factor the clip actually applied, ``min(1, max_norm / norm)``. The group norms come
from the gradients already computed: no extra backward pass. Clipping follows
``torch.nn.utils.clip_grad_norm_`` exactly (the same ``1e-6`` in the denominator, the
factor applied even when it is 1), so results do not depend on which of the two ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn


@dataclass(frozen=True)
class GradNorms:
    """0-d tensors on the gradients' device; detached."""

    total: Tensor
    """Global L2 norm of every gradient, before clipping."""
    groups: Mapping[str, Tensor]
    """Pre-clip L2 norm of each named parameter group (together they make ``total``)."""
    scale: Tensor
    """The factor the gradients were multiplied by: ``min(1, max_norm / (total + 1e-6))``;
    1 when there is no ``max_norm``."""


def _norm(params: Sequence[nn.Parameter]) -> Tensor:
    norms = [torch.linalg.vector_norm(p.grad.detach()) for p in params if p.grad is not None]
    if not norms:
        return torch.zeros((), device=params[0].device if params else None)
    total: Tensor = torch.linalg.vector_norm(torch.stack(norms))
    return total


def clip_grad_norm(
    groups: Mapping[str, Sequence[nn.Parameter]], max_norm: float | None
) -> GradNorms:
    """Measure every group's pre-clip norm and the global one, then clip to ``max_norm``."""
    by_group = {name: _norm(params) for name, params in groups.items()}
    total = torch.linalg.vector_norm(torch.stack(list(by_group.values())))
    if max_norm is None:
        return GradNorms(total, by_group, torch.ones((), device=total.device))
    scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
    for params in groups.values():
        for p in params:
            if p.grad is not None:
                p.grad.detach().mul_(scale)
    return GradNorms(total, by_group, scale)
