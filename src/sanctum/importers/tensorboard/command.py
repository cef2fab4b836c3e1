"""``sanctum import tensorboard LOGDIR``: a TensorBoard log written as an event log.

The run folder (``--out``, default ``runs/<logdir name>-tb``) gets an ``events.jsonl`` that
``sanctum check``, ``summary`` and the dashboard read like any other: ``run_started`` (the
config says ``source: tensorboard`` and records the mapping, what was left out and why, and
every tag nothing maps), the rollouts and updates of
:mod:`sanctum.importers.tensorboard.convert`, and ``run_finished`` only when the user says
how the run ended (``--outcome``, or the trainer's ``--exit-code``): the log does not say,
so without it no end is written and ``run_started.config.outcome_unknown`` says why (every
view then says "outcome not recorded", and ``check`` fails it as unfinished). An event file
TensorBoard could not read whole (a record cut short, or failing its checksum: TensorBoard
stops there without a word) is imported as far as it was read, and what was lost is written
in ``run_started.config.source_unread`` (one line per file), printed on stderr, and fails
``sanctum check`` unless ``--allow-skipped``. The log is written to a temporary file and
renamed into place, so a failed import leaves nothing half-written; an existing log is
replaced only with ``--force`` and only when an earlier import wrote it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sanctum.formatting import plural
from sanctum.health.rule import SAME_CONCEPT
from sanctum.health.thresholds import DEFAULT_THRESHOLDS, RunKind
from sanctum.importers.tensorboard.convert import (
    Timed,
    config_values,
    gather,
    global_steps,
    ignored,
    mapped,
    place_updates_by_time,
    step_events,
    unmapped,
    update_steps_apart,
)
from sanctum.importers.tensorboard.mapping import (
    CLEANRL,
    SB3,
    Header,
    TagMapping,
    detect,
    held_every_update,
    holds_update_field,
    load_map,
    with_file,
)
from sanctum.importers.tensorboard.openrlhf import OPENRLHF
from sanctum.importers.tensorboard.reader import TBLog, event_directory, read_log
from sanctum.importers.tensorboard.trl import TRL_GRPO, TRL_PPO
from sanctum.run_files import DEFAULT_RUNS_DIR, UsageError
from telemetry.eventlog import MAX_LINE_BYTES
from telemetry.events import (
    PPOUpdatePayload,
    RolloutPayload,
    RunFinishedPayload,
    RunStartedPayload,
    RunStatus,
    TrainerInfo,
)
from telemetry.files import InputFileError, open_input
from telemetry.integrations.cleanrl import config_of
from telemetry.recorder import EVENTS_FILE, RUN_ID, Recorder, new_run_id
from telemetry.run_config import KL_ESTIMATOR, OUTCOME_UNKNOWN, SOURCE, SOURCE_UNREAD
from telemetry.text import visible

TENSORBOARD: Final = "tensorboard"
"""``run_started.config.source`` of an imported log."""
_PROGRESS = (PPOUpdatePayload, RolloutPayload)
TABLES: Final = (SB3, CLEANRL, TRL_PPO, TRL_GRPO, OPENRLHF)
"""The trainers whose tags a log is recognised by, in the order they are tried."""


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """The command's arguments."""

    logdir: Path
    out: Path | None = None
    map_file: Path | None = None
    env_id: str | None = None
    action_count: int | None = None
    force: bool = False
    outcome: RunStatus | None = None
    """How the run ended, as the user says (``--outcome``); None: ``exit_code`` or unknown."""
    exit_code: int | None = None
    """The trainer's exit code (``--exit-code``), read by :func:`outcome_of_exit`."""

    def ending(self) -> tuple[RunStatus, str | None] | None:
        """The run's ``run_finished`` status and reason; None: the outcome is unknown."""
        if self.outcome is not None and self.exit_code is not None:
            raise UsageError("--outcome and --exit-code both say how the run ended: give one")
        if self.outcome is not None:
            return self.outcome, "as sanctum import --outcome said"
        if self.exit_code is not None:
            return outcome_of_exit(self.exit_code)
        return None


