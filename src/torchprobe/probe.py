"""Measure a PPO update of any PyTorch trainer: what its own log leaves out.

Most PPO trainers (skrl, Tianshou, TorchRL, RLlib, a hand-written loop) log losses and
perhaps entropy, but not the figures the health rules judge: how far the update moved the
policy, how much of the batch the clip bounds, the gradient norm before clipping. The probe
measures them from outside, for any policy that maps observations to a
``torch.distributions.Distribution``, and records one ``ppo_update`` per update::

    probe = UpdateProbe(lambda obs: policy(obs), optimizer, clip_range=0.2)
    with Recorder(config={**settings, **probe.settings()}) as rec:      # one log per run
        ...                                                             # the rollout
        with probe.update(rec, obs, actions, global_step=step):         # around the update
            trainer_update()                                            # unchanged

Entering the block, the probe keeps the policy's distribution on a batch of the rollout's
observations (at most ``batch_size``, every k-th sample, spread over the rollout), and
hooks the optimizer; leaving it, it evaluates the policy again on the same batch and
records:

==========================  ====================================================================
field                       what the probe measures (and how it differs from a trainer's own)
==========================  ====================================================================
``kl_final``                KL(pi_before || pi_after) on the batch, the mean over its samples:
                            exact (``torch.distributions.kl_divergence``, estimator ``full``)
                            or k3 on the batch's actions (``kl_estimator="k3"``). The KL rule
                            reads it where a trainer logs no ``approx_kl`` (which is measured
                            before each minibatch's step, so a step behind this one).
``clip_fraction``           the share of the batch whose ratio pi_after/pi_old lies outside
                            [1 - clip_range, 1 + clip_range], after the update (a trainer's own
                            is averaged over its minibatches as the update goes, so it is
                            lower or equal on a healthy update); needs ``clip_range``.
``ratio_min/max/mean/std``  that ratio over the batch, after the update.
``entropy``                 the mean entropy of pi_after on the batch (summed over an action's
                            dimensions); ``entropy_normalized`` over log(actions) for a
                            categorical policy.
``grad_norm``, ``_max``     the global L2 norm of the gradient at each optimizer step, read as
                            backward leaves it, before any clipping: mean and largest;
                            ``grad_clip_scale`` with ``max_grad_norm``.
``learning_rate``           the optimizer's first parameter group's, after the update.
``minibatches_completed``   the optimizer steps taken.
``explained_variance``,     from :meth:`UpdateMeasure.critic`'s values and return targets
``return_mean/_std``        (1 - Var(returns - values) / Var(returns)).
losses                      what :meth:`UpdateMeasure.losses` is given (the trainer's own).
==========================  ====================================================================

pi_old, the policy that sampled the batch, is taken to be the policy when the block is
entered, unless ``old_log_probs`` (the rollout's) are given. Non-finite observations in
the batch are recorded as a critical anomaly (a trainer that does not raise on them trains
on NaN), and a NaN in the policy shows as a NaN figure: the gate fails both; an exception inside the
block records nothing for the update and leaves the run's end to the recorder's ``with``
(``failed`` with the error's last line); a trainer that returns with non-finite parameters
ends it ``failed`` too (:meth:`UpdateProbe.ending`). Recording into a recorder with a
halter (``telemetry.integrations.halting_recorder``: the integrations' ``halter=``), the
block stops the run once the halter gives a reason after the update is recorded: it raises
:class:`~telemetry.halting.TrainingHalted` out of the trainer, the run finished ``failed``
with that reason.

Cost: one forward pass of the policy on the batch before the update and one after, without
gradients, and a squared norm per parameter per backward pass (kept on the device and read
once per update): ``bench/probe_overhead.py`` measures it.

This module imports torch (it is the trainer here): the ``train`` extra provides it.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec

try:
    import torch
    from torch.distributions import Categorical, Distribution, OneHotCategorical, kl_divergence
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without torch only
    raise ModuleNotFoundError(
        "torchprobe.probe needs torch: pip install 'sanctum-ppo[train]'"
    ) from exc

from telemetry.events import AnomalyPayload, PPOUpdatePayload, RunStatus, TrainerInfo
from telemetry.halting import Halter
from telemetry.integrations.cleanrl import Episodes
from telemetry.integrations.episodes import rollout_payload
from telemetry.integrations.halting_recorder import recorder_for, stop_if_halted
from telemetry.recorder import Recorder
from telemetry.run_config import CLIP_RANGE, KL_ESTIMATOR, MAX_GRAD_NORM, MEASURED_BY

ProbeEstimator = Literal["full", "k3"]
"""``full``: the exact KL of the two distributions (``kl_divergence``); ``k3``:
(r - 1) - log r on the batch's actions, for a distribution with no closed form."""

