"""What ``ppo train`` checks before it builds anything: the run folder, and the memory
the rollout and the network will need against what the machine has.

Config values (the seed's range, ``num_envs``'s bounds: :mod:`ppo.config.limits`) are checked
when the config is built; these checks need the file system or the machine. Each failure
is a :class:`PreflightError` whose message is one line naming the input and the problem
(exit 2), raised before any environment, network or event log exists, so a refused run
creates nothing and touches nothing already recorded.

The memory rule: training is refused when its estimate (:func:`memory_needed`) is larger
than the memory available now (:func:`memory_available`: ``MemAvailable`` of
``/proc/meminfo``, within the cgroup's ``memory.max`` when one is set; else the free
pages ``os.sysconf`` reports). ppo trains on the CPU, so host memory is what counts.
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass
from pathlib import Path

from ppo.config import PPOConfig
from ppo.rollout.envs import EnvSpec
from ppo.run.messages import path as shown
from telemetry.files import file_kind
from telemetry.recorder import EVENTS_FILE

FLOAT = 4
"""Bytes of a float32: observations, log-probs, values, parameters."""


class PreflightError(ValueError):
    """``ppo train`` cannot start; the message is one line naming the input."""


# ------------------------------------------------------------------------ run folder


def check_run_folder(run_dir: Path, run_id: str) -> None:
    """The run folder ``run_dir/run_id`` can be created (or is an empty one) and written.

    Refused: a ``--run-dir`` that is (or lies under) a file or a device, a folder this
    process cannot write in, a run id taken by a file, a run folder that already holds
    an event log."""
    existing = _nearest_existing(run_dir)
    name = f"--run-dir {shown(run_dir)}"
    if not existing.is_dir():
        if existing == run_dir:
            raise PreflightError(f"{name} is {_kind(existing)}, not a folder")
        raise PreflightError(
            f"{name} cannot be created: {shown(existing)} is {_kind(existing)}, not a folder"
        )
    _writable(existing, name if existing == run_dir else f"{name} cannot be created in")
    target = run_dir / run_id
    if existing != run_dir or not os.path.lexists(target):
        return
    if not target.is_dir():
        raise PreflightError(
            f"run id {run_id!r} is taken: {shown(target)} is {_kind(target)}, not a run "
            "folder; pick another --run-id"
        )
    _writable(target, f"run folder {shown(target)}")
    events = target / EVENTS_FILE
    if os.path.lexists(events):
        if not events.is_file():
            raise PreflightError(f"{shown(events)} is {_kind(events)}, not an event log")
        if events.stat().st_size > 0:
            raise PreflightError(f"{shown(target)} already holds a run; pick another --run-id")


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (``.`` or ``/`` at worst)."""
    while not os.path.lexists(path) and path.parent != path:
        path = path.parent
    return path


def _kind(path: Path) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "not a folder"
    return file_kind(mode, "not a folder")


PROBE = ".ppo-write-probe"
"""The file pre-flight creates (``PROBE-<pid>``) and removes at once in the folder that
will hold the run folder: a folder can say it is writable and still take no files
(``/proc``, an immutable folder, a file system that refuses new names)."""


def _writable(folder: Path, what: str) -> None:
    """``what`` names the folder, or ends with "in" for an ancestor."""
    where = f" {shown(folder)}" if what.endswith(" in") else ""
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PreflightError(
            f"{what}{where}: cannot write there (permission denied or a read-only file system)"
        )
    probe = folder / f"{PROBE}-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise PreflightError(
            f"{what}{where}: cannot create a file there ({exc.strerror or exc})"
        ) from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError as exc:
        raise PreflightError(
            f"{what}{where}: cannot remove a file created there ({exc.strerror or exc})"
        ) from None


# ---------------------------------------------------------------------------- memory


@dataclass(frozen=True)
class MemoryNeed:
    """The bytes a run will hold at its peak, by part."""

    rollout: int
    """The rollout storage, its training batch and the passes over them."""
    network: int
    """The parameters, gradients and Adam's two moments (and the reference copy)."""

    @property
    def total(self) -> int:
        return self.rollout + self.network


