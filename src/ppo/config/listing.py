"""``ppo config``: every field of a config with its type, default, allowed values and doc,
read from the fields themselves (:func:`ppo.config.settings.setting`), and the names other
PPO libraries give them (:mod:`ppo.config.peers`). Nothing here is written twice: a field
added to a config is listed, and a test holds every field to a doc and an allowed range.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ppo.config import peers
from ppo.config.settings import ConfigError, Settings, unknown_key

WIDTH = 88
"""Columns of the text listing."""


@dataclass(frozen=True)
class FieldDoc:
    """One field as ``ppo config`` lists it."""

    name: str
    type: str
    """``int``, ``float or none``, ``list of int``, ``str`` (a choice's options are in
    ``allowed``)."""
    default: Any
    """JSON-ready (a tuple as a list)."""
    allowed: str
    doc: str


def type_name(tp: Any) -> str:
    """A field's annotation in words."""
    args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or none" if type(None) in args else "")
    if origin is typing.Literal:
        return "str"
    if origin is tuple:
        return f"list of {type_name(args[0])}"
    return getattr(tp, "__name__", str(tp))


def fields_of(config: type[Settings]) -> list[FieldDoc]:
    """Every field of ``config``, in declaration order."""
    hints = typing.get_type_hints(config)
    defaults = config().to_dict()
    return [
        FieldDoc(
            name=f.name,
            type=type_name(hints[f.name]),
            default=defaults[f.name],
            allowed=f.metadata["validator"].allowed,
            doc=f.metadata["doc"],
        )
        for f in dataclasses.fields(config)  # type: ignore[arg-type]
    ]


def select(config: type[Settings], names: Sequence[str]) -> list[FieldDoc]:
    """The fields named (all when none is); an unknown name is a :class:`ConfigError`
    that says what to write when it is a peer library's name."""
    listed = fields_of(config)
    if not names:
        return listed
    known = [f.name for f in listed]
    unknown = [unknown_key(name, known) for name in names if name not in known]
    if unknown:
        raise ConfigError(unknown, "ppo config")
    return [f for f in listed if f.name in names]


def text(config: type[Settings], fields: Sequence[FieldDoc], title: str) -> str:
    """The listing for a terminal: ``name: type = default  (allowed)`` then the doc."""
    lines = [title, ""]
    for f in fields:
        lines.append(f"{f.name}: {f.type} = {_default(f.default)}   ({f.allowed})")
        lines += textwrap.wrap(f.doc, WIDTH, initial_indent="    ", subsequent_indent="    ")
    known = frozenset(f.name for f in fields_of(config))
    names = peers.peer_names(known)
    if names and len(fields) == len(known):
        lines += ["", "Names from other libraries: not accepted; the error says what to write:"]
        for peer in names:
            lines += textwrap.wrap(
                f"{peer.name} ({peer.peers}): {peer.mapping}",
                WIDTH,
                initial_indent="  ",
                subsequent_indent="      ",
            )
    return "\n".join(lines)


def _default(value: Any) -> str:
    """A default as a TOML file would write it (a float keeps its point: ``5.0``)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_default(v) for v in value) + "]"
    return peers.plain(value)


def as_json(config: type[Settings], fields: Sequence[FieldDoc]) -> str:
    """The listing for scripts: the fields, and the peer names that map to them."""
    known = frozenset(f.name for f in fields_of(config))
    return json.dumps(
        {
            "config": config.__name__,
            "fields": [dataclasses.asdict(f) for f in fields],
            "peer_names": [
                {"name": p.name, "peers": p.peers, "fields": list(p.fields), "mapping": p.mapping}
                for p in peers.peer_names(known)
            ],
        },
        indent=2,
    )
