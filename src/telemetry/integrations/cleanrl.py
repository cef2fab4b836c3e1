"""Record a CleanRL-style single-file PPO script: a few lines beside its TensorBoard logging.

CleanRL's ``ppo.py`` keeps everything in local variables of one loop; these functions take
those values as they are (torch tensors, numpy numbers or floats, read with ``.item()`` or
``float()``; neither torch nor numpy is imported here) and write the same event log as any
other trainer::

    episodes = Episodes()
    with recorder(args, run_name) as rec:                  # runs/<run_name>/events.jsonl
        for iteration in range(1, args.num_iterations + 1):
            ...
                next_obs, reward, terminations, truncations, infos = envs.step(action)
                episodes.add(infos)                         # returns this step's episodes
            ...  # the update, then CleanRL's writer.add_scalar(...) lines
            record_update(rec, update=iteration - 1, global_step=global_step,
                          approx_kl=approx_kl, clipfracs=clipfracs, pg_loss=pg_loss,
                          v_loss=v_loss, entropy_loss=entropy_loss,
                          explained_var=explained_var, learning_rate=lr, sps=sps,
                          episodes=episodes, epoch=epoch, args=args)

How CleanRL's values become ours (the same table as ``sanctum import tensorboard``'s):

================  ===========================  ===============================================
CleanRL           ours                         where the definitions differ
================  ===========================  ===============================================
``approx_kl``     ``approx_kl``                k3, but of the last minibatch of the last epoch
                                               that ran (ours: the mean over its minibatches)
``clipfracs``     ``clip_fraction``            none: the mean over every minibatch evaluated
``entropy_loss``  ``entropy``                  the last minibatch's mean entropy
``pg_loss``       ``policy_loss``              the last minibatch's (ours: mean of them)
``v_loss``        ``value_loss``               the last minibatch's, with the 0.5 as ours
``explained_var`` ``explained_variance``       none; NaN (Var(R) = 0) is written as absent
``lr``            ``learning_rate``            none
``SPS``           ``rollout.steps_per_second`` steps over the time since the run began
episodes          ``rollout`` episodes,        none: the episodes that finished in the
                  return mean/min/max, length  rollout that fed this update
``old_approx_kl`` not recorded                 the k1 estimator; no field in schema 1
================  ===========================  ===============================================

With ``args`` (CleanRL's ``Args``), the update also records ``entropy_coef`` and, with
``epoch`` (the epoch loop's variable after the loop), ``epochs_completed``, the minibatch
counts and CleanRL's ``target_kl`` stop: it breaks after an epoch whose *last minibatch's*
approx_kl exceeds ``target_kl`` (no 1.5 factor; that step was applied), recorded as an early
stop of scope ``epoch``. Without ``epoch`` every update is recorded as not stopped early.
``action_count`` (a discrete action space's size) adds ``entropy_normalized``, which the
entropy health rule judges. ``returns`` (CleanRL's ``b_returns``, the value targets) adds
``return_mean`` and ``return_std``: explained variance is judged only when the returns vary,
so without them its rule says "not judged". ``grad_norms`` (what each
``nn.utils.clip_grad_norm_`` call returned: the norm before clipping) adds ``grad_norm``,
``grad_norm_max`` and ``grad_clip_scale`` (with ``args.max_grad_norm``), which the gradient
rule judges.

``recorder(..., halter=sanctum.HaltGate(None, "critical"))`` (any
:class:`~telemetry.halting.Halter`) halts the run: the first :func:`record_update` after
which the halter gives a reason records its anomaly, finishes the run ``failed`` with that
reason (``halted: <rule> critical (...)``) and raises
:class:`~telemetry.halting.TrainingHalted` out of the loop (uncaught, the script exits 1, as
``ppo train --halt-on`` does).
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, SupportsFloat, TypedDict

from telemetry.events import EarlyStop, PPOUpdatePayload, RolloutPayload, TrainerInfo
from telemetry.halting import Halter
from telemetry.integrations.episodes import rollout_payload
from telemetry.integrations.halting_recorder import recorder_for, stop_if_halted
from telemetry.recorder import Recorder
from telemetry.run_config import EARLY_STOP_SCOPE, KL_ESTIMATOR, MAX_KL

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; only read by the type checker

Number = SupportsFloat
"""A torch tensor of one element, a numpy number or a Python number."""


def as_float(value: Number) -> float:
    """``value`` as a Python float: ``.item()`` when it has one (a tensor or a numpy value of
    one element, read once), else ``float()``."""
    item = getattr(value, "item", None)
    return float(item()) if callable(item) else float(value)


def _optional(value: Number | None) -> float | None:
    return None if value is None else as_float(value)


def plain(value: Any) -> Any:
    """A setting as JSON: plain scalars as they are, anything else by its ``str``."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def config_of(args: Any) -> dict[str, Any]:
    """CleanRL's ``Args`` (or a mapping of its settings) as ``run_started.config``, with the
    names our readers know: ``kl_estimator`` k3 and, when ``target_kl`` is set, ``max_kl``
    (CleanRL's threshold, no 1.5 factor) and ``early_stop_scope`` ``epoch``."""
    settings = args if isinstance(args, Mapping) else vars(args)
    config = {str(name): plain(value) for name, value in settings.items()}
    config[KL_ESTIMATOR] = "k3"
    target_kl = settings.get("target_kl")
    if isinstance(target_kl, int | float) and not isinstance(target_kl, bool):
        config[MAX_KL] = float(target_kl)
        config[EARLY_STOP_SCOPE] = "epoch"
    return config


