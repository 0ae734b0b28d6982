"""The reference engine: runs a lowering plan element by element (spec §2.12). It is the
definition of what a @lower block computes; every other engine (refinterp.lower.compiled,
refinterp.lower.vector) must compute the same function, and hands it a formula it refuses.

Each formula is compiled once into Python closures (`FormulaClosures`, an expression pass: no
AST walking per element), which also report the failing subexpression and iteration of an
error.
Index symbols loop in declaration order, outermost first (row-major), which fixes summation
order and ties. Numbers go through refinterp.numeric.rules; an int result outside int64 is a
diagnostic. An index out of range is skipped only where the formula guards it with `|e|` (the
whole update of that iteration is skipped) or remaps it with `|e <> lo : hi|`; an unguarded one
is a diagnostic. Each diagnostic's code is chosen where it is raised: E0501 an index out of
range, E0502 an int result outside int64, E0503 any other failure of an iteration.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from refinterp.core.diagnostics import Diagnostic, EngineDiagnostic
from refinterp.language.binding import free_names
from refinterp.language.expr import evaluate, fold_from, fold_pack
from refinterp.language.invocation import OperatorInstance
from refinterp.language.types import CASTS, fold_with_initial
from refinterp.language.values import NULL, TensorValue, Value, format_literal
from refinterp.lower.common import (allocate_outputs, lowered_outputs, lowering_arrays,
                                    lowering_plan, tests_given_tensor)
from refinterp.lower.plan import FULL, INT64_MAX, INT64_MIN, UPDATE_OPS, Formula, output_kind
from refinterp.numeric import rules
from refinterp.numeric.representation import kind_of
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor

Frame = dict[str, Any]
Compiled = Callable[[Frame], Value]

OUT_OF_RANGE = "E0501"  # an index (or a pack item, a counted extent) out of range
INT_OVERFLOW = "E0502"  # an int result outside int64
FAILED = "E0503"        # any other failure of an iteration


class _Skip(Exception):
    """A guarded index `|e|` fell outside its tensor: the definition skips this iteration's
    update (§2.12). Not a refusal: control flow of the definition itself."""


def run_reference(instance: OperatorInstance, inputs: dict[str, Any],
                  profile: rules.Profile = rules.SPEC) -> dict[str, Any]:
    """Run the @lower block of `instance` on input arrays by the definition; return the
    output arrays."""
    plan = lowering_plan(instance)
    arrays = lowering_arrays(instance, inputs, allocate_outputs(instance, plan))
    for formula in plan.formulas:
        run_formula(instance, formula, arrays, profile)
    return lowered_outputs(instance, plan, arrays)


def run_formula(instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                profile: rules.Profile) -> None:
    """Run one formula by the definition, updating its output in `arrays`."""
    FormulaClosures(instance, formula, arrays, profile).run()


def failure(node: ast.Node, message: str, frame: dict | None, code: str = FAILED
            ) -> EngineDiagnostic:
    """The diagnostic `code` of a failing formula at `node`, noting the index values of the
    iteration."""
    notes = []
    if frame:
        notes.append("at " + ", ".join(f"{k} = {format_literal(_plain(v))}"
                                       for k, v in frame.items()))
    return EngineDiagnostic(message, node.span, notes, code=code)


class FormulaClosures(ExprVisitor[Compiled]):
    """Compiles one formula into closures and runs its loops. As an expression pass,
    `visit(node)` compiles an expression into a closure `frame -> value`."""

    complete = True

    def __init__(self, instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                 profile: rules.Profile) -> None:
        self.instance = instance
        self.formula = formula
        self.arrays = arrays
        self.profile = profile
        self.symbols = instance.symbols
        self.index_names = {r.name for r in formula.indices}
        if formula.counted is not None:  # read from the frame, like an index symbol
            self.index_names.add(formula.counted.name)
        self.local_names = {local.name for local in formula.locals}

    def fail(self, node: ast.Node, message: str, frame: Frame | None = None,
             code: str = FAILED) -> EngineDiagnostic:
        return failure(node, message, frame, code)

    # ------------------------------------------------------------------ running

    def run(self) -> None:
        """Every iteration in row-major order; a counting formula (`plan.CountedExtent`) gives
        its counter the number of stores so far, and its output is then trimmed to it."""
        formula = self.formula
        counted = formula.counted
        locals_ = [(local.name, self.visit(local.value)) for local in formula.locals]
        value = self.visit(formula.value)
        condition = self.visit(formula.condition) if formula.condition is not None else None
        store = self.compile_store()
        names = [r.name for r in formula.indices]
        ranges = [self.index_values(r.bound) for r in formula.indices]
        count = 0
        for combination in itertools.product(*ranges):
            frame: Frame = dict(zip(names, combination))
            if counted is not None:
                frame[counted.name] = count
            try:
                for name, compute in locals_:
                    frame[name] = compute(frame)
                if condition is not None:
                    flag = condition(frame)
                    if flag is NULL:
                        raise self.fail(formula.condition, "the condition is null", frame)
                    if not (all(flag) if isinstance(flag, tuple) else flag):
                        continue
                store(frame, value(frame))
                count += 1
            except _Skip:
                continue
            except EngineDiagnostic as diag:
                if not diag.notes:  # say in which iteration it failed
                    diag.notes = failure(formula.node, "", frame).notes
                raise
        if counted is not None:
            kept = (slice(None),) * counted.dimension + (slice(0, count),)
            self.arrays[formula.output] = self.arrays[formula.output][kept].copy()

    @staticmethod
    def index_values(bound: Value) -> list[Any]:
        if isinstance(bound, tuple):
            return list(itertools.product(*(range(n) for n in bound)))
        return list(range(bound))

    # ------------------------------------------------------------------ the left-hand side

    def compile_store(self) -> Callable[[Frame, Value], None]:
        formula = self.formula
        op = formula.op
        dtype = output_kind(self.instance, formula.output)
        item = self.visit(formula.item) if formula.item is not None else None
        indices = self.compile_indices(formula.access)
        target = self.arrays[formula.output]
        node = formula.node
        counted = self.compile_counted()

        def update(cells: list[tuple[Any, tuple]], value: Value, frame: Frame, what: str) -> None:
            """Update several cells as one unit: every new value is computed from the old ones
            before any is written (§2.12 packed assignment; `:` positions)."""
            if value is NULL:
                raise self.fail(formula.value, "the value to store is null (resolve optional "
                                               "values with '??')", frame)
            if what:  # several cells: a pack of values, or one value for all of them
                values = value if isinstance(value, tuple) else (value,) * len(cells)
            else:
                values = (value,)
            if len(values) != len(cells):
                raise self.fail(node, f"{len(values)} values for {len(cells)} {what}", frame)
            results = []
            for (array, position), single in zip(cells, values):
                self.check_position(node, formula.output, array, position, frame)
                results.append(self.checked(node, self.combine(node, op, array, position,
                                                               single, dtype), dtype, frame))
            for (array, position), result in zip(cells, results):
                self.put(array, position, result)

        def store(frame: Frame, value: Value) -> None:
            if item is not None:
                array = self.pack_item(node, target, item(frame), frame)
                arrays_, position = [array], indices(frame, array)
            elif isinstance(target, list):
                arrays_, position = target, indices(frame, None)
            else:
                arrays_, position = [target], indices(frame, target)
                if counted is not None:
                    counted(frame, target)
            mapped = _mapped_positions(position)
            if mapped is not None:  # `y[i, p] = v`: the cells the pack index p maps to, one unit
                if len(arrays_) > 1 or FULL in position:
                    raise self.fail(node, "a pack index without '..' cannot be combined with "
                                          "':' or a whole pack of tensors", frame)
                update([(arrays_[0], p) for p in mapped], value, frame,
                       "positions of the pack index")
            elif FULL in position:
                if len(arrays_) > 1:
                    raise self.fail(node, "':' cannot index a whole pack of tensors", frame)
                cells = [(arrays_[0], p) for p in _expand_full(position, arrays_[0].shape)]
                update(cells, value, frame, "positions of ':'")
            elif isinstance(target, list) and item is None:  # packed assignment (§2.12)
                update([(a, position) for a in arrays_], value, frame, "outputs of the pack")
            else:
                update([(arrays_[0], position)], value, frame, "")

        return store

    def compile_counted(self) -> Callable[[Frame, Any], None] | None:
        """For a counting formula (`plan.CountedExtent`): the check, before each store, that
        its counter indexes the dimension it names and stays below its bound."""
        counted = self.formula.counted
        if counted is None:
            return None
        access = self.formula.access
        before = self.compile_indices(access[:next(
            j for j, item in enumerate(access) if item is counted.node)])

        def check(frame: Frame, target: Any) -> None:
            dimension = len(before(frame, target))
            if dimension != counted.dimension:
                raise self.fail(counted.node, f"'{counted.name}' indexes dimension {dimension} "
                                              f"of '{counted.output}', but it names the dynamic "
                                              f"extent of dimension {counted.dimension}", frame)
            if frame[counted.name] >= counted.bound:  # the position is out of range
                raise self.fail(
                    self.formula.node, f"output '{counted.output}' gets more than "
                    f"{counted.bound} entries along its dynamic extent '{counted.name}' "
                    f"(dimension {counted.dimension}), above its bound {counted.bound}", frame,
                    OUT_OF_RANGE)
        return check

    def combine(self, node: ast.Node, op: str, array: Any, position: tuple, value: Value,
                dtype: str) -> Value:
        """The new value of the output cell `array[position]` (of kind `dtype`) updated by `op`
        with `value`: the value itself for `=` and `:=`, else the cell combined with it."""
        if op in ("=", ":="):
            return value
        return self.numeric(node, rules.binary, UPDATE_OPS[op], _python(array[position], dtype),
                            value)

    def put(self, array: Any, position: tuple, value: Value) -> None:
        """Write a checked new value into an output cell (a hook: the bounds run,
        refinterp.lower.bounds, also writes its error magnitude)."""
        array[position] = value

    def checked(self, node: ast.Node, value: Value, dtype: str, frame: Frame) -> Value:
        """The value converted to the output type; an int outside int64 is a diagnostic."""
        if dtype == "int":
            if isinstance(value, rules.IntInfinity):
                return INT64_MAX if value.sign > 0 else INT64_MIN
            if not isinstance(value, int) or isinstance(value, bool):
                raise self.fail(node, f"an int output gets {format_literal(value)}", frame)
            if not INT64_MIN <= value <= INT64_MAX:
                raise self.fail(node, f"the int result {value} does not fit in int64", frame,
                                INT_OVERFLOW)
        elif dtype == "real" and not isinstance(value, float):
            raise self.fail(node, f"a real output gets {format_literal(value)}", frame)
        elif dtype == "bool" and not isinstance(value, bool):
            raise self.fail(node, f"a bool output gets {format_literal(value)}", frame)
        return value

    # ------------------------------------------------------------------ expressions

    def numeric(self, node: ast.Node, function: Callable, *args: Value) -> Value:
        if any(isinstance(a, _Guarded) for a in args):
            raise self.fail(node, "a bounded index |e| is not a number: it may only stand "
                                  "where a tensor is indexed")
        try:
            return function(*args, self.profile)
        except rules.NumericError as error:
            raise self.fail(node, error.message) from None

    def visit(self, node: Any, *args: Any) -> Compiled:
        """The closure computing `node`. A subexpression with no index, local or tensor in it is
        evaluated once, here, by the compile-time evaluator."""
        if not self.is_compile_time(node):
            return super().visit(node, *args)
        try:
            constant = evaluate(node, self.instance.environment(self.profile))
        except Diagnostic as diag:
            failure = EngineDiagnostic(diag.message, diag.span, diag.notes)

            def fail(frame: Frame) -> Value:  # only an iteration that computes it fails
                raise failure
            return fail
        return lambda frame: constant

    def visit_literal(self, node: ast.IntLiteral | ast.RealLiteral | ast.BoolLiteral
                      ) -> Compiled:
        constant = node.value
        return lambda frame: constant

    visit_IntLiteral = visit_RealLiteral = visit_BoolLiteral = visit_literal

    def visit_Constant(self, node: ast.Constant) -> Compiled:
        constant = math.inf if node.name == "inf" else math.pi
        return lambda frame: constant

    def visit_ListExpr(self, node: ast.ListExpr) -> Compiled:
        parts = [self.compile_item(i) for i in node.items]
        return lambda frame: _join(part(frame) for part in parts)

    def visit_Builtin(self, node: ast.Builtin) -> Compiled:
        return self.builtin(node, node.name, node.args)

    def unsupported(self, node: ast.Node) -> Compiled:
        raise self.fail(node, f"{type(node).__name__} is not supported in a @lower formula")

    visit_StringLiteral = visit_Placeholder = visit_Expand = visit_Zip = unsupported
    visit_Range = visit_Slice = unsupported

    def is_compile_time(self, node: ast.Expr) -> bool:
        if isinstance(node, (ast.Bounded, ast.Expand, ast.Zip, ast.Placeholder)):
            return False
        names = free_names(node)
        runtime = self.index_names | self.local_names | set(self.arrays)
        return not names & runtime and all(
            not isinstance(self.symbols.get(n), TensorValue) for n in names)

    def visit_Name(self, node: ast.Name) -> Compiled:
        name = node.name
        if name in self.index_names or name in self.local_names:
            def lookup(frame: Frame) -> Value:
                try:
                    return frame[name]
                except KeyError:
                    raise self.fail(node, f"'{name}' is used before it is computed") from None
            return lookup
        if name in self.symbols and not isinstance(self.symbols[name], TensorValue):
            constant = self.symbols[name]
            return lambda frame: constant
        raise self.fail(node, f"'{name}' is a tensor: access its elements with [...]"
                        if name in self.arrays else f"undefined name '{name}'")

    def compile_item(self, item: ast.ListItem) -> Callable[[Frame], tuple]:
        if isinstance(item, ast.Expand):
            inner = self.visit(item.operand)
            count = self.visit(item.count) if item.count is not None else None

            def expand(frame: Frame) -> tuple:
                value = inner(frame)
                if count is None:
                    return value if isinstance(value, tuple) else (value,)
                repeat = int(count(frame))
                return value if isinstance(value, tuple) else (value,) * repeat
            return expand
        if isinstance(item, ast.Range):
            start, stop = self.visit(item.start), self.visit(item.stop)
            step = self.visit(item.step) if item.step is not None else (lambda frame: 1)
            return lambda frame: tuple(range(start(frame), stop(frame), step(frame)))
        single = self.visit(item)
        return lambda frame: (single(frame),)

    def visit_Unary(self, node: ast.Unary) -> Compiled:
        if tests_given_tensor(node, self.symbols, self.index_names | self.local_names):
            return lambda frame: True
        operand = self.visit(node.operand)
        if node.op == "?":
            return lambda frame: operand(frame) is not NULL
        return self.lift(node, operand, rules.unary, node.op)

    def lift(self, node: ast.Node, operand: Compiled, function: Callable, name: str
             ) -> Compiled:
        """`function(name, value)` item by item on the operand's value; null stays null."""
        def apply(frame: Frame) -> Value:
            value = operand(frame)
            if value is NULL:
                return NULL
            return _elementwise(lambda v: self.numeric(node, function, name, v), value)
        return apply

    def visit_Binary(self, node: ast.Binary) -> Compiled:
        if fold_with_initial(node):
            return self.fold_with_initial(node)
        left, right = self.visit(node.left), self.visit(node.right)
        op = node.op
        if op == "??":
            def coalesce(frame: Frame) -> Value:
                value = left(frame)
                return value if value is not NULL else right(frame)
            return coalesce

        def binary(frame: Frame) -> Value:
            a, b = left(frame), right(frame)
            if a is NULL or b is NULL:
                return NULL
            if op == "is":
                return _elementwise2(lambda x, y: type(x) is type(y) and x == y, a, b)
            if op == "in":
                return tuple(x in b for x in a) if isinstance(a, tuple) else a in b
            return _elementwise2(lambda x, y: self.numeric(node, rules.binary, op, x, y),
                                 a, b)
        return binary

    def visit_Select(self, node: ast.Select) -> Compiled:
        cond, then = self.visit(node.cond), self.visit(node.then)
        otherwise = self.visit(node.otherwise) if node.otherwise is not None else None

        def select(frame: Frame) -> Value:
            flag = cond(frame)
            if flag is NULL:
                return NULL
            if isinstance(flag, tuple):
                a = then(frame)
                b = otherwise(frame) if otherwise is not None else NULL
                return tuple((a[i] if isinstance(a, tuple) else a) if f else
                             (b[i] if isinstance(b, tuple) else b) for i, f in enumerate(flag))
            if flag:
                return then(frame)
            return otherwise(frame) if otherwise is not None else NULL
        return select

    def builtin(self, node: ast.Node, name: str, args: tuple) -> Compiled:
        return self.lift(node, self.visit(args[0]), rules.builtin, name)

    def visit_Call(self, node: ast.Call) -> Compiled:
        name = node.callee[0]
        target = self.instance.dtypes.get(name, name)
        if target in CASTS and len(node.callee) == 1:
            if not node.args:
                constant = rules.default_value(target)
                return lambda frame: constant
            return self.lift(node, self.visit(node.args[0]), rules.cast, target)
        return self.builtin(node, name, node.args)

    def visit_Member(self, node: ast.Member) -> Compiled:
        if isinstance(node.base, ast.Name) and node.base.name in self.symbols:
            base = self.symbols[node.base.name]
            if isinstance(base, TensorValue):
                constant = base.shape if node.name == "shape" else len(base.shape)
            else:
                constant = len(base) if isinstance(base, tuple) else NULL
            return lambda frame: constant
        raise self.fail(node, f"'.{node.name}' needs a declared name")

    def visit_Fold(self, node: ast.Fold) -> Compiled:
        """Folds use the compile-time evaluator's rules (`expr.fold_pack`)."""
        operand = self.visit(node.operand)
        base = self.item_kind(node.operand)

        def binary(op: str, a: Value, b: Value) -> Value:
            return self.numeric(node, rules.binary, op, a, b)

        def fold(frame: Frame) -> Value:
            pack = operand(frame)
            if pack is NULL:
                return NULL
            if not isinstance(pack, tuple):
                raise self.fail(node, "a fold needs a pack", frame)
            return fold_pack(node.op, pack, node.cumulative, base, binary)
        return fold

    def fold_with_initial(self, node: ast.Binary) -> Compiled:
        """`x op .. op init`: the pack, then the initial value, then `expr.fold_from` (the
        compile-time evaluator's rule; an initial pack gives one fold per item)."""
        fold = node.left
        assert isinstance(fold, ast.Fold)
        operand, initial = self.visit(fold.operand), self.visit(node.right)
        op = node.op

        def binary(o: str, a: Value, b: Value) -> Value:
            return self.numeric(node, rules.binary, o, a, b)

        def compute(frame: Frame) -> Value:
            pack, start = operand(frame), initial(frame)
            if pack is NULL or start is NULL:
                return NULL
            if not isinstance(pack, tuple):
                raise self.fail(fold, "a fold needs a pack", frame)
            return _elementwise(lambda value: fold_from(op, pack, value, binary), start)
        return compute

    def item_kind(self, node: ast.Expr) -> str:
        """The item type of a pack expression where it is evident: a tensor access (`x[i, :]`)
        or a compile-time pack; 'any' otherwise (then an empty sum is the int 0)."""
        if isinstance(node, ast.Subscript) and isinstance(node.base, ast.Name):
            array = self.arrays.get(node.base.name)
            if isinstance(array, np.ndarray):
                return kind_of(array)
        return "any"

    # ------------------------------------------------------------------ tensor access

    def visit_Subscript(self, node: ast.Subscript) -> Compiled:
        base = node.base
        item = None
        if isinstance(base, ast.Subscript) and isinstance(base.base, ast.Name) and \
                base.base.name in self.arrays and not base.trailing_comma:
            item = self.visit(base.items[0])
            base = base.base
        if isinstance(base, ast.Name) and base.name in self.arrays:
            return self.compile_access(node, base.name, item)
        # pack indexing of a compile-time pack or of an index symbol (e.g. `i[axes]`, `zi[a:b]`)
        pack = self.visit(base)
        if len(node.items) != 1 or node.trailing_comma:
            raise self.fail(node, "a pack is indexed with one index")
        select = self.compile_selection(node.items[0])

        def pick(frame: Frame) -> Value:
            values = pack(frame)
            if values is NULL:
                return NULL
            if not isinstance(values, tuple):
                raise self.fail(node.base, f"only a pack or a tensor can be indexed; got "
                                           f"{format_literal(values)}", frame)
            return select(frame, values)
        return pick

    def compile_selection(self, item: ast.IndexItem) -> Callable[[Frame, Any], Value]:
        """An index into a pack: an int, an int pack, a bool mask or a slice (§2.4)."""
        if isinstance(item, ast.Slice):
            parts = [self.visit(p) if p is not None else None
                     for p in (item.start, item.stop, item.step)]

            def slice_(frame: Frame, values: Any) -> Value:
                bounds = [self.slice_bound(item, p(frame), len(values), frame)
                          if p is not None else None for p in parts]
                if bounds[2] == 0:
                    raise self.fail(item, "a slice step must not be 0", frame)
                return tuple(values[slice(*bounds)])
            return slice_
        index = self.visit(item)

        def at(frame: Frame, values: Any, position: int) -> Value:
            """§2.4: a negative index counts from the end; out of range is an error (E0501)."""
            if not isinstance(position, (int, rules.IntInfinity)) or isinstance(position, bool):
                raise self.fail(item, f"a pack index must be an int; got "
                                      f"{format_literal(position)}", frame)
            if not -len(values) <= position < len(values):
                raise self.fail(item, f"index {position} is out of range for a pack of length "
                                      f"{len(values)}", frame, OUT_OF_RANGE)
            return values[position]

        def select(frame: Frame, values: Any) -> Value:
            position = index(frame)
            if position is NULL:
                return NULL
            if isinstance(position, tuple):
                if position and isinstance(position[0], bool):
                    if len(position) != len(values):  # §2.4: "must be the same" length
                        raise self.fail(item, f"a mask of length {len(position)} indexes a pack "
                                              f"of length {len(values)}", frame)
                    return tuple(v for v, keep in zip(values, position) if keep)
                return tuple(at(frame, values, p) for p in position)
            return at(frame, values, position)
        return select

    def slice_bound(self, item: ast.Slice, bound: Any, length: int, frame: Frame) -> int:
        """A slice bound or step as Python's slice takes it (`rules.slice_bound`: int(inf) and
        int(-inf) lie beyond every position); anything but an int is an error."""
        if isinstance(bound, rules.IntInfinity):
            return rules.slice_bound(bound, length)
        if isinstance(bound, np.integer):
            return int(bound)
        if not isinstance(bound, int) or isinstance(bound, bool):
            raise self.fail(item, f"a slice bound must be an int; got {format_literal(bound)}",
                            frame)
        return bound

    def visit_Substitute(self, node: ast.Substitute) -> Compiled:
        """`a[i] <- b` (§2.4 Substitution) on packs computed per element, e.g. index packs."""
        base, value = self.visit(node.target.base), self.visit(node.value)
        positions = self.compile_selection(node.target.items[0])

        def substitute(frame: Frame) -> Value:
            values, new = base(frame), value(frame)
            if values is NULL or new is NULL:
                return NULL
            if not isinstance(values, tuple):
                raise self.fail(node.target.base, f"only a pack can be substituted in; got "
                                                  f"{format_literal(values)}", frame)
            chosen = positions(frame, tuple(range(len(values))))
            result = list(values)
            if isinstance(chosen, tuple):
                news = new if isinstance(new, tuple) else (new,) * len(chosen)
                for position, item in zip(chosen, news):
                    result[position] = item
            else:
                result[chosen] = new
            return tuple(result)
        return substitute

    def compile_access(self, node: ast.Subscript, name: str, item: Compiled | None) -> Compiled:
        indices = self.compile_indices(node.items)
        arrays = self.arrays

        def access(frame: Frame) -> Value:
            target = arrays[name]
            if target is NULL:
                return NULL  # an absent optional input: null, resolved by `??` (§2.12)
            if item is not None:
                target = self.pack_item(node, target, item(frame), frame)
            position = indices(frame, target)
            mapped = _mapped_positions(position)
            if isinstance(target, list):  # a whole pack accessed: a pack of values
                if FULL in position:
                    raise self.fail(node, "':' cannot index a whole pack of tensors", frame)
                if mapped is not None:
                    raise self.fail(node, "a pack index without '..' cannot index a whole pack "
                                          "of tensors (select an item: 'xs[k][...]')", frame)
                return tuple(self.value_at(node, name, a, position, frame)
                             for a in target)
            if FULL in position:  # `x[i, :]`: the pack of values along the ':' dimensions
                if mapped is not None:
                    raise self.fail(node, "':' and a pack index without '..' in one access "
                                          "would make a pack of packs", frame)
                return tuple(self.value_at(node, name, target, p, frame)
                             for p in _expand_full(position, target.shape))
            if mapped is not None:  # `x[i, p]`, p a pack: the access mapped over p (§2.4)
                if mapped and len(mapped[0]) != target.ndim:
                    diagnostic = self.fail(node, f"'{name}' has rank {target.ndim} but is "
                                                 f"accessed with {len(mapped[0])} indices", frame)
                    diagnostic.notes.append("a pack index without '..' maps the access over "
                                            "the pack, one index per item; 'p..' spreads it "
                                            "over several dimensions")
                    raise diagnostic
                return tuple(self.value_at(node, name, target, p, frame)
                             for p in mapped)
            return self.value_at(node, name, target, position, frame)
        return access

    def value_at(self, node: ast.Node, name: str, array: Any, position: tuple, frame: Frame
                 ) -> Value:
        """The element of tensor `name` (the array `array`) at `position`, as a Python value."""
        return _python(self.read(node, name, array, position, frame), kind_of(array))

    def read(self, node: ast.Node, name: str, array: Any, position: tuple, frame: Frame) -> Any:
        self.check_position(node, name, array, position, frame)
        return array[position]

    def pack_item(self, node: ast.Node, pack: Any, index: Value, frame: Frame) -> Any:
        if not isinstance(pack, list):
            raise self.fail(node, "only a pack of tensors has items", frame)
        if not isinstance(index, int) or not 0 <= index < len(pack):
            raise self.fail(node, f"pack item {format_literal(index)} is out of range for "
                                  f"{len(pack)} tensors", frame, OUT_OF_RANGE)
        return pack[index]

    def check_position(self, node: ast.Node, name: str, array: Any, position: tuple,
                       frame: Frame) -> None:
        shape = array.shape
        if len(position) != len(shape):
            raise self.fail(node, f"'{name}' has rank {len(shape)} but is accessed with "
                                  f"{len(position)} indices", frame)
        for index, extent in zip(position, shape):
            if not 0 <= index < extent:
                raise self.fail(node, f"index {list(position)} is out of range for '{name}' "
                                      f"of shape {list(shape)}", frame, OUT_OF_RANGE)

    def compile_indices(self, items: tuple) -> Callable[..., tuple]:
        """Index items → a function giving the position tuple: a pack spread with `..` stands
        for its items in place; a pack index without `..` is one `_Mapped` dimension (the
        access is mapped over it, `_mapped_positions`). Several such packs must have one
        length (§2.4: element-wise operations on packs of equal lengths); a mismatch is a
        diagnostic at the item."""
        parts: list[tuple[ast.IndexItem, Callable[[Frame, Any], tuple]]] = []
        for dimension, item in enumerate(items):
            parts.append((item, self.compile_index(item)))

        def position(frame: Frame, array: Any = None) -> tuple:
            result: list[Any] = []
            length = None
            for item, part in parts:
                indices = part(frame, (array, len(result)))
                for index in indices:
                    if isinstance(index, _Mapped):
                        if length is not None and len(index.values) != length:
                            raise self.fail(item, f"this pack index (without '..') has length "
                                                  f"{len(index.values)}, but an earlier one of "
                                                  f"the same access has length {length}; the "
                                                  f"access is mapped over packs of one length",
                                            frame)
                        length = len(index.values)
                result.extend(indices)
            return tuple(result)
        return position

    def compile_index(self, item: ast.IndexItem) -> Callable[[Frame, Any], tuple]:
        """One index item → the indices it stands for: a pack spread with `..` expands in
        place (`e..(n)` repeats); a pack without `..` is one `_Mapped` dimension (§2.4, §2.12:
        the access is mapped over the pack). Guarded indices `|e|` inside are resolved here,
        against the extent of the dimension they land on."""
        if isinstance(item, ast.Slice):
            if (item.start, item.stop, item.step) != (None, None, None):
                raise self.fail(item, "a tensor is indexed with ':' (the whole dimension), not "
                                      "with a slice")
            return lambda frame, where: (FULL,)
        expanded = isinstance(item, ast.Expand)
        inner = item.operand if expanded else item
        value = self.visit(inner)
        count = self.visit(item.count) if expanded and item.count is not None else None

        def index(frame: Frame, where: Any) -> tuple:
            array, start = where
            result = value(frame)
            if result is NULL:
                raise self.fail(inner, "an index is null", frame)
            try:
                if not expanded and isinstance(result, tuple):  # mapped: one dimension
                    extent = _extent(array, start)
                    return (_Mapped(tuple(_resolve(v, extent) for v in result)),)
                if count is not None and not isinstance(result, tuple):
                    result = (result,) * int(count(frame))
                result = result if isinstance(result, tuple) else (result,)
                return tuple(v if v is FULL else _resolve(v, _extent(array, start + offset))
                             for offset, v in enumerate(result))
            except _NotAnIndex as bad:
                raise self.fail(inner, f"a tensor index must be an int; got "
                                       f"{format_literal(bad.value)}", frame) from None
        return index

    def visit_Bounded(self, node: ast.Bounded) -> Compiled:
        """`|e|` and `|e <> lo : hi|` (§2.12): a guarded index, resolved where it indexes."""
        value = self.visit(node.index)
        lower = self.visit(node.lower) if node.lower is not None else None
        upper = self.visit(node.upper) if node.upper is not None else None

        def bounded(frame: Frame) -> Value:
            raw = value(frame)
            low = lower(frame) if lower is not None else None
            high = upper(frame) if upper is not None else None
            if isinstance(raw, tuple):
                lows = low if isinstance(low, tuple) else (low,) * len(raw)
                highs = high if isinstance(high, tuple) else (high,) * len(raw)
                return tuple(_Guarded(r, lo, hi) for r, lo, hi in zip(raw, lows, highs))
            return _Guarded(raw, low, high)
        return bounded