def parameter_count(config: PPOConfig, spec: EnvSpec) -> int:
    """Parameters of the actor-critic the config builds for ``spec``."""

    def mlp(n_out: int) -> int:
        widths = [spec.obs_dim, *config.hidden_sizes, n_out]
        return sum(a * b + b for a, b in itertools.pairwise(widths))

    log_std = 0 if spec.action.discrete else spec.action.n
    return mlp(spec.action.n) + mlp(1) + log_std


def memory_needed(config: PPOConfig, spec: EnvSpec, processes: int = 1) -> MemoryNeed:
    """An estimate, from above, of what training ``config`` on ``spec`` holds at once.

    Per sample (``num_steps x num_envs`` of them): the stored observation, final
    observation, their two flat copies and the raw copy normalisation keeps; the action
    (and its copy); about sixteen floats of rewards, flags, log-probs, values,
    advantages and returns; the widest two layers of the no-grad pass over the whole
    batch. Per minibatch sample: every layer's saved activations and their gradients.
    The network: 4 copies of every parameter (value, gradient, two Adam moments), 5
    with a reference policy, in each process."""
    d, a = spec.obs_dim, spec.action.n
    hidden = config.hidden_sizes
    action = 8 if spec.action.discrete else FLOAT * a
    per_sample = (
        4 * FLOAT * d
        + (8 * d if config.normalize_obs else 0)
        + 2 * action
        + 16 * FLOAT
        + 2 * FLOAT * max(hidden)
    )
    batch = config.num_envs * config.num_steps
    minibatch = math.ceil(batch / config.num_minibatches)
    per_minibatch_sample = 2 * 2 * 2 * FLOAT * sum(hidden) + FLOAT * d
    copies = 5 if config.uses_reference else 4
    network = copies * FLOAT * parameter_count(config, spec) * processes
    return MemoryNeed(
        rollout=batch * per_sample + minibatch * per_minibatch_sample, network=network
    )


def memory_available() -> int | None:
    """Bytes this process may still allocate: ``MemAvailable`` (within a cgroup limit),
    else the free physical pages; None when neither can be read."""
    available = _meminfo_available()
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return None
    limit = _cgroup_room()
    return available if limit is None else min(available, limit)


def _meminfo_available(path: str = "/proc/meminfo") -> int | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_room(root: str = "/sys/fs/cgroup") -> int | None:
    """cgroup v2: ``memory.max - memory.current`` of this process's group (None: no limit)."""
    try:
        with open("/proc/self/cgroup", encoding="ascii", errors="replace") as fh:
            group = next(line.split(":", 2)[2].strip() for line in fh if line.startswith("0::"))
        folder = os.path.join(root, group.lstrip("/"))
        with open(os.path.join(folder, "memory.max"), encoding="ascii") as fh:
            limit = fh.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(folder, "memory.current"), encoding="ascii") as fh:
            current = int(fh.read().strip())
        return max(int(limit) - current, 0)
    except (OSError, ValueError, StopIteration, IndexError):
        return None


def size(n: float) -> str:
    """``n`` bytes in words: ``1.5 GB`` (powers of 1000)."""
    for unit in ("bytes", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def check_memory(config: PPOConfig, spec: EnvSpec, processes: int = 1) -> MemoryNeed:
    """Refuse a run whose estimate exceeds the memory available; the estimate."""
    need = memory_needed(config, spec, processes)
    available = memory_available()
    if available is not None and need.total > available:
        raise PreflightError(
            f"this run needs about {size(need.total)} of memory (rollout of "
            f"{config.num_envs} envs x {config.num_steps} steps: {size(need.rollout)}; "
            f"network with its gradients and Adam state: {size(need.network)}) but "
            f"{size(available)} is available; lower num_envs, num_steps or hidden_sizes"
        )
    return need