def recorder(
    args: Any,
    run_name: str,
    run_dir: str | os.PathLike[str] = "runs",
    action_space: object = None,
    halter: Halter | None = None,
) -> Recorder:
    """A :class:`~telemetry.Recorder` for ``<run_dir>/<run_name>/events.jsonl`` (beside
    CleanRL's TensorBoard files in ``runs/<run_name>``) with ``args`` as its config;
    ``action_space``: ``envs.single_action_space`` (``run_started.action_space``);
    ``halter``: what halts the run (see the module doc)."""
    return recorder_for(
        halter,
        run_dir=run_dir,
        run_id=run_name,
        env_id=getattr(args, "env_id", None),
        seed=getattr(args, "seed", None),
        config=config_of(args),
        trainer=TrainerInfo(name="cleanrl-ppo"),
        action_space=action_space,
    )


def _masked(stats: Mapping[str, Any], mask: Iterable[Any]) -> list[tuple[float, float]]:
    """The (return, length) of each env whose entry of ``mask`` is set."""
    return [
        (as_float(r), as_float(n))
        for done, r, n in zip(mask, stats["r"], stats["l"], strict=True)
        if done
    ]


def episodes_in(infos: Mapping[str, Any]) -> list[tuple[float, float]]:
    """(return, length) of each episode that finished in one step of a vector env whose
    envs are wrapped in ``RecordEpisodeStatistics``, as CleanRL reads them.

    Gymnasium 1.x: ``infos["episode"]`` with the mask ``infos["_episode"]`` (autoreset on
    the next step, the default), or the same inside ``infos["final_info"]`` (autoreset in
    the same step). Gymnasium 0.29: ``infos["final_info"]``, one info dict (or None) per env.
    """
    final = infos.get("final_info")
    if final is None:
        found = infos
    elif isinstance(final, Mapping):
        found = final
    else:  # gymnasium 0.29
        return [
            (as_float(info["episode"]["r"]), as_float(info["episode"]["l"]))
            for info in final
            if info and "episode" in info
        ]
    stats = found.get("episode")
    if stats is None:
        return []
    return _masked(stats, found.get("_episode", [True] * len(stats["r"])))


