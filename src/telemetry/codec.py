"""JSON Lines encoding of events: strict JSON, non-finite floats as strings.

msgspec writes NaN and infinities as ``null``, which would be read back as "not measured".
The contract writes them as the strings "NaN", "Infinity" and "-Infinity" (the protobuf
JSON convention) and the decoder turns those strings back into floats, and only those: a
number written as a string (``"0.5"``, ``"1"``) is refused, as the shipped schema refuses it.
Payload fields left at their default (None: not measured) are omitted, so a ``null`` in a
payload line can only come from a non-finite float: the fast path costs one search for
``null`` (about 0.6 us), and only a line that has one is re-encoded with the floats spelled
out.

An event is checked before it is published (:class:`EventCheck`, run by the Emitter): one
whose line the reader would skip is refused at ``emit`` with one line naming the field. The
check encodes the line the writer writes, decodes it and returns it; the Emitter hands that
line to the bus beside the event, and the event log's writer writes it rather than encode
the event again, so checking costs one decode. The decode is first by
the event's null-free twin (:func:`null_free_decoder`), which also proves the line holds
no non-finite float, so the search for ``null`` is skipped; a line it refuses goes the
full way (``null`` spelled out, then the reader's own decoder decides and names the field).
"""

from __future__ import annotations

import codecs
import functools
import math
import re
import types
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal, TypeVar, Union, get_args, get_origin

import msgspec

from telemetry.events import (
    EVENT_FOR_PAYLOAD,
    EVENT_TYPES,
    KINDS,
    Envelope,
    Event,
    Payload,
    kind_of,
)
from telemetry.text import visible

MAX_LINE_BYTES: Final = 16 * 1024 * 1024
"""A line longer than this is skipped as malformed, and never held in memory whole: the
reader's memory stays bounded whatever the file holds (an event line is about 1 KB)."""

_NONFINITE_NAMES = {math.inf: "Infinity", -math.inf: "-Infinity"}


def spell_nonfinite(value: Any) -> Any:
    """``value`` with every non-finite float, alone or inside dicts, lists and tuples, as
    the contract's strings ("NaN", "Infinity", "-Infinity"); anything else unchanged."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else _NONFINITE_NAMES[value]
    if isinstance(value, dict):
        return {k: spell_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [spell_nonfinite(v) for v in value]
    return value


def _scalar_to_builtin(obj: Any) -> Any:
    """numpy and torch scalars (``np.float32``, a 0-d tensor) as plain numbers.

    Trainers hand over such values all the time (SB3's logger holds numpy floats); telemetry
    must not import numpy or torch to accept them, so any object with ``.item()`` will do.
    """
    item = getattr(obj, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"cannot encode a {type(obj).__name__} in an event")


class LineEncoder:
    """Encodes events (or any msgspec record, such as a rollout record) into one reused
    buffer as a JSON line (not thread-safe: one per writer)."""

    def __init__(self) -> None:
        self._encoder = msgspec.json.Encoder(enc_hook=_scalar_to_builtin)
        self._buffer = bytearray(1024)

    def encode(self, event: Event | msgspec.Struct) -> bytearray:
        """``event`` as one JSON line ending in a newline, in this encoder's buffer (valid
        until its next call)."""
        buf = self._buffer
        self._encoder.encode_into(event, buf)
        if b"null" in buf:  # NaN/Inf also encode as null: spell them out if there are any
            builtins = msgspec.to_builtins(event, enc_hook=_scalar_to_builtin)
            self._encoder.encode_into(spell_nonfinite(builtins), buf)
        buf.extend(b"\n")
        return buf


def encode_line(event: Event) -> bytes:
    """One event as a JSON line (convenience; writers keep a :class:`LineEncoder`)."""
    return bytes(LineEncoder().encode(event))


class ForeignFieldError(msgspec.ValidationError):
    """A line whose payload carries a field another kind alone defines: its ``type`` and
    its payload disagree, so what it is cannot be told."""


_Read = TypeVar("_Read")
_SPELLED: Final = re.compile(rb'"(?:NaN|-?Infinity)"(?!\s*:)')
"""The contract's spellings of non-finite floats, as JSON string values (not keys)."""


