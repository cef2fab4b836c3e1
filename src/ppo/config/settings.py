"""Validated, frozen configs loadable from flat TOML and ``--set key=value``.

:class:`Settings` is the base of :class:`ppo.config.PPOConfig` and
:class:`ppo.tokens.config.TokenPPOConfig`: a dataclass whose fields are declared with
:func:`setting` (default and validator together) and that reports every bad field at
once, in field order, each message naming the field and the offending value. Values read
from TOML or ``--set`` are coerced by the field's declared type; what cannot be coerced is
kept as given so that validation names it.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ppo.config import peers
from ppo.config import validators as valid
from telemetry import files
from telemetry.text import visible

_NONE_WORDS = frozenset({"none", "null", "off"})
_TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
_FALSE_WORDS = frozenset({"false", "0", "no", "off"})


class ConfigError(ValueError):
    """The configuration is unusable; ``errors`` lists every problem, in field order.

    ``str()`` is one line: the source, then each problem, separated by ``; `` and each
    escaped (:func:`telemetry.text.visible`): a key, a value or a file name from outside
    never reaches the terminal raw, nor breaks the line."""

    def __init__(self, errors: Iterable[str], source: str | None = None) -> None:
        self.errors = tuple(errors)
        self.source = source
        where = f" in {visible(source)}" if source else ""
        count = len(self.errors)
        head = f"invalid PPO config{where}" + (f" ({count} errors)" if count != 1 else "")
        super().__init__(head + ": " + "; ".join(visible(e) for e in self.errors))


_T = TypeVar("_T")
_S = TypeVar("_S", bound="Settings")


@typing.overload
def setting(default: _T, validator: valid.Validator, doc: str) -> _T: ...


@typing.overload
def setting(default: _T, *, doc: str) -> _T: ...


def setting(default: Any, validator: valid.Validator | None = None, doc: str = "") -> Any:
    """A config field's default, its validator and its one-line doc, declared together on
    the field (``ppo config`` lists all three). Without a validator, the field's annotation
    gives it (:func:`ppo.config.validators.of_type`: a ``bool``, a ``Literal``) when its
    :class:`Settings` class is defined; an annotation that implies none is a TypeError
    there."""
    metadata = {"doc": doc} if validator is None else {"validator": validator, "doc": doc}
    return dataclasses.field(default=default, metadata=metadata)


class Settings:
    """Loading, overriding and validation shared by every config dataclass."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Gives each field declared without a validator the one its annotation implies,
        before ``@dataclass`` reads the fields."""
        super().__init_subclass__(**kwargs)
        hints = typing.get_type_hints(cls)
        for name, spec in list(vars(cls).items()):
            if isinstance(spec, dataclasses.Field) and "validator" not in spec.metadata:
                derived = valid.of_type(hints[name])
                if derived is None:
                    raise TypeError(
                        f"{cls.__name__}.{name}: no validator derives from {hints[name]!r}; "
                        "name one"
                    )
                setattr(cls, name, setting(spec.default, derived, spec.metadata["doc"]))

    def __post_init__(self) -> None:
        errors = self.problems()
        if errors:
            raise ConfigError(errors)

    def problems(self) -> list[str]:
        """Every problem, in field order: each field's validator, then cross-field checks."""
        return valid.field_problems(self)

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready builtins (for run_started and checkpoints)."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
        }

    @classmethod
    def from_mapping(cls: type[_S], values: Mapping[str, Any], source: str | None = None) -> _S:
        """Build from a mapping of field names to values (coerced by field type)."""
        return _build(cls(), dict(values), source, typed=True)

    @classmethod
    def from_toml(cls: type[_S], path: str | Path) -> _S:
        """Load from a flat TOML file; unknown keys and bad values are errors naming the file."""
        return _build(cls(), read_toml(path), str(path), typed=True)

    def with_overrides(self: _S, assignments: Iterable[str], source: str = "--set") -> _S:
        """A copy with ``key=value`` strings applied (values parsed by the field's type)."""
        values: dict[str, Any] = {}
        errors: list[str] = []
        for item in assignments:
            key, sep, raw = item.partition("=")
            if not sep or not key.strip():
                errors.append(f"expected key=value, got {item!r}")
                continue
            values[key.strip()] = raw.strip()
        if errors:
            raise ConfigError(errors, source)
        return _build(self, values, source, typed=False)


