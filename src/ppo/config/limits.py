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
MAX_TORCH_THREADS: Final = 1024
"""``torch_threads`` is at most this many (a million made OpenMP exhaust the machine's
thread limit and crash; more threads than cores only slows a CPU run down)."""
MAX_NPROC: Final = 64
"""``--nproc`` starts at most this many processes (and no more than ``num_envs``, which
they share)."""
MAX_HIDDEN_LAYERS: Final = 64
"""``hidden_sizes`` lists at most this many layers."""
MAX_HIDDEN_WIDTH: Final = 1_000_000
"""Each hidden layer has at most this many units (the memory check bounds the network as a
whole)."""
MAX_UPDATE_EPOCHS: Final = 10_000
"""``update_epochs`` is at most this many."""
MAX_MINIBATCH_STEPS: Final = 100_000
"""``update_epochs x num_minibatches`` (the minibatch steps of one update, each a row of
statistics kept until the update ends) is at most this many."""
