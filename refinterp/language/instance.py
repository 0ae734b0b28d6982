"""Operator instantiation (spec §2.5–2.9, §2.13): bind every symbol of an invocation, check the
assertions, and compute output, constant and variable types and shapes.

The pipeline follows §2.6.1 "Evaluation and binding during an actual invocation":
  1. generic types from explicit arguments; attribute values (given, constant defaults, null for
     optional ones; a single value for a packed attribute waits for its length); under the
     `khronos` profile, the @using entries computed from attributes alone (`early_usings`);
  2. inputs in the binding order (refinterp.language.binding): types, rank captures, extents by
     affine deduction or checked, pack lengths, items present or absent by a bool length, shared and
     per-item extents of tensor packs; symbols only absent items declare are null;
  3. deferred attribute defaults; 4. lengths of packed attributes checked or expanded;
  then @using and @assert interleaved (§2.9), @output, @constant and @variable.
Every failure is an InvocationDiagnostic located in the definition, naming what conflicts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable
from typing import Any

from refinterp.core.cache import BoundedCache
from refinterp.core.diagnostics import Diagnostic, InvocationDiagnostic, did_you_mean
from refinterp.language.binding import (definition_order, early_usings, free_names,
                                        initially_known, using_targets)
from refinterp.language.expr import Environment, check_length, evaluate, evaluate_checked
from refinterp.language.inputs import InputBinding, LengthError, declared_dims
from refinterp.language.invocation import (Invocation, OperatorInstance, TensorType,
                                           describe_type, empty_pack_type, entries, span_text)
from refinterp.language.types import Type, check_expr, type_of_value
from refinterp.language.values import NULL, TensorValue, Value, format_inserted, format_literal
from refinterp.numeric import rules
from refinterp.numeric.symbolic import Extent, Undecided, is_int
from refinterp.numeric.representation import (INT64_MAX, INT64_MIN, MAX_RANK,
                                              check_pack_length, check_tensor_size)
from refinterp.syntax import ast
from refinterp.syntax.visitor import walk

__all__ = ["Invocation", "OperatorInstance", "TensorType", "describe_type",
           "instantiate", "instantiate_cached", "invocation_key", "fixed_input_types",
           "span_text", "entries"]

# Instances by (definition, invocation key): what a run of the same operator on the same
# shapes and attributes reuses — the instance with everything the engines derived from it
# (`OperatorInstance.derived`: the lowering plan, the vector plan). Definitions are held by
# identity (the entry keeps its definition alive, so an id is never reused while listed).
INSTANCE_CACHE_SIZE = 2048
_instances: BoundedCache[tuple[ast.OperatorDef, OperatorInstance]] = BoundedCache(
    INSTANCE_CACHE_SIZE)


def instantiate(definition: ast.OperatorDef, invocation: Invocation) -> OperatorInstance:
    """Bind `invocation` to `definition` (§2.6.1) and compute everything that follows."""
    return Instantiation(definition, invocation).run()


def instantiate_cached(definition: ast.OperatorDef, invocation: Invocation) -> OperatorInstance:
    """`instantiate`, reusing the instance of an earlier equal invocation of the same
    definition (instantiation is a pure function of the two; an instance is never changed
    after it is made, only `derived` is filled in). An invocation without a key, and a
    failing one, are instantiated every time."""
    key = invocation_key(invocation)
    if key is None:
        return instantiate(definition, invocation)
    entry = _instances.get((id(definition), key))
    if entry is not None and entry[0] is definition:
        return entry[1]
    instance = instantiate(definition, invocation)
    _instances.put((id(definition), key), (definition, instance))
    return instance


def invocation_key(invocation: Invocation) -> Hashable | None:
    """A key equal for two invocations exactly when they instantiate alike, or None when one
    of its values has no such key. Every value is tagged with its type (True, 1 and 1.0 differ)
    and a real by its bits (0.0 and -0.0 differ; a NaN equals itself)."""
    try:
        attributes = tuple(sorted((name, _value_key(value))
                                  for name, value in invocation.attributes.items()))
        inputs = tuple(sorted((name, _value_key(value))
                              for name, value in invocation.inputs.items()))
    except _NoKey:
        return None
    return (attributes, inputs, invocation.generics, invocation.profile,
            invocation.max_pack_length, invocation.max_tensor_size)


class _NoKey(Exception):
    """A value `invocation_key` cannot key."""


def _value_key(value: Any) -> Hashable:
    """Exact types only: a subclass may carry more than its base compares (an `EmptyPackType`
    is an empty tuple that knows its item type)."""
    kind = type(value)
    if kind is float:
        return ("float", value.hex() if not math.isnan(value) else "nan")
    if kind in (bool, int, str) or value is NULL:
        return (kind.__name__, value)
    if kind in (tuple, list):
        return (kind.__name__, tuple(_value_key(v) for v in value))
    if kind in (TensorType, TensorValue):
        shape = value.shape or ()
        if any(type(e) not in (int, Extent, type(None)) for e in shape):
            raise _NoKey("extent")  # a symbol of a check without values
        if any(type(e) is Extent for e in shape):  # a run's dynamic extent: its symbol counts
            return (kind.__name__, value, tuple(getattr(e, "symbol", None) for e in shape))
        return (kind.__name__, value)
    raise _NoKey(type(value).__name__)


class Instantiation(InputBinding):
    """One instantiation: the §2.6.1 pipeline over the bound state (`BindingState`) and the
    input steps (`InputBinding`)."""

    # ------------------------------------------------------------------ pipeline

    def run(self) -> OperatorInstance:
        """The pipeline; a failure gets a note naming any pack input of zero items whose item
        type is unknown (nothing was deduced from its items; docs/semantics.md "Empty
        packs")."""
        try:
            return self.bind_all()
        except Diagnostic as diag:
            diag.notes.extend(
                f"input '{name}' is a pack of zero tensors whose item type is unknown, so "
                f"nothing is deduced from its items (such as `[]`, or the scanned output of a "
                f"loop that ran no iteration whose items' type could not be derived; "
                f"docs/semantics.md \"Empty packs\")"
                for name in self.untyped_empty)
            raise

    def bind_all(self) -> OperatorInstance:
        # dynamic extents named by a symbol the invocation leaves unbound (`shape_of`)
        self.named_extents: dict[str, dict[int, str]] = {}
        attributes = entries(self.definition, "attrib")
        inputs = entries(self.definition, "input")
        unknown = set(self.invocation.inputs) - {i.name for i in inputs}
        if unknown:
            name = sorted(unknown)[0]
            raise self.fail(f"'{self.definition.name}' has no input '{name}'",
                            notes=_did_you_mean(name, [i.name for i in inputs], "inputs"),
                            code="E0304", subject=("input", name))
        order = definition_order(self.definition, self.invocation.profile)
        self.bind_explicit_generics()
        deferred = self.bind_attributes(attributes)
        usings = entries(self.definition, "using")
        early = early_usings(attributes, usings, self.invocation.profile)
        self.pending = list(entries(self.definition, "assert"))
        self.bind_usings(early, initially_known(attributes))
        defaulted = [d for d in order if d.name not in self.invocation.inputs and
                     d.default is not None and not d.type.optional]
        for decl in order:
            if decl not in defaulted:
                self.subject = ("input", decl.name)
                self.bind_input(decl)
        self.finish_absent()
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
        early_ids = {id(u) for u in early}  # by identity (trees compare structurally); `early`
        # holds the nodes while the set lives
        self.bind_usings(tuple(u for u in usings if id(u) not in early_ids))
        for assertion in self.pending:
            self.check_assertion(assertion)
        outputs = {d.name: self.tensor_of(d) for d in entries(self.definition, "output")}
        return OperatorInstance(
            self.definition, dict(self.dtypes), dict(self.values), outputs,
            {d.name: self.constant_of(d) for d in entries(self.definition, "constant")},
            {d.name: self.tensor_of(d) for d in entries(self.definition, "variable")},
            dict(self.types), dict(self.dtype_bounds),
            {d.name: (self.tensor_of(d), self.eval(d.default)) for d in defaulted},
            {name: dims for name, dims in self.named_extents.items() if name in outputs},
            deferred=tuple(self.deferred))

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
                    not free_names(decl.default) and not self.unbound_casts(decl.default):
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
        try:
            actual = type_of_value(value)
        except ValueError as error:  # a pack of mixed types, or no SkriptND value (API input)
            raise self.fail(f"attribute '{decl.name}': {error} (declared {declared})", decl,
                            code="E0303") from None
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

    def unbound_casts(self, expr: ast.Expr) -> list[str]:
        """The generic types `expr` casts to (`T(2)`) that are not bound yet: a default such as
        `k: T = T(2)` waits for T to be deduced from the inputs (§2.6.1 step 3)."""
        return [node.callee[0] for node in walk(expr)
                if isinstance(node, ast.Call) and len(node.callee) == 1
                and node.callee[0] in self.dtype_bounds and node.callee[0] not in self.dtypes]

    def bind_deferred(self, decl: ast.ParamDecl) -> None:
        """Step 3: a non-constant default, now that the input shapes are bound. A generic type
        it casts to that no input bound takes its own default first."""
        for name in self.unbound_casts(decl.default):
            if name not in self.dtypes:
                self.default_dtype(name)
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
        check_length(pack.length.span, length)
        self.values[decl.name] = (value,) * int(length)

    # ------------------------------------------------------------------ @using / @assert (§2.9)

    def bind_usings(self, usings: tuple[ast.UsingDecl, ...],
                    known: set[str] | None = None) -> None:
        """§2.9: before each @using entry, check every pending assertion (`self.pending`) whose
        names are all known, then bind the entry; the assertions still pending are checked after
        the last entry. `known` restricts the known names to the given ones and the entries'
        targets (the @using entries evaluated before the inputs, `binding.early_usings`: only
        the attributes known from the start, not packed ones still waiting for their length);
        by default every bound symbol is known."""
        for using in usings:
            self.pending = self.check_ready(self.pending,
                                            set(self.values) if known is None else known)
            self.bind_using(using)
            if known is not None:
                known = known | using_targets(using.target)

    def guarded(self, failure: InvocationDiagnostic) -> Diagnostic:
        """A shape expression of an input that has no meaning (a negative pack length) is
        reported as the first pending assertion that can be evaluated already and fails, if
        any: **(decision)** §2.9 checks assertions before the expressions they guard, and
        input shape expressions are such expressions (top_k's `axis` out of range makes its
        length `axis < 0 ? axis + rank : axis` negative). Packed attributes given a single
        value are not expanded yet, so assertions using them wait; an assertion that cannot
        be evaluated here is skipped."""
        attributes = entries(self.definition, "attrib")
        waiting = {a.name for a in attributes if a.type.pack is not None and
                   not isinstance(self.values.get(a.name), tuple)}
        for assertion in self.pending:
            if self.assertion_ready(assertion, set(self.values) - waiting):
                try:
                    self.check_assertion(assertion)
                except InvocationDiagnostic as failed:
                    return failed
                except Diagnostic:
                    continue
        return failure

    def check_ready(self, pending: list[ast.Assertion], known: set[str]) -> list[ast.Assertion]:
        remaining = []
        for assertion in pending:
            if self.assertion_ready(assertion, known):
                self.check_assertion(assertion)
            else:
                remaining.append(assertion)
        return remaining

    def assertion_ready(self, assertion: ast.Assertion, known: set[str]) -> bool:
        names = free_names(assertion.cond)
        for printed in assertion.printed:
            names |= free_names(printed.value)
        if assertion.message is not None:
            names |= free_names(assertion.message)
        return names <= known

    def check_assertion(self, assertion: ast.Assertion) -> None:
        """§2.8: a null condition is skipped; a packed one must hold for every item. Checked
        without values (symbolic extents), a condition the symbols' bounds do not decide is
        listed as a check left to run time (`deferred`)."""
        try:
            value = self.eval(assertion.cond)
            if value is NULL:
                return
            holds = all(value) if isinstance(value, tuple) else bool(value)
        except Undecided as why:
            self.deferred.append((span_text(assertion.cond.span), str(why), assertion.cond.span))
            return
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
        types = check_expr(using.value, env.scope())  # by id() of nodes `using` holds
        value = evaluate_checked(using.value, env, types)
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

    def tensor_of(self, decl: ast.ParamDecl) -> TensorType | tuple[TensorType, ...]:
        declared = self.declared_type(decl)
        dtype = self.dtypes.get(declared.base, declared.base)
        if declared.packed:
            count = self.eval(decl.type.pack.length) if decl.type.pack.length else None
            if not isinstance(count, int):
                raise self.fail(f"the pack length of '{decl.name}' is unknown", decl)
            check_pack_length(count, self.invocation.max_pack_length, self.what(decl),
                              decl.span)
            if count == 0:
                return self.empty_pack_of(decl, dtype)
            return tuple(self.shape_of(decl, dtype, index) for index in range(count))
        return self.shape_of(decl, dtype, None)

    def empty_pack_of(self, decl: ast.ParamDecl, dtype: str) -> tuple:
        """A declared pack of zero items: typed by its declared item shape where that is
        known without items (no per-item extent `..t`, every extent known; docs/semantics.md
        "Empty packs"), else the plain empty tuple. Never an error: a pack of no items has no
        shape to be wrong."""
        if decl.type.shape is None or any(e.distinct for e in decl.type.shape):
            return ()
        try:
            return empty_pack_type(self.shape_of(decl, dtype, 0))
        except Diagnostic:
            return ()

    def what(self, decl: ast.ParamDecl) -> str:
        """A declaration as limit diagnostics name it: `'y' of 'conv'`."""
        return f"'{decl.name}' of '{self.definition.name}'"

    def shape_of(self, decl: ast.ParamDecl, dtype: str, item: int | None) -> TensorType:
        """The type and shape of a declared tensor (of item `item` of a pack). An extent `~|k`,
        or `s|k` with `s` unbound, is dynamic (§2.6): None, with the bound `k`; the dimensions
        of a non-pack tensor that such an `s` names are kept in `named_extents` (a @lower
        formula may count them, lower.plan)."""
        if decl.type.shape is None:
            return TensorType(dtype, None)
        shape: list[int | None] = []
        bounds: list[int | None] = []
        names: dict[int, str] = {}
        for extent in decl.type.shape or ():
            length = extent.pack.length if extent.pack is not None else None
            count, condition = (None, False) if length is None else \
                self.pack_count(length, extent, f"an extent of '{decl.name}'")
            if condition and not count:
                continue  # §2.6: an item whose bool length is false is absent
            bound = self.eval(extent.bound) if extent.bound is not None else None
            agreement = (extent.bound is not None and isinstance(extent.value, ast.Name)
                         and extent.value.name not in self.values)
            if isinstance(extent.value, ast.Placeholder) or agreement:
                # `~|k`, or `s|k` naming a dynamic extent shared by several outputs (§2.6);
                # `~|k..(n)` repeats it
                values: list[Value] = [None] * (1 if count is None else
                                                self.repeated_rank(decl, extent, count))
                if agreement:
                    names[len(shape)] = extent.value.name
            else:
                value = self.eval(extent.value)
                if extent.distinct and isinstance(value, tuple) and item is not None:
                    value = value[item]
                if value is NULL:
                    continue  # §2.6: a null component is omitted
                if extent.pack is not None:
                    values = list(value) if isinstance(value, tuple) else \
                        [value] * self.repeated_rank(decl, extent, count)
                else:
                    values = [value]
            for v in values:
                if v is not None and not is_int(v):
                    raise self.fail(f"an extent of '{decl.name}' is {format_literal(v)}, not an "
                                    f"int", extent)
                if is_int(v) and v < 0:
                    raise self.fail(f"an extent of '{decl.name}' is negative ({v})", extent)
                shape.append(v)
                bounds.append(bound if bound is not NULL else None)
        if len(shape) > MAX_RANK:
            raise self.fail(f"'{decl.name}' would have rank {len(shape)}; refinterp's tensors "
                            f"have at most {MAX_RANK} dimensions", decl)
        if names and item is None:
            self.named_extents[decl.name] = names
        return TensorType(dtype, tuple(shape), tuple(bounds))

    def repeated_rank(self, decl: ast.ParamDecl, extent: ast.Extent, count: int | None) -> int:
        """How many dimensions a single extent covers: one, or `count` (`pack_count`) for one
        repeated by a packed item (`1 ..(n)`, `1 ..(!squeeze)`, `~|k..(n)`); checked before
        they are made."""
        if extent.pack is None:
            return 1
        if count is None:
            raise self.fail(f"the single extent {span_text(extent.value.span)} of '{decl.name}' "
                            f"is packed without a length", extent)
        if count > MAX_RANK:
            raise self.fail(f"'{decl.name}' would have rank {count} or more; refinterp's "
                            f"tensors have at most {MAX_RANK} dimensions", extent)
        return count

    def constant_of(self, decl: ast.ParamDecl) -> tuple[TensorType, Value]:
        """§2.7: a uniform value, a flat row-major list, or a per-element expression."""
        info = self.tensor_of(decl)
        if isinstance(info, tuple):
            values = self.eval(decl.default)
            if not isinstance(values, tuple) or len(values) != len(info):
                raise self.fail(f"the pack constant '{decl.name}' needs a list of {len(info)} "
                                f"values", decl)
            for item_info, value in zip(info, values):
                self.check_constant_value(decl, item_info.dtype, value)
            return info, values  # type: ignore[return-value]
        volume = 1
        for extent in info.shape or ():
            volume *= extent or 0
        if decl.bounds:
            values = self.per_element(decl, info)
            self.check_constant_value(decl, info.dtype, values)
            return info, values
        value = self.eval(decl.default)
        if isinstance(value, tuple) and len(value) != volume:
            raise self.fail(f"the constant '{decl.name}' has {volume} elements but its list has "
                            f"{len(value)}", decl)
        self.check_constant_value(decl, info.dtype, value)
        return info, value

    def check_constant_value(self, decl: ast.ParamDecl, dtype: str, value: Value) -> None:
        """§2.7: a constant's value (one value, or a flat list) holds values of its type, as a
        @lower formula's result must (an int is also a real; int(inf) and int(-inf) are the
        extreme values of the type: `scalar.constant_array`)."""
        for item in value if isinstance(value, tuple) else (value,):
            kind = rules.kind(item) if isinstance(item, (bool, int, float, rules.IntInfinity)) \
                else None
            fits = kind == "bool" if dtype == "bool" else kind == "int" if dtype == "int" \
                else kind in ("int", "real")
            if not fits:
                raise self.fail(f"the {dtype} constant '{decl.name}' gets "
                                f"{format_literal(item)}", decl.default)
            if dtype == "int" and isinstance(item, int) and not INT64_MIN <= item <= INT64_MAX:
                raise self.fail(f"the int constant '{decl.name}' gets {format_literal(item)}, "
                                f"which does not fit in int64", decl.default)

    def per_element(self, decl: ast.ParamDecl, info: TensorType) -> Value:
        """§2.7: the initialiser evaluated for every index in row-major order. A bound that is a
        pack (`i < fs`) makes `i` a pack of indices running over all its dimensions."""
        check_tensor_size(info.dtype, info.shape or (), self.invocation.max_tensor_size,
                          self.what(decl), decl.span)
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


def _did_you_mean(name: str, choices: list[str], kind: str) -> list[str]:
    """Notes for an unknown name: the close matches, then every valid name (or 'none')."""
    hint = did_you_mean(name, choices)
    return ([hint] if hint else []) + [f"{kind}: " + (", ".join(choices) or "none")]


def declared_environment(definition: ast.OperatorDef, attributes: dict[str, Value],
                         profile: rules.Profile = rules.SPEC) -> Environment:
    """What declared input shapes can be read with before any input is bound: the given
    attributes and the defaults that need nothing else (constant defaults)."""
    values = dict(attributes)
    for decl in entries(definition, "attrib"):
        if decl.name not in values and decl.default is not None:
            try:
                values[decl.name] = evaluate(decl.default, Environment(dict(values)))
            except Diagnostic:
                pass
    return Environment(values, profile=profile)


def shaped_inputs(definition: ast.OperatorDef) -> list[ast.ParamDecl]:
    """The inputs whose declared type is one tensor of a base type with brackets (not a pack,
    not optional): those a type can be made for from the declaration alone."""
    return [decl for decl in entries(definition, "input")
            if decl.type.shape is not None and decl.type.pack is None and
            not decl.type.optional and decl.type.name in ("real", "int", "bool")]


def fixed_input_types(definition: ast.OperatorDef, attributes: dict[str, Value],
                      profile: rules.Profile = rules.SPEC) -> dict[str, TensorType]:
    """The inputs whose declared shapes are fixed by literals and attributes (given, or
    constant defaults), e.g. a graph's `input: real[batch, 3, 224, 224]`: their types need not
    be given to check or run the operator (`shapes`; `eval --random NAME`)."""
    env = declared_environment(definition, attributes, profile)
    found = {}
    for decl in shaped_inputs(definition):
        spec = decl.type
        shape: list[Any] = []
        try:
            for extent in spec.shape:
                shape.extend(declared_dims(extent, env))
        except (Diagnostic, LengthError):
            continue
        if all(isinstance(e, int) and not isinstance(e, bool) for e in shape):
            found[decl.name] = TensorType(spec.name, tuple(shape))
    return found
