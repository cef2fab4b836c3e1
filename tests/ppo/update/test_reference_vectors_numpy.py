"""C-04 against an independent computation: update 0 of ``minibatch_scope`` by hand in numpy.

The expected file pins what our code produced (determinism); this checks that what it
produced is PPO. From the same inputs, a float64 numpy PPO written from the definitions
(tanh MLPs, clipped surrogate, clipped value loss, entropy bonus, per-minibatch advantage
normalisation, global-norm clipping, Adam as in Kingma & Ba with torch's epsilon placement)
replays epoch 0 and measures each minibatch before its step: k3 = (r - 1) - log r and the
share of |r - 1| > clip_range. Only the minibatch order is taken from torch, because it is
the generator's output (the agent's ``seed + 1``), not maths under test.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch

from tests.ppo.reference_vectors import EXPECTED, SCENARIOS, load_inputs

Params = dict[str, np.ndarray]
CLIP, CLIP_VF, VF_COEF, ENT_COEF, MAX_NORM = 0.2, 0.2, 0.5, 0.01, 0.5
LR, BETAS, EPS, STD_MIN = 0.01, (0.9, 0.999), 1e-5, 1e-8
MINIBATCHES, SEED = 4, 7


def mlp(p: Params, prefix: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hidden activations, output) of Linear -> tanh -> Linear."""
    h = np.tanh(x @ p[f"{prefix}.0.weight"].T + p[f"{prefix}.0.bias"])
    return h, h @ p[f"{prefix}.2.weight"].T + p[f"{prefix}.2.bias"]


def mlp_grads(p: Params, prefix: str, x: np.ndarray, h: np.ndarray, d_out: np.ndarray) -> Params:
    """Gradients of the MLP's parameters given dLoss/dOutput."""
    d_z = (d_out @ p[f"{prefix}.2.weight"]) * (1.0 - h**2)
    return {
        f"{prefix}.2.weight": d_out.T @ h,
        f"{prefix}.2.bias": d_out.sum(axis=0),
        f"{prefix}.0.weight": d_z.T @ x,
        f"{prefix}.0.bias": d_z.sum(axis=0),
    }


def minibatch(p: Params, mb: dict[str, np.ndarray]) -> tuple[float, float, Params]:
    """k3 KL and clip fraction before the step, and the gradient of the PPO loss."""
    n = len(mb["actions"])
    h_a, logits = mlp(p, "actor", mb["obs"])
    shifted = logits - logits.max(axis=1, keepdims=True)  # log-softmax, stable
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    probs = np.exp(log_p)
    onehot = np.eye(3)[mb["actions"]]
    log_r = (log_p * onehot).sum(1) - mb["logp_old"]
    r = np.exp(log_r)
    kl = float(np.mean(np.expm1(log_r) - log_r))
    clip_fraction = float(np.mean(np.abs(r - 1.0) > CLIP))
    a = mb["advantages"] - mb["advantages"].mean()
    a /= max(float(np.std(mb["advantages"], ddof=1)), STD_MIN)
    # max(-A r, -A clip(r)): the gradient flows only where the unclipped term is the max
    unclipped_wins = -a * r >= -a * np.clip(r, 1 - CLIP, 1 + CLIP)
    d_log_r = np.where(unclipped_wins, -a, 0.0) * r / n
    entropy = -(probs * log_p).sum(1)
    d_logits = d_log_r[:, None] * (onehot - probs)
    d_logits += ENT_COEF / n * probs * (log_p + entropy[:, None])  # from -ent_coef * mean H
    h_c, values = mlp(p, "critic", mb["obs"])
    v, ret, old = values[:, 0], mb["returns"], mb["values"]
    clipped_v = old + np.clip(v - old, -CLIP_VF, CLIP_VF)
    unclipped_v_wins = (v - ret) ** 2 >= (clipped_v - ret) ** 2
    d_v = VF_COEF * np.where(unclipped_v_wins, v - ret, 0.0) / n  # of vf * 0.5 * mean(sq)
    grads = mlp_grads(p, "actor", mb["obs"], h_a, d_logits)
    grads |= mlp_grads(p, "critic", mb["obs"], h_c, d_v[:, None])
    return kl, clip_fraction, grads


def adam_step(p: Params, g: Params, m: Params, v: Params, t: int) -> None:
    """Clip the global norm to MAX_NORM, then one Adam step (torch's eps placement)."""
    norm = float(np.sqrt(sum(float((x**2).sum()) for x in g.values())))
    scale = min(1.0, MAX_NORM / (norm + 1e-6))
    for k in p:
        grad = g[k] * scale
        m[k] = BETAS[0] * m[k] + (1 - BETAS[0]) * grad
        v[k] = BETAS[1] * v[k] + (1 - BETAS[1]) * grad**2
        denom = np.sqrt(v[k]) / np.sqrt(1 - BETAS[1] ** t) + EPS
        p[k] = p[k] - LR / (1 - BETAS[0] ** t) * m[k] / denom


def replay_update_0(inputs: dict[str, Any], max_kl: float) -> tuple[list[float], list[float]]:
    """Epoch 0 of update 0 in minibatch scope: per-minibatch KL and clip fraction."""
    p = {k: np.asarray(w, dtype=np.float64) for k, w in inputs["weights"].items()}
    data = {k: np.asarray(inputs[k]) for k in ("obs", "logp_old", "values", "returns")}
    data["advantages"] = np.asarray(inputs["advantages"])
    data["actions"] = np.asarray(inputs["actions"])
    order = torch.randperm(32, generator=torch.Generator().manual_seed(SEED + 1)).numpy()
    m = {k: np.zeros_like(x) for k, x in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    kls: list[float] = []
    clips: list[float] = []
    for i, rows in enumerate(np.split(order, MINIBATCHES)):
        kl, clip_fraction, grads = minibatch(p, {k: x[rows] for k, x in data.items()})
        kls.append(kl)
        clips.append(clip_fraction)
        if not kl <= max_kl:
            break  # checked before the step; this minibatch is not applied
        adam_step(p, grads, m, v, t=i + 1)
    return kls, clips


def test_update_0_kl_and_clip_fraction_match_an_independent_numpy_ppo() -> None:
    max_kl = SCENARIOS["minibatch_scope"]["max_kl"]
    kls, clips = replay_update_0(load_inputs(), max_kl)
    expected = json.loads(EXPECTED.read_text())["minibatch_scope"][0]
    stop = expected["early_stop"]
    assert (stop["epoch"], stop["minibatch"]) == (0, len(kls) - 1)  # stopped where we did
    assert stop["kl"] == pytest.approx(kls[-1], abs=1e-6) and kls[-1] > max_kl
    assert expected["approx_kl"] == pytest.approx(np.mean(kls), abs=1e-6)
    assert expected["approx_kl_max"] == pytest.approx(max(kls), abs=1e-6)
    assert expected["clip_fraction"] == pytest.approx(np.mean(clips), abs=1e-6)
