"""Record an RLlib PPO run (new API stack, torch): the learner measures, the driver writes.

RLlib's PPO logs its losses, entropy and explained variance (each the last minibatch's), a
KL only with ``use_kl_loss`` (analytic, as a loss term), and no clip fraction or gradient
norm. :class:`RLlibRecorder` sets two things on the config before the algorithm is built:

- the learner class :class:`~telemetry.integrations.rllib_learner.SanctumPPOTorchLearner`,
  RLlib's own PPO torch learner measuring, per minibatch before its step, k3 and the clip
  fraction from RLlib's own logps, and per step the gradient norm before ``grad_clip``,
  wherever RLlib runs its learners (in the driver, or ``num_learners`` remote actors, whose
  figures RLlib reduces);
- two callbacks: on each env runner ``on_episode_end`` logs each finished episode's return
  and length; in the driver ``on_train_result`` writes the iteration's rollout and update,
  from one process, into one log, however many env runners and learners there are::

    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=2)
    with RLlibRecorder(config, env_id="CartPole-v1"):       # runs/<run_id>/events.jsonl
        algo = config.build_algo()
        for _ in range(20):
            algo.train()

======================  ===========================================================================
field                   what is recorded (and how RLlib's own figures differ)
======================  ===========================================================================
``approx_kl``           k3 per minibatch, before its step, mean over the iteration's minibatches
                        (``_max`` the largest); RLlib's ``mean_kl_loss`` is the analytic KL of
                        the last minibatch, and 0 without ``use_kl_loss``
``clip_fraction``       share of |r - 1| > ``clip_param``, mean over the minibatches (RLlib logs
                        none); ``ratio_min``/``_max`` over the iteration
``grad_norm``           the global gradient norm before ``grad_clip``: mean and max over steps
``entropy``,            RLlib's ``entropy``, ``policy_loss`` and ``vf_explained_var``: the
``policy_loss``,        iteration's last minibatch's (RLlib logs single items);
``explained_variance``  ``entropy_normalized`` over log(actions) for a discrete action space
``value_loss``          RLlib's ``vf_loss``: the MSE to the value targets clipped at
                        ``vf_clip_param`` per sample, without our 0.5 (last minibatch)
``learning_rate``       the default optimizer's
episodes                each episode that ended during the iteration's sampling: return, length
``global_step``         env steps sampled so far (``num_env_steps_sampled_lifetime``)
======================  ===========================================================================

Only the default module (``default_policy``) is recorded; a multi-agent config records its
first module. A raise inside the ``with`` block (an env runner that died on a NaN
observation raises in ``train()``) ends the run ``failed`` with the error's first line.
"""

from __future__ import annotations

import functools
import os
import secrets
from collections.abc import Callable, Sequence
from typing import Any, Final

from telemetry.events import AnomalyPayload, PPOUpdatePayload, RunStatus, TrainerInfo
from telemetry.halting import Halter
from telemetry.integrations import from_extra
from telemetry.integrations.cleanrl import plain
from telemetry.integrations.episodes import rollout_payload
from telemetry.integrations.halting_recorder import recorder_for, stop_if_halted
from telemetry.integrations.recorded import RecordedRun
from telemetry.run_config import CLIP_RANGE, KL_ESTIMATOR, MAX_GRAD_NORM

HINT: Final = (
    "telemetry.integrations.rllib needs ray[rllib] and torch: pip install 'sanctum-ppo[rllib]'"
)
RETURNS: Final = "sanctum_episode_returns"
LENGTHS: Final = "sanctum_episode_lengths"
_RECORDING: dict[str, RLlibRecorder] = {}
"""The recorders open in this process, by key: the driver's ``on_train_result`` finds its
own here (a callback is pickled into the config; a recorder, with its open log, is not)."""


def learner_class() -> type:
    """RLlib's PPO torch learner that measures (imports ray and torch)."""
    found: type = from_extra("telemetry.integrations.rllib_learner", "SanctumPPOTorchLearner", HINT)
    return found


def _append(config: Any, name: str, callback: Callable[..., None]) -> list[Callable[..., Any]]:
    """The config's callbacks of ``name`` (none, one or a list) with ``callback`` added, in
    place of one an earlier recorder added to the same config (a sweep reuses it)."""
    existing = getattr(config, f"callbacks_{name}", None)
    found = [] if existing is None else existing if isinstance(existing, list) else [existing]
    ours = (on_episode_end, on_train_result)
    kept = [c for c in found if c not in ours and getattr(c, "func", None) not in ours]
    return [*kept, callback]


def on_episode_end(*, episode: Any, metrics_logger: Any = None, **_: Any) -> None:
    """On an env runner: log the finished episode's return and length (kept as lists, and
    gathered into the iteration's results)."""
    if metrics_logger is None:
        return
    metrics_logger.log_value(RETURNS, float(episode.get_return()), reduce="item_series")
    metrics_logger.log_value(LENGTHS, float(len(episode)), reduce="item_series")