def read_toml(path: str | Path) -> dict[str, Any]:
    """A TOML config file as a dict, read through the project's one opener
    (:func:`telemetry.files.read_toml`: a regular file of at most 1 MiB, nested at most
    16 deep). A file that cannot be used (missing, a folder, a FIFO, a device, too large,
    not UTF-8, not TOML, nested too deep) is a :class:`telemetry.files.InputFileError`
    whose message is one line naming the file."""
    return files.read_toml(path, "config file")


# ---------------------------------------------------------------------------- coercion


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return tp, False


def _coerce(value: Any, tp: Any, typed: bool) -> Any:
    """Convert TOML/--set input toward ``tp``; leave what does not fit for validation.

    A string is parsed by the field's type only where the source is text (``--set``); a
    typed source (a TOML file, a checkpoint's config) keeps its types, and a string there
    is taken only as a none word for an optional field (TOML has no null)."""
    base, optional = _strip_optional(tp)
    if isinstance(value, str):
        text = value.strip()
        if optional and text.lower() in _NONE_WORDS:
            return None
        return value if typed else _parse_text(text, base)
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if typing.get_origin(base) is tuple and isinstance(value, list):
        item = typing.get_args(base)[0]
        return tuple(_coerce(v, item, typed) for v in value)
    return value


def _parse_text(text: str, base: Any) -> Any:
    try:
        if base is bool:
            low = text.lower()
            return True if low in _TRUE_WORDS else False if low in _FALSE_WORDS else text
        if base is int:
            number = float(text) if any(c in text.lower() for c in ".e") else int(text)
            return int(number) if float(number).is_integer() else text
        if base is float:
            return float(text)
        if typing.get_origin(base) is tuple:
            item = typing.get_args(base)[0]
            parts = [p for p in text.strip("[]()").replace(" ", "").split(",") if p]
            return tuple(_parse_text(p, item) for p in parts)
    except (ValueError, OverflowError):
        return text
    return text


def _build(base: _S, values: dict[str, Any], source: str | None, typed: bool) -> _S:
    """``base`` with ``values`` applied; ``typed``: the values come typed (TOML, JSON), not
    as text to parse (``--set``)."""
    hints = typing.get_type_hints(type(base))
    names = [f.name for f in dataclasses.fields(base)]  # type: ignore[arg-type]
    known = {k: _coerce(v, hints[k], typed) for k, v in values.items() if k in names}
    context = {**base.to_dict(), **known}
    put = peers.put_set if source == "--set" else peers.put_toml
    errors = [
        unknown_key(key, names, value, context, put)
        for key, value in values.items()
        if key not in names
    ]
    try:
        config = dataclasses.replace(base, **known)  # type: ignore[type-var]
    except ConfigError as exc:
        raise ConfigError([*errors, *exc.errors], source) from None
    if errors:
        raise ConfigError(errors, source)
    return config


def unknown_key(
    key: str,
    names: list[str],
    value: Any = None,
    context: Mapping[str, Any] | None = None,
    put: peers.Put = peers.put_set,
) -> str:
    """The error of a key that is no field: a peer library's name says what to write
    instead (:mod:`ppo.config.peers`, converted from ``value`` where units differ); a typo
    gets the closest field name."""
    hint = peers.peer_hint(key, value, frozenset(names), context or {}, put)
    if hint is not None:
        return f"unknown config key {key!r}: {hint}"
    close = difflib.get_close_matches(key, names, n=1)
    suggestion = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown config key {key!r}{suggestion}"
