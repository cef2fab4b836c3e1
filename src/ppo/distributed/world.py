"""Training across processes: ``torch.distributed`` (gloo on the CPU, NCCL on GPUs, one GPU
per rank: ``cuda:LOCAL_RANK``), launched by ``torchrun``.

A :class:`World` is this process's view of the job. Its collectives are the only places
ranks meet, and each is guarded: a rank that died or hangs makes the others fail within
``timeout`` seconds with :class:`RankLost`, naming the rank, instead of waiting forever.
To name it, every rank writes its collective count to the job's key-value store before it
enters a collective: the living ranks wait inside collective ``n``, a dead rank never
reached it.

One process (``size == 1``) is the same object with every collective a no-op, so the
trainer has a single code path. A collective runs on the backend's device (:attr:`World.device`)
whatever device its tensor lives on, and hands the result back on the tensor's device.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

import torch
import torch.distributed as dist
from torch import Tensor
from torch.distributed.rendezvous import rendezvous

_T = TypeVar("_T")
_KEY = "sanctum-ppo/collectives/"
_NOTICED = "sanctum-ppo/noticed/"


class RankLost(RuntimeError):
    """Another rank stopped answering; the message names it and what was going on."""


class DistributedSetupError(ValueError):
    """The job cannot start across processes as configured; the message says why."""


def _launcher_count(environ: Mapping[str, str], name: str, default: str, low: int) -> int:
    """The launcher's integer variable ``name``, at least ``low``; else a
    :class:`DistributedSetupError` naming it."""
    text = environ.get(name, default)
    try:
        value = int(text)
    except ValueError:
        raise DistributedSetupError(f"{name} must be an integer, got {text!r}") from None
    if value < low:
        raise DistributedSetupError(f"{name} must be at least {low}, got {value}")
    return value


def launched_world_size(environ: Mapping[str, str] = os.environ) -> int:
    """``WORLD_SIZE`` as torchrun (or ``ppo train --nproc``) sets it; 1 without one."""
    return _launcher_count(environ, "WORLD_SIZE", "1", 1)


@dataclass
class World:
    """This process in the job: its rank, the number of ranks, the guarded collectives."""

    rank: int = 0
    size: int = 1
    timeout: float = 30.0
    store: Any = None
    """The job's ``torch.distributed.Store`` (None in one process)."""
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    """Where the backend's collectives run: the CPU (gloo) or this rank's GPU (NCCL)."""
    _count: int = field(default=0, repr=False)
    lost: bool = field(default=False, repr=False)
    """A peer stopped answering (:class:`RankLost` was raised): see :meth:`end_process`."""

    @property
    def is_main(self) -> bool:
        """Rank 0 records the run and writes checkpoints."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1

    # ------------------------------------------------------------- collectives
    def mean(self, tensor: Tensor, what: str) -> Tensor:
        """The mean of ``tensor`` over ranks (a new tensor; ``tensor`` itself in one process).
        A NaN or Inf on any rank reaches every rank."""
        if not self.distributed:
            return tensor
        out = self._on_backend(tensor)
        self._guard(what, lambda: dist.all_reduce(out, op=dist.ReduceOp.SUM))
        return (out / self.size).to(tensor.device)

    def reduce(self, tensor: Tensor, op: str, what: str) -> Tensor:
        """``sum``, ``min`` or ``max`` of ``tensor`` over ranks."""
        if not self.distributed:
            return tensor
        ops = {"sum": dist.ReduceOp.SUM, "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX}
        out = self._on_backend(tensor)
        self._guard(what, lambda: dist.all_reduce(out, op=ops[op]))
        return out.to(tensor.device)

    def gather(self, tensor: Tensor, what: str) -> Tensor:
        """Every rank's ``tensor`` (same shape on each), concatenated along dim 0 in rank order."""
        if not self.distributed:
            return tensor
        mine = self._on_backend(tensor)
        parts = [torch.empty_like(mine) for _ in range(self.size)]
        self._guard(what, lambda: dist.all_gather(parts, mine))
        return torch.cat(parts).to(tensor.device)

    def _on_backend(self, tensor: Tensor) -> Tensor:
        """A contiguous copy of ``tensor`` on the backend's device (the collectives write
        into their input)."""
        return tensor.detach().to(self.device, copy=True, memory_format=torch.contiguous_format)

    def gather_objects(self, obj: _T, what: str) -> list[_T]:
        """Every rank's picklable ``obj``, in rank order."""
        if not self.distributed:
            return [obj]
        out: list[Any] = [None] * self.size
        self._guard(what, lambda: dist.all_gather_object(out, obj))
        return out

    def broadcast(self, obj: _T, what: str) -> _T:
        """Rank 0's ``obj`` on every rank."""
        if not self.distributed:
            return obj
        box: list[Any] = [obj]
        self._guard(what, lambda: dist.broadcast_object_list(box, src=0))
        return box[0]  # type: ignore[no-any-return]

    @contextlib.contextmanager
    def guarded(self, what: str) -> Iterator[None]:
        """Around work that talks to the other ranks on its own (DDP's gradient all-reduce in
        ``backward``): a communication failure there is a lost rank too."""
        try:
            yield
        except RuntimeError as exc:
            if not (self.distributed and _is_communication_error(exc)):
                raise
            self._announce_noticed()
            self.lost = True
            raise RankLost(self._lost_message(what, exc)) from None

    def _guard(self, what: str, collective: Callable[[], object]) -> None:
        self._count += 1
        try:
            if self.store is not None:
                self.store.set(f"{_KEY}{self.rank}", str(self._count))
            collective()
        except RuntimeError as exc:  # gloo: a timeout, or a peer's socket closed
            self._announce_noticed()
            self.lost = True
            raise RankLost(self._lost_message(what, exc)) from None

    def _announce_noticed(self) -> None:
        """Tell the store this rank is alive and saw the failure (the dead cannot)."""
        with contextlib.suppress(RuntimeError):
            if self.store is not None:
                self.store.set(f"{_NOTICED}{self.rank}", "1")

    def _lost_message(self, what: str, exc: BaseException) -> str:
        first = backend_error_line(exc)
        missing = self.behind() or self.silent()
        who = (
            f"rank {', '.join(map(str, missing))} stopped answering"
            if missing
            else "another rank stopped answering"
        )
        return f"{who} (during {what}; {first[:160]})"

    def behind(self) -> list[int]:
        """Ranks that never reached this rank's latest collective: the dead or the stuck."""
        if self.store is None:
            return []
        behind = []
        for rank in range(self.size):
            if rank == self.rank:
                continue
            try:
                self.store.set_timeout(timedelta(seconds=2))
                seen = int(self.store.get(f"{_KEY}{rank}").decode())
            except (RuntimeError, ValueError):
                seen = 0
            if seen < self._count:
                behind.append(rank)
        return behind

    def silent(self, wait: float = 2.0) -> list[int]:
        """Ranks that did not report noticing the failure within ``wait`` seconds: the ones
        that died inside the collective, which :meth:`behind` cannot tell from the living."""
        if self.store is None:
            return []
        others = [r for r in range(self.size) if r != self.rank]
        deadline = time.monotonic() + wait
        while True:
            silent = [r for r in others if not self._has(f"{_NOTICED}{r}")]
            if not silent or time.monotonic() > deadline:
                return silent
            time.sleep(0.05)

    def _has(self, key: str) -> bool:
        try:
            return bool(self.store.check([key]))
        except RuntimeError:
            return False

    def close(self) -> None:
        """Leave the job (a no-op in one process or after a lost rank)."""
        if self.distributed and not self.lost and dist.is_initialized():
            with contextlib.suppress(RuntimeError):
                dist.destroy_process_group()

    def end_process(self, code: int) -> NoReturn:
        """End this rank's process at once with ``code``, its output flushed. After a lost
        peer, the backend's threads still wait on it, and the interpreter's own exit, which
        tears them down, can abort the process (gloo: ``terminate called without an active
        exception``, exit 134) after the run was recorded as failed: the exit code is then
        the run's, not an abort's."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def backend_error_line(exc: BaseException) -> str:
    """The first line of a backend's error without the source position it starts with:
    gloo's and c10d's ``[source.cc:537] `` (or ``[Rank 0] ``), NCCL's ``NCCL error in:
    source.cpp:1275, ``."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    first = re.sub(r"^(\[[^\]]*\]\s*)+", "", first)
    return re.sub(r"^NCCL error in: \S+:\d+,\s*", "NCCL error: ", first)