BATCH_SIZE: Final = 1024
"""Samples of the rollout the probe evaluates, by default (spread evenly over it)."""


def _per_sample(values: torch.Tensor, samples: int) -> torch.Tensor:
    """A per-sample figure: what a distribution returns per sample, summed over any action
    dimensions it leaves (a ``Normal`` over a vector action, not wrapped in ``Independent``)."""
    if values.dim() == 0:
        return values.expand(samples)
    return values.reshape(samples, -1).sum(dim=1) if values.dim() > 1 else values


def _float(value: torch.Tensor) -> float:
    return float(value.item())


def _spread(values: torch.Tensor) -> float:
    """Population standard deviation (0 for a single sample)."""
    return _float(values.double().var(unbiased=False).sqrt())


@dataclass(slots=True)
class UpdateMeasure:
    """What the trainer tells the probe of one update, inside :meth:`UpdateProbe.update`."""

    policy_loss: float | None = None
    value_loss: float | None = None
    total_loss: float | None = None
    values: torch.Tensor | None = None
    returns: torch.Tensor | None = None
    epochs: int | None = None
    """Epochs the update ran, when the trainer says."""
    early_stopped: bool = False
    """Whether the trainer stopped the update early (on its KL target): the probe cannot
    see it, so a trainer that can stop says so here."""
    _norms: list[list[torch.Tensor]] = field(default_factory=list)
    """Per optimizer step, the norm of each gradient tensor (0-d, on the device): the
    step's global norm is theirs, taken once for the whole update (:meth:`step_norms`)."""

    @property
    def optimizer_steps(self) -> int:
        """Optimizer steps taken in the update so far."""
        return len(self._norms)

    def step_norms(self) -> list[float]:
        """Each optimizer step's global gradient norm before clipping (one device read)."""
        parts = self._norms
        if not parts:
            return []
        if len({len(p) for p in parts}) == 1:  # the same tensors each step: one stack
            flat = torch.stack([t for part in parts for t in part]).view(len(parts), -1)
            found: list[float] = torch.linalg.vector_norm(flat.double(), dim=1).tolist()
            return found
        return [float(torch.linalg.vector_norm(torch.stack(p).double())) for p in parts]

    def losses(
        self,
        policy: float | torch.Tensor | None = None,
        value: float | torch.Tensor | None = None,
        total: float | torch.Tensor | None = None,
    ) -> None:
        """The trainer's own losses of the update (as it defines them: say so in the run's
        config when they differ from ours)."""
        read = _scalar
        self.policy_loss, self.value_loss, self.total_loss = read(policy), read(value), read(total)

    def critic(self, values: torch.Tensor, returns: torch.Tensor) -> None:
        """The critic's values and the return targets of the batch, for explained variance
        and the return spread."""
        self.values, self.returns = values.detach().flatten(), returns.detach().flatten()


def _scalar(value: float | torch.Tensor | None) -> float | None:
    if value is None:
        return None
    return float(value.detach().item()) if isinstance(value, torch.Tensor) else float(value)