class LineDecoder:
    """The reader's decoder of event lines: typed and strict, but for the contract's
    ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``, which are floats (a number written as any
    other string, ``"0.5"`` or ``"1"``, is refused: the shipped schema refuses it, and a
    writer that quotes its numbers has a bug). It refuses two more kinds of line msgspec
    alone would read as an event, because it skips a field it does not know without
    looking at it:

    - a line that is not valid UTF-8 (``UnicodeDecodeError``), wherever the bad bytes are;
    - a line of an *unmarked* kind (:data:`UNMARKED`: no required field of its own, so a
      line of another kind passes for one by its ``type`` alone) whose payload carries, at
      its top level, a field another kind alone defines (:data:`OWN_FIELDS`; ``approx_kl``
      in a ``rollout``): it is not the kind it says (:class:`ForeignFieldError`). A line
      that says a marked kind must carry that kind's own required fields, which no other
      kind has. Names several kinds share (``update``, ``global_step``) and keys inside a
      field's value (``config``, ``reward_components``) count for nothing.

    The second check is one more msgspec pass, only where a line of an unmarked kind is
    among those decoded, with a type that has just :data:`FOREIGN_FIELDS`, each refusing
    any value: it builds nothing else.
    """

    def __init__(self) -> None:
        self._strict: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)
        self._lax: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event, strict=False)
        self._foreign = msgspec.json.Decoder(_foreign_union())

    @staticmethod
    def _read(
        data: bytes | bytearray | memoryview,
        strict: Callable[[bytes | bytearray | memoryview], _Read],
        lax: Callable[[bytes], _Read],
    ) -> _Read:
        """``strict(data)``; where it refuses a line that holds a spelled non-finite float,
        ``lax(data)``, kept only if ``data`` with each spelling read as a number passes
        ``strict`` (so nothing else was a string where a number belongs)."""
        try:
            return strict(data)
        except msgspec.ValidationError:
            raw = bytes(data)
            if _SPELLED.search(raw) is None:
                raise
            read = lax(raw)
            strict(_SPELLED.sub(b"0", raw))
            return read

    def decode(self, line: bytes | bytearray | memoryview) -> Event:
        """The event of one line (DecodeError, UnicodeDecodeError or RecursionError if the
        reader skips it). Strict first; a line that fails it and holds a spelled non-finite
        float is read lax, and kept only if, with each spelling read as a number, it passes
        strict too (so nothing else was a string where a number belongs)."""
        _require_utf8(line)
        event = self._read(line, self._strict.decode, self._lax.decode)
        if type(event) in _UNMARKED_TYPES:
            try:
                self._foreign.decode(line)
            except msgspec.ValidationError as exc:
                raise ForeignFieldError(_foreign_field(kind_of(type(event)), exc)) from None
        return event

    def decode_lines(self, lines: bytes | bytearray | memoryview) -> list[Event]:
        """The events of newline-separated lines, all of them good (else an exception, and
        the caller decodes line by line to tell which)."""
        _require_utf8(lines)
        events = self._read(lines, self._strict.decode_lines, self._lax.decode_lines)
        if not _UNMARKED_TYPES.isdisjoint(set(map(type, events))):
            self._foreign.decode_lines(lines)  # lines of marked kinds: skipped, not built
        return events


def line_decoder() -> LineDecoder:
    """The reader's decoder of lines (see :class:`LineDecoder`)."""
    return LineDecoder()


_PIECE: Final = 1 << 20
"""Bytes of a chunk looked at in one piece by the checks beside the decode (their memory
stays this, whatever the chunk)."""


def _pieces(data: bytes | bytearray | memoryview, overlap: int) -> Iterator[bytes]:
    """``data`` in copies of :data:`_PIECE` bytes, each with the ``overlap`` bytes after it."""
    view = memoryview(data)
    for start in range(0, view.nbytes, _PIECE):
        yield view[start : start + _PIECE + overlap].tobytes()


