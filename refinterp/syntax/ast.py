"""The SkriptND abstract syntax tree: frozen dataclasses, each carrying a source span.

Spans never take part in equality, so `parse(print(tree)) == tree` compares structure only.
Both dialects (draft spec and Khronos NNEF-Tools) parse to the same nodes; the canonical printer
(`syntax.printer`) prints the draft-spec spelling where the two differ (see docs/grammar.md).

The parser does not resolve names: `Call` covers operator invocations, casts (`int(x)`, `T(x)`)
and plain-spelled built-ins (`sqrt(x)`); `Subscript` covers pack indexing and tensor access.
Later stages classify them with the declarations in scope.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
import types
from dataclasses import field
from reprlib import recursive_repr
from typing import Any, Callable, Union

from refinterp.core.source import NO_SPAN, Span

# ----------------------------------------------------------------------------- node classes
#
# Import time (docs/performance.md "Start-up"): `dataclasses.dataclass(frozen=True)` compiles six
# methods per class, one `exec` each: most of this module's import time. In this module `dataclass`
# is the function below instead. For a plain frozen subclass of a node class (annotated fields with
# at most a default; no __post_init__; none of the six methods written by hand) it lets dataclasses
# collect the fields without generating anything, then adds the same six methods: one compiled
# __init__, and shared closures for the others. Anything else goes to dataclasses.dataclass. The
# classes equal what dataclasses makes (fields, parameters, signatures, docs, repr, eq, hash,
# frozenness): tests/test_fuzz_frontdoors.py compares them class by class.

_GENERATED = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


@dataclasses.dataclass(init=False, repr=False, eq=False)
class _Thawed:
    """Only its `__dataclass_params__` serves: see `dataclass`."""


def dataclass(cls: type | None = None, /, **options: Any) -> Any:
    """`dataclasses.dataclass`, with the same classes made faster for plain frozen nodes."""
    if cls is None:
        return lambda cls: dataclass(cls, **options)
    bases = [b for b in cls.__mro__[1:] if "__dataclass_params__" in b.__dict__]
    if options != {"frozen": True} or not bases or not _plain(cls, bases):
        return dataclasses.dataclass(cls, **options)
    frozen = [b.__dataclass_params__ for b in bases]
    documented = bool(cls.__doc__)
    if not documented:
        cls.__doc__ = "-"  # dataclasses would derive one from the __init__ not yet there
    for base in bases:  # dataclasses refuses a non-frozen pass over frozen bases
        base.__dataclass_params__ = _Thawed.__dataclass_params__
    try:
        dataclasses.dataclass(cls, init=False, repr=False, eq=False)  # the fields, no method
    finally:
        for base, params in zip(bases, frozen):
            base.__dataclass_params__ = params
    cls.__dataclass_params__ = frozen[0]
    fields = dataclasses.fields(cls)
    init, representation, equality, hashing = _compiled(cls, fields)
    for method in (init, recursive_repr()(representation), equality, hashing,
                   _frozen_setattr(cls, tuple(f.name for f in fields)),
                   _frozen_delattr(cls, tuple(f.name for f in fields))):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    if not documented:
        cls.__doc__ = cls.__name__ + _signature_text(fields)
    return cls


def _plain(cls: type, bases: list[type]) -> bool:
    namespace = cls.__dict__
    if any(name in namespace for name in _GENERATED) or hasattr(cls, "__post_init__") or \
            not all(b.__dataclass_params__.frozen for b in bases):
        return False
    for name, annotation in namespace.get("__annotations__", {}).items():
        value = namespace.get(name)
        if "ClassVar" in str(annotation) or "InitVar" in str(annotation) or (
                isinstance(value, dataclasses.Field) and
                (value.default_factory is not dataclasses.MISSING or not value.init)):
            return False
    return True


def _in_init_order(fields: tuple) -> list:
    return [f for f in fields if not f.kw_only] + [f for f in fields if f.kw_only]


def _compiled(cls: type, fields: tuple) -> tuple[Callable, ...]:
    """__init__, __repr__, __eq__ and __hash__ as dataclasses writes them. Only __init__ is
    compiled (it makes every node a parse makes: it must be as fast as dataclasses'); the
    others are closures over the field names, which return what dataclasses' methods return
    (compiling them too cost a third of this module's import time)."""
    init = _init(cls, fields, _parameters(fields))
    init.__annotations__ = {**{f.name: f.type for f in _in_init_order(fields)}, "return": None}
    shown = tuple(f.name for f in fields if f.repr)
    compared = _items([f.name for f in fields if f.compare])
    hashed = _items([f.name for f in fields if (f.compare if f.hash is None else f.hash)])

    def __repr__(self):  # type: ignore[no-untyped-def] - as dataclasses': unannotated
        return self.__class__.__qualname__ + \
            f"({', '.join(f'{name}={getattr(self, name)!r}' for name in shown)})"

    def __eq__(self, other):  # type: ignore[no-untyped-def]
        if other.__class__ is self.__class__:
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self):  # type: ignore[no-untyped-def]
        return hash(hashed(self))
    return init, __repr__, __eq__, __hash__


def _parameters(fields: tuple) -> list[str]:
    """The parameters of a node class's __init__: `self`, then `name` or
    `name=__default_name` in init order, with `*` before the keyword-only ones."""
    parameters, seen_default = ["self"], False
    for f in _in_init_order(fields):
        if f.kw_only and "*" not in parameters:
            parameters.append("*")
        if f.default is dataclasses.MISSING:
            if seen_default and not f.kw_only:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            parameters.append(f.name)
        else:
            seen_default = seen_default or not f.kw_only
            parameters.append(f"{f.name}=__default_{f.name}")
    return parameters


def _init_source(fields: tuple, parameters: list[str]) -> str:
    """The source of `make(__set, defaults...)`, which returns the __init__ of a node class with
    `fields` and `parameters` (`name` or `name=__default_name`, `*`): each field set in field
    order with object.__setattr__, as dataclasses' frozen __init__ does."""
    values = ["__set", *(f"__default_{f.name}" for f in fields)]
    assign = "".join(f"\n        __set(self, {f.name!r}, {f.name})" for f in fields)
    return f"""def make({', '.join(values)}):
    def __init__({', '.join(parameters)}):{assign or ' pass'}
    return __init__"""


# The compiled __init__ of each shape of node class: (field names in field order, parameters
# with placeholder names) -> code object. Classes of one shape differ only in their names.
_INIT_CODE: dict[tuple, types.CodeType] = {}


def _init(cls: type, fields: tuple, parameters: list[str]) -> Callable:
    """The __init__ of `_init_source`, compiled once per shape: an __init__ differs from
    another of the same shape only in its names (parameters, and the field names it passes to
    object.__setattr__), so the shape's code object with the names replaced is the code
    object the class's own source compiles to, but for the columns of its position table
    (tests/test_startup_imports.py checks this class by class). Compiling 51 __init__s cost
    a third of this module's import time; there are 8 shapes."""
    names = [f.name for f in fields]
    placeholder = {name: f"_{index}_" for index, name in enumerate(names)}
    shape = (tuple(placeholder[n] for n in names),
             tuple(_renamed(p, placeholder) for p in parameters))
    code = _INIT_CODE.get(shape)
    if code is None:
        named = [dataclasses.field() for _ in names]
        for f, name in zip(named, shape[0]):
            f.name = name
        namespace: dict[str, Any] = {}
        exec(_init_source(tuple(named), list(shape[1])), {}, namespace)
        code = next(c for c in namespace["make"].__code__.co_consts
                    if isinstance(c, types.CodeType))
        _INIT_CODE[shape] = code
    real = {v: k for k, v in placeholder.items()}
    code = code.replace(co_varnames=tuple(real.get(v, v) for v in code.co_varnames),
                        co_consts=tuple(real.get(c, c) if type(c) is str else c
                                        for c in code.co_consts))
    init = types.FunctionType(code, sys.modules[cls.__module__].__dict__, "__init__",
                              None, (types.CellType(object.__setattr__),))
    defaults = [f.default for f in _in_init_order(fields)
                if f.default is not dataclasses.MISSING and not f.kw_only]
    init.__defaults__ = tuple(defaults) or None
    init.__kwdefaults__ = {f.name: f.default for f in fields
                           if f.kw_only and f.default is not dataclasses.MISSING} or None
    return init


def _renamed(parameter: str, placeholder: dict[str, str]) -> str:
    """A parameter with its placeholder name and without its default: defaults are the
    function's (`__defaults__`), not its code's."""
    name = parameter.partition("=")[0]
    return placeholder.get(name, name)  # self and * stay


def _items(names: list[str]) -> Callable[[Any], tuple]:
    """The tuple of a node's fields `names`, in order (what dataclasses compares and hashes)."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        get = operator.attrgetter(names[0])
        return lambda node: (get(node),)
    return lambda node: ()


def _frozen_setattr(cls: type, names: tuple[str, ...]) -> Callable:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)
    return __setattr__


def _frozen_delattr(cls: type, names: tuple[str, ...]) -> Callable:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)
    return __delattr__


def _signature_text(fields: tuple) -> str:
    """`(a: 'int', b: 'str' = 'x', *, span: 'Span' = ...)` as inspect.signature prints it."""
    parts: list[str] = []
    for f in _in_init_order(fields):
        if f.kw_only and "*" not in parts:
            parts.append("*")
        text = f"{f.name}: {f.type!r}"  # a string: this module postpones annotations
        parts.append(text if f.default is dataclasses.MISSING else f"{text} = {f.default!r}")
    return f"({', '.join(parts)})"


@dataclass(frozen=True)
class Node:
    span: Span = field(default=NO_SPAN, compare=False, repr=False, kw_only=True)


# ----------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Name(Node):
    """An identifier (`x`), possibly a word that is a keyword elsewhere (`is`)."""

    name: str


@dataclass(frozen=True)
class IntLiteral(Node):
    value: int


@dataclass(frozen=True)
class RealLiteral(Node):
    value: float


@dataclass(frozen=True)
class BoolLiteral(Node):
    value: bool


@dataclass(frozen=True)
class Constant(Node):
    """The real constants `inf` and `pi`."""

    name: str


@dataclass(frozen=True)
class StringLiteral(Node):
    """A string literal (adjacent literals already joined): text pieces and `{expr}` insertions."""

    parts: tuple[Union[str, "Expr"], ...]


@dataclass(frozen=True)
class Placeholder(Node):
    """`~`: an omitted argument, result or extent."""


@dataclass(frozen=True)
class ListExpr(Node):
    """`[a, b.., c:d, (e, f)..]`: items are expressions, ranges and expansions."""

    items: tuple["ListItem", ...]


@dataclass(frozen=True)
class Range(Node):
    """`start:stop[:step]` as a list item."""

    start: "Expr"
    stop: "Expr"
    step: "Expr | None" = None


@dataclass(frozen=True)
class Zip(Node):
    """`(a, b, ...)` inside a list, always followed by `..` (an `Expand` wraps it)."""

    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Expand(Node):
    """`x..` (expansion of a pack) or `x..(n)` (repetition / conditional inclusion)."""

    operand: "Expr"
    count: "Expr | None" = None


@dataclass(frozen=True)
class Unary(Node):
    """`+x`, `-x`, `!x`, and the null test `?x`."""

    op: str
    operand: "Expr"


@dataclass(frozen=True)
class Binary(Node):
    """A binary operator, including `??`, `is`, `in`. Min/max are normalised to `<<`/`>>`."""

    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Select(Node):
    """`cond ? a : b`, or `cond ? a` (else-less: null when the condition fails)."""

    cond: "Expr"
    then: "Expr"
    otherwise: "Expr | None" = None


@dataclass(frozen=True)
class Fold(Node):
    """`x op ..` (fold) or `x op ...` (cumulative fold). Min/max normalised to `<<`/`>>`."""

    op: str
    operand: "Expr"
    cumulative: bool = False


@dataclass(frozen=True)
class Slice(Node):
    """`[start]:[stop][:step]` as an index (all three omitted: the full-range `:`)."""

    start: "Expr | None" = None
    stop: "Expr | None" = None
    step: "Expr | None" = None


@dataclass(frozen=True)
class Bounded(Node):
    """`|index|` (out-of-range skips) or `|index <> lower : upper|` (remapped) in a tensor
    access."""

    index: "Expr"
    lower: "Expr | None" = None
    upper: "Expr | None" = None


@dataclass(frozen=True)
class Subscript(Node):
    """`base[items]`: pack indexing, string indexing or tensor access.

    `trailing_comma` records `x[i,]`, the spec's marker of a rank-1 tensor access.
    """

    base: "Expr"
    items: tuple["IndexItem", ...]
    trailing_comma: bool = False


@dataclass(frozen=True)
class Substitute(Node):
    """`target[index] <- value`."""

    target: Subscript
    value: "Expr"


@dataclass(frozen=True)
class Member(Node):
    """`x.shape`, `x.rank`, `x.size` (and any other `.name`, rejected by later stages)."""

    base: "Expr"
    name: str


@dataclass(frozen=True)
class Builtin(Node):
    """A built-in function spelled with back-ticks: `` `sqrt`(x) ``."""

    name: str
    args: tuple["Expr", ...]


@dataclass(frozen=True)
class TypeArg(Node):
    """A type argument of an invocation: `op<real, T>(...)`."""

    name: str


@dataclass(frozen=True)
class AttributeValue(Node):
    """`name = value` in an invocation's attribute braces."""

    name: str
    value: "Expr"


@dataclass(frozen=True)
class Call(Node):
    """`[label:] a.b.op<T>{attr=v}(args)`, a cast `int(x)` or a plain built-in `sqrt(x)`.

    `attributes` is None when no braces were written and () for empty braces `op{}(x)`.
    """

    callee: tuple[str, ...]
    args: tuple["Expr", ...]
    generics: tuple[TypeArg, ...] = ()
    attributes: tuple[AttributeValue, ...] | None = None
    label: str | None = None


Expr = Union[
    Name, IntLiteral, RealLiteral, BoolLiteral, Constant, StringLiteral, Placeholder, ListExpr,
    Expand, Zip, Unary, Binary, Select, Fold, Subscript, Substitute, Member, Builtin, Call,
    Bounded,
]
ListItem = Union[Expr, Range]
IndexItem = Union[Expr, Slice]


# ----------------------------------------------------------------------------- types


@dataclass(frozen=True)
class PackSpec(Node):
    """`..`, `..(length)` or `..(length|bound)` (a dynamic length with its upper bound).

    `modifier` is 'static'/'dynamic' (Khronos) or None.
    """

    length: Expr | None = None
    modifier: str | None = None
    bound: Expr | None = None


@dataclass(frozen=True)
class Extent(Node):
    """One item of a shape: `[..]expr[|bound][..(n)]`, with an optional static/dynamic modifier."""

    value: Expr
    distinct: bool = False
    bound: Expr | None = None
    pack: PackSpec | None = None
    modifier: str | None = None


@dataclass(frozen=True)
class TypeSpec(Node):
    """`[optional] [dynamic|static] name[^(rank)][[extents]][..(n)]`.

    `shape` is None when no brackets were written and () for `real[]`.
    """

    name: str
    optional: bool = False
    modifier: str | None = None
    rank: str | None = None
    shape: tuple[Extent, ...] | None = None
    pack: PackSpec | None = None


# ----------------------------------------------------------------------------- declarations


@dataclass(frozen=True)
class DtypeDecl(Node):
    """`T: num [= real];` in @dtype."""

    name: str
    base: str
    default: str | None = None


@dataclass(frozen=True)
class IndexBound(Node):
    """`i < bound` after a lowering formula or a per-element constant initialiser."""

    name: str
    bound: Expr


@dataclass(frozen=True)
class ParamDecl(Node):
    """`name: type [= value [, i < n]...];` in @attrib, @input, @output, @constant, @variable."""

    name: str
    type: TypeSpec
    default: Expr | None = None
    bounds: tuple[IndexBound, ...] = ()


@dataclass(frozen=True)
class LName(Node):
    """A named target: `a`, `a..`, `a..(n)`, or typed `a: real[n]`."""

    name: str
    type: TypeSpec | None = None
    pack: PackSpec | None = None


@dataclass(frozen=True)
class LZip(Node):
    """`(a, b)..` inside a list target: unzipping."""

    items: tuple[LName, ...]
    pack: PackSpec | None = None


@dataclass(frozen=True)
class LList(Node):
    """`[a, b..]` or `[(a, b)..]` as a target."""

    items: tuple[Union[LName, LZip, "LPlaceholder"], ...]


@dataclass(frozen=True)
class LPlaceholder(Node):
    """`~` as a target: the result is discarded."""


LValue = Union[LName, LList, LZip, LPlaceholder]


@dataclass(frozen=True)
class UsingDecl(Node):
    """`target = value;` in @using."""

    target: LValue
    value: Expr


@dataclass(frozen=True)
class PrintedValue(Node):
    """A value printed with a failed assertion: `expr`, `label: expr` or `'text': expr`."""

    value: Expr
    label: str | None = None
    quoted_label: bool = False


@dataclass(frozen=True)
class Assertion(Node):
    """`cond [: message [, printed]...];` in @assert."""

    cond: Expr
    message: StringLiteral | None = None
    printed: tuple[PrintedValue, ...] = ()


@dataclass(frozen=True)
class LocalAssign(Node):
    """`z = e` (spec) or `with z = e:` (Khronos): a loop-local scalar of a lowering formula."""

    name: str
    value: Expr


@dataclass(frozen=True)
class IterCount(Node):
    """`..(n)`, `..(i -> n)` or `..(i ->)` after `do`/`unroll`."""

    index: str | None = None
    count: Expr | None = None


@dataclass(frozen=True)
class Lowering(Node):
    """`[unroll..(k -> n)] locals, target op value, i < n, ... [| cond];` in @lower.

    `op` is one of = += *= &= |= := <= >= (the Khronos `<?=`/`>?=` are normalised to `<=`/`>=`).
    """

    target: Expr
    op: str
    value: Expr
    bounds: tuple[IndexBound, ...] = ()
    condition: Expr | None = None
    locals: tuple[LocalAssign, ...] = ()
    unroll: tuple[IterCount, ...] = ()


@dataclass(frozen=True)
class Region(Node):
    """`[label:] { components; yield values; }`: an embedded block of a composition."""

    components: tuple["Component", ...]
    yields: tuple[Expr, ...]
    label: str | None = None


@dataclass(frozen=True)
class IfExpr(Node):
    """`if c then a elif d then b else e`: `branches` holds (condition, consequent) pairs."""

    branches: tuple[tuple["Rhs", "Rhs"], ...]
    otherwise: "Rhs"


@dataclass(frozen=True)
class Carried(Node):
    """A loop-carried variable in `with name[: type] = init`."""

    name: str
    init: Expr
    type: TypeSpec | None = None


@dataclass(frozen=True)
class Scan(Node):
    """A scan input in `for name : pack`."""

    name: str
    pack: Expr


@dataclass(frozen=True)
class LoopExpr(Node):
    """`[with ...] [for ...] [while c] do|unroll [..(i -> n)] body [while c]`."""

    body: "Rhs"
    carried: tuple[Carried, ...] = ()
    scans: tuple[Scan, ...] = ()
    pre_condition: "Rhs | None" = None
    post_condition: "Rhs | None" = None
    count: IterCount | None = None
    unroll: bool = False


Rhs = Union[Expr, Region, IfExpr, LoopExpr]


@dataclass(frozen=True)
class Component(Node):
    """`targets = value;` in @compose / @update / a region."""

    targets: tuple[LValue, ...]
    value: Rhs


@dataclass(frozen=True)
class Quantization(Node):
    """`tensor: op<T>{attr=v};` in @quantize."""

    tensor: tuple[str, ...]
    operator: tuple[str, ...]
    generics: tuple[TypeArg, ...] = ()
    attributes: tuple[AttributeValue, ...] | None = None


Entry = Union[DtypeDecl, ParamDecl, UsingDecl, Assertion, Lowering, Component, Quantization]

BLOCK_NAMES = (
    "dtype", "attrib", "input", "output", "constant", "variable", "using", "assert", "lower",
    "compose", "update", "quantize",
)


@dataclass(frozen=True)
class Block(Node):
    """`@kind { entries }`; `kind` is one of BLOCK_NAMES."""

    kind: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class OperatorDef(Node):
    """`[public] operator|graph name { blocks }`."""

    name: str
    blocks: tuple[Block, ...]
    is_graph: bool = False
    public: bool = False

    def block(self, kind: str) -> Block | None:
        """The first block of the given kind, if any."""
        for block in self.blocks:  # (a plain loop: asked several times per invocation)
            if block.kind == kind:
                return block
        return None

    # A definition read from the parse cache (language.modules) holds, until its blocks are
    # first asked for, a function giving them in their place (its __dict__ key _PENDING);
    # the first `blocks` read calls it and puts the blocks where a parsed definition has them
    # (the same fields, in the same order). Every other field is there from the start.

    @classmethod
    def pending(cls, name: str, read: Callable[[], tuple[Block, ...]], *, is_graph: bool,
                public: bool, span: Span) -> "OperatorDef":
        """The definition `name` whose blocks `read()` gives when they are first used."""
        definition = object.__new__(cls)
        object.__setattr__(definition, "__dict__", {"span": span, "name": name, _PENDING: read,
                                                    "is_graph": is_graph, "public": public})
        return definition

    def __getattr__(self, name: str) -> Any:
        read = self.__dict__.get(_PENDING) if name == "blocks" else None
        if read is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}",
                                 name=name, obj=self)
        blocks = read()
        object.__setattr__(self, "__dict__", {
            ("blocks" if key == _PENDING else key): (blocks if key == _PENDING else value)
            for key, value in self.__dict__.items()})  # one swap: no reader sees half of it
        return blocks

    def __getstate__(self) -> dict[str, Any]:
        if _PENDING in self.__dict__:
            self.blocks  # noqa: B018 - read them: a pickle or copy holds the blocks
        return self.__dict__


_PENDING = "_pending_blocks"


@dataclass(frozen=True)
class Import(Node):
    """One imported module name: `import a.b;` gives ('a', 'b')."""

    module: tuple[str, ...]


@dataclass(frozen=True)
class Module(Node):
    """A parsed file: its imports and its operator / graph definitions, in source order."""

    imports: tuple[Import, ...]
    definitions: tuple[OperatorDef, ...]