def _is_communication_error(exc: RuntimeError) -> bool:
    """Whether ``exc`` came from the transport between ranks, not from the computation."""
    text = str(exc).lower()
    return isinstance(exc, dist.DistError) or any(
        marker in text for marker in ("gloo", "connection", "timed out", "timeout", "nccl")
    )


SINGLE = World()
"""One process: every collective is a no-op."""


def join(
    timeout: float, device: torch.device | None = None, environ: Mapping[str, str] = os.environ
) -> World:
    """The world torchrun's environment describes, or :data:`SINGLE` without one. ``device``:
    where this rank trains (``cuda:LOCAL_RANK``: NCCL; the CPU or None: gloo)."""
    size = launched_world_size(environ)
    if size == 1:
        return World(timeout=timeout)
    try:
        rank = int(environ["RANK"])
        wait = timedelta(seconds=timeout)
        store, rank, size = next(rendezvous("env://", rank, size, timeout=wait))
    except (KeyError, ValueError) as exc:
        raise DistributedSetupError(
            f"WORLD_SIZE={size} but the launcher's environment is incomplete ({exc}); "
            "start with torchrun or ppo train --nproc"
        ) from None
    except RuntimeError as exc:
        raise DistributedSetupError(f"cannot reach the other ranks: {exc}") from None
    on = device if device is not None else torch.device("cpu")
    backend = "nccl" if on.type == "cuda" else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(on)  # the object collectives run on the current device
        # a lost rank then raises within ``timeout`` (RankLost) instead of aborting the process
        os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
    dist.init_process_group(
        backend, store=store, rank=rank, world_size=size, timeout=timedelta(seconds=timeout)
    )
    return World(rank=rank, size=size, timeout=timeout, store=store, device=on)


def local_rank(environ: Mapping[str, str] = os.environ) -> int | None:
    """``LOCAL_RANK`` as torchrun (or ``ppo train --nproc``) sets it: this rank's GPU; None
    in one process."""
    if launched_world_size(environ) == 1:
        return None
    return _launcher_count(environ, "LOCAL_RANK", "0", 0)
