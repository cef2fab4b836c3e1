"""The headless watcher's loop: a webhook that never answers does not hold up the reads."""

from __future__ import annotations

import time
from pathlib import Path

from sanctum.health.thresholds import DEFAULT_THRESHOLDS
from sanctum.live.notifier import Notifier
from sanctum.live.notify import destination
from sanctum.live.watcher import Actions, Watcher
from tests.sanctum.logs import KL_CRITICAL, RunLog
from tests.sanctum.webhooks import webhook
from tests.waiting import wait_until

TIMEOUT = 1.0
"""The webhook's timeout for one try."""


def test_a_webhook_that_never_answers_does_not_delay_the_next_read(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "events.jsonl")
    log.start()
    for u in range(12):
        log.update(u, **(KL_CRITICAL if u >= 6 else {}))
    said: list[str] = []
    with webhook(hang=True) as hook:
        notifier = Notifier([destination(hook.url)], said.append, timeout=TIMEOUT, retries=0)
        out: list[str] = []
        watcher = Watcher(
            [log.path],
            DEFAULT_THRESHOLDS,
            Actions(notifier),
            say=said.append,
            out=out.append,
            clock=lambda: log.now,
        )
        start = time.monotonic()
        assert not watcher.look()
        assert time.monotonic() - start < TIMEOUT
        assert len(out) == 1  # the FAIL, posted to a server that holds it
        wait_until(lambda: hook.requests == 1, "the post", 10)
        for u in range(12, 15):
            log.update(u)
        start = time.monotonic()
        watcher.look()  # reads the recovery while the server holds the FAIL
        assert time.monotonic() - start < TIMEOUT
        assert len(out) == 2
        [run] = watcher.runs
        assert run.follower.aggregator.tamiyo.latest is not None
        assert run.follower.aggregator.tamiyo.latest.update == 14
        watcher.close(5 * TIMEOUT)
        assert hook.requests == 2
    [failure] = said
    assert "no answer" in failure
    assert "s3cr3t" not in failure