@dataclass(frozen=True)
class _Mapped:
    """One dimension of a position indexed by a pack without `..`: its (resolved) values. Spec
    §2.4 "Arguments of unary and binary operators may be packs, in which case the operations
    are taken element-wise, and the result is also a pack", and §2.12 "The indices themselves
    may be packed (denoted by ..)": only `p..` spreads a pack into several dimensions, so an
    index pack `p` without it maps the access over its items, `x[i, p]` == `[x[i, p[0]],
    x[i, p[1]], ..]` (the spec's gather_nd, §4.1.6, reads `indices[bi.., zi.., di]..`)."""

    values: tuple


def _mapped_positions(position: tuple) -> list[tuple] | None:
    """The positions of an access mapped over its `_Mapped` dimensions (all of one length,
    checked by `FormulaClosures.compile_indices`), item by item; None if it has none."""
    slots = [d for d, p in enumerate(position) if isinstance(p, _Mapped)]
    if not slots:
        return None
    length = len(position[slots[0]].values)
    return [tuple(p.values[k] if isinstance(p, _Mapped) else p for p in position)
            for k in range(length)]


def _expand_full(position: tuple, shape: tuple) -> list[tuple]:
    """Every concrete position of a position holding `:` markers, row-major."""
    ranges = [range(shape[d]) if p is FULL else (p,) for d, p in enumerate(position)
              if d < len(shape)]
    if len(position) != len(shape):
        return [position]  # the rank mismatch is reported by check_position
    return [tuple(p) for p in itertools.product(*ranges)]


