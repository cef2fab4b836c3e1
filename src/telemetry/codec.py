"""JSON Lines encoding of events: strict JSON, non-finite floats as strings.

msgspec writes NaN and infinities as ``null``, which would be read back as "not measured".
The contract writes them as the strings "NaN", "Infinity" and "-Infinity" (the protobuf
JSON convention) and the decoder, in lax mode, turns those strings back into floats.
Payload fields left at their default (None: not measured) are omitted, so a ``null`` in a
payload line can only come from a non-finite float: the fast path costs one search for
``null`` (about 0.6 us), and only a line that has one is re-encoded with the floats spelled
out.

A payload is checked before it is stamped (:class:`PayloadCheck`, run by the Emitter): one
whose line the reader would skip is refused at ``emit`` with one line naming the field.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

import msgspec

from telemetry.events import EVENT_FOR_PAYLOAD, SCHEMA_MAJOR, Event, Payload, RunStartedPayload
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
        """Return the buffer holding ``event`` as one JSON line ending in a newline."""
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


def line_decoder() -> msgspec.json.Decoder[Event]:
    """The reader's decoder of one line: typed, lax (``"NaN"`` is a float, ``"0.5"`` too)."""
    return msgspec.json.Decoder(Event, strict=False)


class PayloadError(ValueError):
    """A payload the contract's readers would refuse, in one line naming the field, e.g.
    ``ppo_update.approx_kl: expected float, got str``."""


_AT = re.compile(r"^(?P<why>.*) - at `\$\.payload(?P<path>.*)`$", re.DOTALL)


class PayloadCheck:
    """Refuses a payload whose line the reader would skip, or that would make it refuse the
    log (a newer major schema, a line past :data:`MAX_LINE_BYTES`).

    Fast path: a MessagePack round trip into the payload's own type, lax as the reader is
    (msgspec's one set of conversion rules), about what decoding the line costs. What it
    refuses is judged again on the JSON line itself by the reader's decoder, which has the
    last word (JSON spells some values differently: bytes, int keys, NaN). Not
    thread-safe: one per emitter, called under its lock.
    """

    def __init__(self) -> None:
        self._encoder = msgspec.msgpack.Encoder(enc_hook=_scalar_to_builtin)
        self._buffer = bytearray(1024)
        self._decoders: dict[type[Payload], msgspec.msgpack.Decoder[Any]] = {}

    def __call__(self, payload: Payload) -> None:
        """Return if the reader would take ``payload``'s line; else raise PayloadError."""
        kind = type(payload)
        decoder = self._decoders.get(kind)
        if decoder is None:
            decoder = self._decoders[kind] = msgspec.msgpack.Decoder(kind, strict=False)
        try:
            self._encoder.encode_into(payload, self._buffer)
            small = len(self._buffer) < MAX_LINE_BYTES // 4  # JSON spells a float longer
            if small:
                decoder.decode(self._buffer)
        except (msgspec.DecodeError, TypeError, ValueError, OverflowError):
            small = False
        if not small:  # refused, or long: the exact test on the JSON line decides
            check_line(payload)
        elif isinstance(payload, RunStartedPayload):
            _check_schema(payload)


def _check_schema(payload: RunStartedPayload) -> None:
    if payload.schema > SCHEMA_MAJOR:
        raise PayloadError(
            f"run_started.schema: {payload.schema} is newer than this writer's schema "
            f"{SCHEMA_MAJOR}; readers would refuse the whole log"
        )


def check_line(payload: Payload) -> None:
    """Raise PayloadError unless the reader would read ``payload``'s line as an event: the
    exact test, on the line the writer would write (see :class:`PayloadCheck`)."""
    event_type = EVENT_FOR_PAYLOAD[type(payload)]
    kind = event_type.__struct_config__.tag
    event: Event = event_type(run_id="check", seq=1, ts=0.0, payload=payload)  # type: ignore[assignment, call-arg]
    try:
        line = LineEncoder().encode(event)
    except (TypeError, ValueError, OverflowError) as exc:
        raise PayloadError(f"{kind}.{_unencodable(payload)}: cannot be written: {exc}") from None
    if len(line) > MAX_LINE_BYTES:
        raise PayloadError(
            f"{kind}: its line of {len(line)} bytes is longer than the {MAX_LINE_BYTES} byte "
            "limit of a reader"
        )
    try:
        line_decoder().decode(line)
    except msgspec.ValidationError as exc:
        raise PayloadError(_field_error(str(kind), str(exc))) from None
    if isinstance(payload, RunStartedPayload):
        _check_schema(payload)


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
        except (TypeError, ValueError, OverflowError):
            return name
    return "?"