def _require_utf8(data: bytes | bytearray | memoryview) -> None:
    """UnicodeDecodeError unless ``data`` is valid UTF-8. ASCII, as writers write it, is told
    by one scan (a view's, piece by piece); anything else is decoded piece by piece."""
    if isinstance(data, bytes | bytearray):
        if data.isascii():
            return
    elif all(piece.isascii() for piece in _pieces(data, 0)):
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    for piece in _pieces(data, 0):
        decoder.decode(piece)
    decoder.decode(b"", final=True)


_PAYLOAD_OF: Final = {event: payload for payload, event in EVENT_FOR_PAYLOAD.items()}


def _payload_fields(event: type[Envelope[Any]], required: bool = False) -> frozenset[str]:
    """The names the fields of ``event``'s payload (only its required ones) have in a line.
    Read from the Struct's own tables, as ``msgspec.structs.fields`` reads them, without
    resolving every annotation (which cost the import of this module 70 ms)."""
    payload = _PAYLOAD_OF[event]
    names = payload.__struct_encode_fields__
    defaults = payload.__struct_defaults__
    defaults = (msgspec.NODEFAULT,) * (len(names) - len(defaults)) + defaults
    return frozenset(
        name
        for name, default in zip(names, defaults, strict=True)
        if not required or default is msgspec.NODEFAULT
    )


OWN_FIELDS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        kind_of(event): _payload_fields(event).difference(
            *(_payload_fields(other) for other in EVENT_TYPES if other is not event)
        )
        for event in EVENT_TYPES
    }
)
"""The payload fields each kind alone defines, by kind. (So a newer minor schema never
appends to one kind a field name another kind alone has: an older reader would refuse the
lines of an unmarked kind that carry it.)"""

UNMARKED: Final[frozenset[str]] = frozenset(
    kind_of(event)
    for event in EVENT_TYPES
    if not _payload_fields(event, required=True) & OWN_FIELDS[kind_of(event)]
)
"""The kinds with no required payload field of their own (``rollout``, ``heartbeat``): a
line of another kind, its ``type`` changed to one of these, still decodes."""
_UNMARKED_TYPES: Final = frozenset(event for event in EVENT_TYPES if kind_of(event) in UNMARKED)
MARKS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        kind: own if kind in UNMARKED else own & _payload_fields(event, required=True)
        for event in EVENT_TYPES
        for kind, own in [(kind_of(event), OWN_FIELDS[kind_of(event)])]
    }
)
"""What tells a line of each kind, whatever its ``type`` says: the required fields it
alone has (every line of it carries them), or, for an unmarked kind, every field it alone
has (``ppo_update``: ``early_stopped``; ``rollout``: ``episodes``, ``steps_per_second``...)."""
FOREIGN_FIELDS: Final[Mapping[str, frozenset[str]]] = MappingProxyType(
    {
        kind: frozenset().union(*(marks for other, marks in MARKS.items() if other != kind))
        if kind in UNMARKED
        else frozenset()
        for kind in KINDS
    }
)
"""The fields that make a line of an unmarked kind another kind's: the others' marks
(none for a marked kind: a line of another kind lacks its marks and does not decode)."""

_NEVER = Annotated[int, msgspec.Meta(ge=1, le=0)]
"""A type no JSON value matches."""
_FOREIGN_AT = re.compile(r"at `\$\.payload\.(?P<name>[A-Za-z0-9_]+)`$")


def _foreign_union() -> Any:
    """The union, by ``type``, of one Struct per kind whose payload has only the
    :data:`FOREIGN_FIELDS` of that kind, each of :data:`_NEVER` type: decoding a line
    with it fails exactly when its payload carries one."""
    members = []
    for event in EVENT_TYPES:
        kind = kind_of(event)
        foreign = FOREIGN_FIELDS[kind]
        payload = msgspec.defstruct(
            f"Foreign{event.__name__}Payload",
            [(name, _NEVER | msgspec.UnsetType, msgspec.UNSET) for name in sorted(foreign)],
            gc=False,
        )
        members.append(
            msgspec.defstruct(
                f"Foreign{event.__name__}",
                [("payload", payload)],
                tag=kind,
                tag_field="type",
                gc=False,
            )
        )
    return Union[tuple(members)]  # noqa: UP007 - built from a tuple of members


