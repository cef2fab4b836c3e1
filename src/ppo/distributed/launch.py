"""``ppo train --nproc N``: start N ranks of the same command on this machine, as
``torchrun --nproc_per_node N -m ppo train ...`` would, and wait for them.

Each rank is ``python -m ppo train`` with the same arguments and the environment torchrun
sets (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``). Rank 0
records the run and prints; the other ranks print only errors. Unlike torchrun, a rank
that dies does not take the others down at once: rank 0 notices at its next collective
(within ``collective_timeout_seconds``) and records the run as failed with the lost rank
in the reason; the launcher then ends any rank still running.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from ppo.exits import EXIT_STOPPED

GRACE_SECONDS = 15.0
"""After the collective timeout, how long the launcher lets the survivors record and exit."""


def free_port() -> int:
    """A TCP port free on this machine now (for the ranks' rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def without_nproc(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``--nproc N`` (or ``--nproc=N``) removed."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--nproc":
            skip = True
        elif not arg.startswith("--nproc="):
            out.append(arg)
    return out


def launch(nproc: int, argv: Sequence[str], timeout: float, err: TextIO) -> int:
    """Run ``ppo <argv>`` as ``nproc`` ranks; the exit code is rank 0's, or the first
    failing rank's when rank 0 succeeded."""
    env = {
        **os.environ,
        "WORLD_SIZE": str(nproc),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    command = [sys.executable, "-m", "ppo", *without_nproc(argv)]
    ranks = [
        subprocess.Popen(
            command,
            env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
            stdout=None if r == 0 else subprocess.DEVNULL,
        )
        for r in range(nproc)
    ]
    try:
        return _wait(ranks, timeout + GRACE_SECONDS, err)
    except KeyboardInterrupt:  # the ranks got the same Ctrl-C: let them save and record
        return _wait(ranks, timeout + GRACE_SECONDS, err)
    finally:
        for proc in ranks:
            if proc.poll() is None:
                proc.kill()


def _wait(ranks: list[subprocess.Popen[bytes]], grace: float, err: TextIO) -> int:
    """Wait for every rank; once one fails, give the rest ``grace`` seconds, then stop them.
    Each rank other than 0 that failed is named (rank 0 explains itself)."""
    deadline: float | None = None
    while any(p.poll() is None for p in ranks):
        if deadline is None and any(p.returncode not in (None, 0) for p in ranks):
            deadline = time.monotonic() + grace
        if deadline is not None and time.monotonic() > deadline:
            for p in ranks:
                if p.poll() is None:
                    p.terminate()
            break
        time.sleep(0.05)
    codes = [p.wait() for p in ranks]
    for rank, code in enumerate(codes[1:], start=1):
        if code != 0:
            print(f"ppo train: rank {rank} {_ended(code)}", file=err)
    if codes[0] != 0:
        return _exit_code(codes[0])
    return EXIT_STOPPED if any(codes) else 0


def _ended(code: int | None) -> str:
    if code is not None and code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def _exit_code(code: int) -> int:
    """A rank's return code as a shell exit code (128 + N for signal N)."""
    return 128 - code if code < 0 else code
