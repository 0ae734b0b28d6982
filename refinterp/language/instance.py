"""Operator instantiation (spec §2.5–2.9, §2.13): bind every symbol of an invocation, check the
assertions, and compute output, constant and variable types and shapes.

The pipeline follows §2.6.1 "Evaluation and binding during an actual invocation":
  1. generic types from explicit arguments; attribute values (given, constant defaults, null for
     optional ones; a single value for a packed attribute waits for its length);
  2. inputs in the binding order (refinterp.language.binding): types, rank captures, extents by affine
     deduction or checked, pack lengths, shared and per-item extents of tensor packs;
  3. deferred attribute defaults; 4. lengths of packed attributes checked or expanded;
  then @using and @assert interleaved (§2.9), @output, @constant and @variable.
Every failure is an InvocationDiagnostic located in the definition, naming what conflicts.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass, field
from typing import Any

from refinterp.numeric import rules
from refinterp.language.binding import affine_form, definition_order, free_names, solve_affine
from refinterp.core.diagnostics import Diagnostic, InvocationDiagnostic
from refinterp.language.expr import Environment, Evaluator, evaluate
from refinterp.core.source import Span
from refinterp.syntax import ast
from refinterp.language.types import CONCRETE, Type, check_expr, dtype_scope, type_from_spec, type_of_value
from refinterp.language.values import NULL, TensorValue, Value, format_inserted, format_literal


@dataclass(frozen=True)
class TensorInfo:
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
        shape = None if self.shape is None else list(self.shape)
        data: dict[str, Any] = {"type": self.dtype, "shape": shape}
        if any(b is not None for b in self.bounds):
            data["bounds"] = list(self.bounds)
        return data


TensorArg = TensorInfo  # an actual input of an invocation


def describe_type(info: "TensorInfo | tuple") -> str:
    """THE tensor-type formatter: `real[2, 3]`, a dynamic extent as `~`, a shape derived from
    the composition as `real[?]`, a pack as `[real[2], real[3]]`."""
    if isinstance(info, tuple):
        return "[" + ", ".join(describe_type(i) for i in info) + "]"
    shape = "?" if info.shape is None else ", ".join("~" if e is None else str(e)
                                                     for e in info.shape)
    return f"{info.dtype}[{shape}]"


@dataclass
class Invocation:
    """What an operator is invoked with: attribute values, input tensors, explicit generics."""

    attributes: dict[str, Value] = field(default_factory=dict)
    inputs: dict[str, TensorArg | tuple[TensorArg, ...]] = field(default_factory=dict)
    generics: tuple[str, ...] = ()
    profile: rules.Profile = rules.SPEC


@dataclass
class OperatorInstance:
    """A bound operator: its symbols, generic types, and output/constant/variable tensors."""

    definition: ast.OperatorDef
    dtypes: dict[str, str]
    symbols: dict[str, Value]
    outputs: dict[str, TensorInfo | tuple[TensorInfo, ...]]
    constants: dict[str, tuple[TensorInfo, Value]]
    variables: dict[str, TensorInfo | tuple[TensorInfo, ...]]
    types: dict[str, Type] = field(default_factory=dict)  # static types of the symbols
    dtype_bounds: dict[str, str] = field(default_factory=dict)
    # inputs not given that take their declared default (§2.6): type/shape and uniform value
    defaults: dict[str, tuple[TensorInfo, Value]] = field(default_factory=dict)

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


def instantiate(definition: ast.OperatorDef, invocation: Invocation) -> OperatorInstance:
    """Bind `invocation` to `definition` (§2.6.1) and compute everything that follows."""
    return Instantiation(definition, invocation).run()


class Instantiation:
    """The state of one instantiation: bound symbols with the place that bound them."""

    def __init__(self, definition: ast.OperatorDef, invocation: Invocation) -> None:
        self.definition = definition
        self.invocation = invocation
        self.dtype_bounds = dtype_scope(entries(definition, "dtype"))
        self.dtypes: dict[str, str] = {}
        self.values: dict[str, Value] = {}
        self.types: dict[str, Type] = {}
        self.sources: dict[str, str] = {}
        self.subject: tuple[str, str] | None = None  # the argument being bound, for errors

    # ------------------------------------------------------------------ helpers

    def fail(self, message: str, node: ast.Node | None = None,
             notes: list[str] | None = None, code: str = "",
             subject: tuple[str, str] | None = None) -> InvocationDiagnostic:
        """An invalid-invocation diagnostic at `node` (default: the definition). Without an
        explicit code, one follows from the argument being bound: E0303 for an attribute,
        E0306 for an input, E0300 otherwise."""
        span = node.span if node is not None else self.definition.span
        subject = subject or self.subject
        if not code:
            code = {"attribute": "E0303", "input": "E0306"}.get(subject[0] if subject else "",
                                                                "E0300")
        return InvocationDiagnostic(message, span, notes or [], code=code, subject=subject)

    def env(self) -> Environment:
        return Environment(dict(self.values), dict(self.types), dict(self.dtype_bounds),
                           dict(self.dtypes), self.invocation.profile)

    def eval(self, expr: ast.Expr) -> Value:
        return evaluate(expr, self.env())

    def known(self, expr: ast.Expr | None) -> bool:
        return expr is None or free_names(expr) <= set(self.values)

    def bind(self, name: str, value: Value, source: str, node: ast.Node,
             kind: Type | None = None) -> None:
        """Bind a symbol, or check it against its earlier binding (§2.6.1: a symbol deduced to
        two different values makes the invocation invalid)."""
        if name in self.values and self.values[name] is not NULL:
            if self.values[name] != value:
                raise self.fail(
                    f"'{name}' is {format_literal(self.values[name])} from "
                    f"{self.sources[name]} but {format_literal(value)} from {source}", node)
            return
        self.values[name] = value
        self.types[name] = kind or type_of_value(value)
        self.sources[name] = source

    def deduce(self, expr: ast.Expr, actual: int, what: str, source: str, node: ast.Node,
               check: bool = True) -> None:
        """§2.6: an affine `a * x + b` of an unbound `x` declares x, solved from `actual`;
        otherwise (with `check`) the expression is evaluated and must equal `actual`."""
        form = affine_form(expr)
        if form is not None and form.symbol not in self.values:
            solved = solve_affine(form, actual)
            if solved is None:
                raise self.fail(f"{what} is {actual}, which does not fit "
                                f"{span_text(expr.span)}", node)
            self.bind(form.symbol, solved, source, node, Type("int"))
            return
        if check:
            expected = self.eval(expr)
            if expected != actual:
                raise self.fail(_mismatch(what, actual, expected, span_text(expr.span)), node)

    def bind_dtype(self, name: str, concrete: str, source: str, node: ast.Node) -> None:
        bound = self.dtype_bounds[name]
        allowed = {"type": CONCRETE, "arith": ("int", "real", "bool"), "num": ("int", "real")}
        if concrete not in allowed[bound]:
            raise self.fail(f"generic type {name}: {bound} cannot be {concrete} ({source})", node,
                            code="E0308")
        previous = self.dtypes.get(name)
        if previous is not None and previous != concrete:
            raise self.fail(f"generic type {name} is {previous} from {self.sources['<' + name]} "
                            f"but {concrete} from {source}", node, code="E0308")
        self.dtypes[name] = concrete
        self.sources["<" + name] = source

    def check_base(self, declared: str, actual: str, source: str, node: ast.Node) -> None:
        if declared in self.dtype_bounds:
            self.bind_dtype(declared, actual, source, node)
        elif declared != actual:
            raise self.fail(f"{source} must be {declared}; got {actual}", node)

    # ------------------------------------------------------------------ pipeline

    def run(self) -> OperatorInstance:
        attributes = entries(self.definition, "attrib")
        inputs = entries(self.definition, "input")
        unknown = set(self.invocation.inputs) - {i.name for i in inputs}
        if unknown:
            name = sorted(unknown)[0]
            raise self.fail(f"'{self.definition.name}' has no input '{name}'",
                            notes=_did_you_mean(name, [i.name for i in inputs], "inputs"),
                            code="E0304", subject=("input", name))
        order = definition_order(self.definition)
        self.bind_explicit_generics()
        deferred = self.bind_attributes(attributes)
        defaulted = [d for d in order if d.name not in self.invocation.inputs and
                     d.default is not None and not d.type.optional]
        for decl in order:
            if decl not in defaulted:
                self.subject = ("input", decl.name)
                self.bind_input(decl)
        for decl in deferred:
            self.subject = ("attribute", decl.name)
            self.bind_deferred(decl)
        for decl in defaulted:
            self.subject = ("input", decl.name)
            self.default_input(decl)
        for decl in attributes:
            self.subject = ("attribute", decl.name)
            self.finish_packed_attribute(decl)
        self.subject = None
        for decl in self.dtype_bounds:
            if decl not in self.dtypes:
                self.default_dtype(decl)
        self.using_and_asserts()
        return OperatorInstance(
            self.definition, dict(self.dtypes), dict(self.values),
            {d.name: self.tensor_of(d) for d in entries(self.definition, "output")},
            {d.name: self.constant_of(d) for d in entries(self.definition, "constant")},
            {d.name: self.tensor_of(d) for d in entries(self.definition, "variable")},
            dict(self.types), dict(self.dtype_bounds),
            {d.name: (self.tensor_of(d), self.eval(d.default)) for d in defaulted})

    def bind_explicit_generics(self) -> None:
        names = list(self.dtype_bounds)
        given = self.invocation.generics
        if len(given) > len(names):
            raise self.fail(f"{len(given)} type arguments for {len(names)} generic types",
                            code="E0308")
        for name, concrete in zip(names, given):
            self.bind_dtype(name, concrete, "the explicit type argument", self.definition)

    def default_dtype(self, name: str) -> None:
        decl = next(d for d in entries(self.definition, "dtype") if d.name == name)
        if decl.default is None:
            raise self.fail(f"generic type '{name}' cannot be deduced and has no default; give "
                            f"it explicitly, as in op<real>(...)", decl, code="E0308")
        self.bind_dtype(name, decl.default, "its default", decl)

    # ------------------------------------------------------------------ attributes (§2.5)

    def declared_type(self, decl: ast.ParamDecl) -> Type:
        return type_from_spec(decl.type, self.dtype_bounds)

    def bind_attributes(self, attributes: tuple[ast.ParamDecl, ...]) -> list[ast.ParamDecl]:
        """Step 1; returns the attributes whose (deferred) defaults must wait for the inputs."""
        given = dict(self.invocation.attributes)
        for name in given:
            if name not in {a.name for a in attributes}:
                raise self.fail(f"'{self.definition.name}' has no attribute '{name}'",
                                notes=_did_you_mean(name, [a.name for a in attributes],
                                                    "attributes"),
                                code="E0301", subject=("attribute", name))
        deferred = []
        for decl in attributes:
            self.subject = ("attribute", decl.name)
            declared = self.declared_type(decl)
            source = f"attribute '{decl.name}'"
            if decl.name in given:
                value = given[decl.name]
                self.check_attribute_value(decl, declared, value)
            elif decl.default is not None and self.known(decl.default) and \
                    not free_names(decl.default):
                value = self.eval(decl.default)
                source += " (default)"
            elif declared.optional and decl.default is None:
                value = NULL
            elif decl.default is not None:
                deferred.append(decl)
                continue
            else:
                raise self.fail(f"attribute '{decl.name}' must be given (it has no default)",
                                decl, code="E0302")
            self.values[decl.name] = value
            self.types[decl.name] = declared
            self.sources[decl.name] = source
            self.bind_attribute_length(decl, value)
        self.subject = None
        return deferred

    def check_attribute_value(self, decl: ast.ParamDecl, declared: Type, value: Value) -> None:
        actual = type_of_value(value)
        items = value if isinstance(value, tuple) else (value,)
        if isinstance(value, tuple) and not declared.packed:
            raise self.fail(f"attribute '{decl.name}' takes a single {declared.base}; got a pack",
                            decl)
        if value is NULL:
            return
        if items and actual.base != "any":
            self.check_base(declared.base, actual.base, f"attribute '{decl.name}'", decl)

    def bind_attribute_length(self, decl: ast.ParamDecl, value: Value) -> None:
        """A pack value binds its declared length symbol (checked later, in step 4)."""
        pack = decl.type.pack
        if pack is None or pack.length is None or not isinstance(value, tuple):
            return
        self.deduce(pack.length, len(value), f"the length of attribute '{decl.name}'",
                    f"the length of attribute '{decl.name}'", decl, check=False)

    def bind_deferred(self, decl: ast.ParamDecl) -> None:
        """Step 3: a non-constant default, now that the input shapes are bound."""
        value = self.eval(decl.default)
        declared = self.declared_type(decl)
        if value is NULL and not declared.optional:
            raise self.fail(f"attribute '{decl.name}' must be given: its default "
                            f"{span_text(decl.default.span)} is null here", decl)
        self.values[decl.name] = value
        self.types[decl.name] = declared
        self.sources[decl.name] = f"attribute '{decl.name}' (default)"
        self.bind_attribute_length(decl, value)

    def finish_packed_attribute(self, decl: ast.ParamDecl) -> None:
        """Step 4: check a packed attribute's length, or expand a single value to it."""
        pack = decl.type.pack
        value = self.values.get(decl.name)
        if pack is None or value is NULL:
            return
        length = None
        if pack.length is not None:
            if not self.known(pack.length):
                if not isinstance(value, tuple):
                    raise self.fail(f"attribute '{decl.name}' was given a single value but the "
                                    f"length {span_text(pack.length.span)} of the pack is not "
                                    f"known", decl)
                return
            length = self.eval(pack.length)
        if isinstance(value, tuple):
            if isinstance(length, int) and len(value) != length:
                raise self.fail(f"attribute '{decl.name}' must have {length} items "
                                f"({span_text(pack.length.span)}); got {len(value)}", decl)
            return
        if length is None or length is NULL:
            raise self.fail(f"attribute '{decl.name}' was given a single value but its pack "
                            f"length is unknown", decl)
        self.values[decl.name] = (value,) * int(length)

    # ------------------------------------------------------------------ inputs (§2.6)

    def bind_input(self, decl: ast.ParamDecl) -> None:
        declared = self.declared_type(decl)
        actual = self.invocation.inputs.get(decl.name, NULL)
        source = f"input '{decl.name}'"
        if actual is NULL:
            if not declared.optional:
                raise self.fail(f"{source} must be given", decl, code="E0305")
            for name, packed in self.input_symbols(decl).items():
                if name not in self.values:
                    self.values[name] = NULL
                    self.types[name] = Type("int", packed=packed, optional=True)
                    self.sources[name] = f"{source} (absent)"
            self.values[decl.name] = NULL
            self.types[decl.name] = declared
            return
        if declared.packed:
            if not isinstance(actual, tuple):
                raise self.fail(f"{source} is a pack of tensors; got a single tensor", decl)
            self.bind_pack_length(decl, len(actual))
            items = actual
        else:
            if isinstance(actual, tuple):
                raise self.fail(f"{source} is a single tensor; got a pack", decl)
            items = (actual,)
        for index, tensor in enumerate(items):
            where = source if not declared.packed else f"{source} item {index}"
            self.check_base(declared.base, tensor.dtype, where, decl)
            if decl.type.rank is not None:
                self.bind(decl.type.rank, len(tensor.shape), f"the rank of {where}", decl)
            if decl.type.shape is not None:
                self.bind_shape(decl, tensor.shape, where, index if declared.packed else None,
                                len(items))
        self.values[decl.name] = (tuple(TensorValue(t.dtype, t.shape) for t in items)
                                  if declared.packed else TensorValue(items[0].dtype,
                                                                      items[0].shape))
        self.types[decl.name] = declared

    def default_input(self, decl: ast.ParamDecl) -> None:
        """§2.6: an input with a default that is not given is the default value (rank-0, or
        uniform over its declared shape, which the other inputs must determine)."""
        if not free_names(decl.type) <= set(self.values):
            missing = ", ".join(sorted(free_names(decl.type) - set(self.values)))
            raise self.fail(f"input '{decl.name}' is not given and its shape cannot be known "
                            f"({missing} undetermined); give it explicitly", decl)
        info = self.tensor_of(decl)
        if isinstance(info, tuple):
            values = tuple(TensorValue(i.dtype, tuple(i.shape or ())) for i in info)
            self.values[decl.name] = values
        else:
            self.values[decl.name] = TensorValue(info.dtype, tuple(info.shape or ()))
        self.types[decl.name] = self.declared_type(decl)
        self.sources[decl.name] = f"input '{decl.name}' (default)"

    def input_symbols(self, decl: ast.ParamDecl) -> dict[str, bool]:
        """The symbols an input's shape declares, each with whether it is a pack."""
        names = {decl.type.rank: False} if decl.type.rank else {}
        for extent in decl.type.shape or ():
            value_form = affine_form(extent.value)
            if value_form is not None:
                names[value_form.symbol] = extent.pack is not None or extent.distinct
            length = extent.pack.length if extent.pack else None
            if length is not None and affine_form(length) is not None:
                names[affine_form(length).symbol] = False
        return names

    def bind_pack_length(self, decl: ast.ParamDecl, count: int) -> None:
        if decl.type.pack.length is not None:
            self.deduce(decl.type.pack.length, count, f"the length of input '{decl.name}'",
                        f"the length of input '{decl.name}'", decl)

    def bind_shape(self, decl: ast.ParamDecl, shape: tuple[int, ...], where: str,
                   item: int | None, items: int) -> None:
        """Match an actual shape against the declared extents (§2.6)."""
        extents = decl.type.shape or ()
        counts: list[int | None] = []
        for extent in extents:
            counts.append(self.extent_count(extent))
        flexible = [i for i, c in enumerate(counts) if c is None]
        fixed = sum(c for c in counts if c is not None)
        if flexible:
            rest = len(shape) - fixed
            if rest < 0 or len(flexible) > 1:
                raise self.fail(f"{where} has rank {len(shape)}; its shape "
                                f"{span_text(decl.type.span)} needs at least {fixed}",
                                decl, self.bound_sources(decl.type))
            counts[flexible[0]] = rest
        elif fixed != len(shape):
            raise self.fail(f"{where} has rank {len(shape)}; its shape "
                            f"{span_text(decl.type.span)} has rank {fixed}", decl,
                            self.bound_sources(decl.type))
        position = 0
        for extent, count in zip(extents, counts):
            dims = shape[position:position + count]
            self.bind_extent(extent, dims, where, position, item, items)
            position += count

    def bound_sources(self, node: ast.Node) -> list[str]:
        """Notes saying where the symbols `node` uses got their values, e.g.
        `d = 1 (from the length of attribute 'padding')`."""
        return [f"{name} = {format_literal(self.values[name])} (from {self.sources[name]})"
                for name in sorted(free_names(node)) if name in self.sources]

    def extent_count(self, extent: ast.Extent) -> int | None:
        """How many dimensions an extent covers, None if that is left to the actual rank."""
        if extent.pack is None:
            if isinstance(extent.value, ast.Placeholder) or not self.known(extent.value):
                return 1
            return 0 if self.eval(extent.value) is NULL else 1
        length = extent.pack.length
        if length is None:
            bound = self.values.get(extent.value.name) if isinstance(extent.value, ast.Name) \
                else None
            return len(bound) if isinstance(bound, tuple) else None
        if not self.known(length):
            return None
        value = self.eval(length)
        if value is NULL:
            return 0
        return int(value)

    def bind_extent(self, extent: ast.Extent, dims: tuple[int, ...], where: str,
                    position: int, item: int | None, items: int) -> None:
        source = f"{where} (dimension {position})" if len(dims) == 1 or extent.pack is None \
            else f"{where} (dimensions {position}..{position + len(dims) - 1})"
        if extent.bound is not None and self.known(extent.bound):
            bound = self.eval(extent.bound)
            for dim in dims:
                if bound is not NULL and dim > bound:
                    raise self.fail(f"{source} is {dim}, above its bound {bound}", extent)
        if extent.pack is not None and extent.pack.length is not None:
            # a known length already decided how many dimensions this item covers
            self.deduce(extent.pack.length, len(dims), f"the rank of {source}",
                        f"the rank of {source}", extent, check=False)
        value = extent.value
        if isinstance(value, ast.Placeholder) or not dims and extent.pack is None:
            return
        actual: Value = tuple(dims) if extent.pack is not None else dims[0]
        if extent.distinct:
            self.bind_distinct(extent, actual, source, item, items)
            return
        if isinstance(value, ast.Name):  # bound here, or checked naming both sources
            kind = Type("int", packed=extent.pack is not None)
            self.bind(value.name, actual, source, extent, kind)
        elif extent.pack is None:
            self.deduce(value, actual, source, source, extent)  # type: ignore[arg-type]
        else:
            # a packed item given by an expression: a pack, or one extent repeated (`1 ..(c)`)
            expected = self.eval(value)
            if not isinstance(expected, tuple) and expected is not NULL:
                expected = (expected,) * len(dims)
            if expected != actual:
                raise self.fail(_mismatch(source, actual, expected, span_text(value.span)),
                                extent)

    def bind_distinct(self, extent: ast.Extent, actual: Value, source: str, item: int | None,
                      items: int) -> None:
        """`..t` in a tensor pack: t is a pack with one extent per item (§2.6)."""
        if not isinstance(extent.value, ast.Name) or item is None:
            raise self.fail("a per-item extent '..t' must be a name in a tensor pack", extent)
        name = extent.value.name
        current = list(self.values.get(name) or (NULL,) * items)
        current[item] = actual
        self.values[name] = tuple(current)
        self.types[name] = Type("int", packed=True)
        self.sources.setdefault(name, source)

    # ------------------------------------------------------------------ @using / @assert (§2.9)

    def using_and_asserts(self) -> None:
        pending = list(entries(self.definition, "assert"))
        for using in entries(self.definition, "using"):
            pending = self.check_ready(pending)
            self.bind_using(using)
        for assertion in pending:
            self.check_assertion(assertion)

    def check_ready(self, pending: list[ast.Assertion]) -> list[ast.Assertion]:
        remaining = []
        for assertion in pending:
            if self.assertion_ready(assertion):
                self.check_assertion(assertion)
            else:
                remaining.append(assertion)
        return remaining

    def assertion_ready(self, assertion: ast.Assertion) -> bool:
        names = free_names(assertion.cond)
        for printed in assertion.printed:
            names |= free_names(printed.value)
        if assertion.message is not None:
            names |= free_names(assertion.message)
        return names <= set(self.values)

    def check_assertion(self, assertion: ast.Assertion) -> None:
        """§2.8: a null condition is skipped; a packed one must hold for every item."""
        value = self.eval(assertion.cond)
        if value is NULL:
            return
        holds = all(value) if isinstance(value, tuple) else bool(value)
        if holds:
            return
        message = "assertion failed: " + span_text(assertion.cond.span)
        if assertion.message is not None:
            text = self.eval(assertion.message)
            message = text if text is not NULL else message
        notes = []
        for printed in assertion.printed:
            label = printed.label if printed.label is not None else span_text(printed.value.span)
            notes.append(f"{label} = {format_inserted(self.eval(printed.value))}"
                         if isinstance(self.eval(printed.value), str) else
                         f"{label} = {format_literal(self.eval(printed.value))}")
        raise InvocationDiagnostic(message, assertion.cond.span, notes, code="E0307")

    def bind_using(self, using: ast.UsingDecl) -> None:
        env = self.env()
        types = check_expr(using.value, env.scope())
        value = Evaluator(env, types).eval(using.value)
        self.assign(using.target, value, types[id(using.value)])

    def assign(self, target: ast.LValue, value: Value, static: Type) -> None:
        """Bind a @using target; its type is the static type of the expression (so a value
        that happens to be non-null stays optional where the expression is)."""
        if isinstance(target, ast.LName):
            if target.pack is not None and target.pack.length is not None and \
                    isinstance(value, tuple):
                self.check_length_hint(target, len(value))
            self.values[target.name] = value
            self.types[target.name] = static
            self.sources[target.name] = f"@using '{target.name}'"
            return
        if isinstance(target, ast.LList):
            self.destructure(target, value, static)
            return
        raise self.fail("unsupported @using target", target)

    def check_length_hint(self, target: ast.LName, length: int) -> None:
        """§2.9 `c..(n) = ...`: a hint naming a new symbol binds it; otherwise it must match."""
        self.deduce(target.pack.length, length, f"the length of '{target.name}'",
                    f"the length of '{target.name}'", target)

    def destructure(self, target: ast.LList, value: Value, static: Type) -> None:
        """`[a, b..] = c` splits a pack; `[(e, f)..] = c` unzips it (§2.9)."""
        if value is NULL or not isinstance(value, tuple):
            raise self.fail("a list target needs a pack value", target)
        singles = [t for t in target.items if isinstance(t, ast.LName) and t.pack is None]
        packs = [t for t in target.items if not (isinstance(t, ast.LName) and t.pack is None)]
        if len(packs) > 1:
            raise self.fail("a list target may hold one pack or zip", target)
        rest = len(value) - len(singles)
        if rest < 0 or (not packs and rest):
            raise self.fail(f"the pack has {len(value)} items for {len(target.items)} targets",
                            target)
        position = 0
        for item in target.items:
            if isinstance(item, ast.LName) and item.pack is None:
                self.assign(item, value[position], static.item())
                position += 1
            elif isinstance(item, ast.LZip):
                width = len(item.items)
                if rest % width:
                    raise self.fail(f"{rest} items cannot be unzipped into {width} packs", item)
                chunk = value[position:position + rest]
                for offset, name in enumerate(item.items):
                    self.assign(name, tuple(chunk[offset::width]), static)
                position += rest
            elif isinstance(item, ast.LName):
                self.assign(item, tuple(value[position:position + rest]), static)
                position += rest

    # ------------------------------------------------------------------ outputs (§2.6, §2.7)

    def tensor_of(self, decl: ast.ParamDecl) -> TensorInfo | tuple[TensorInfo, ...]:
        declared = self.declared_type(decl)
        dtype = self.dtypes.get(declared.base, declared.base)
        if declared.packed:
            count = self.eval(decl.type.pack.length) if decl.type.pack.length else None
            if not isinstance(count, int):
                raise self.fail(f"the pack length of '{decl.name}' is unknown", decl)
            return tuple(self.shape_of(decl, dtype, index) for index in range(count))
        return self.shape_of(decl, dtype, None)

    def shape_of(self, decl: ast.ParamDecl, dtype: str, item: int | None) -> TensorInfo:
        if decl.type.shape is None:
            return TensorInfo(dtype, None)
        shape: list[int | None] = []
        bounds: list[int | None] = []
        for extent in decl.type.shape or ():
            bound = self.eval(extent.bound) if extent.bound is not None else None
            agreement = (extent.bound is not None and isinstance(extent.value, ast.Name)
                         and extent.value.name not in self.values)
            if isinstance(extent.value, ast.Placeholder) or agreement:
                # `~|k`, or `s|k` naming a dynamic extent shared by several outputs (§2.6)
                values: list[Value] = [None]
            else:
                value = self.eval(extent.value)
                if extent.distinct and isinstance(value, tuple) and item is not None:
                    value = value[item]
                if value is NULL:
                    continue  # §2.6: a null component is omitted
                if extent.pack is not None:
                    values = list(value) if isinstance(value, tuple) else \
                        [value] * int(self.eval(extent.pack.length))
                else:
                    values = [value]
            for v in values:
                if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
                    raise self.fail(f"an extent of '{decl.name}' is {format_literal(v)}, not an "
                                    f"int", extent)
                if isinstance(v, int) and v < 0:
                    raise self.fail(f"an extent of '{decl.name}' is negative ({v})", extent)
                shape.append(v)
                bounds.append(bound if bound is not NULL else None)
        return TensorInfo(dtype, tuple(shape), tuple(bounds))

    def constant_of(self, decl: ast.ParamDecl) -> tuple[TensorInfo, Value]:
        """§2.7: a uniform value, a flat row-major list, or a per-element expression."""
        info = self.tensor_of(decl)
        if isinstance(info, tuple):
            values = self.eval(decl.default)
            if not isinstance(values, tuple) or len(values) != len(info):
                raise self.fail(f"the pack constant '{decl.name}' needs a list of {len(info)} "
                                f"values", decl)
            return info, values  # type: ignore[return-value]
        volume = 1
        for extent in info.shape or ():
            volume *= extent or 0
        if decl.bounds:
            return info, self.per_element(decl, info)
        value = self.eval(decl.default)
        if isinstance(value, tuple) and len(value) != volume:
            raise self.fail(f"the constant '{decl.name}' has {volume} elements but its list has "
                            f"{len(value)}", decl)
        return info, value

    def per_element(self, decl: ast.ParamDecl, info: TensorInfo) -> Value:
        """§2.7: the initialiser evaluated for every index in row-major order. A bound that is a
        pack (`i < fs`) makes `i` a pack of indices running over all its dimensions."""
        names = [b.name for b in decl.bounds]
        ranges = []
        for bound in decl.bounds:
            limit = self.eval(bound.bound)
            limits = limit if isinstance(limit, tuple) else (limit,)
            if any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in limits):
                raise self.fail(f"the index bound {bound.name} < {format_literal(limit)} is not "
                                f"a non-negative int (or pack of them)", bound)
            product = itertools.product(*(range(n) for n in limits))
            ranges.append([p if isinstance(limit, tuple) else p[0] for p in product])
        result = []
        for index in itertools.product(*ranges):
            env = self.env()
            env.values.update(zip(names, index))
            env.types.update({n: Type("int", packed=isinstance(v, tuple))
                              for n, v in zip(names, index)})
            result.append(evaluate(decl.default, env))
        return tuple(result)


