"""A package's public names loaded with the module that defines them, on first use
(PEP 562), so that importing one light module of a package does not load the rest of it:
``telemetry`` and ``sanctum`` export their names this way."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``, whose public names are the keys of ``homes``
    (name -> the module that defines it): each is imported when first asked for, then kept
    in the package's namespace."""
    namespace = vars(importlib.import_module(package))

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__