@dataclass(frozen=True)
class _Guarded:
    """A guarded index value: `index`, and the remapped values below 0 / at or past the end."""

    index: int
    lower: int | None = None
    upper: int | None = None


class _NotAnIndex(Exception):
    """An index value that is no int (a real, a bool, a string):
    `FormulaClosures.compile_index` reports it at the index."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


def _index_value(value: Any) -> int:
    """An int index as a Python int; int(inf) and int(-inf) as they are (beyond every position:
    the range check refuses them); anything else is _NotAnIndex."""
    if type(value) is int or isinstance(value, rules.IntInfinity):
        return value  # type: ignore[return-value]
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise _NotAnIndex(value)


def _resolve(value: Any, extent: int | None) -> int:
    """A plain index, or a guarded one checked against `extent` (skip, or remap)."""
    if not isinstance(value, _Guarded):
        return _index_value(value)
    index = _index_value(value.index)
    if extent is None or 0 <= index < extent:
        return index
    if value.lower is None:
        raise _Skip()
    return _index_value(value.lower if index < 0 else value.upper)


def _extent(array: Any, dimension: int) -> int | None:
    if array is None or isinstance(array, list) or array is NULL:
        return None
    return array.shape[dimension] if dimension < array.ndim else None


def _python(value: Any, dtype: str) -> Value:
    if dtype == "real":
        return float(value)
    if dtype == "int":
        return int(value)
    return bool(value)


def _plain(value: Any) -> Value:
    """A frame value as the user wrote it: a guarded index shows its index."""
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    return value.index if isinstance(value, _Guarded) else value


def _join(parts: Any) -> Value:
    items: list[Value] = []
    for part in parts:
        if any(v is NULL for v in part):
            return NULL
        items.extend(part)
    return tuple(items)


def _elementwise(function: Callable[[Value], Value], value: Value) -> Value:
    return tuple(function(v) for v in value) if isinstance(value, tuple) else function(value)


def _elementwise2(function: Callable[[Value, Value], Value], a: Value, b: Value) -> Value:
    if isinstance(a, tuple) or isinstance(b, tuple):
        length = len(a) if isinstance(a, tuple) else len(b)
        a = a if isinstance(a, tuple) else (a,) * length
        b = b if isinstance(b, tuple) else (b,) * length
        return tuple(function(x, y) for x, y in zip(a, b))
    return function(a, b)