def _mismatch(what: str, actual: Value, expected: Value, text: str) -> str:
    """`input 'x' (dimension 0) is 3, expected 2`, naming the declared expression when it is not
    just the expected value (`..., expected 4 (2 * k)`)."""
    wanted = format_literal(expected)
    shown = f" ({text.strip()})" if any(c.isalpha() or c == "_" for c in text) else ""
    return f"{what} is {format_literal(actual)}, expected {wanted}{shown}"


def _did_you_mean(name: str, choices: list[str], kind: str) -> list[str]:
    """Notes for an unknown name: the close matches, then every valid name (or 'none')."""
    notes = []
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.6)
    if close:
        notes.append("did you mean " + " or ".join(f"'{c}'" for c in close) + "?")
    notes.append(f"{kind}: " + (", ".join(choices) or "none"))
    return notes


def fixed_input_types(definition: ast.OperatorDef, attributes: dict[str, Value],
                      profile: rules.Profile = rules.SPEC) -> dict[str, TensorInfo]:
    """The inputs whose declared shapes are fixed by literals and attributes (given, or
    constant defaults), e.g. a graph's `input: real[batch, 3, 224, 224]`: their types need not
    be given to check or run the operator (`shapes`; `eval --random NAME`)."""
    values = dict(attributes)
    for decl in entries(definition, "attrib"):
        if decl.name not in values and decl.default is not None:
            try:
                values[decl.name] = evaluate(decl.default, Environment(dict(values)))
            except Diagnostic:
                pass
    env = Environment(values, profile=profile)
    found = {}
    for decl in entries(definition, "input"):
        spec = decl.type
        if spec.shape is None or spec.pack is not None or spec.optional or \
                spec.name not in ("real", "int", "bool"):
            continue
        shape: list[Any] = []
        try:
            for extent in spec.shape:
                if extent.pack is not None or isinstance(extent.value, ast.Placeholder):
                    raise Diagnostic("not fixed")
                size = evaluate(extent.value, env)
                shape.extend(size if isinstance(size, tuple) else (size,))
        except Diagnostic:
            continue
        if all(isinstance(e, int) and not isinstance(e, bool) for e in shape):
            found[decl.name] = TensorInfo(spec.name, tuple(shape))
    return found