class GradientNorms:
    """The global norm of the gradients as backward leaves them, before any clipping (which
    runs between backward and the step), taken once per backward pass and kept, on the
    device, for the optimizer step that follows (read once, when the update is recorded).

    A parameter's gradient hook only queues, once per backward pass, a callback that the
    autograd engine runs when the pass ends, after every gradient was accumulated and before
    ``backward()`` returns; it takes the norm of all the gradients in one fused call. Several
    backward passes before a step (gradient accumulation) leave the norm of their sum."""

    def __init__(
        self, measure: UpdateMeasure, params: Sequence[torch.Tensor], scaler: Any = None
    ) -> None:
        self.measure = measure
        self.params = params
        self.scaler = scaler
        """A ``torch.amp.GradScaler``: backward leaves its scale in the gradients."""
        self.queued = False
        self.latest: list[torch.Tensor] | None = None
        # the engine's end-of-pass callback, as torch's own DDP and FSDP use it
        self._queue = torch.autograd.Variable._execution_engine.queue_callback

    def keep(self, param: torch.Tensor) -> None:
        """A parameter's gradient was accumulated (``register_post_accumulate_grad_hook``)."""
        if not self.queued:
            self.queued = True
            self._queue(self.backward_done)

    def backward_done(self) -> None:
        """The backward pass ended: the norm of every gradient tensor, as it stands, in one
        fused call (the global norm is theirs, as ``clip_grad_norm_`` takes it)."""
        self.queued = False
        grads = [p.grad for p in self.params if p.grad is not None]
        if grads:
            norms = list(torch._foreach_norm(grads))
            if self.scaler is not None and self.scaler.is_enabled():
                norms = [n / self.scaler.get_scale() for n in norms]  # unscaled
            self.latest = norms

    def step(self, *_: Any) -> None:
        """The optimizer is about to step (``register_step_pre_hook``)."""
        if self.latest is not None:
            self.measure._norms.append(self.latest)
        self.latest = None


