"""What an operator is invoked with and what instantiating it gives (spec §2.5–2.7): tensor
types (`TensorType`, formatted by `describe_type`), the `Invocation` (attributes, input types,
explicit generics, profile) and the `OperatorInstance` (bound symbols, output, constant and
variable types)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from refinterp.core.source import Span
from refinterp.language.expr import Environment
from refinterp.language.types import Type
from refinterp.language.values import Value
from refinterp.numeric import rules
from refinterp.numeric.representation import (MAX_PACK_LENGTH, MAX_TENSOR_SIZE, format_extent,
                                              kind_of)
from refinterp.syntax import ast



@dataclass(frozen=True)
class TensorType:
    """The type and shape of a tensor; `bounds` holds the upper bound of each dynamic extent.

    An unknown extent is None; a shape of None means the declaration left it to be derived from
    the composition (a graph's `output: real`, §2.6 "Dynamic input and output shapes").
    """

    dtype: str
    shape: tuple[int | None, ...] | None
    bounds: tuple[int | None, ...] = ()

    def __post_init__(self) -> None:
        if not any(b is not None for b in self.bounds):  # no bound: one spelling, ()
            object.__setattr__(self, "bounds", ())

    def __str__(self) -> str:
        """`real[2, 3]`; a dynamic extent `~`; a shape left to the composition `real[?]`."""
        return describe_type(self)

    def as_json(self) -> dict[str, Any]:
        # a symbolic extent (a check without values) as its expression's text
        shape = None if self.shape is None else [
            e if e is None or isinstance(e, int) else str(e) for e in self.shape]
        data: dict[str, Any] = {"type": self.dtype, "shape": shape}
        if any(b is not None for b in self.bounds):
            data["bounds"] = [b if b is None or isinstance(b, int) else str(b)
                              for b in self.bounds]
        return data


def describe_type(info: "TensorType | tuple") -> str:
    """THE tensor-type formatter: `real[2, 3]`, a dynamic extent as `~` (`~|10` with its upper
    bound, §2.6), a shape derived from the composition as `real[?]`, a pack as
    `[real[2], real[3]]`, a pack of zero items of a known type as `real[2]..(0)`."""
    if isinstance(info, EmptyPackType):
        return f"{describe_type(info.item)}..(0)"
    if isinstance(info, tuple):
        return "[" + ", ".join(describe_type(i) for i in info) + "]"
    bounds = (*info.bounds, *(None,) * (len(info.shape or ()) - len(info.bounds)))
    shape = "?" if info.shape is None else ", ".join(
        format_extent(e) if e is not None else "~" if b is None else f"~|{format_extent(b)}"
        for e, b in zip(info.shape, bounds))
    return f"{info.dtype}[{shape}]"


@dataclass
class Invocation:
    """What an operator is invoked with: attribute values, input tensors, explicit generics;
    and the limits of the run (docs/limits.md; the executor sets them from its `Limits`) that
    instantiation checks before it builds a declared pack or element-wise constant."""

    attributes: dict[str, Value] = field(default_factory=dict)
    inputs: dict[str, TensorType | tuple[TensorType, ...]] = field(default_factory=dict)
    generics: tuple[str, ...] = ()
    profile: rules.Profile = rules.SPEC
    max_pack_length: int = MAX_PACK_LENGTH
    max_tensor_size: int = MAX_TENSOR_SIZE


@dataclass
class OperatorInstance:
    """A bound operator: its symbols, generic types, and output/constant/variable tensors."""

    definition: ast.OperatorDef
    dtypes: dict[str, str]
    symbols: dict[str, Value]
    outputs: dict[str, TensorType | tuple[TensorType, ...]]
    constants: dict[str, tuple[TensorType, Value]]
    variables: dict[str, TensorType | tuple[TensorType, ...]]
    types: dict[str, Type] = field(default_factory=dict)  # static types of the symbols
    dtype_bounds: dict[str, str] = field(default_factory=dict)
    # inputs not given that take their declared default (§2.6): type/shape and uniform value
    defaults: dict[str, tuple[TensorType, Value]] = field(default_factory=dict)
    # per (non-pack) output, the dimensions whose dynamic extent is named by a symbol the
    # invocation leaves unbound (`k|bound`, §2.6): dimension -> symbol (lower.plan counts them)
    named_extents: dict[str, dict[int, str]] = field(default_factory=dict)
    # asserts the symbols of a check without values leave open (refinterp.numeric.symbolic):
    # (the condition's text, what it depends on, its span); checked by a run with values
    deferred: tuple[tuple[str, str, Any], ...] = ()
    # what the @lower engines derive from this instance alone (its plan, per-formula facts),
    # kept here so that it lives exactly as long as the instance (lower.common.facts_of)
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def environment(self, profile: rules.Profile = rules.SPEC) -> Environment:
        """An expression environment holding every bound symbol of the instance."""
        return Environment(dict(self.symbols), dict(self.types), dict(self.dtype_bounds),
                           dict(self.dtypes), profile)


def span_text(span: Span) -> str:
    """The exact source text a span covers."""
    source = span.source
    if source is None:
        return ""
    start = source.line_starts[span.line - 1] + span.col - 1
    end = source.line_starts[span.end_line - 1] + span.end_col - 1
    return source.text[start:end]


def entries(definition: ast.OperatorDef, kind: str) -> tuple:
    block = definition.block(kind)
    return block.entries if block else ()


class EmptyPack(list):
    """A pack of zero tensors that knows the type and shape its items would have (spec
    §2.10.1: a loop may run zero iterations; docs/semantics.md "Empty packs"): the scanned
    outputs of a loop that ran none, a declared pack output of zero items. Everywhere packs are
    lists it is the empty list; `tensor_type` gives its `EmptyPackType`, from which an
    invocation binds the items' type and shape (§2.6) as from items, with a length of 0.
    Never mutated (packs are shared between names)."""

    def __init__(self, item: TensorType) -> None:
        super().__init__()
        self.item = item

    def __repr__(self) -> str:
        return f"EmptyPack({self.item})"


class EmptyPackType(tuple):
    """The type of an `EmptyPack`: the empty tuple (a pack of no TensorType), plus `item`, the
    TensorType its items would have (every extent known)."""

    item: TensorType

    def __new__(cls, item: TensorType) -> "EmptyPackType":
        self = super().__new__(cls)
        self.item = item
        return self

    def __getnewargs__(self) -> tuple[TensorType]:  # type: ignore[override]
        return (self.item,)


def item_type(pack: Any) -> TensorType | None:
    """The item type an empty pack (an `EmptyPack` value or its `EmptyPackType`) carries; None
    for any other value, an empty pack of unknown item type included."""
    return pack.item if isinstance(pack, (EmptyPack, EmptyPackType)) else None


def typed_pack(info: TensorType | tuple | None, value: Any) -> Any:
    """`value`, or, where it is an empty pack of unknown item type and `info` (its declared
    type) is an `EmptyPackType`, an `EmptyPack` of that item type (docs/semantics.md "Empty
    packs")."""
    if isinstance(info, EmptyPackType) and isinstance(value, list) and not value and \
            not isinstance(value, EmptyPack):
        return EmptyPack(info.item)
    return value


def empty_pack_type(item: TensorType | None) -> tuple:
    """The type of a pack of zero items of type `item`: an `EmptyPackType` where `item` is a
    tensor type with every extent known, else the plain empty tuple (item type unknown)."""
    if item is None or item.shape is None or any(e is None for e in item.shape):
        return ()
    return EmptyPackType(TensorType(item.dtype, tuple(item.shape)))


def tensor_type(value: Any) -> TensorType | tuple:
    """The TensorType of an array (a tuple of them for a pack; an `EmptyPackType` for an
    `EmptyPack`)."""
    if isinstance(value, EmptyPack):
        return EmptyPackType(value.item)
    if isinstance(value, list):
        return tuple(tensor_type(v) for v in value)
    return TensorType(kind_of(value), tuple(value.shape))
