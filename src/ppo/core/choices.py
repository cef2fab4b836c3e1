"""The names a config chooses among for the maths below it: the device, the forwards'
precision, how a token-level loss is aggregated. Declared without torch, so that
``ppo --help``, ``ppo config`` and a refused setting load no torch; the modules that act on
them (:mod:`ppo.core.device`, :mod:`ppo.core.losses`) import them from here."""

from __future__ import annotations

import typing
from typing import Final, Literal, TypeAlias

DeviceName: TypeAlias = Literal["auto", "cpu", "cuda"]
"""A config's ``device``: resolved on the machine by :func:`ppo.core.device.resolve_device`."""
DEVICE_NAMES: Final[tuple[str, ...]] = typing.get_args(DeviceName)
Precision: TypeAlias = Literal["fp32", "bf16"]
"""The forwards' precision (:func:`ppo.core.device.autocast`)."""

LossAggMode: TypeAlias = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]
"""verl's ``loss_agg_mode``: how a ``[sequences, tokens]`` loss becomes one number
(:func:`ppo.core.losses.aggregate`)."""
LOSS_AGG_MODES: Final[tuple[str, ...]] = typing.get_args(LossAggMode)
