"""The bounds ``ppo train`` enforces before it builds anything, defined once (the config
validators, the pre-flight checks and ``--help`` quote them).
"""

from __future__ import annotations

from typing import Final

MAX_SEED: Final = 2**63 - 1
"""A seed is an integer in [0, 2^63 - 1]: a signed 64-bit integer, which torch, NumPy,
Gymnasium and every reader of the event log accept, with room for the per-rank seeds
derived from it."""
MAX_NUM_ENVS: Final = 4096
"""``num_envs`` is at most this many environments (in all, across processes)."""
MAX_ASYNC_ENVS: Final = 256
"""With ``vector_env = "async"`` each environment is a process of its own: at most this
many."""
