"""The line ``ppo train`` ends with: the run's verdict as ``sanctum check`` words it.

``ppo train`` exits 0 for a run that trained to its end whatever its health (the exit code
says whether training ran, ``sanctum check`` whether it was healthy), so its last line
says what the gate would: ``verdict: FAIL: KL 8x  (sanctum check runs/<run>)``. Sanctum is
imported here, once training is over, through its public API only.
"""

from __future__ import annotations

from pathlib import Path

from ppo.run.messages import path as shown_path
from telemetry.text import visible

VERDICT: str = "verdict: "
"""How the line starts (the attached dashboard's closing lines carry it over)."""


def verdict_line(events: Path, thresholds: Path | None = None) -> str:
    """``verdict: OK  (sanctum check runs/x)`` for the log at ``events``, under the rules
    ``--thresholds`` names (the shipped ones without it); a log or file it cannot judge
    reads ``not judged: <why>``, never a traceback: the run is recorded either way."""
    from sanctum import ThresholdsError, check_verdict  # after training: sanctum loads now
    from telemetry.eventlog import EventLogError

    try:
        said = check_verdict(events, thresholds)
    except (EventLogError, ThresholdsError, OSError) as exc:
        said = f"not judged: {exc}"
    except KeyboardInterrupt:  # the run is over and recorded: Ctrl-C skips only the reading
        said = "not judged: interrupted"
    return f"{VERDICT}{visible(said)}  (sanctum check {shown_path(events.parent)})"