def on_train_result(*, algorithm: Any, result: dict[str, Any], key: str, **_: Any) -> None:
    """In the driver: write the iteration's rollout and update (ignored where no recorder
    of ``key`` is open: a restored algorithm, another process)."""
    recorder = _RECORDING.get(key)
    if recorder is not None:
        recorder.record(result)


class RLlibRecorder(RecordedRun):
    """Records an RLlib PPO run whose ``config`` (a ``PPOConfig``, new API stack, torch) is
    built inside the ``with`` block (see the module doc). The keywords are the
    :class:`~telemetry.Recorder`'s; ``action_space`` defaults to the config's, or that of
    its Gymnasium environment. ``halter``: a :class:`~telemetry.halting.Halter`
    (``sanctum.HaltGate(None, "critical")``) that stops the run after the first iteration
    at which it gives a reason: the run finishes ``failed`` with it and
    :class:`~telemetry.halting.TrainingHalted` is raised out of ``algo.train()`` (see
    ``telemetry.integrations.halting_recorder``)."""

    def __init__(
        self,
        config: Any,
        *,
        run_dir: str | os.PathLike[str] = "runs",
        run_id: str | None = None,
        env_id: str | None = None,
        seed: int | None = None,
        action_space: object = None,
        halter: Halter | None = None,
    ) -> None:
        if not hasattr(config, "clip_param") or not hasattr(config, "learner_class"):
            raise TypeError(f"RLlibRecorder records RLlib's PPOConfig; got {type(config).__name__}")
        if getattr(config, "framework_str", "torch") != "torch":
            raise ValueError("RLlibRecorder measures torch learners: config.framework('torch')")
        learner = learner_class()
        own = config._learner_class
        if own is not None and not issubclass(own, learner):
            raise ValueError(
                f"config has its own learner_class {own.__name__}: RLlibRecorder sets "
                "SanctumPPOTorchLearner (subclass it from "
                "telemetry.integrations.rllib_learner to keep yours)"
            )
        self.key = secrets.token_hex(8)
        config.training(learner_class=own or learner)
        config.callbacks(
            on_episode_end=_append(config, "on_episode_end", on_episode_end),
            on_train_result=_append(
                config, "on_train_result", functools.partial(on_train_result, key=self.key)
            ),
        )
        self.recorder = recorder_for(
            halter,
            run_dir=run_dir,
            run_id=run_id,
            env_id=env_id or _env_id(config),
            seed=seed if seed is not None else getattr(config, "seed", None),
            config=config_of(config),
            trainer=TrainerInfo(name="rllib", version=_version()),
            policy_epochs=int(config.num_epochs),
            action_space=action_space if action_space is not None else _action_space(config),
        )
        self._dropped = self._restarts = 0
        self._healthy: int | None = None
        """Env runners healthy at the last iteration (None: not reported)."""
        self.env_runners = int(config.num_env_runners)

    def attach(self) -> None:
        _RECORDING[self.key] = self

    def detach(self) -> None:
        _RECORDING.pop(self.key, None)

    def ending(self) -> tuple[RunStatus, str] | None:
        """``failed`` when no env runner was healthy at the last iteration: fault tolerance
        kept train() returning, but nothing was left to sample (NaN observations kill each
        restarted one)."""
        if self._healthy != 0 or self.env_runners == 0:
            return None
        return "failed", (
            f"RLlib's env runners: 0 of {self.env_runners} healthy at the end "
            f"({self._dropped} dropped, {self._restarts} restarted): each raised (its error "
            "is in Ray's worker logs)"
        )

    def record(self, result: dict[str, Any]) -> None:
        """Write one training iteration's rollout and update from its ``result``; fewer
        healthy env runners than configured, or one RLlib dropped or restarted since the
        last iteration, is a critical anomaly (its fault tolerance goes on without them: a
        NaN observation that killed one is not a healthy run), and an iteration whose
        learners updated nothing writes no update."""
        runners = result.get("env_runners", {})
        step = int(result.get("num_env_steps_sampled_lifetime") or 0)
        self._faults(result.get("fault_tolerance", {}), step)
        learners = result.get("learners", {})
        if not any(k != "__all_modules__" and v for k, v in learners.items()):
            return
        returns = _numbers(runners.get(RETURNS))
        lengths = _numbers(runners.get(LENGTHS))
        self.recorder.emit(
            rollout_payload(
                update=self.recorder.updates,
                global_step=step,
                returns=returns,
                lengths=lengths if len(lengths) == len(returns) else [],
                steps_per_second=None,
            )
        )
        self.recorder.emit(self._update(result, step))
        stop_if_halted(self.recorder, step)

    def _faults(self, faults: dict[str, Any], step: int) -> None:
        dropped = int(faults.get("num_env_runners_dropped_lifetime") or 0)
        restarts = int(faults.get("num_remote_worker_restarts") or 0)
        healthy = faults.get("num_healthy_workers")
        self._healthy = healthy if isinstance(healthy, int) else self._healthy
        short = isinstance(healthy, int) and healthy < self.env_runners
        if not short and dropped <= self._dropped and restarts <= self._restarts:
            return
        self.recorder.emit(
            AnomalyPayload(
                severity="critical",
                metric="env_runners",
                value=None if healthy is None else float(healthy),
                message=(
                    f"RLlib's env runners: {healthy} of {self.env_runners} healthy "
                    f"({dropped} dropped, {restarts} restarted so far): an env runner raised "
                    "(its error is in Ray's worker logs), and fault tolerance went on "
                    "without it"
                ),
                update=self.recorder.updates,
                global_step=step,
            )
        )
        self._dropped, self._restarts = dropped, restarts

    def _update(self, result: dict[str, Any], step: int) -> PPOUpdatePayload:
        learners = result.get("learners", {})
        module: dict[str, Any] = next(
            (v for k, v in learners.items() if k != "__all_modules__"), {}
        )
        every = learners.get("__all_modules__", {})

        def figure(table: dict[str, Any], name: str) -> float | None:
            value = table.get(name)
            return None if value is None else float(value)

        entropy = figure(module, "entropy")
        log_actions = figure(module, "sanctum_log_actions")
        grad_norm, grad_max = (
            figure(every, "sanctum_grad_norm"),
            figure(every, "sanctum_grad_norm_max"),
        )
        steps = figure(every, "sanctum_grad_steps")
        return PPOUpdatePayload(
            update=self.recorder.updates,
            global_step=step,
            approx_kl=figure(module, "sanctum_approx_kl"),
            approx_kl_max=figure(module, "sanctum_approx_kl_max"),
            clip_fraction=figure(module, "sanctum_clip_fraction"),
            ratio_min=figure(module, "sanctum_ratio_min"),
            ratio_max=figure(module, "sanctum_ratio_max"),
            entropy=entropy,
            entropy_normalized=(
                entropy / log_actions if entropy is not None and log_actions else None
            ),
            entropy_coef=figure(module, "curr_entropy_coeff"),
            policy_loss=figure(module, "policy_loss"),
            value_loss=figure(module, "vf_loss"),
            total_loss=figure(module, "total_loss"),
            explained_variance=figure(module, "vf_explained_var"),
            learning_rate=figure(module, "default_optimizer_learning_rate"),
            grad_norm=grad_norm,
            grad_norm_max=grad_max,
            grad_clip_scale=figure(every, "sanctum_grad_clip_scale"),
            minibatches_completed=None if steps is None else int(steps),
            early_stopped=False,
        )