def _foreign_field(kind: str, exc: msgspec.ValidationError) -> str:
    """Why a line of ``kind`` is not one: the field of another kind its payload carries."""
    match = _FOREIGN_AT.search(str(exc))
    if match is None:
        return visible(str(exc))
    name = match["name"]
    owner = next(other for other, own in OWN_FIELDS.items() if name in own)
    return visible(f"type {kind}, but its payload has {name}, a field of {owner} alone")


class PayloadError(ValueError):
    """A payload the contract's readers would refuse, in one line naming the field, e.g.
    ``ppo_update.approx_kl: expected float, got str``."""


_AT = re.compile(r"^(?P<why>.*) - at `\$\.payload(?P<path>.*)`$", re.DOTALL)
_NOT_READ = (msgspec.DecodeError, RecursionError)
"""What the reader's decoder raises on a line it skips (besides invalid UTF-8, which an
encoder never writes)."""
_NOT_WRITTEN = (TypeError, ValueError, OverflowError, RecursionError)
"""What encoding a value the line encoder cannot write raises."""
_NOT_CHECKED_FAST = (*_NOT_WRITTEN, *_NOT_READ)
"""What sends an event from the twin's fast way to the full check."""


class EventCheck:
    """Refuses an event whose line the reader would skip: a value of the wrong type (the
    reader's own decoder, lax as it is, decides), a value that cannot be written, or a
    line past :data:`MAX_LINE_BYTES`. (A ``run_started`` of a newer major schema passes: it
    is for a newer reader.) Not thread-safe: one per emitter, called under its lock."""

    def __init__(self) -> None:
        self._encoder = LineEncoder()
        self._raw = bytearray(1024)  # the line as msgspec writes it: non-finite floats as null
        self._encode_into = msgspec.json.Encoder(enc_hook=_scalar_to_builtin).encode_into
        self._decoder = line_decoder()
        self._twin_decode = {
            kind: twin.decode
            for kind in EVENT_TYPES
            if (twin := null_free_decoder(kind)) is not None
        }

    def __call__(self, event: Event) -> bytes:
        """``event``'s line, as the writer writes it, if the reader would read it as
        ``event``; else PayloadError."""
        decode = self._twin_decode.get(type(event))
        if decode is not None:  # the fast way: one encode, one decode, no search for null
            raw = self._raw
            try:
                self._encode_into(event, raw)
                if len(raw) < MAX_LINE_BYTES:
                    decode(raw)
                    raw.extend(b"\n")  # no null, so no non-finite float: the line as written
                    return bytes(raw)
            except _NOT_CHECKED_FAST:
                pass  # the full way below says why
        line = self._full_check(event)
        if len(line) > MAX_LINE_BYTES:
            raise PayloadError(
                f"{kind_of(type(event))}: its line of {len(line)} bytes is longer than the "
                f"{MAX_LINE_BYTES} byte limit of a reader"
            )
        return line

    def _full_check(self, event: Event) -> bytes:
        """``event``'s line, non-finite floats spelled out, if the reader's own decoder
        reads it (PayloadError naming the field if not, or if it cannot be written)."""
        kind = kind_of(type(event))
        try:
            line = bytes(self._encoder.encode(event))
        except _NOT_WRITTEN as exc:
            field = _unencodable(event.payload)
            raise PayloadError(visible(f"{kind}.{field}: cannot be written: {exc}")) from None
        if len(line) > MAX_LINE_BYTES:
            return line  # refused by the caller, before a decode of all of it
        try:
            self._decoder.decode(line)
        except _NOT_READ as exc:
            raise PayloadError(_field_error(kind, str(exc) or type(exc).__name__)) from None
        return line


