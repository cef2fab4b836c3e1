"""TensorBoard event files read through TensorBoard's own reader, into plain Python values.

``tensorboard`` (numpy and protobuf; neither torch nor TensorFlow) is imported only when a
log is read; without it the error names the extra. Its ``EventAccumulator`` reads every
event file of one run folder in order, keeps every scalar (no sampling) and drops what
TensorBoard itself would drop after a restart, so the import sees what TensorBoard shows.
This is the only module that touches TensorBoard: the mapping works on :class:`TBLog`.

TensorBoard's reader stops at the first record it cannot read (cut short, or failing its
checksum) without a word, as if the file ended there: one flipped bit can hide most of a
run. So every event file is first walked here, record by record (TFRecord framing: the
data's length as 8 bytes, the masked CRC-32C of those bytes, the data, the masked CRC-32C
of the data), and what could not be read is said: :attr:`TBLog.unread`. The walk also
counts the scalar points the files hold: TensorBoard's reader drops, after a restart's
``SessionLog START`` (or a step that went back), every point it takes for orphaned, with
only a log message; the difference is said there too, so the gate fails what it did not
see (:func:`dropped_line`).
"""

from __future__ import annotations

import importlib
import logging
import math
import stat
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from sanctum.run_files import UsageError
from telemetry.files import InputFileError, describe, regular_file_size
from telemetry.text import visible

EXTRA_HINT: Final = (
    "reading TensorBoard logs needs tensorboard: pip install 'sanctum-ppo[tensorboard]'"
)
TEXT_PLUGIN: Final = "text"
SCALARS_PLUGIN: Final = "scalars"
NOT_OTHER: Final = ("scalars", "tensors", "distributions")


@dataclass(frozen=True, slots=True)
class Point:
    """One scalar as TensorBoard recorded it."""

    step: int
    wall_time: float
    value: float


@dataclass(frozen=True, slots=True)
class TBLog:
    """What one run folder's event files hold, as plain values."""

    directory: Path
    files: tuple[str, ...]
    scalars: Mapping[str, tuple[Point, ...]]
    """Every scalar of each tag, in the order written."""
    texts: Mapping[str, str]
    """The first value of each text tag (CleanRL's ``hyperparameters`` table)."""
    other_tags: Mapping[str, tuple[str, ...]]
    """Tags of the kinds not imported (histograms, images, tensors...), by kind."""
    first_wall_time: float | None
    unread: tuple[str, ...] = ()
    """One line per event file TensorBoard could not read whole (where its first bad
    record is, what is wrong with it, and how many bytes from there were not read), and
    one when its reader dropped scalar points the files hold (:func:`dropped_line`)."""


def masked_crc32c(data: bytes) -> int:
    """TFRecord's checksum of ``data``: CRC-32C (``google-crc32c``, in the tensorboard
    extra: C, where a Python loop reads 2 MB/s), rotated right by 15 and offset."""
    try:
        crc32c = importlib.import_module("google_crc32c")
    except ModuleNotFoundError:
        raise UsageError(EXTRA_HINT) from None
    crc: int = crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class Walk:
    """One event file walked record by record, as TensorBoard's reader does not."""

    unread: str | None
    """None when every record is whole and passes both its checksums; else one line: the
    first record that does not, why, and the bytes from its start to the end of the file,
    which TensorBoard does not read."""
    scalars: int
    """Scalar points in the records read (each tag's values, as written)."""
    restarts: tuple[int, ...]
    """The step of each ``SessionLog START`` record (what a restarted job writes): past
    one, TensorBoard's reader drops every point it thinks the restart orphaned."""


def walk(path: Path) -> Walk:
    """Every record of the event file at ``path``, checked and counted (see :class:`Walk`)."""
    event_pb2 = _proto()
    size = path.stat().st_size
    scalars, restarts = 0, []
    scalar_tags: set[str] = set()
    with path.open("rb") as fh:
        record, start = 0, 0
        while header := fh.read(12):
            problem = None
            if len(header) < 12:
                problem = "its header is cut short"
            elif masked_crc32c(header[:8]) != struct.unpack("<I", header[8:])[0]:
                problem = "its length fails its checksum"
            else:
                length = struct.unpack("<Q", header[:8])[0]
                if length + 4 > size - start - 12:
                    problem = f"cut short (it says {length} bytes, the file ends first)"
                else:
                    data, crc = fh.read(length), fh.read(4)
                    if masked_crc32c(data) != struct.unpack("<I", crc)[0]:
                        problem = "its data fails its checksum"
                    else:
                        counted, restart = _count(event_pb2, data, scalar_tags)
                        scalars += counted
                        restarts += [] if restart is None else [restart]
            if problem is not None:
                line = (
                    f"{path.name}: record {record + 1} at byte {start}: {problem}; bytes "
                    f"{start} to {size} ({size - start} of {size}) not read"
                )
                return Walk(line, scalars, tuple(restarts))
            record, start = record + 1, fh.tell()
    return Walk(None, scalars, tuple(restarts))