class UpdateProbe:
    """Measures each PPO update of a torch policy (see the module doc).

    ``distribution``: maps a batch of observations to the policy's distribution over
    actions (``lambda obs: policy(obs)``, ``actor.get_dist``...). ``optimizer``: the one the
    update steps (its parameters are hooked for the gradient norm). ``clip_range``: PPO's
    epsilon, for the clip fraction (None: not measured). ``max_grad_norm``: the trainer's
    clipping threshold, for ``grad_clip_scale``. ``batch_size``: rollout samples evaluated.
    ``kl_estimator``: ``full`` (exact; refused at the first update for a distribution with no
    closed form) or ``k3``. ``grad_scaler``: the ``torch.amp.GradScaler`` of a mixed-precision
    update (its scale is divided out of the gradient norms; a step it skips is not counted).
    """

    def __init__(
        self,
        distribution: Callable[[Any], Distribution],
        optimizer: torch.optim.Optimizer,
        *,
        clip_range: float | None = None,
        max_grad_norm: float | None = None,
        batch_size: int = BATCH_SIZE,
        kl_estimator: ProbeEstimator = "full",
        entropy_coef: float | None = None,
        grad_scaler: Any = None,
    ) -> None:
        if kl_estimator not in ("full", "k3"):
            raise ValueError(f"kl_estimator must be 'full' or 'k3', got {kl_estimator!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if clip_range is not None and not clip_range > 0:
            raise ValueError(f"clip_range must be above 0, got {clip_range}")
        self.distribution = distribution
        self.optimizer = optimizer
        self.clip_range = clip_range
        self.max_grad_norm = max_grad_norm
        self.batch_size = batch_size
        self.kl_estimator: ProbeEstimator = kl_estimator
        self.entropy_coef = entropy_coef
        self.grad_scaler = grad_scaler

    def settings(self) -> dict[str, Any]:
        """The probe's settings for ``run_started.config``: the KL estimator it measures
        with (the readers need it), the clip range and the clipping threshold."""
        found: dict[str, Any] = {KL_ESTIMATOR: self.kl_estimator}
        if self.clip_range is not None:
            found[CLIP_RANGE] = self.clip_range
        if self.max_grad_norm is not None:
            found[MAX_GRAD_NORM] = self.max_grad_norm
        return found

    def recorder(
        self,
        halter: Halter | None,
        trainer: TrainerInfo,
        config: Mapping[str, Any],
        **recorder: Any,
    ) -> Recorder:
        """The recorder of a run this probe measures: the trainer's own ``config`` with the
        probe's :meth:`settings` and its name as what measured the update figures
        (``measured_by``); halting when ``halter`` is given (``recorder_for``). The other
        keywords are the :class:`~telemetry.Recorder`'s."""
        measured = {**config, **self.settings(), MEASURED_BY: type(self).__name__}
        return recorder_for(halter, trainer=trainer, config=measured, **recorder)

    def ending(self) -> tuple[RunStatus, str] | None:
        """``("failed", reason)`` when a parameter the optimizer steps holds NaN or Inf once
        the trainer returned (one that trains on NaN without raising, as skrl does, leaves a
        policy of NaN: not a completed run); None otherwise (the run ends as the trainer
        did). One check per tensor, once per run."""
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        bad = sum(1 for p in params if not bool(torch.isfinite(p.detach()).all()))
        if not bad:
            return None
        return "failed", (
            f"the policy's parameters hold NaN or Inf after training ({bad} of "
            f"{len(params)} tensors the optimizer steps): the trainer returned without raising"
        )

    def rollout(
        self,
        recorder: Recorder,
        global_step: int,
        episodes: Episodes,
        steps_per_second: float | None = None,
    ) -> None:
        """Record the rollout that feeds the next update: the episodes that finished in it
        (``episodes.add(infos)`` at each step of a gymnasium vector env; taken here)."""
        returns, lengths = episodes.drain()
        recorder.emit(
            rollout_payload(
                update=recorder.updates,
                global_step=global_step,
                returns=returns,
                lengths=lengths,
                steps_per_second=steps_per_second,
            )
        )

    @contextmanager
    def update(
        self,
        recorder: Recorder,
        observations: Any,
        actions: torch.Tensor,
        *,
        global_step: int,
        old_log_probs: torch.Tensor | None = None,
    ) -> Iterator[UpdateMeasure]:
        """Measure the update run inside the block and record it in ``recorder`` (as update
        ``recorder.updates``) when the block ends without an exception; then a halted
        run raises :class:`~telemetry.halting.TrainingHalted` (see the module doc)."""
        started = time.perf_counter()
        stride = max(1, -(-_rows(actions) // self.batch_size))  # spread over the rollout
        batch = _head(observations, stride, self.batch_size)
        taken = _head(actions, stride, self.batch_size)
        bad = _nonfinite_rows(batch)
        if bad:
            recorder.emit(
                AnomalyPayload(
                    severity="critical",
                    metric="observations",
                    value=math.nan,
                    message=(
                        f"non-finite observations in the rollout: {bad} of the "
                        f"{_rows(taken)} samples the probe evaluated hold NaN or Inf"
                    ),
                    update=recorder.updates,
                    global_step=global_step,
                )
            )
        with torch.no_grad(), _own_rng():
            before = _frozen(self.distribution(batch))
            taken = _as_events(before, taken)
            before_logp = _per_sample(before.log_prob(taken), _rows(taken))
            old = before_logp
            if old_log_probs is not None:  # per sample, summed over action dimensions
                picked = _head(old_log_probs.detach(), stride, self.batch_size)
                old = _per_sample(picked, _rows(taken))
        measure = UpdateMeasure()
        handles = self._hook(measure)
        try:
            yield measure
        finally:
            for handle in handles:
                handle.remove()
        with torch.no_grad(), _own_rng():
            after = self.distribution(batch)
            payload = self._payload(
                recorder.updates, global_step, before, after, taken, old, before_logp, measure
            )
        recorder.emit(
            msgspec.structs.replace(payload, update_seconds=time.perf_counter() - started)
        )
        stop_if_halted(recorder, global_step)

    def _hook(self, measure: UpdateMeasure) -> list[Any]:
        """Hook the optimizer's parameters and its step (see :class:`GradientNorms`)."""
        params = [p for g in self.optimizer.param_groups for p in g["params"] if p.requires_grad]
        norms = self.gradient_norms(measure, params)
        handles = [p.register_post_accumulate_grad_hook(norms.keep) for p in params]
        handles.append(self.optimizer.register_step_pre_hook(norms.step))
        return handles

    def gradient_norms(
        self, measure: UpdateMeasure, params: Sequence[torch.Tensor]
    ) -> GradientNorms:
        """What the hooks call during one update (a bench times a subclass)."""
        return GradientNorms(measure, params, self.grad_scaler)

    def _kl(
        self,
        before: Distribution,
        after: Distribution,
        taken: torch.Tensor,
        before_logp: torch.Tensor,
    ) -> torch.Tensor:
        samples = _rows(taken)
        if self.kl_estimator == "full":
            try:
                return _per_sample(kl_divergence(before, after), samples)
            except NotImplementedError as exc:
                raise NotImplementedError(
                    f"UpdateProbe: kl_divergence has no closed form for {type(before).__name__}"
                    "; pass kl_estimator='k3' (the estimator on the batch's actions)"
                ) from exc
        log_r = _per_sample(after.log_prob(taken), samples) - before_logp
        return log_r.exp() - 1 - log_r

    def _payload(
        self,
        update: int,
        global_step: int,
        before: Distribution,
        after: Distribution,
        taken: torch.Tensor,
        old: torch.Tensor,
        before_logp: torch.Tensor,
        measure: UpdateMeasure,
    ) -> PPOUpdatePayload:
        samples = _rows(taken)
        kl = self._kl(before, after, taken, before_logp)
        ratio = (_per_sample(after.log_prob(taken), samples) - old).exp()
        entropy = _float(_entropy(after, samples).mean())
        clip_fraction = None
        if self.clip_range is not None:
            outside = ((ratio - 1).abs() > self.clip_range).double().mean()
            clip_fraction = _float(outside) if ratio.isfinite().all() else math.nan
        norms = measure.step_norms()
        grad_norm, grad_norm_max, grad_clip_scale = _gradient(norms, self.max_grad_norm)
        critic = _Critic.of(measure.values, measure.returns)
        return PPOUpdatePayload(
            update=update,
            global_step=global_step,
            kl_final=_float(kl.mean()),
            clip_fraction=clip_fraction,
            ratio_mean=_float(ratio.mean()),
            ratio_min=_float(ratio.min()),
            ratio_max=_float(ratio.max()),
            ratio_std=_spread(ratio),
            entropy=entropy,
            entropy_normalized=_normalized(after, entropy),
            entropy_coef=self.entropy_coef,
            policy_loss=measure.policy_loss,
            value_loss=measure.value_loss,
            total_loss=measure.total_loss,
            learning_rate=float(self.optimizer.param_groups[0]["lr"]),
            minibatches_completed=len(norms),
            epochs_completed=measure.epochs,
            early_stopped=measure.early_stopped,
            grad_norm=grad_norm,
            grad_norm_max=grad_norm_max,
            grad_clip_scale=grad_clip_scale,
            explained_variance=critic.explained_variance,
            return_mean=critic.return_mean,
            return_std=critic.return_std,
            value_mean=critic.value_mean,
        )


def _entropy(dist: Distribution, samples: int) -> torch.Tensor:
    """Each sample's entropy: exact where the distribution has a closed form, else a Monte
    Carlo estimate from one draw, -log pi(a) (TanhNormal and other transformed ones)."""
    try:
        return _per_sample(dist.entropy(), samples)
    except NotImplementedError:
        draw = dist.sample()
        return -_per_sample(dist.log_prob(draw), samples)


def _frozen(dist: Distribution) -> Distribution:
    """The distribution with its own copy of every tensor: one built on a view of a
    parameter (``Normal(mu(o), self.std)``) would otherwise move with the optimizer's step.
    As it is when it cannot be copied."""
    try:
        return copy.deepcopy(dist)
    except (RuntimeError, TypeError):
        return dist


def _as_events(dist: Distribution, actions: torch.Tensor) -> torch.Tensor:
    """Actions shaped as the distribution's samples: a discrete action stored as (N, 1)
    for a distribution over scalars (N,) is squeezed (else log_prob broadcasts to (N, N))."""
    expected = len(dist.batch_shape) + len(dist.event_shape)
    if actions.dim() == expected + 1 and actions.shape[-1] == 1:
        return actions.squeeze(-1)
    return actions


def _rows(tensor: torch.Tensor) -> int:
    return int(tensor.shape[0]) if tensor.dim() > 0 else 1


def _head(batch: Any, stride: int, size: int) -> Any:
    """Every ``stride``-th sample, at most ``size`` of them, of a tensor, of anything
    sliceable (a TensorDict, a numpy array), or of each tensor of a mapping (skrl's model
    inputs; None values kept)."""
    if isinstance(batch, Mapping) and not _is_tensordict(batch):
        return {k: None if v is None else v[::stride][:size] for k, v in batch.items()}
    return batch[::stride][:size]


def _is_tensordict(batch: Any) -> bool:
    """A TensorDict (a Mapping too, but sliced as a whole)."""
    return hasattr(batch, "batch_size") and hasattr(batch, "exclude")


def host_rows(tensors: Iterable[torch.Tensor]) -> list[list[float]]:
    """Tensors of one shape as lists of numbers, read from the device in one copy."""
    found: list[list[float]] = torch.stack(list(tensors)).tolist()
    return found


def as_tensor(values: Any, like: torch.nn.Module | torch.Tensor) -> torch.Tensor:
    """``values`` (a numpy array, a list, a tensor) as a tensor on ``like``'s device (a
    module's first parameter's): for integrations whose trainer keeps numpy batches."""
    device = like.device if isinstance(like, torch.Tensor) else next(like.parameters()).device
    return torch.as_tensor(values, device=device)


def _nonfinite_rows(batch: Any) -> int:
    """Samples of the batch holding a NaN or Inf in some floating-point tensor (a tensor or
    a numpy array, a mapping of them, or a TensorDict's observation-like entries)."""
    tensors: list[Any]
    if isinstance(batch, torch.Tensor):
        tensors = [batch]
    elif hasattr(batch, "__array__") and not _is_tensordict(batch):
        tensors = [torch.as_tensor(batch)]
    elif isinstance(batch, Mapping) and not _is_tensordict(batch):
        tensors = [v for v in batch.values() if isinstance(v, torch.Tensor)]
    else:  # a TensorDict: the entries a policy reads (not the rewards, not "next")
        keys = batch.keys()  # TensorDict refuses `key in td`
        tensors = [batch.get(key) for key in ("observation", "pixels") if key in keys]
    bad = None
    for t in tensors:
        if t.dim() == 0 or not t.is_floating_point():
            continue
        rows = ~t.reshape(t.shape[0], -1).isfinite().all(dim=1)
        bad = rows if bad is None else bad | rows
    return 0 if bad is None else int(bad.sum())


def _own_rng() -> AbstractContextManager[None]:
    """A block whose random draws (a policy that samples as it evaluates, a Monte Carlo
    entropy) leave the trainer's random stream where it was: torch's CPU generator, and the
    current CUDA device's once CUDA is in use."""
    in_use = torch.cuda.is_initialized()  # type: ignore[no-untyped-call]
    devices = [torch.cuda.current_device()] if in_use else []
    return torch.random.fork_rng(devices=devices)


def _normalized(after: Distribution, entropy: float) -> float | None:
    """Entropy over log(actions) for a categorical policy over two actions or more (one-hot
    or not: TorchRL's discrete actors are one-hot)."""
    if isinstance(after, Categorical | OneHotCategorical):
        actions = int(after.probs.shape[-1])
        return entropy / math.log(actions) if actions > 1 else None
    return None


def _gradient(
    norms: Sequence[float], limit: float | None
) -> tuple[float | None, float | None, float | None]:
    """Mean and largest pre-clip norm (the first non-finite one, when there is one), and the
    mean factor clipping to ``limit`` scaled them by."""
    if not norms:
        return None, None, None
    bad = [n for n in norms if not math.isfinite(n)]
    if bad:
        return bad[0], bad[0], None
    scale = None
    if limit is not None:
        scale = math.fsum(1.0 if n <= limit else limit / n for n in norms) / len(norms)
    return math.fsum(norms) / len(norms), max(norms), scale


@dataclass(frozen=True, slots=True)
class _Critic:
    """What the critic's values and the return targets say of one update."""

    explained_variance: float | None = None
    return_mean: float | None = None
    return_std: float | None = None
    value_mean: float | None = None

    @staticmethod
    def of(values: torch.Tensor | None, returns: torch.Tensor | None) -> _Critic:
        """Explained variance (absent when the returns do not vary) and the return spread."""
        if values is None or returns is None or returns.numel() == 0:
            return _Critic()
        returns, values = returns.double(), values.double()
        variance = _float(returns.var(unbiased=False))
        explained = None
        if variance > 0:
            explained = 1.0 - _float((returns - values).var(unbiased=False)) / variance
        return _Critic(
            explained, _float(returns.mean()), math.sqrt(variance), _float(values.mean())
        )
