"""The settings of a run: :class:`PPOConfig`, the loading of TOML and ``--set`` every config
shares, the field validators and the bounds ``ppo train`` enforces.

Imports :mod:`ppo.core` (the names and bounds the maths defines) and :mod:`telemetry`;
nothing else of ``ppo``.
"""

from __future__ import annotations

from ppo.config.ppo_config import Activation, AdvantageMode, EarlyStopScope, PPOConfig, VectorKind
from ppo.config.settings import ConfigError
from ppo.core.kl import KLEstimator

__all__ = [
    "Activation",
    "AdvantageMode",
    "ConfigError",
    "EarlyStopScope",
    "KLEstimator",
    "PPOConfig",
    "VectorKind",
]