def config_of(config: Any) -> dict[str, Any]:
    """The PPO settings of the config, with the names our readers know."""
    names = (
        "lr", "gamma", "lambda_", "clip_param", "vf_clip_param", "vf_loss_coeff",
        "entropy_coeff", "use_kl_loss", "kl_coeff", "kl_target", "num_epochs",
        "minibatch_size", "train_batch_size_per_learner", "grad_clip", "grad_clip_by",
        "num_env_runners", "num_envs_per_env_runner", "num_learners",
    )  # fmt: skip
    found = {name: plain(getattr(config, name, None)) for name in names}
    found[CLIP_RANGE] = found["clip_param"]
    found[MAX_GRAD_NORM] = found["grad_clip"] if found["grad_clip_by"] == "global_norm" else None
    found[KL_ESTIMATOR] = "k3"
    return found


def _numbers(values: Any) -> list[float]:
    """A metrics list (or one value) as floats."""
    if values is None:
        return []
    items: Sequence[Any] = values if isinstance(values, list | tuple) else [values]
    return [float(v) for v in items]


def _action_space(config: Any) -> Any:
    """The config's ``action_space``, else that of one environment made from its Gymnasium
    id and closed (what each env runner will make); None when neither says (an env creator
    registered with Ray: pass ``action_space=``)."""
    if getattr(config, "action_space", None) is not None:
        return config.action_space
    env_id = _env_id(config)
    if env_id is None:
        return None
    import gymnasium as gym

    try:
        env: Any = gym.make(env_id, **(getattr(config, "env_config", None) or {}))
    except Exception:  # noqa: BLE001 - not a Gymnasium id: RLlib resolves it (tune's registry)
        return None
    try:
        return env.action_space
    finally:
        env.close()


def _env_id(config: Any) -> str | None:
    env = getattr(config, "env", None)
    return env if isinstance(env, str) else None


def _version() -> str:
    import ray

    return str(getattr(ray, "__version__", "unknown"))