@dataclass
class Episodes:
    """The episodes finished since the last update: ``add`` each step's infos, and
    :func:`record_update` takes them for the update's rollout."""

    returns: list[float] = field(default_factory=list)
    lengths: list[float] = field(default_factory=list)

    def add(self, infos: Mapping[str, Any]) -> list[tuple[float, float]]:
        """Keep the episodes that finished in this step; returns them as (return, length),
        for the script's own logging."""
        found = episodes_in(infos)
        for episode_return, length in found:
            self.returns.append(episode_return)
            self.lengths.append(length)
        return found

    def drain(self) -> tuple[list[float], list[float]]:
        """The episodes kept so far, forgotten here."""
        taken = (self.returns, self.lengths)
        self.returns, self.lengths = [], []
        return taken


@dataclass(frozen=True, slots=True)
class Schedule:
    """What ran in one update, from CleanRL's settings and its epoch loop's variable."""

    epochs_completed: int | None = None
    minibatches_completed: int | None = None
    minibatches_planned: int | None = None
    stop: EarlyStop | None = None

    @staticmethod
    def of(args: Any, epoch: int | None, approx_kl: float) -> Schedule:
        """The counts and the ``target_kl`` stop (see the module doc); empty without both
        ``args`` and ``epoch``."""
        epochs = getattr(args, "update_epochs", None)
        per_epoch = getattr(args, "num_minibatches", None)
        if epoch is None or epochs is None or per_epoch is None:
            return Schedule()
        done = epoch + 1
        target_kl = getattr(args, "target_kl", None)
        stop = None
        if target_kl is not None and done < epochs:
            stop = EarlyStop(
                epoch=epoch,
                minibatch=per_epoch - 1,
                kl=approx_kl,
                threshold=float(target_kl),
                scope="epoch",
                applied=True,
            )
        return Schedule(done, done * per_epoch, epochs * per_epoch, stop)

    def reason(self) -> str | None:
        """CleanRL's stop in words: it judges the epoch's last minibatch, not its mean."""
        if self.stop is None:
            return None
        s = self.stop
        return (
            f"approx_kl {s.kl:.4f} > target_kl {s.threshold:.4f} at epoch {s.epoch} "
            f"minibatch {s.minibatch} (CleanRL: the epoch's last minibatch, applied)"
        )


def _clip_fraction(clipfracs: Number | Iterable[Number]) -> float:
    """The mean of CleanRL's per-minibatch list (a tensor or array of them, or one value)."""
    tolist = getattr(clipfracs, "tolist", None)
    values = tolist() if callable(tolist) else clipfracs
    if isinstance(values, Iterable):
        found = [as_float(v) for v in values]
        return math.fsum(found) / len(found) if found else math.nan
    return as_float(values)


def _explained(value: Number | None) -> float | None:
    explained = _optional(value)
    return None if explained is None or math.isnan(explained) else explained


def _normalized(entropy: float | None, action_count: int | None) -> float | None:
    """Entropy over log(actions): 1 uniform, 0 deterministic."""
    if entropy is None or action_count is None or action_count < 2:
        return None
    return entropy / math.log(action_count)


def _return_stats(returns: Any) -> tuple[float | None, float | None]:
    """Mean and (population) standard deviation of the return targets; None without them."""
    if returns is None or returns.numel() == 0:
        return None, None
    mean = as_float(returns.mean())
    spread = as_float(((returns - returns.mean()) ** 2).mean()) ** 0.5
    return mean, spread


def _grad_figures(
    grad_norms: Iterable[Number] | None, args: Any
) -> tuple[float | None, float | None, float | None]:
    """Mean and largest pre-clip norm, and the mean factor clipping scaled them by."""
    norms = [as_float(n) for n in grad_norms or ()]
    if not norms:
        return None, None, None
    nonfinite = [n for n in norms if not math.isfinite(n)]
    limit = getattr(args, "max_grad_norm", None)
    scale = None
    if limit is not None and not nonfinite:
        scale = math.fsum(1.0 if n <= limit else limit / n for n in norms) / len(norms)
    return sum(norms) / len(norms), nonfinite[0] if nonfinite else max(norms), scale


class _UpdateRequired(TypedDict):
    update: int
    global_step: int
    approx_kl: Number
    clipfracs: Number | Iterable[Number]


