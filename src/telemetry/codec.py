"""JSON Lines encoding of events: strict JSON, non-finite floats as strings.

msgspec writes NaN and infinities as ``null``, which would be read back as "not measured".
The contract writes them as the strings "NaN", "Infinity" and "-Infinity" (the protobuf
JSON convention) and the decoder, in lax mode, turns those strings back into floats.
Payload fields left at their default (None: not measured) are omitted, so a ``null`` in a
payload line can only come from a non-finite float: the fast path costs one search for
``null`` (about 0.6 us), and only a line that has one is re-encoded with the floats spelled
out.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from telemetry.events import Event

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
