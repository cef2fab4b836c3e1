"""``sanctum rollouts RUN``: token-level PPO samples, readable, with their reward parts.

Reads ``rollouts.jsonl`` beside the run's event log. Token names come from the run's
``run_started.config["vocab"]`` when the trainer recorded one (else ids are shown). Every
string from the files or their folder's name is untrusted: it is printed made visible
(:func:`telemetry.text.visible`), a line break in it too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from pathlib import Path

from sanctum.formatting import visible
from sanctum.model.rollouts import Extremes
from sanctum.text.rollouts import describe
from telemetry.eventlog import open_reader
from telemetry.events import RunStarted
from telemetry.rollouts import ROLLOUTS_FILE, RolloutRecord, SkippedRecord, iter_records
from telemetry.run_config import RunConfig


class RolloutsError(ValueError):
    """The run has no readable rollout records."""


def vocab_of(events_path: Path) -> tuple[str, ...] | None:
    """The token names the run recorded, if any."""
    if not events_path.is_file():
        return None
    for batch in open_reader(events_path).batches():
        for event in batch.events:
            if isinstance(event, RunStarted):
                return RunConfig.from_config(event.payload.config).vocab
        break
    return None


def select(
    items: Iterable[RolloutRecord | SkippedRecord], last: int | None, worst: int | None
) -> tuple[list[RolloutRecord], int, int]:
    """(the records asked for, records read, lines skipped): the last N in file order,
    the N with the lowest reward_final (ties: the later, which shows what training has
    not fixed yet), or every record."""
    tail: deque[RolloutRecord] = deque(maxlen=last)
    lowest = Extremes(worst or 0)
    count = skipped = 0
    for item in items:
        if isinstance(item, SkippedRecord):
            skipped += 1
            continue
        count += 1
        if worst is not None:
            lowest.add(item)
        else:
            tail.append(item)
    if worst is not None:
        return list(lowest.lowest), count, skipped
    return list(tail), count, skipped


def render(run_dir: Path, events_path: Path, last: int | None, worst: int | None) -> str:
    """The text ``sanctum rollouts`` prints."""
    path = run_dir / ROLLOUTS_FILE
    if not run_dir.is_dir():
        raise RolloutsError(f"{run_dir}: no such run folder")
    if not path.is_file():
        raise RolloutsError(f"{path}: no rollout records (only token-level PPO runs write them)")
    chosen, count, skipped = select(iter_records(path), last, worst)
    vocab = vocab_of(events_path)
    what = f"the {worst} lowest-reward" if worst is not None else f"the last {len(chosen)}"
    head = f"{path}: {count} rollouts; {what}"
    head += " (applied: x counts toward the reward, . is a zero digit keep_prob dropped)"
    if skipped:
        head += f"; {skipped} unreadable lines skipped"
    return "\n\n".join([visible(head), *(describe(r, vocab) for r in chosen)])
