"""Intrinsics: Python implementations of operators that have no @lower or @compose body
(spec chapter 4 leaves e.g. `layout.nonzero`, `algo.top_k` to the implementation).

An intrinsic is registered under the qualified name of the operator it implements
(`"<module>.<operator>"`, the module being the import name, e.g. `"algo.top_k"`) and is called
with the operator's instance (attributes, generic types and output shapes already bound and
checked by instantiation, see `refinterp.language.instance`) and its input arrays by name (a
pack as a list of arrays, an absent optional input missing from the dict). It returns the
outputs by name, in declaration order. Each intrinsic's docstring states its exact semantics;
docs/stdlib.md lists the choices made.

The modules of this package register their intrinsics when imported; `lookup` imports them all
on first use.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable

from refinterp.language.instance import OperatorInstance

Intrinsic = Callable[[OperatorInstance, dict[str, Any]], dict[str, Any]]
_REGISTRY: dict[str, Intrinsic] = {}
_loaded = False


def intrinsic(qualified: str) -> Callable[[Intrinsic], Intrinsic]:
    """Decorator: register the function as the implementation of operator `qualified`."""

    def register(function: Intrinsic) -> Intrinsic:
        if qualified in _REGISTRY:
            raise ValueError(f"intrinsic {qualified} registered twice")
        _REGISTRY[qualified] = function
        return function

    return register


def lookup(qualified: str) -> Intrinsic | None:
    """The intrinsic registered for `qualified`, or None."""
    global _loaded
    if not _loaded:
        for info in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True
    return _REGISTRY.get(qualified)


def registered() -> list[str]:
    """Every registered qualified name (after loading all intrinsic modules)."""
    lookup("")
    return sorted(_REGISTRY)