class UpdateValues(_UpdateRequired, total=False):
    """The keywords of :func:`update_payload` and :func:`record_update`: CleanRL's local
    variables of one update, named as CleanRL names them (the module doc maps each to ours).
    ``update``, ``global_step``, ``approx_kl`` and ``clipfracs`` are required."""

    pg_loss: Number | None
    v_loss: Number | None
    entropy_loss: Number | None
    explained_var: Number | None
    learning_rate: Number | None
    epoch: int | None
    args: Any
    action_count: int | None
    returns: Any
    grad_norms: Iterable[Number] | None


def _check_keywords(function: str, values: Mapping[str, Any]) -> None:
    """What the type checker says of a call, said at run time too (CleanRL scripts are not
    type-checked): a keyword :class:`UpdateValues` lacks, with the closest one it has, or a
    required one missing, as a :class:`TypeError` naming ``function``."""
    known = UpdateValues.__required_keys__ | UpdateValues.__optional_keys__
    for key in values.keys() - known:
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise TypeError(f"{function}() got an unexpected keyword argument {key!r}{hint}")
    for key in sorted(UpdateValues.__required_keys__ - values.keys()):
        raise TypeError(f"{function}() missing required keyword argument {key!r}")


def update_payload(**values: Unpack[UpdateValues]) -> PPOUpdatePayload:
    """One ``ppo_update`` from CleanRL's local variables (see the module doc)."""
    _check_keywords("update_payload", values)
    args, epoch = values.get("args"), values.get("epoch")
    kl, entropy = as_float(values["approx_kl"]), _optional(values.get("entropy_loss"))
    return_mean, return_std = _return_stats(values.get("returns"))
    grad_norm, grad_norm_max, grad_clip_scale = _grad_figures(values.get("grad_norms"), args)
    schedule = Schedule.of(args, epoch, kl)
    ent_coef = getattr(args, "ent_coef", None)
    return PPOUpdatePayload(
        update=values["update"],
        global_step=values["global_step"],
        approx_kl=kl,
        clip_fraction=_clip_fraction(values["clipfracs"]),
        entropy=entropy,
        entropy_coef=None if ent_coef is None else float(ent_coef),
        entropy_normalized=_normalized(entropy, values.get("action_count")),
        policy_loss=_optional(values.get("pg_loss")),
        value_loss=_optional(values.get("v_loss")),
        explained_variance=_explained(values.get("explained_var")),
        learning_rate=_optional(values.get("learning_rate")),
        epochs_completed=schedule.epochs_completed,
        minibatches_completed=schedule.minibatches_completed,
        minibatches_planned=schedule.minibatches_planned,
        early_stopped=schedule.stop is not None,
        early_stop_reason=schedule.reason(),
        early_stop=schedule.stop,
        return_mean=return_mean,
        return_std=return_std,
        grad_norm=grad_norm,
        grad_norm_max=grad_norm_max,
        grad_clip_scale=grad_clip_scale,
    )


def _rollout(
    update: int, global_step: int, episodes: Episodes | None, sps: Number | None
) -> RolloutPayload:
    returns, lengths = episodes.drain() if episodes is not None else ([], [])
    return rollout_payload(
        update=update,
        global_step=global_step,
        returns=returns,
        lengths=lengths,
        steps_per_second=_optional(sps),
    )


def record_update(
    rec: Recorder,
    *,
    episodes: Episodes | None = None,
    sps: Number | None = None,
    **values: Unpack[UpdateValues],
) -> PPOUpdatePayload:
    """Record the rollout that fed the update (the ``episodes`` finished since the last
    call, and ``sps``) and the update itself (``values``: the keywords of
    :func:`update_payload`); returns the update's payload. Raises
    :class:`~telemetry.halting.TrainingHalted` once the recorder's halter stops the run."""
    _check_keywords("record_update", values)
    rec.emit(_rollout(values["update"], values["global_step"], episodes, sps))
    payload = update_payload(**values)
    rec.emit(payload)
    stop_if_halted(rec, payload.global_step)
    return payload
