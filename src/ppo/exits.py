"""The exit codes of ``ppo train``, defined once (the launcher and the trainer agree)."""

from __future__ import annotations

import signal
from typing import Final

EXIT_OK: Final = 0
"""Training completed."""
EXIT_STOPPED: Final = 1
"""Training stopped: the health gate of ``--halt-on`` stopped it (a checkpoint saved, the
run recorded as failed naming the rule), the run could not be recorded, a checkpoint could
not be written, it ran out of memory beyond the pre-flight estimate (recorded as failed),
or standard output broke while training (the run is recorded; only its output was lost)."""
EXIT_USAGE: Final = 2
"""Unusable input, refused before anything is built or recorded: a bad config (a seed
outside [0, 2^63-1], ``num_envs`` outside [1, 4096]), an unknown environment, a file that
is not a regular file or not what it should be, a checkpoint that cannot be used, a run id
that is taken or not a name, a run folder that cannot be created or written, a run larger
than the memory available, standard output that cannot be written."""
EXIT_INTERRUPTED: Final = 128 + signal.SIGINT
"""Ctrl-C (130); SIGTERM and SIGHUP give 128 + their number (143, 129)."""