INTERRUPTED_EXITS: Final = {130: "SIGINT", 143: "SIGTERM"}
"""Exit codes of a trainer stopped by a signal a user or a scheduler sends (128 + the
signal's number, as a shell reports it): the run was interrupted, not failed."""

OUTCOME_NOT_SAID: Final = (
    "the TensorBoard log does not say how the run ended; import it with --outcome "
    "completed|failed|interrupted or --exit-code N (the trainer's exit code)"
)


def outcome_of_exit(code: int) -> tuple[RunStatus, str]:
    """The outcome a trainer's exit code says: 0 completed, 130/143 (or -2/-15, as Python
    reports a signal) interrupted, anything else failed."""
    signal_exit = 128 - code if code < 0 else code
    if code == 0:
        return "completed", "the trainer exited with code 0"
    if signal_exit in INTERRUPTED_EXITS:
        return (
            "interrupted",
            f"the trainer exited with code {code} ({INTERRUPTED_EXITS[signal_exit]})",
        )
    return "failed", f"the trainer exited with code {code}"


def _literal(text: str) -> Any:
    """A setting from CleanRL's table: None, a bool, an int, a float, else the text."""
    words = {"None": None, "True": True, "False": False}
    if text in words:
        return words[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_hyperparameters(text: str) -> dict[str, Any]:
    """CleanRL's ``|param|value|`` table (after its two header rows) as settings."""
    rows = [line.strip().strip("|").split("|", 1) for line in text.splitlines()[2:]]
    return {row[0]: _literal(row[1]) for row in rows if len(row) == 2 and row[0]}


MISSING_HINTS: Final = {
    "tianshou": (
        " (Tianshou's logger writes update/* every update_interval updates, 1,000 by "
        "default: a short run has none; TianshouRecorder records every update)"
    ),
}
"""Why a known trainer's log may lack the update tags a map names (by trainer name)."""


def choose_mapping(log: TBLog, map_file: Path | None) -> TagMapping:
    """The table the tags name, with the mapping file over it; UsageError when the log
    holds no tag for a ppo_update field under it."""
    if not log.scalars:
        raise UsageError(f"{log.directory}: its event files hold no scalars")
    base = detect(log.scalars, TABLES)
    mapping = base if map_file is None else with_file(base, load_map(map_file))
    if mapping is None:
        known = ", ".join(f"{t.name}'s ({t.detect_tags[0]}, ...)" for t in TABLES)
        tags = ", ".join(sorted(log.scalars)[:8]) or "none"
        raise UsageError(
            f"{log.directory}: the tags are not {known}: map them with --map FILE "
            f"(scalar tags: {tags})"
        )
    if not holds_update_field(mapping, log.scalars):
        named = sorted(
            tag
            for tag, targets in mapping.tags.items()
            if any(t.kind in ("update", "component") for t in targets)
        )
        lacking = ", ".join(visible(t) for t in named[:6]) + (" ..." if len(named) > 6 else "")
        said = (
            f"{mapping.name} maps {lacking}; the log has no such tag"
            if named
            else (f"{mapping.name} maps no tag to a ppo_update field")
        )
        hint = next((h for name, h in MISSING_HINTS.items() if name in mapping.trainer.lower()), "")
        tags = ", ".join(visible(t) for t in sorted(log.scalars)[:8])
        raise UsageError(
            f"{log.directory}: {said}{hint}, so no update would be imported (the log's "
            f"scalar tags: {tags})"
        )
    step_tag = mapping.global_step_tag
    if step_tag is not None and step_tag not in log.scalars:
        raise UsageError(
            f"{log.directory}: the global_step tag {visible(step_tag)} of {mapping.name} "
            "is not in the log"
        )
    return mapping


def _notes(
    mapping: TagMapping, settings: dict[str, Any], ending: tuple[RunStatus, str | None] | None
) -> list[str]:
    notes = list(mapping.notes)
    if not mapping.tags_for("early_stopped"):
        stops = "the trainer logs no early stop"
        if "target_kl" in settings and settings["target_kl"] is None:
            stops = "target_kl is None, so no update stopped early"
        notes.append(f"early_stopped is not in the log: written false on every update ({stops})")
    if ending is None:
        notes.append(f"no run_finished is written: {OUTCOME_NOT_SAID}")
    else:
        notes.append(f"run_finished {ending[0]}: {ending[1]} (the log does not say)")
    notes.append("event times are TensorBoard's wall times")
    return notes


def header_of(log: TBLog, mapping: TagMapping) -> Header:
    """What the log says of the run beyond its scalars: CleanRL's settings table, or what
    the mapping's own reader finds (TRL's ``args``)."""
    if mapping.header is not None:
        return mapping.header(log)
    text = log.texts.get(mapping.hyperparameters_tag or "")
    settings = parse_hyperparameters(text) if text is not None else {}
    seed = settings.get("seed")
    return Header(
        config=settings,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )


def run_started(
    log: TBLog,
    mapping: TagMapping,
    opts: ImportOptions,
    header: Header,
    placed: str | None = None,
) -> RunStartedPayload:
    """The header: the trainer's settings when the log holds them, and the import's record."""
    settings = dict(header.config) if mapping.header is None else {}
    config = config_of(settings) if settings else dict(header.config)
    config.update(config_values(log, mapping))
    config.setdefault(KL_ESTIMATOR, mapping.kl_estimator)
    config |= {
        SOURCE: TENSORBOARD,
        "tensorboard_logdir": str(log.directory),
        "tensorboard_files": list(log.files),
        "tensorboard_mapping": mapping.name,
        "tensorboard_tags": mapped(log, mapping),
        "tensorboard_ignored_tags": ignored(log, mapping),
        "tensorboard_unmapped_tags": unmapped(log, mapping),
        "tensorboard_other_data": {kind: list(tags) for kind, tags in other_data(log, mapping)},
        "tensorboard_action_count": opts.action_count or header.action_count,
        "tensorboard_notes": [
            *_notes(mapping, settings, opts.ending()),
            *([placed] if placed else []),
        ],
    }
    if opts.ending() is None:
        config[OUTCOME_UNKNOWN] = OUTCOME_NOT_SAID
    if log.unread:
        config[SOURCE_UNREAD] = list(log.unread)
    env_id = opts.env_id or settings.get("env_id")
    kl = mapping.kl if header.kl is None else header.kl
    return RunStartedPayload(
        trainer=TrainerInfo(name=f"{mapping.trainer} (imported from TensorBoard)"),
        env_id=env_id if isinstance(env_id, str) else "unknown",
        seed=header.seed,
        config=config,
        algorithm=header.algorithm or mapping.algorithm,
        kl=dict(kl) if kl else None,
        policy_epochs=header.policy_epochs,
        step_unit=mapping.step_unit,
        action_space="discrete" if (opts.action_count or header.action_count) else None,
    )


def other_data(log: TBLog, mapping: TagMapping) -> list[tuple[str, tuple[str, ...]]]:
    """Non-scalar data not imported: texts other than the settings table, histograms..."""
    read = (mapping.hyperparameters_tag, *mapping.read_texts)
    texts = tuple(t for t in log.texts if t not in read)
    return [(k, v) for k, v in (("text", texts), *log.other_tags.items()) if v]


def _imported(path: Path) -> bool:
    """Whether the log at ``path`` was written by an import (its config's source)."""
    try:
        with open_input(path, "event log") as fh:
            first = json.loads(fh.readline(MAX_LINE_BYTES))
        return bool(first["payload"]["config"][SOURCE] == TENSORBOARD)
    except (OSError, InputFileError, ValueError, KeyError, TypeError, RecursionError):
        return False


def _refuse_existing(path: Path, force: bool) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    if not force:
        raise UsageError(
            f"{path}: an event log is already there: choose another --out (or --force to "
            "replace a log an earlier import wrote)"
        )
    if not _imported(path):
        raise UsageError(f"{path}: not written by sanctum import; --force replaces only those")


def write_log(
    path: Path,
    run_id: str,
    started: Timed,
    events: list[Timed],
    ending: tuple[RunStatus, str | None] | None,
) -> RunFinishedPayload:
    """The events into ``path`` at their own times, through a temporary file, and
    ``run_finished`` with ``ending`` when the outcome is known (the payload is returned
    either way: what the import read)."""
    now = [started.ts]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.importing")
    rec = Recorder(path=tmp, run_id=run_id, clock=lambda: now[0])
    steps = [e.payload.global_step for e in events if isinstance(e.payload, _PROGRESS)]
    updates = sum(isinstance(e.payload, PPOUpdatePayload) for e in events)
    last = max((e.ts for e in events), default=started.ts)
    status, reason = ending or ("completed", None)
    finished = RunFinishedPayload(
        status=status,
        reason=reason,
        global_step=max(steps, default=None),
        updates=updates,
        duration_seconds=last - started.ts,
    )
    try:
        rec.open()
        ends = [Timed(last, finished)] if ending is not None else []
        for timed in [started, *events, *ends]:
            now[0] = timed.ts
            rec.emit(timed.payload)
        rec.close()
        os.replace(tmp, path)
    except BaseException:
        rec.close()
        tmp.unlink(missing_ok=True)
        raise
    return finished


def _run_id(folder: Path) -> str:
    name = folder.resolve().name
    return name if RUN_ID.fullmatch(name) else new_run_id(name)


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What ``sanctum import tensorboard`` says: the report, and what it could not read."""

    lines: list[str]
    unread: tuple[str, ...]
    """One line per event file not read whole (for stderr; the log records them too)."""


def import_tensorboard(opts: ImportOptions) -> ImportReport:
    """Import ``opts.logdir``; returns the report (UsageError for bad input)."""
    if opts.action_count is not None and opts.action_count < 2:
        raise UsageError(f"--actions must be at least 2, got {opts.action_count}")
    ending = opts.ending()
    directory = event_directory(opts.logdir)
    out = opts.out if opts.out is not None else DEFAULT_RUNS_DIR / f"{directory.resolve().name}-tb"
    path = out / EVENTS_FILE
    _refuse_existing(path, opts.force)
    log = read_log(directory)
    mapping = choose_mapping(log, opts.map_file)
    placed = None
    if update_steps_apart(log, mapping):  # never misplaced in silence
        log, placed = place_updates_by_time(log, mapping)
    header = header_of(log, mapping)
    expected = held_every_update(mapping, log.scalars)
    actions = opts.action_count or header.action_count
    events = step_events(
        gather(log, mapping),
        mapping,
        actions,
        expected,
        global_steps(log, mapping),
        header.constants,
    )
    times = [e.ts for e in events[:1]] + [log.first_wall_time or math.inf]
    head = run_started(log, mapping, opts, header, placed)
    started = Timed(min(times), head)
    try:
        out.mkdir(parents=True, exist_ok=True)
        finished = write_log(path, _run_id(out), started, events, ending)
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the event log: {exc.strerror or exc}") from None
    lines = report(log, mapping, head, events, finished, out, ending)
    if placed:
        lines.insert(2, f"placed: {placed}")
    return ImportReport(lines, log.unread)


MEASURED_BY: Final = {
    "stable-baselines3": "telemetry.integrations.sb3's SanctumCallback",
    "cleanrl": "telemetry.integrations.cleanrl's record_update",
    "skrl": "torchprobe.skrl's SkrlRecorder",
    "tianshou": "torchprobe.tianshou's TianshouRecorder",
    "torchrl": "torchprobe.torchrl's TorchRLRecorder",
}
"""A trainer (a substring of its mapping's name) -> the integration that records what its
TensorBoard log lacks; any other PyTorch trainer: :data:`PROBE`."""
PROBE: Final = "torchprobe.probe's UpdateProbe around its update"


def coverage_lines(
    mapping: TagMapping, header: RunStartedPayload, payloads: Sequence[object]
) -> list[str]:
    """Which of the rules that fit the run (its algorithm, action space: ``header``) the
    imported updates feed, and, when some are not fed, what would measure them: what
    ``check`` will rest its verdict on, said before it is run."""
    updates = [p for p in payloads if isinstance(p, PPOUpdatePayload)]
    kind = RunKind(header.algorithm, header.kl, header.policy_epochs, header.action_space)
    rules = [r for r in DEFAULT_THRESHOLDS.for_run(kind).rules if not r.only_when_measured]

    def fed(metric: str) -> bool:
        fields = (metric, SAME_CONCEPT.get(metric))
        return any(getattr(u, f, None) is not None for u in updates for f in fields if f)

    judged = [r.label for r in rules if fed(r.metric)]
    missing = [r for r in rules if not fed(r.metric)]
    line = (
        f"rules the mapped tags feed: {', '.join(judged) or 'none'} ({len(judged)} of {len(rules)})"
    )
    if not missing:
        return [line]
    names = ", ".join(f"{r.label} ({r.metric})" for r in missing)
    trainer = mapping.trainer.lower()
    by = next((how for name, how in MEASURED_BY.items() if name in trainer), PROBE)
    hints = []
    if any(r.metric == "value_loss" for r in missing) and by == PROBE:
        hints.append("the value loss as the trainer computes it: measure.losses(value=...)")
    if any(r.metric == "entropy_normalized" for r in missing):
        hints.append("or --actions N for Entropy")
    hint = f" ({'; '.join(hints)})" if hints else ""
    return [line, f"not fed: {names}: recording the run with {by} measures them{hint}"]


def report(
    log: TBLog,
    mapping: TagMapping,
    header: RunStartedPayload,
    events: list[Timed],
    end: RunFinishedPayload,
    out: Path,
    ending: tuple[RunStatus, str | None] | None,
) -> list[str]:
    """What was read, what was written, and what was left out."""
    rollouts = [e.payload for e in events if isinstance(e.payload, RolloutPayload)]
    episodes = sum(r.episodes for r in rollouts)
    warnings = len(events) - len(rollouts) - (end.updates or 0)
    lines = [
        f"read {len(log.files)} event file(s) in {log.directory}: {mapping.name} tags",
        f"imported {end.updates} updates, {len(rollouts)} rollouts, {episodes} episodes "
        f"(to step {end.global_step})"
        + (f"; {warnings} step(s) lacked approx_kl or clip_fraction" if warnings else ""),
    ]
    lines += [f"not imported: {tag}: {why}" for tag, why in ignored(log, mapping).items()]
    if names := unmapped(log, mapping):
        lines.append(f"unmapped tags (named in the run's config): {', '.join(names)}")
    for kind, tags in other_data(log, mapping):
        lines.append(f"not imported ({kind}): {', '.join(tags)}")
    lines += coverage_lines(mapping, header, [e.payload for e in events])
    if ending is None:
        lines.append(
            "outcome: not recorded: sanctum check fails the run as unfinished "
            "(--allow-unfinished accepts it); import with --outcome "
            "completed|failed|interrupted or --exit-code N"
        )
    else:
        lines.append(f"outcome: {ending[0]} ({ending[1]})")
    lines.append(f"wrote {out / EVENTS_FILE}: sanctum check {out}")
    if log.unread:
        lines.append(
            f"not read whole: {plural(len(log.unread), 'event file')} (recorded in the log: "
            "sanctum check fails it unless --allow-skipped)"
        )
    return lines
