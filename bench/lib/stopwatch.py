"""CPU time spent inside wrapped callables, by stage, for the stage benches.

A stage called inside another is charged to itself alone: the outer stage's clock stops
while it runs. Each thread keeps its own stack of open stages and is timed by its own CPU
clock (``time.thread_time``), so a process with a reading thread and a UI thread charges
each stage the CPU of the thread that ran it. ``bench/sanctum_stages.py`` wraps the
offline path with it; ``bench/lib/stage_meter`` loads it into the dashboard process.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any


class Stopwatch:
    """CPU seconds and calls by stage, of the callables :meth:`wrap` returns."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._local = threading.local()

    def wrap(self, stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn``, its CPU time charged to ``stage``."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = getattr(self._local, "stack", None)
            if stack is None:
                stack = self._local.stack = []
            now = time.thread_time()
            if stack:  # the outer stage stops its clock while this one runs
                outer = stack[-1]
                self.seconds[outer[0]] = self.seconds.get(outer[0], 0.0) + now - outer[1]
            stack.append([stage, now])
            try:
                return fn(*args, **kwargs)
            finally:
                end = time.thread_time()
                self.seconds[stage] = self.seconds.get(stage, 0.0) + end - stack.pop()[1]
                self.calls[stage] = self.calls.get(stage, 0) + 1
                if stack:
                    stack[-1][1] = end

        return timed