@functools.cache
def null_free_decoder(struct: type[msgspec.Struct]) -> msgspec.json.Decoder[Any] | None:
    """A decoder that reads a line of ``struct`` as the reader's (strict) decoder does, except
    that it refuses ``null`` wherever the line holds a value, or None if ``struct`` has no
    such twin (an ``Any`` somewhere, or a field whose null is written, not omitted).

    Each twin type is the reader's with ``None`` taken out of it, so every line the twin
    reads the reader reads too; and since msgspec writes a non-finite float as ``null``,
    a line the twin reads holds none: it is already the line the writer writes.
    """
    try:
        return msgspec.json.Decoder(_null_free(struct))
    except _NoTwin:
        return None


class _NoTwin(Exception):
    """A type whose lines may hold a ``null`` the reader reads: no null-free twin."""


_NONE: Final = type(None)


def _null_free(annotation: Any) -> Any:
    """``annotation`` with ``None`` taken out of it (see :func:`null_free_decoder`)."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:  # the constraints stay: the twin is never laxer
        return Annotated[(_null_free(args[0]), *annotation.__metadata__)]
    if annotation in (int, float, str, bool):
        return annotation
    if origin is Literal and None not in args:
        return annotation
    if origin in (Union, types.UnionType) and _NONE not in args:
        return Union[tuple(_null_free(arg) for arg in args)]  # noqa: UP007 - from a tuple
    if origin in (dict, list) and args:
        return origin[tuple(_null_free(arg) for arg in args)]
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return _null_free_struct(annotation)
    raise _NoTwin(annotation)


def _null_free_struct(struct: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """A Struct that decodes like ``struct`` with each field's type null-free; a field that
    may be ``None`` must be one that is omitted when it is (its default, not written)."""
    config = struct.__struct_config__
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for field in msgspec.structs.fields(struct):
        annotation = field.type
        if _takes_none(annotation):
            if not (config.omit_defaults and field.default is None):
                raise _NoTwin(struct, field.name)
            annotation = _without_none(annotation)
        twin = _null_free(annotation)
        fields.append((field.name, twin) if field.required else (field.name, twin, None))
    renamed = dict(zip(struct.__struct_fields__, struct.__struct_encode_fields__, strict=True))
    return msgspec.defstruct(
        f"NullFree{struct.__name__}",
        fields,
        kw_only=True,
        gc=False,  # read and dropped: never tracked
        tag=config.tag,
        tag_field=config.tag_field,
        rename=renamed,
        array_like=config.array_like,
        forbid_unknown_fields=config.forbid_unknown_fields,
    )


def _takes_none(annotation: Any) -> bool:
    """Whether ``annotation`` is a union with ``None`` in it (``Annotated`` looked through)."""
    if get_origin(annotation) is Annotated:
        return _takes_none(get_args(annotation)[0])
    return get_origin(annotation) in (Union, types.UnionType) and _NONE in get_args(annotation)


def _without_none(annotation: Any) -> Any:
    """A union annotation without its ``None`` (``Annotated`` kept)."""
    if get_origin(annotation) is Annotated:
        inner, *metadata = get_args(annotation)
        return Annotated[(_without_none(inner), *metadata)]
    rest = tuple(arg for arg in get_args(annotation) if arg is not _NONE)
    return Union[rest]  # noqa: UP007 - built from a tuple of members


def _field_error(kind: str, message: str) -> str:
    """msgspec's ``Expected `float`, got `str` - at `$.payload.approx_kl``` as
    ``ppo_update.approx_kl: expected float, got str``."""
    match = _AT.match(message)
    if match is None:
        return visible(f"{kind}: {message}")
    why = match["why"].replace("`", "").replace(" | null", "")  # absent is always allowed
    return visible(f"{kind}{match['path']}: {why[:1].lower()}{why[1:]}")


def _unencodable(payload: Payload) -> str:
    """The first field of ``payload`` the line encoder cannot write (its name)."""
    encoder = msgspec.json.Encoder(enc_hook=_scalar_to_builtin)
    for name in payload.__struct_fields__:
        try:
            encoder.encode(getattr(payload, name))
        except _NOT_WRITTEN:
            return name
    return "?"
