"""The exit codes of ``ppo train``, defined once (the launcher and the trainer agree)."""

from __future__ import annotations

import signal
from typing import Final

EXIT_OK: Final = 0
"""Training completed."""
EXIT_STOPPED: Final = 1
"""Training stopped: the run could not be recorded, or a checkpoint could not be written."""
EXIT_USAGE: Final = 2
"""Unusable input: a bad config, an unknown environment, a checkpoint that cannot be used,
a run id that is taken or not a name."""
EXIT_INTERRUPTED: Final = 128 + signal.SIGINT
"""Ctrl-C (130); SIGTERM and SIGHUP give 128 + their number (143, 129)."""
