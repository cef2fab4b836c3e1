"""Stable-Baselines3's PPO figures and settings as our payloads: pure functions, stdlib only.

The callback (``sb3_callback``) gathers what SB3 exposes: the ``train/*`` values its
logger holds after ``PPO.train()``, the epochs counter ``_n_updates``, the optimizer steps
it counted, and the Monitor's finished episodes. Everything that turns those into
``PPOUpdatePayload``, ``RolloutPayload`` and ``run_started.config`` lives here, without
SB3, torch or numpy, so each mapping is one testable function. The mapping and where SB3's
definitions differ from ours are listed in ``telemetry.integrations.sb3``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from telemetry.events import EarlyStop, PPOUpdatePayload
from telemetry.run_config import (
    CLIP_RANGE,
    CLIP_RANGE_VF,
    EARLY_STOP_SCOPE,
    KL_ESTIMATOR,
    MAX_GRAD_NORM,
    MAX_KL,
    SEED,
    TOTAL_TIMESTEPS,
    changed_to,
)

STOP_FACTOR: Final = 1.5
"""SB3 stops an update when a minibatch's approx_kl exceeds 1.5 x ``target_kl``."""


class Figure(NamedTuple):
    """The ``ppo_update`` field one of SB3's logger keys is recorded as."""

    field: str
    scale: float = 1.0
    """The logged value times this is the field's (-1: SB3 logs the negative)."""


FIGURES: Final[Mapping[str, Figure]] = MappingProxyType(
    {
        "train/approx_kl": Figure("approx_kl"),
        "train/clip_fraction": Figure("clip_fraction"),
        "train/entropy_loss": Figure("entropy", -1.0),
        "train/policy_gradient_loss": Figure("policy_loss"),
        "train/value_loss": Figure("value_loss"),
        "train/explained_variance": Figure("explained_variance"),
        "train/learning_rate": Figure("learning_rate"),
    }
)
"""SB3's ``train/*`` keys recorded as ``ppo_update`` fields (the table of
``telemetry.integrations.sb3``; its TensorBoard tags are the same names)."""
SETTING_FIGURES: Final[Mapping[str, str]] = MappingProxyType(
    {"train/clip_range": CLIP_RANGE, "train/clip_range_vf": CLIP_RANGE_VF}
)
"""SB3's ``train/*`` keys that are settings: the ``run_started.config`` key of each."""
NOT_RECORDED: Final[Mapping[str, str]] = MappingProxyType(
    {
        "train/loss": "the last minibatch's loss; total_loss is a mean over them",
        "train/std": "no field in schema 1",
    }
)
"""SB3's ``train/*`` keys recorded as nothing, and why."""
EPOCHS_KEY: Final = "train/n_updates"
"""SB3's count of epochs over the run (``epochs_completed`` is its rise in one update)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The model's settings an update's figures are read with."""

    n_epochs: int
    """Epochs planned per update."""
    minibatches_per_epoch: int
    """ceil(n_steps x n_envs / batch_size): SB3's buffer yields a short last minibatch."""
    ent_coef: float
    vf_coef: float
    target_kl: float | None
    """SB3's setting; the stop threshold is 1.5 times it."""
    log_actions: float | None
    """log of the number of actions of a discrete action space (None: continuous)."""


@dataclass(frozen=True, slots=True)
class Measured:
    """What the callback measured itself during one update, beside SB3's logger."""

    grad_norms: tuple[float, ...] = ()
    """Each applied minibatch's global gradient norm before SB3 clips it."""
    max_grad_norm: float | None = None
    """SB3's ``max_grad_norm``: the clip the norms were measured before."""
    return_mean: float | None = None
    """Mean of the rollout buffer's return targets (what the critic was fitted to)."""
    return_std: float | None = None
    """Their standard deviation: explained variance is judged only when they vary."""


