"""The names other PPO libraries give our settings: one table, read by the unknown-key error
(``--set`` and TOML files) and listed by ``ppo config``.

A key that is not a field of the config but is a peer's name (Stable-Baselines3's
``target_kl``, CleanRL's ``clip_coef``) is still refused, and the error says what to write
instead, converted from the value given where the units differ: SB3 stops an update once
approx_kl exceeds 1.5 x ``target_kl`` while our ``max_kl`` has no hidden factor, and SB3's
``batch_size`` is a minibatch's size in samples while our ``num_minibatches`` counts
minibatches per epoch. Names that are ours too (``learning_rate``, ``gamma``,
``gae_lambda``, ``ent_coef``, ``vf_coef``, ``max_grad_norm``, ``num_steps``,
``num_minibatches``, ``update_epochs``, ``norm_adv``, ``anneal_lr``, ``num_envs``) mean the
same here and are simply accepted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Put = Callable[[str, Any], str]
"""How an assignment is written where the key was given: ``--set max_kl=0.03`` on the
command line, ``max_kl = 0.03`` in a TOML file."""
Hint = Callable[[Any, Mapping[str, Any], Put], str]
"""(the value given or None, the config's values, Put) to what to write instead."""


@dataclass(frozen=True)
class PeerName:
    """A peer library's name for one of our settings."""

    name: str
    peers: str
    """Whose name it is: ``SB3``, ``CleanRL``, ``RL Zoo``, ``TRL``, ``verl``."""
    fields: tuple[str, ...]
    """Our fields it maps to (the hint applies to a config that has all of them)."""
    mapping: str
    """The mapping in words, independent of a value (what ``ppo config`` lists)."""
    hint: Hint


def put_set(name: str, value: Any) -> str:
    """``--set name=value``."""
    return f"`--set {name}={plain(value)}`"


def put_toml(name: str, value: Any) -> str:
    """``name = value`` as a TOML line (a string quoted; none as the word our loader reads)."""
    if value is None or (isinstance(value, str) and not value.startswith("<")):
        return f"`{name} = {json.dumps(plain(value))}`"
    return f"`{name} = {plain(value)}`"


def plain(value: Any) -> str:
    """A setting's value as ``--set`` takes it and ``ppo config`` shows it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(plain(v) for v in value) + "]"
    return str(value)


def _number(value: Any) -> float | None:
    """``value`` as a finite number (a string from ``--set`` parsed), else None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    return (
        True
        if word in ("true", "1", "yes", "on")
        else False
        if word in ("false", "0", "no", "off")
        else None
    )


def _given(value: Any, default: str) -> Any:
    """The value given, or a placeholder naming the peer's setting when none was."""
    return default if value is None else value


def _same(ours: str, what: str) -> Hint:
    """The same setting in the same unit under our name."""

    def hint(value: Any, config: Mapping[str, Any], put: Put) -> str:
        return f"{what}; here: {put(ours, _given(value, '<value>'))}"

    return hint


def _target_kl(value: Any, config: Mapping[str, Any], put: Put) -> str:
    x = _number(value)
    if x is None:
        return (
            "SB3's and CleanRL's early-stop threshold; ours is max_kl, with no hidden factor: "
            f"SB3's target_kl is {put('max_kl', '<1.5 x target_kl>')} (SB3 stops at 1.5x "
            f"target_kl), CleanRL's is {put('max_kl', '<target_kl>')} with "
            f"{put('early_stop_scope', 'epoch')}"
        )
    return (
        f"{put('max_kl', 1.5 * x)} is SB3's target_kl={x:g} (SB3 stops at 1.5x target_kl); "
        f"CleanRL's target_kl={x:g} (checked after each epoch, no factor) is "
        f"{put('max_kl', x)} with {put('early_stop_scope', 'epoch')}"
    )


def _minibatch_size(peer: str, name: str) -> Hint:
    """SB3's ``batch_size`` and CleanRL's ``minibatch_size``: samples per minibatch."""

    def hint(value: Any, config: Mapping[str, Any], put: Put) -> str:
        per_rollout, how = _rollout_size(config)
        size = _number(value)
        lead = f"{peer}'s {name} is a minibatch's size in samples; ours counts minibatches"
        if per_rollout is None or size is None or size < 1:
            return f"{lead}: {put('num_minibatches', f'<{how} / {name}>')}"
        count = per_rollout / size
        if count.is_integer():
            return f"{lead}: {put('num_minibatches', int(count))} ({how} / {size:g})"
        near = max(1, round(count))
        return (
            f"{lead}: {how} = {per_rollout} samples is not a multiple of {size:g}; "
            f"{put('num_minibatches', near)} makes minibatches of about "
            f"{per_rollout / near:.1f} samples"
        )

    return hint


def _rollout_size(config: Mapping[str, Any]) -> tuple[int | None, str]:
    """The samples of one rollout, and how they are counted, from the config's values."""
    envs, steps = config.get("num_envs"), config.get("num_steps")
    if isinstance(envs, int) and isinstance(steps, int):
        return envs * steps, f"num_envs x num_steps = {envs} x {steps}"
    rollouts = config.get("rollouts_per_update")
    if isinstance(rollouts, int):
        return rollouts, f"rollouts_per_update = {rollouts}"
    return None, "samples per rollout"


def _clip_vloss(value: Any, config: Mapping[str, Any], put: Put) -> str:
    on = _flag(value)
    clip = config.get("clip_range", 0.2)
    if on is False:
        return f"CleanRL's value clip switch; ours is a bound: {put('clip_range_vf', None)}"
    return (
        "CleanRL's value clip switch (at clip_coef); ours is a bound: "
        f"{put('clip_range_vf', clip)} (on, at clip_range) or {put('clip_range_vf', None)} (off)"
    )


def _normalize(value: Any, config: Mapping[str, Any], put: Put) -> str:
    on = _flag(value)
    both = (
        f"{put('normalize_obs', on is not False)} and {put('normalize_returns', on is not False)}"
    )
    return f"RL Zoo's VecNormalize switch (observations and rewards); here two: {both}"


def _kl_in_reward(value: Any, config: Mapping[str, Any], put: Put) -> str:
    coef = _given(value, "<kl_coef>")
    return (
        "TRL's per-token KL penalty on the reward; here: "
        f"{put('ref_kl_in_reward', True)} with {put('ref_kl_reward_coef', coef)}"
    )


def _activation(value: Any, config: Mapping[str, Any], put: Put) -> str:
    name = str(value).lower().removeprefix("nn.").removeprefix("torch.nn.")
    shown = name if name in ("tanh", "relu") else "tanh or relu"
    return f"SB3's hidden activation (policy_kwargs); here: {put('activation', shown)}"


PEER_NAMES: tuple[PeerName, ...] = (
    PeerName(
        "target_kl",
        "SB3, CleanRL",
        ("max_kl", "early_stop_scope"),
        "max_kl = 1.5 x target_kl (SB3 stops at 1.5x target_kl); CleanRL's: max_kl = "
        "target_kl with early_stop_scope = epoch",
        _target_kl,
    ),
    PeerName(
        "batch_size",
        "SB3",
        ("num_minibatches",),
        "num_minibatches = samples per rollout / batch_size (SB3's is samples per minibatch; "
        "a rollout is num_envs x num_steps samples, or rollouts_per_update sequences)",
        _minibatch_size("SB3", "batch_size"),
    ),
    PeerName(
        "minibatch_size",
        "CleanRL",
        ("num_minibatches",),
        "num_minibatches = samples per rollout / minibatch_size",
        _minibatch_size("CleanRL", "minibatch_size"),
    ),
    PeerName(
        "n_steps",
        "SB3",
        ("num_steps",),
        "num_steps (per environment per rollout)",
        _same("num_steps", "SB3's steps per environment per rollout"),
    ),
    PeerName(
        "n_epochs",
        "SB3",
        ("update_epochs",),
        "update_epochs",
        _same("update_epochs", "SB3's epochs per update"),
    ),
    PeerName(
        "n_envs",
        "SB3, RL Zoo",
        ("num_envs",),
        "num_envs",
        _same("num_envs", "SB3's number of environments"),
    ),
    PeerName(
        "lr",
        "CleanRL's log, rl-games",
        ("learning_rate",),
        "learning_rate",
        _same("learning_rate", "the learning rate's short name"),
    ),
    PeerName(
        "clip_coef",
        "CleanRL",
        ("clip_range",),
        "clip_range",
        _same("clip_range", "CleanRL's ratio clip"),
    ),
    PeerName(
        "cliprange", "TRL", ("clip_range",), "clip_range", _same("clip_range", "TRL's ratio clip")
    ),
    PeerName(
        "clip_vloss",
        "CleanRL",
        ("clip_range_vf",),
        "clip_range_vf = clip_range (true) or none (false)",
        _clip_vloss,
    ),
    PeerName(
        "cliprange_value",
        "TRL",
        ("clip_range_vf",),
        "clip_range_vf",
        _same("clip_range_vf", "TRL's value clip"),
    ),
    PeerName(
        "normalize_advantage",
        "SB3",
        ("norm_adv",),
        "norm_adv",
        _same("norm_adv", "SB3's advantage normalisation switch"),
    ),
    PeerName(
        "total_timesteps",
        "SB3, CleanRL",
        ("total_steps",),
        "total_steps (all environments together)",
        _same("total_steps", "environment steps to train for, all environments together"),
    ),
    PeerName(
        "n_timesteps",
        "RL Zoo",
        ("total_steps",),
        "total_steps",
        _same("total_steps", "RL Zoo's environment steps to train for"),
    ),
    PeerName(
        "net_arch",
        "SB3",
        ("hidden_sizes",),
        "hidden_sizes (the actor's and the critic's each)",
        _same("hidden_sizes", "SB3's hidden layer widths (policy_kwargs)"),
    ),
    PeerName("activation_fn", "SB3", ("activation",), "activation (tanh or relu)", _activation),
    PeerName(
        "normalize",
        "RL Zoo",
        ("normalize_obs", "normalize_returns"),
        "normalize_obs and normalize_returns",
        _normalize,
    ),
    PeerName(
        "num_ppo_epochs",
        "TRL",
        ("update_epochs",),
        "update_epochs",
        _same("update_epochs", "TRL's epochs per update"),
    ),
    PeerName(
        "kl_coef",
        "TRL",
        ("ref_kl_in_reward", "ref_kl_reward_coef"),
        "ref_kl_in_reward = true with ref_kl_reward_coef",
        _kl_in_reward,
    ),
    PeerName(
        "kl_loss_coef",
        "verl",
        ("ref_kl_loss_coef",),
        "ref_kl_loss_coef",
        _same("ref_kl_loss_coef", "verl's reference-KL loss coefficient"),
    ),
)
"""Every peer name we know, the one table (each name once)."""

BY_NAME: Mapping[str, PeerName] = {peer.name: peer for peer in PEER_NAMES}


def peer_names(fields: set[str] | frozenset[str]) -> list[PeerName]:
    """The peer names that map to fields a config has."""
    return [peer for peer in PEER_NAMES if set(peer.fields) <= fields]


def peer_hint(
    key: str, value: Any, fields: set[str] | frozenset[str], config: Mapping[str, Any], put: Put
) -> str | None:
    """What to write instead of the peer name ``key`` (None: not a peer name of this config)."""
    peer = BY_NAME.get(key)
    if peer is None or not set(peer.fields) <= fields:
        return None
    return peer.hint(value, config, put)
