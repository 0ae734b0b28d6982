"""Binding an invocation's input tensors (spec §2.6): dtypes and generic types, rank captures,
extents bound by affine deduction or checked, pack lengths, items present or absent by a bool
length (`c..(flag)`), shared and per-item extents of tensor packs, bounds of dynamic extents,
absent optional inputs, inputs taking their defaults.
`BindingState` holds what an instantiation has bound so far; `InputBinding` adds the input
steps, and `refinterp.language.instance.Instantiation` the rest of the pipeline."""

from __future__ import annotations

from refinterp.core.diagnostics import Diagnostic, InvocationDiagnostic
from refinterp.language.binding import affine_form, free_names, solve_affine
from refinterp.language.expr import Environment, evaluate, evaluate_checked
from refinterp.language.invocation import Invocation, entries, item_type, span_text
from refinterp.language.types import (CONCRETE, Type, check_expr, dtype_scope, type_from_spec,
                                      type_of_value)
from refinterp.language.values import NULL, TensorValue, Value, format_literal
from refinterp.numeric.representation import MAX_RANK, format_extent
from refinterp.numeric.symbolic import agree
from refinterp.syntax import ast


class LengthError(Exception):
    """A pack length in a declared shape that gives no count (`length_count`,
    `declared_dims`): `.message` (completed by the caller with the item it belongs to),
    `.notes`, and whether the definition is at fault (a length of another type) rather than
    the invocation (a negative count)."""

    def __init__(self, message: str, notes: list[str] | None = None,
                 definition: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.notes = notes or []
        self.definition = definition


def length_count(length: ast.Expr, env: Environment) -> tuple[int, bool]:
    """How many dimensions a packed shape item `e..(length)` covers, and whether `length` is a
    condition (§2.6), by the length's static type: an int is a count (null: none); a bool makes
    the item present (one dimension) or absent ("In case the length specifier is a bool
    expression of known identifiers, such as attributes, the presence or absence of the item s
    is conditioned on the truth value of the expression d"), a null condition absent ("In case
    the expression evaluates to null, the component is omitted"). Any other type, or a
    negative count, is a LengthError."""
    types = check_expr(length, env.scope())  # by id(): `length` is held for as long as `types`
    static = types[id(length)]
    value = evaluate_checked(length, env, types)
    single = not static.packed and not static.tensor
    text = span_text(length.span)
    if single and static.base == "bool":
        return (1 if value is True else 0), True
    if single and static.base == "int":
        if value is NULL:
            return 0, False
        if not isinstance(value, int) or value < 0:  # also int(inf)
            raise LengthError(f"the length {text} is {format_literal(value)}, not a "
                              f"non-negative int")
        return value, False
    raise LengthError(f"the length {text} is of type {static}",
                      ["a pack length is an int (the item's rank), or a bool (the item present "
                       "or absent) (spec §2.6)"], definition=True)


def declared_dims(extent: ast.Extent, env: Environment) -> list[Value]:
    """The dimensions a declared shape item denotes once its symbols are known (§2.6): none
    for an item whose bool length is false or whose value is null ("the component is
    omitted"); a pack's items (`s..`); one extent repeated by an int length (`1 ..(n)`,
    `~..(3)`); otherwise one. `~` gives None (unknown). Raises a Diagnostic where the
    expressions fail, a LengthError where the length gives no count."""
    count, condition = None, False
    if extent.pack is not None and extent.pack.length is not None:
        count, condition = length_count(extent.pack.length, env)
    if condition and not count:
        return []
    value: Value = None
    if not isinstance(extent.value, ast.Placeholder):
        value = evaluate(extent.value, env)
        if value is NULL:
            return []
        if isinstance(value, tuple):
            return list(value)
    if extent.pack is None or condition:
        return [value]
    if count is None:
        raise LengthError(f"the single extent {span_text(extent.value.span)} is packed without "
                          f"a length")
    if count > MAX_RANK:
        raise LengthError(f"the length {span_text(extent.pack.length.span)} is {count}, more "
                          f"dimensions than a tensor has (at most {MAX_RANK})")
    return [value] * count


class BindingState:
    """The state of one instantiation: bound symbols with the place that bound them, and the
    helpers every binding step uses (evaluate, bind or check a symbol, deduce an affine extent,
    bind a generic type, fail at a node)."""

    def __init__(self, definition: ast.OperatorDef, invocation: Invocation) -> None:
        self.definition = definition
        self.invocation = invocation
        self.dtype_bounds = dtype_scope(entries(definition, "dtype"))
        self.dtypes: dict[str, str] = {}
        self.values: dict[str, Value] = {}
        self.types: dict[str, Type] = {}
        self.deferred: list[tuple[str, str, Any]] = []  # asserts left to run time (symbolic)
        self.sources: dict[str, str] = {}
        # symbols of absent conditional items (`c..(flag)`, flag false), with the place: null
        # after the inputs unless a present item binds them (`bind_conditional`)
        self.absent: dict[str, str] = {}
        self.subject: tuple[str, str] | None = None  # the argument being bound, for errors
        # pack inputs given as a pack of zero items of unknown item type (a note on failure)
        self.untyped_empty: list[str] = []

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

    def pack_count(self, length: ast.Expr, node: ast.Node, what: str) -> tuple[int, bool]:
        """`length_count` of a packed shape item's length; an invalid length is a diagnostic
        at `node`: E0300 for a length of another type (the definition's fault), else the
        code of the argument being bound (a negative count: the input does not fit)."""
        try:
            return length_count(length, self.env())
        except LengthError as error:
            if error.definition:
                raise self.fail(f"{error.message} in {what}", node, error.notes,
                                code="E0300") from None
            raise self.guarded(self.fail(f"{error.message} in {what}", node,
                                         error.notes)) from None

    def guarded(self, failure: InvocationDiagnostic) -> Diagnostic:
        """The diagnostic for a shape expression without meaning: `failure` here; an
        instantiation reports the assertion guarding it, if one fails
        (`Instantiation.guarded`)."""
        return failure

    def bind(self, name: str, value: Value, source: str, node: ast.Node,
             kind: Type | None = None) -> None:
        """Bind a symbol, or check it against its earlier binding (§2.6.1: a symbol deduced to
        two different values makes the invocation invalid)."""
        if name in self.values and self.values[name] is not NULL:
            same = agree(self.values[name], value)
            if same is None:  # symbolic extents that may differ: a check left to a run
                self.deferred.append((f"{name}: {format_literal(self.values[name])} == "
                                      f"{format_literal(value)} ({source})",
                                      f"'{name}' bound twice", node.span))
            elif not same:
                raise self.fail(
                    f"'{name}' is {format_literal(self.values[name])} from "
                    f"{self.sources[name]} but {format_literal(value)} from {source}", node)
            return
        self.values[name] = value
        self.types[name] = kind or type_of_value(value)
        self.sources[name] = source

    def deduce(self, expr: ast.Expr, actual: int, what: str, source: str, node: ast.Node,
               check: bool = True, kind: Type = Type("int")) -> None:
        """§2.6: an affine `a * x + b` of an unbound `x` declares x (of type `kind`), solved
        from `actual`; otherwise (with `check`) the expression is evaluated and must equal
        `actual`."""
        form = affine_form(expr)
        if form is not None and form.symbol not in self.values:
            solved = solve_affine(form, actual)
            if solved is None:
                raise self.fail(f"{what} is {actual}, which does not fit "
                                f"{span_text(expr.span)}", node)
            self.bind(form.symbol, solved, source, node, kind)
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

    def declared_type(self, decl: ast.ParamDecl) -> Type:
        return type_from_spec(decl.type, self.dtype_bounds)


class InputBinding(BindingState):
    """The input steps of an instantiation (§2.6)."""

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
        template = None  # the item type of a pack of zero items, bound as its items' would be
        if declared.packed:
            if not isinstance(actual, tuple):
                raise self.fail(f"{source} is a pack of tensors; got a single tensor", decl)
            self.bind_pack_length(decl, len(actual))
            items = actual
            if not actual:
                template = item_type(actual)
                if template is None:
                    self.untyped_empty.append(decl.name)
        else:
            if isinstance(actual, tuple):
                raise self.fail(f"{source} is a single tensor; got a pack", decl)
            items = (actual,)
        # bound first, so that an assertion explaining a failure below may print `x.rank`
        self.values[decl.name] = (tuple(TensorValue(t.dtype, t.shape) for t in items)
                                  if declared.packed else TensorValue(items[0].dtype,
                                                                      items[0].shape))
        self.types[decl.name] = declared
        for index, tensor in enumerate(items if template is None else (template,)):
            where = source if not declared.packed else f"{source} item {index}" \
                if template is None else f"{source} (a pack of 0 items of type {template})"
            self.check_base(declared.base, tensor.dtype, where, decl)
            if decl.type.rank is not None:
                self.bind(decl.type.rank, len(tensor.shape), f"the rank of {where}", decl)
            if decl.type.shape is not None:
                self.bind_shape(decl, tensor.shape, where, index if declared.packed else None,
                                len(items))

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
        """The symbols an input's shape declares, each with whether it is a pack (not the
        single extent of a conditional item `c..(flag)`, `pack_count`)."""
        names = {decl.type.rank: False} if decl.type.rank else {}
        what = f"a packed extent of input '{decl.name}'"
        for extent in decl.type.shape or ():
            value_form = affine_form(extent.value)
            if value_form is not None:
                conditional = extent.pack is not None and self.extent_count(extent, what)[1]
                names[value_form.symbol] = (extent.pack is not None and not conditional) or \
                    extent.distinct
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
        conditions: list[bool] = []
        for extent in extents:
            count, condition = self.extent_count(extent, f"a packed extent of input '{decl.name}'")
            counts.append(count)
            conditions.append(condition)
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
        for extent, count, condition in zip(extents, counts, conditions):
            dims = shape[position:position + count]
            self.bind_extent(extent, dims, where, position, item, items, condition)
            position += count

    def bound_sources(self, node: ast.Node) -> list[str]:
        """Notes saying where the symbols `node` uses got their values, e.g.
        `d = 1 (from the length of attribute 'padding')`."""
        return [f"{name} = {format_literal(self.values[name])} (from {self.sources[name]})"
                for name in sorted(free_names(node)) if name in self.sources]

    def extent_count(self, extent: ast.Extent, what: str) -> tuple[int | None, bool]:
        """How many dimensions an extent covers (None if that is left to the actual rank), and
        whether it is a conditional item `e..(flag)` (`pack_count`, §2.6). A non-packed extent
        whose value is null covers none (§2.6: "the component is omitted")."""
        if extent.pack is None:
            if isinstance(extent.value, ast.Placeholder) or not self.known(extent.value):
                return 1, False
            return (0 if self.eval(extent.value) is NULL else 1), False
        length = extent.pack.length
        if length is None:
            bound = self.values.get(extent.value.name) if isinstance(extent.value, ast.Name) \
                else None
            return (len(bound) if isinstance(bound, tuple) else None), False
        if not self.known(length):
            return None, False
        return self.pack_count(length, extent, what)

    def bind_extent(self, extent: ast.Extent, dims: tuple[int, ...], where: str,
                    position: int, item: int | None, items: int, condition: bool) -> None:
        source = f"{where} (dimension {position})" if len(dims) == 1 or extent.pack is None \
            else f"{where} (dimensions {position}..{position + len(dims) - 1})"
        if extent.bound is not None and self.known(extent.bound):
            bound = self.eval(extent.bound)
            for dim in dims:
                if bound is not NULL and dim > bound:
                    raise self.fail(f"{source} is {dim}, above its bound {bound}", extent)
        if condition:
            self.bind_conditional(extent, dims, source if dims else where, item, items)
            return
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

    def bind_conditional(self, extent: ast.Extent, dims: tuple[int, ...], source: str,
                         item: int | None, items: int) -> None:
        """A conditional item `e..(flag)` (§2.6: "the presence or absence of the item s is
        conditioned on the truth value of the expression d, and the deduced type of the item s
        is optional int"). Present, it is one extent: `e` is bound (or deduced, or checked) as
        a single optional int; a symbol already bound must agree, like any repeated extent.
        Absent, it binds nothing: a symbol `e` would declare that no other item binds, in this
        shape (`c..(ncx), s..(d), c..(!ncx)`) or another input's, is null once the inputs are
        bound (`finish_absent`)."""
        kind = Type("int", optional=True)
        value = extent.value
        if isinstance(value, ast.Placeholder):
            return
        if not dims:
            form = affine_form(value)
            if form is not None and form.symbol not in self.values:
                self.absent.setdefault(
                    form.symbol, f"{source} ({span_text(extent.span)} absent: "
                                 f"{span_text(extent.pack.length.span)} is not true)")
            return
        if extent.distinct:
            self.bind_distinct(extent, dims[0], source, item, items)
        elif isinstance(value, ast.Name):
            self.bind(value.name, dims[0], source, extent, kind)
        else:
            self.deduce(value, dims[0], source, source, extent, kind=kind)

    def finish_absent(self) -> None:
        """After the inputs: the symbols of absent conditional items that nothing bound are
        null, of type optional int (§2.6)."""
        for name, source in self.absent.items():
            if name not in self.values:
                self.values[name] = NULL
                self.types[name] = Type("int", optional=True)
                self.sources[name] = source

    def bind_distinct(self, extent: ast.Extent, actual: Value, source: str, item: int | None,
                      items: int) -> None:
        """`..t` in a tensor pack: t is a pack with one extent per item (§2.6); of a pack of
        zero items (bound from its item type, `EmptyPackType`), the empty pack."""
        if not isinstance(extent.value, ast.Name) or item is None:
            raise self.fail("a per-item extent '..t' must be a name in a tensor pack", extent)
        name = extent.value.name
        if not items:
            self.bind(name, (), source, extent, Type("int", packed=True))
            return
        current = list(self.values.get(name) or (NULL,) * items)
        current[item] = actual
        self.values[name] = tuple(current)
        self.types[name] = Type("int", packed=True)
        self.sources.setdefault(name, source)


def _mismatch(what: str, actual: Value, expected: Value, text: str) -> str:
    """`input 'x' (dimension 0) is 3, expected 2`, naming the declared expression when it is not
    just the expected value (`..., expected 4 (2 * k)`)."""
    shown = f" ({text.strip()})" if any(c.isalpha() or c == "_" for c in text) else ""
    return f"{what} is {_shown(actual)}, expected {_shown(expected)}{shown}"


def _shown(value: Value) -> str:
    """A value for a mismatch message; an int too long to read rounded (`about 1e+100000`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return format_extent(value)
    return format_literal(value)
