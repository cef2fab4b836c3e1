"""The exit codes of every ``sanctum`` command, defined once.

A CI job reads them, so their meaning is narrow: 1 means only that a health rule (or a
check of the run) failed; everything that stopped a command from judging is 2.
"""

from __future__ import annotations

from typing import Final

EXIT_OK: Final = 0
"""Healthy, or done."""
EXIT_FAILED: Final = 1
"""``sanctum check``: the run was judged, and failed."""
EXIT_UNUSABLE: Final = 2
"""The run could not be judged: unusable input or options, an unwritable report, an
internal error (a crashed dashboard included)."""