def _count(event_pb2: Any, data: bytes, scalar_tags: set[str]) -> tuple[int, int | None]:
    """The scalar points of one record, and its step if it is a ``SessionLog START``. A
    record TensorBoard cannot parse counts nothing here (reading it says why)."""
    try:
        event = event_pb2.Event.FromString(data)
    except Exception:  # noqa: BLE001 - protobuf on untrusted bytes
        return 0, None
    if event.HasField("session_log"):
        start = event.session_log.status == event_pb2.SessionLog.START
        return 0, int(event.step) if start else None
    counted = 0
    for value in event.summary.value:
        if value.HasField("simple_value"):
            counted += 1
        elif value.HasField("tensor"):
            if value.metadata.plugin_data.plugin_name == SCALARS_PLUGIN:
                scalar_tags.add(value.tag)  # the plugin is named on a tag's first value
            counted += value.tag in scalar_tags
    return counted, None


def dropped_line(directory: Path, walks: Sequence[Walk], kept: int) -> str | None:
    """One line when TensorBoard's reader kept fewer scalar points than the files hold
    (a restart's ``SessionLog START``, or a step that went back, makes it drop every
    point it takes for orphaned), else None."""
    written = sum(w.scalars for w in walks)
    if kept >= written:
        return None
    restarts = [step for w in walks for step in w.restarts]
    why = (
        f"after a restart (SessionLog START at step {', '.join(map(str, restarts))})"
        if restarts
        else "after a step that went back (a restarted job)"
    )
    return (
        f"{directory.name}: TensorBoard's reader drops {written - kept} of {written} scalar "
        f"points {why}; they are not imported"
    )


def is_event_file(path: Path) -> bool:
    """TensorBoard's own test: ``tfevents`` in the file name."""
    return "tfevents" in path.name and path.is_file()


def event_directory(logdir: Path) -> Path:
    """The one folder of event files that ``logdir`` names: itself, its only sub-folder
    that holds some (SB3 writes ``LOGDIR/PPO_1``), or the folder of an event file.
    UsageError when there is none or more than one run."""
    name = describe(logdir)
    try:
        st = logdir.stat()
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file or directory") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read it: {visible(exc.strerror or str(exc))}") from None
    if stat.S_ISREG(st.st_mode):
        if not is_event_file(logdir):
            raise UsageError(f"{name}: not a TensorBoard event file (events.out.tfevents.*)")
        return logdir.parent
    if not stat.S_ISDIR(st.st_mode):
        raise UsageError(
            f"{name}: not a folder of TensorBoard logs nor an event file (a pipe, a device "
            "or a socket)"
        )
    try:
        if any(is_event_file(p) for p in logdir.iterdir()):
            return logdir
        found = sorted({p.parent for p in logdir.rglob("*tfevents*") if is_event_file(p)})
    except OSError as exc:
        raise UsageError(f"{name}: cannot read it: {visible(exc.strerror or str(exc))}") from None
    if not found:
        raise UsageError(f"{name}: no TensorBoard event files (events.out.tfevents.*) in it")
    if len(found) > 1:
        names = ", ".join(visible(str(p.relative_to(logdir))) for p in found[:5])
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        raise UsageError(
            f"{name}: holds the TensorBoard logs of {len(found)} runs ({names}{more}): "
            "import one of them"
        )
    return found[0]


def _tensorboard() -> tuple[Any, Any]:
    """TensorBoard's accumulator module and tensor helpers, or the error naming the extra."""
    try:
        accumulator = importlib.import_module(
            "tensorboard.backend.event_processing.event_accumulator"
        )
        tensor_util = importlib.import_module("tensorboard.util.tensor_util")
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "tensorboard":
            raise UsageError(EXTRA_HINT) from None
        raise
    return accumulator, tensor_util


def _proto() -> Any:
    """TensorBoard's ``Event`` protocol buffer module, or the error naming the extra."""
    try:
        return importlib.import_module("tensorboard.compat.proto.event_pb2")
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "tensorboard":
            raise UsageError(EXTRA_HINT) from None
        raise


def _float32(value: float) -> float:
    """A scalar TensorBoard stored as float32, as the shortest decimal that float32 rounds
    to it (0.2, not 0.20000000298023224): the value the trainer most likely logged."""
    if not math.isfinite(value):
        return value
    for digits in range(1, 9):  # 9 digits always round-trip
        candidate = float(f"{value:.{digits}g}")
        try:
            if struct.unpack("f", struct.pack("f", candidate))[0] == value:
                return candidate
        except OverflowError:  # rounded past float32's largest
            continue
    return float(f"{value:.9g}")


def _tensor_value(tensor_util: Any, event: Any) -> float:
    return float(tensor_util.make_ndarray(event.tensor_proto).reshape(-1)[0])


def _text(tensor_util: Any, event: Any) -> str:
    value = tensor_util.make_ndarray(event.tensor_proto).reshape(-1)
    first = value[0] if len(value) else b""
    return first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)


