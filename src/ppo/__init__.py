"""PPO with KL guardrails that records its health as typed telemetry events.

Needs the ``train`` extra (torch, gymnasium). Importing :mod:`ppo` without it fails at once
with the command that installs it, rather than deep inside a training run.
"""

from __future__ import annotations

import importlib.util

_MISSING = [name for name in ("torch", "gymnasium") if importlib.util.find_spec(name) is None]
if _MISSING:
    raise ImportError(
        f"ppo needs {' and '.join(_MISSING)} (the 'train' extra): pip install 'sanctum-ppo[train]'"
    )

__version__ = "0.1.0"