def grad_figures(measured: Measured) -> tuple[float | None, float | None, float | None]:
    """``grad_norm``, ``grad_norm_max`` and ``grad_clip_scale`` of one update's norms."""
    norms = measured.grad_norms
    if not norms:
        return None, None, None
    limit = measured.max_grad_norm
    scale = None
    if limit is not None and all(math.isfinite(n) for n in norms):
        scale = math.fsum(1.0 if n <= limit else limit / n for n in norms) / len(norms)
    nonfinite = [n for n in norms if not math.isfinite(n)]
    mean = sum(norms) / len(norms)  # NaN or Inf when a norm is
    return mean, nonfinite[0] if nonfinite else max(norms), scale


@dataclass(frozen=True, slots=True)
class Counts:
    """What ran in one ``train()``, from counters SB3 keeps or we keep."""

    epochs: int
    """Epochs started: the rise of SB3's ``_n_updates`` (it counts the stopped one too)."""
    steps: int
    """Optimizer steps applied (the stopping minibatch is evaluated, never applied)."""


def figures(values: Mapping[str, Any]) -> dict[str, float]:
    """The ``ppo_update`` fields (:data:`FIGURES`) SB3's logger ``values`` hold, by name."""
    return {
        figure.field: float(values[key]) * figure.scale
        for key, figure in FIGURES.items()
        if values.get(key) is not None
    }


def _required(found: Mapping[str, float], field: str) -> float:
    value = found.get(field)
    if value is None:
        key = next(key for key, figure in FIGURES.items() if figure.field == field)
        raise KeyError(f"SB3's logger holds no {key}")
    return value


def early_stop(
    approx_kl: float, counts: Counts, settings: Settings
) -> tuple[str, EarlyStop | None] | None:
    """Why the update stopped early, or None when every planned minibatch was applied.

    The position is exact (from the counters). The KL is exact only when the stop came at
    an epoch's first minibatch, where SB3's logged mean is that one minibatch's value;
    elsewhere SB3 logs only the epoch's mean so far, so the structured record is left out.
    """
    planned = settings.n_epochs * settings.minibatches_per_epoch
    if settings.target_kl is None or counts.steps >= planned:
        return None
    threshold = STOP_FACTOR * settings.target_kl
    epoch = counts.epochs - 1
    minibatch = counts.steps - epoch * settings.minibatches_per_epoch
    limit = f"{STOP_FACTOR} x target_kl {settings.target_kl:.4f} = {threshold:.4f}"
    where = f"at epoch {epoch} minibatch {minibatch} (SB3 target_kl; minibatch not applied)"
    if minibatch == 0:
        record = EarlyStop(
            epoch=epoch,
            minibatch=0,
            kl=approx_kl,
            threshold=threshold,
            scope="minibatch",
            applied=False,
        )
        return f"approx_kl {approx_kl:.4f} > {limit} {where}", record
    return (
        f"a minibatch's approx_kl > {limit} {where}; SB3 logged only the mean of the "
        f"epoch's minibatches up to it, {approx_kl:.4f}",
        None,
    )


def _total_loss(
    policy: float | None, value: float | None, entropy_loss: float | None, s: Settings
) -> float | None:
    # SB3's loss per minibatch is pg + ent_coef * entropy_loss + vf_coef * value_loss, so
    # the mean of it is the same sum of the three means it logs.
    if policy is None or value is None or entropy_loss is None:
        return None
    return policy + s.ent_coef * entropy_loss + s.vf_coef * value


def _normalized(entropy: float | None, s: Settings) -> float | None:
    return None if entropy is None or not s.log_actions else entropy / s.log_actions


def _explained(found: Mapping[str, float]) -> float | None:
    explained = found.get("explained_variance")
    return None if explained is None or math.isnan(explained) else explained  # Var(R) = 0