def _load(directory: Path) -> tuple[Any, Any]:
    """TensorBoard's accumulator over ``directory``, every scalar and tensor kept."""
    for path in directory.iterdir():  # TensorBoard opens every *tfevents* name it lists
        if "tfevents" in path.name:
            try:  # the one opener's test: a FIFO would hang it, /dev/zero never end
                regular_file_size(path, "TensorBoard event file")
            except InputFileError as exc:
                raise UsageError(str(exc)) from None
    ea, tensor_util = _tensorboard()
    acc = ea.EventAccumulator(str(directory), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
    quiet = logging.getLogger("tensorboard")  # its purge message: dropped_line says it
    level, quiet.level = quiet.level, logging.ERROR
    try:
        acc.Reload()
    except OSError as exc:
        raise UsageError(f"{directory}: cannot read its event files: {exc}") from None
    finally:
        quiet.setLevel(level)
    return acc, tensor_util


def read_log(directory: Path) -> TBLog:
    """Every scalar and text of the event files in ``directory`` (see :func:`event_directory`).
    UsageError, one line, when TensorBoard cannot make sense of them (a record whose
    checksums match but whose content is not an event, a tensor of no known shape...)."""
    try:
        return _read_log(directory)
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - TensorBoard and protobuf on untrusted bytes
        raise UsageError(
            f"{directory}: TensorBoard cannot read its event files: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}"
        ) from None


def _read_log(directory: Path) -> TBLog:
    acc, tensor_util = _load(directory)
    tags: dict[str, Any] = acc.Tags()
    scalars = {
        tag: tuple(
            Point(int(e.step), float(e.wall_time), _float32(e.value)) for e in acc.Scalars(tag)
        )
        for tag in tags.get("scalars", ())
    }
    texts: dict[str, str] = {}
    other: dict[str, tuple[str, ...]] = {}
    for tag in tags.get("tensors", ()):
        events, plugin = acc.Tensors(tag), acc.SummaryMetadata(tag).plugin_data.plugin_name
        if plugin == SCALARS_PLUGIN:  # written as tensors (tf.summary, new-style writers)
            scalars[tag] = tuple(
                Point(int(e.step), float(e.wall_time), _tensor_value(tensor_util, e))
                for e in events
            )
        elif plugin == TEXT_PLUGIN and events:
            texts[tag] = _text(tensor_util, events[0])
        else:
            other["tensors"] = (*other.get("tensors", ()), tag)
    for kind, found in tags.items():  # distributions: the histograms again, compressed
        if kind not in NOT_OTHER and isinstance(found, list) and found:
            other[kind] = tuple(found)
    try:
        first: float | None = float(acc.FirstEventTimestamp())
    except ValueError:  # no event at all
        first = None
    paths = sorted((p for p in directory.iterdir() if is_event_file(p)), key=lambda p: p.name)
    try:
        walks = [walk(p) for p in paths]
    except OSError as exc:
        raise UsageError(f"{directory}: cannot read its event files: {exc}") from None
    unread = tuple(w.unread for w in walks if w.unread is not None)
    kept = sum(len(points) for points in scalars.values())
    if (dropped := dropped_line(directory, walks, kept)) is not None:
        unread = (*unread, dropped)
    if len(paths) > 1:
        refuse_second_run(directory, paths)
    files = tuple(p.name for p in paths)
    return TBLog(directory, files, scalars, texts, other, first, unread)


StepRange = tuple[int, int]


def _step_ranges(path: Path) -> dict[str, StepRange]:
    """(first, last) step of each scalar tag in the event file at ``path`` (what the
    import reads), as TensorBoard's own loader reads it (up to its first unreadable
    record)."""
    loader = importlib.import_module("tensorboard.backend.event_processing.event_file_loader")
    ranges: dict[str, StepRange] = {}
    for event in loader.EventFileLoader(str(path)).Load():
        step = int(event.step)
        for value in event.summary.value:
            scalar = value.HasField("simple_value") or (
                value.metadata.plugin_data.plugin_name == SCALARS_PLUGIN  # on its first only
            )
            if not scalar and value.tag not in ranges:
                continue
            first, last = ranges.get(value.tag, (step, step))
            ranges[value.tag] = (min(first, step), max(last, step))
    return ranges


def refuse_second_run(directory: Path, paths: list[Path]) -> None:
    """UsageError when a later event file (in TensorBoard's order, by name) logs a tag
    from a step at or before the first step an earlier file logged it at: not a restart
    (which resumes after its run's first step, and whose steps TensorBoard replaces from
    there), but a second run in the folder, whose points TensorBoard would show in place
    of the first run's, all of them."""
    seen: list[tuple[str, dict[str, StepRange]]] = []
    for path in paths:
        ranges = _step_ranges(path)
        for name, earlier in seen:
            for tag, (first, last) in earlier.items():
                later = ranges.get(tag)
                if later is not None and later[0] <= first <= later[1]:
                    raise UsageError(
                        f"{directory}: event files {visible(name)} and {visible(path.name)} "
                        f"both log {visible(tag)} "
                        f"at steps {first} to {min(last, later[1])}, the later one from "
                        f"step {later[0]}: two runs in one folder (TensorBoard would show "
                        "the later one's in place of the earlier's); import each run from "
                        "a folder of its own"
                    )
        seen.append((path.name, ranges))
