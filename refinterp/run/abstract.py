"""Checking a composition without values: the tensors of a checked run are `AbstractTensor`s
(type and shape only), variables are only declared (`DeclaredVariables`), and where a value
would be needed — a tensor condition, a tensor loop count, a data-dependent extent — the check
stops with `Undetermined`, saying where (docs/semantics.md "Checking without values")."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from refinterp.language.instance import TensorType
from refinterp.language.invocation import EmptyPack, typed_pack
from refinterp.numeric.representation import AbstractTensor, kind_of


class Undetermined(Exception):
    """Checking a composition without values cannot go on: a branch condition, a loop count or
    an extent depends on tensor values. Not an error of the program."""

    def __init__(self, reason: str, span: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.span = span

    default_code = "E0600"


def abstract_tensor(info: TensorType | tuple, what: str = "", span: Any = None,
                    fresh: Callable[[int, Any], Any] | None = None) -> Any:
    """The AbstractTensor of a declared tensor (a list of them for a pack). A shape derived
    from the composition stops a check; so does a dynamic extent (data-dependent: `~|k`,
    `k|n`) unless `fresh(axis, bound)` makes a symbol for it (docs/semantics.md "Shapes without
    values": a fresh symbol bounded by the declaration)."""
    if isinstance(info, tuple):
        return typed_pack(info, [abstract_tensor(i, what, span, fresh) for i in info])
    if info.shape is None or (fresh is None and any(e is None for e in info.shape)):
        raise Undetermined(f"the shape of {what or 'a tensor'} depends on tensor values", span)
    bounds = (*info.bounds, *(None,) * (len(info.shape) - len(info.bounds)))
    shape = tuple(fresh(axis, bound) if e is None and fresh is not None else e
                  for axis, (e, bound) in enumerate(zip(info.shape, bounds)))
    return AbstractTensor(info.dtype, shape)


def abstract_value(value: Any) -> Any:
    """A tensor value as the abstract executor holds it: an array as its AbstractTensor, a pack
    item by item (an `EmptyPack` keeps its item type); null and abstract tensors as they are."""
    if isinstance(value, EmptyPack):
        return value
    if isinstance(value, list):
        return [abstract_value(v) for v in value]
    if isinstance(value, np.ndarray):
        return AbstractTensor(kind_of(value), tuple(value.shape))
    return value


class DeclaredVariables:
    """Stands for the ParameterStore while a composition is checked: records the scoped name and
    declared type of every variable reached and answers with abstract tensors."""

    def __init__(self) -> None:
        self.declared: dict[str, TensorType] = {}

    def load(self, scoped: str, info: TensorType, span: Any = None) -> Any:
        self.declared[scoped] = info
        return abstract_tensor(info, f"variable '{scoped}'", span)

    def update(self, scoped: str, value: Any) -> None:
        """@update of a checked run changes nothing."""