def update_payload(
    values: Mapping[str, Any],
    *,
    update: int,
    global_step: int,
    counts: Counts,
    settings: Settings,
    seconds: float | None = None,
    measured: Measured | None = None,
) -> PPOUpdatePayload:
    """One ``ppo_update`` from the ``train/*`` values of SB3's logger after ``train()``,
    with what the callback ``measured`` itself (gradient norms, return targets)."""
    own = measured or Measured()
    grad_norm, grad_norm_max, grad_clip_scale = grad_figures(own)
    found = figures(values)
    approx_kl = _required(found, "approx_kl")
    entropy = found.get("entropy")
    entropy_loss = None if entropy is None else -entropy
    policy, value = found.get("policy_loss"), found.get("value_loss")
    stop = early_stop(approx_kl, counts, settings)
    return PPOUpdatePayload(
        update=update,
        global_step=global_step,
        approx_kl=approx_kl,
        clip_fraction=_required(found, "clip_fraction"),
        entropy=entropy,
        entropy_coef=settings.ent_coef,
        entropy_normalized=_normalized(entropy, settings),
        policy_loss=policy,
        value_loss=value,
        total_loss=_total_loss(policy, value, entropy_loss, settings),
        explained_variance=_explained(found),
        learning_rate=found.get("learning_rate"),
        epochs_completed=counts.epochs,
        minibatches_completed=counts.steps,
        minibatches_planned=settings.n_epochs * settings.minibatches_per_epoch,
        early_stopped=stop is not None,
        early_stop_reason=None if stop is None else stop[0],
        early_stop=None if stop is None else stop[1],
        update_seconds=seconds,
        return_mean=own.return_mean,
        return_std=own.return_std,
        grad_norm=grad_norm,
        grad_norm_max=grad_norm_max,
        grad_clip_scale=grad_clip_scale,
    )


def json_safe(value: Any) -> Any:
    """``value`` as JSON: numbers (numpy's too) as int or float, containers recursively,
    classes and functions by qualified name, anything else by its ``repr``."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}".lstrip(".")
    return repr(value)


def schedule(name: str, value: float | Callable[[float], float] | None) -> dict[str, Any]:
    """``{name: start}``, plus ``{name}_end`` when ``value`` is a schedule that changes
    (SB3 calls schedules with the progress remaining, 1 at the start, 0 at the end)."""
    if value is None or not callable(value):
        return {name: json_safe(value)}
    start, end = float(value(1.0)), float(value(0.0))
    return {name: start} if start == end else {name: start, changed_to(name): end}


SETTINGS: Final = (
    "n_steps",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "ent_coef",
    "vf_coef",
    MAX_GRAD_NORM,
    "target_kl",
    "normalize_advantage",
    "use_sde",
    "sde_sample_freq",
    "n_envs",
    SEED,
)
"""Plain settings of an SB3 PPO model copied to ``run_started.config`` as they are (SB3's
names; ``max_grad_norm`` and ``seed`` are ours too)."""


def hyperparameters(model: Any, total_timesteps: int | None) -> dict[str, Any]:
    """The model's settings as JSON for ``run_started.config``, with the names our
    readers know: ``max_kl`` (1.5 x ``target_kl``, the threshold SB3 really applies),
    ``kl_estimator`` (SB3 logs k3), ``early_stop_scope`` and ``total_timesteps``."""
    config: dict[str, Any] = {
        "algorithm": type(model).__name__,
        "policy": type(model.policy).__name__,
        **{name: json_safe(getattr(model, name, None)) for name in SETTINGS},
        **schedule("learning_rate", getattr(model, "lr_schedule", None)),
        **schedule(CLIP_RANGE, getattr(model, "clip_range", None)),
        **schedule(CLIP_RANGE_VF, getattr(model, "clip_range_vf", None)),
        "policy_kwargs": json_safe(getattr(model, "policy_kwargs", {})),
        "device": str(getattr(model, "device", "")),
        KL_ESTIMATOR: "k3",
        EARLY_STOP_SCOPE: "minibatch",
        TOTAL_TIMESTEPS: total_timesteps,
    }
    target_kl = getattr(model, "target_kl", None)
    if target_kl is not None:
        config[MAX_KL] = STOP_FACTOR * float(target_kl)
    return config
