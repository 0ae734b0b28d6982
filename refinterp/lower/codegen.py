"""Fast path of the scalar engine: a formula compiled to Python source (nested `for` loops over
flat lists; a pack of tensors is a list of them), for the common subset where every index is a
single int and every operand type is known. The result must equal the closure path of
`scalar.py` exactly (same loop order, same operations in the same order, same numeric rules),
which tests/test_codegen.py checks; anything outside the subset returns None and runs on the
closure path. A formula refused as written is
first partially evaluated in its instance (refinterp.lower.fold: packed indices expanded,
selects and `??` on compile-time values decided, pack locals inlined) and tried again.

Every operation, cast and built-in function is resolved once per formula, for the kinds of its
operands, by refinterp.numeric.rules (`binary_function`, `unary_function`, `cast_function`,
`builtin_function`): the very function the closure path's generic `rules.binary` etc. call for
values of those kinds, bound to a kernel variable before the loops and called per element. It is
inlined only where a Python operator is that function: `+ - *` on two ints or two reals (exact
ints, IEEE reals), comparisons of one type, unary `- + !`, the logical operators on bools, real
`/` by a non-zero compile-time constant, and casts of a value to its own type. Kinds are "int",
"real", "bool" and the int kinds that may be int(±inf) (rules.INT_OR_INF ...: `int(real)`), on
which only comparisons and unary `-` are inlined (`rules.IntInfinity` implements those);
`real(i)` of an index expression is Python's `float`.

Order: operands are computed left to right, as on the tree walk. Guards and range checks are
lines before the expression that uses them, so an operand that may raise (a call of a rule
function, `may_raise`) left of an operand emitting such lines is computed into a temp before
them (`Generator.in_order`); a select whose branch emits lines is an `if`/`else` statement, so
they act only when the branch is taken. A value that depends only on outer loop indices and
cannot raise is computed once per iteration of the loop binding its last index
(`Generator.hoist`); one that may raise stays where the tree walk computes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.binding import free_names
from refinterp.language.expr import evaluate
from refinterp.language.invocation import OperatorInstance
from refinterp.language.types import CASTS, fold_with_initial
from refinterp.language.values import TensorValue
from refinterp.lower.fold import FOLD_OPS, SelectItem, arithmetic_operands, fold_formula
from refinterp.lower.plan import INT64_MAX, INT64_MIN, UPDATE_OPS, Formula, derived
from refinterp.numeric import rules
from refinterp.numeric.representation import kind_of
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor, nodes, tree_depth


# Generated code raises in check lines and in calls of rule functions (`F_n(..)`, see
# `Generator.bound`) only: an index in an expression is in range where it is evaluated.
_CALL = re.compile(r"\bF_\d+\(")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*")
_TEMPORARY = re.compile(r"(t|v|o)\d*")  # computed by body lines: never loop-invariant
_HOISTED = re.compile(r"\bH_\d+\b")
_CONSTANT = re.compile(r"-?\d+|K\[\d+\]|True|False")
# Python compiles at most 20 statically nested blocks (the kernel's loops) and 200 nested
# brackets; a formula with more loops, or nested more deeply, runs on the tree walk.
MAX_LOOPS = 18
MAX_NESTING = 100


def may_raise(source: str) -> bool:
    """Evaluating the generated expression `source` may raise (a rule function's error)."""
    return _CALL.search(source) is not None


def _atomic(source: str) -> bool:
    """`source` stands as one operand wherever it is put: a name or number, or a name (or
    nothing) followed by one bracketed group that ends it (`(a + b)`, `F_1(x)`, `T_0[o]`)."""
    if _IDENTIFIER.fullmatch(source) or source.isdigit():
        return True
    start = min((source.find(b) for b in "([" if b in source), default=-1)
    if start < 0 or not _IDENTIFIER.fullmatch(source[:start] or "_"):
        return False
    depth = 0
    for position, char in enumerate(source[start:], start):
        depth += (char in "([") - (char in ")]")
        if depth == 0:
            return position == len(source) - 1
    return False


def total_binary(op: str, left: str, right: str) -> bool:
    """The function rules.binary_function gives for `op` on these kinds never raises: IEEE
    arithmetic on two reals (no error, see rules.real_divide), minimum, maximum and
    comparisons of one type, the logical operators. Int `+ - *` on int(±inf) kinds, int
    `/ \\ % **` (division by zero, negative powers) and converted mixed operands may raise."""
    op, a, b = rules.OP_ALIASES.get(op, op), rules.kind_type(left), rules.kind_type(right)
    if a != b:
        return False
    if op in rules.COMPARISON_OPS:
        return a in ("int", "real", "bool")
    if op in rules.MIN_MAX_OPS:
        return a in ("int", "real")
    if a == "real":
        return op in rules.ARITHMETIC_OPS
    return a == "bool" and op in rules.LOGICAL_OPS


def total_cast(target: str, kind: str) -> bool:
    """rules.cast_function(target, kind) never raises: to real (int(±inf) and ints beyond
    the float range give ±inf), to bool, and int of a bool; not int of a real (int(nan))."""
    source = rules.kind_type(kind)
    if source not in rules.CASTABLE:
        return False
    return target in ("real", "bool") or (target == "int" and source == "bool")


def total_builtin(name: str, kind: str) -> bool:
    """rules.builtin_function(name, kind) never raises: the real functions on a real (IEEE
    results outside their domain), abs and sign on an int or a real."""
    source = rules.kind_type(kind)
    if name in rules.REAL_BUILTINS:
        return source == "real"
    return name in rules.NUM_BUILTINS and source in ("int", "real")


def _combine(op: str, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The interval of `x op y` for x in `a`, y in `b` (op `+ - *`)."""
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    products = [x * y for x in a for y in b]
    return min(products), max(products)


class Unsupported(Exception):
    """The formula is outside the generated subset; the closure path runs it."""


class OutOfRange(Exception):
    """An unguarded index fell outside its tensor (raised by generated code)."""

    def __init__(self, access: int, position: tuple, indices: dict) -> None:
        super().__init__(access)
        self.access, self.position, self.indices = access, position, indices


@dataclass(frozen=True)
class Layout:
    """Where an access finds its elements: the source of a flat list and its kind; per
    dimension the extent and the stride, each an int, or the source of a lookup by the item
    index when an item of a pack of tensors chosen at run time decides it; `least`, each
    dimension's smallest extent (what is provably in range); and what an index out of range
    says."""

    flat: str
    kind: str
    extents: tuple[int | str, ...]
    strides: tuple[int | str, ...]
    least: tuple[int, ...]
    message: str


class Generator(ExprVisitor[tuple[str, str]]):
    """Builds the Python source of one formula. As an expression pass, `visit(node)` gives the
    (Python source, kind) of a scalar expression, or raises Unsupported."""

    complete = True

    def __init__(self, instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                 profile: rules.Profile) -> None:
        self.instance, self.formula, self.arrays, self.profile = (
            instance, formula, arrays, profile)
        self.indices = {r.name: r.bound for r in formula.indices}
        self.locals: dict[str, str] = {}  # local name -> kind
        self.constants: list[Any] = []
        self.accesses: list[tuple[ast.Node, str]] = []  # (node, message) of each range check
        # tensor name -> variable of its flat list (a list of them for a pack of tensors)
        self.tensors: dict[str, str] = {}
        self.prologue: dict[str, str] = {}  # variable -> its definition before the loops
        self.lines: list[str] = []
        self.temp = 0
        # loop-invariant code motion: the loop variables by depth (1 the outermost), the
        # depth at which each local and hoisted value `H_n` is computed, and the lines
        # computed at each depth before the loop inside it (0: before the loops)
        self.depth: dict[str, int] = {}
        for r in formula.indices:
            names = [f"I_{r.name}_{k}" for k in range(len(r.bound))] \
                if isinstance(r.bound, tuple) else [f"I_{r.name}"]
            for name in names:
                self.depth[name] = len(self.depth) + 1
        self.innermost = max(len(self.depth), 1)
        self.levels: dict[str, int] = {}
        self.hoisted: dict[int, dict[str, str]] = {}  # depth -> variable -> its value
        self.hoists = 0

    # ------------------------------------------------------------------ helpers

    def constant(self, value: Any) -> str:
        self.constants.append(value)
        return f"K[{len(self.constants) - 1}]"

    def fresh(self) -> str:
        self.temp += 1
        return f"t{self.temp}"

    def settle(self, sources: list[str], at: int) -> list[str]:
        """`sources` of operands computed before the lines emitted from `at` on (guards, range
        checks): each one that may raise is computed into a temp inserted at `at`, in order,
        so that it fails before those lines act, as on the tree walk (left to right)."""
        result = []
        for source in sources:
            if may_raise(source):
                temp = self.fresh()
                self.lines.insert(at, f"{temp} = {source}")
                at += 1
                source = temp
            result.append(source)
        return result

    def in_order(self, nodes: list[ast.Expr]) -> list[tuple[str, str]]:
        """(Source, kind) of each node, computed left to right as on the tree walk: where a
        node emits lines, the operands left of it that may raise are computed first."""
        results: list[tuple[str, str]] = []
        for node in nodes:
            emitted = len(self.lines)
            source, kind = self.visit(node)
            if len(self.lines) != emitted and results:
                sources = self.settle([s for s, _ in results], emitted)
                results = [(s, k) for s, (_, k) in zip(sources, results)]
            results.append((source, kind))
        return results

    def tensor(self, name: str) -> tuple[str, np.ndarray]:
        array = self.arrays.get(name)
        if not isinstance(array, np.ndarray):
            raise Unsupported(name)
        if name not in self.tensors:
            self.tensors[name] = f"T_{len(self.tensors)}"
        return self.tensors[name], array

    def pack(self, name: str) -> tuple[str, list[np.ndarray]]:
        """The variable of a pack of tensors (a list of flat lists, one per item) and its
        arrays: a non-empty pack whose items have one kind."""
        arrays = self.arrays.get(name)
        if not isinstance(arrays, list) or not arrays or \
                not all(isinstance(a, np.ndarray) for a in arrays):
            raise Unsupported("pack of tensors")
        if len({kind_of(a) for a in arrays}) != 1:
            raise Unsupported("pack item types")
        if name not in self.tensors:
            self.tensors[name] = f"T_{len(self.tensors)}"
        return self.tensors[name], arrays

    def item_variable(self, pack: str, item: int) -> str:
        """A variable holding the flat list of one item of a pack, bound before the loops."""
        variable = f"{pack}_{item}"
        self.prologue[variable] = f"{variable} = {pack}[{item}]"
        return variable

    def layout(self, flat: str, arrays: list[np.ndarray], item: str | None,
               message: str) -> Layout:
        """The layout of `flat`: the array, or the item of `arrays` that `item` (a source)
        picks at run time; their ranks must agree, and where their shapes differ, extent and
        stride are looked up by `item`."""
        if len({a.ndim for a in arrays}) != 1:
            raise Unsupported("pack item ranks")

        def per_item(values: list[int]) -> int | str:
            return values[0] if len(set(values)) == 1 else f"{tuple(values)!r}[{item}]"

        ndim = arrays[0].ndim
        extents = tuple(per_item([a.shape[d] for a in arrays]) for d in range(ndim))
        strides = tuple(per_item([int(np.prod(a.shape[d + 1:])) for a in arrays])
                        for d in range(ndim))
        least = tuple(min(a.shape[d] for a in arrays) for d in range(ndim))
        return Layout(flat, kind_of(arrays[0]), extents, strides, least, message)

    def tensor_layout(self, name: str) -> Layout:
        """The layout of a tensor accessed by name."""
        flat, array = self.tensor(name)
        return self.layout(flat, [array], None, f"an index is out of range for '{name}' of "
                                                f"shape {list(array.shape)}")

    def item_layout(self, base: ast.Subscript, node: ast.Node) -> Layout:
        """The layout of `xs[k]`, one item of a pack of tensors: k one int, range-checked before
        the element's indices are computed, as on the tree walk (scalar.py `pack_item`), unless
        provably in range."""
        if not isinstance(base.base, ast.Name) or len(base.items) != 1 or base.trailing_comma \
                or isinstance(base.items[0], (ast.Slice, ast.Expand, ast.Bounded)):
            raise Unsupported("pack item")
        name = base.base.name
        pack, arrays = self.pack(name)
        index = self.index_value(base.items[0])
        if index.lstrip("-").isdigit():  # a compile-time item: that array's own layout
            item = int(index)
            if not 0 <= item < len(arrays):
                raise Unsupported("pack item out of range")  # the tree walk reports it
            array = arrays[item]
            return self.layout(self.item_variable(pack, item), [array], None,
                               f"an index is out of range for item {item} of '{name}' of "
                               f"shape {list(array.shape)}")
        if not index.isidentifier():  # computed once: it may select extents and strides too
            temp = self.fresh()
            self.lines.append(f"{temp} = {index}")
            index = temp
        if not self.in_range(base.items[0], len(arrays)):
            self.check(node, name, index, len(arrays),
                       f"a pack item is out of range for the {len(arrays)} tensors of '{name}'")
        return self.layout(f"{pack}[{index}]", arrays, index,
                           f"an index is out of range for an item of '{name}'")

    def interval(self, node: ast.Expr) -> tuple[int, int] | None:
        """The least and the greatest value an int index expression takes over the loops, for
        one made of index symbols, compile-time ints and `+ - *` (None for any other)."""
        if isinstance(node, ast.Name) and node.name in self.indices:
            bound = self.indices[node.name]
            return None if isinstance(bound, tuple) else (0, bound - 1)
        operands = arithmetic_operands(node)
        if operands is not None:  # `a op b` or a fold `[a, b, ..] op ..`
            intervals = [self.interval(o) for o in operands]
            if any(i is None for i in intervals):
                return None
            result = intervals[0]
            for interval in intervals[1:]:
                result = _combine(node.op, result, interval)
            return result
        try:
            folded = self.compile_time(node)
        except Unsupported:
            return None
        if folded is None or folded[1] != "int":
            return None
        return int(folded[0]), int(folded[0])

    def in_range(self, node: ast.Expr, extent: int) -> bool:
        """The int index expression is provably in range(extent) in every iteration."""
        interval = self.interval(node)
        return interval is not None and 0 <= interval[0] and interval[1] < extent

    def compile_time(self, node: ast.Expr) -> tuple[str, str] | None:
        names = free_names(node)
        runtime = set(self.indices) | set(self.locals) | set(self.arrays)
        if names & runtime or isinstance(node, (ast.Bounded, ast.Expand)):
            return None
        if any(isinstance(self.instance.symbols.get(n), TensorValue) for n in names):
            return None
        try:
            value = evaluate(node, self.instance.environment(self.profile))
        except Diagnostic:
            raise Unsupported("compile-time error") from None
        if isinstance(value, bool):
            return repr(value), "bool"
        if isinstance(value, int):
            return repr(value), "int"
        if isinstance(value, float):
            return self.constant(value), "real"
        raise Unsupported("non-scalar constant")

    # ------------------------------------------------------------------ expressions

    def visit(self, node: Any, *args: Any) -> tuple[str, str]:
        """(Python source, kind) of a scalar expression; a compile-time one is a constant, a
        loop-invariant one that cannot fail is hoisted (`hoist`)."""
        folded = self.compile_time(node)
        if folded is not None:
            return folded
        emitted = len(self.lines)
        source, kind = super().visit(node, *args)
        if len(self.lines) == emitted:
            source = self.hoist(source)
        return source, kind

    def hoist(self, source: str) -> str:
        """`source` (an expression that emitted no lines) computed once per iteration of the
        loop binding the last index it depends on, into a variable `H_n`, where that is not
        the innermost loop and it cannot raise: evaluating it earlier, or in iterations that
        are skipped, or where an inner loop is empty, then changes nothing."""
        if source.isidentifier() or may_raise(source) or _CONSTANT.fullmatch(source):
            return source
        level = self.level(source)
        if level >= self.innermost:
            return source
        for name, value in self.hoisted.get(level, {}).items():
            if value == source and name.startswith("H_"):  # computed there already
                return name
        self.hoists += 1
        name = f"H_{self.hoists}"
        self.define(name, source, level)
        return name

    def define(self, name: str, source: str, level: int) -> None:
        """Compute the variable `name` as `source` at loop depth `level`."""
        self.hoisted.setdefault(level, {})[name] = source
        self.levels[name] = level

    def merge_hoisted(self, body: list[str]) -> None:
        """A hoisted value read once in all the kernel, by a later value hoisted to the same
        depth, is computed inside that one (`H_2 = (a * b) + c` rather than `H_1 = a * b`
        and `H_2 = H_1 + c`)."""
        text = "\n".join([*body, *(v for values in self.hoisted.values() for v in values.values())])
        uses: dict[str, int] = {}
        for name in _HOISTED.findall(text):
            uses[name] = uses.get(name, 0) + 1
        for values in self.hoisted.values():
            for name in [n for n in values if n.startswith("H_") and uses.get(n) == 1]:
                pattern = re.compile(rf"\b{name}\b")
                reader = next((n for n in values if n != name and pattern.search(values[n])),
                              None)
                if reader is None:  # read in the body, or at another depth
                    continue
                value = values.pop(name)
                value = value if _atomic(value) else f"({value})"
                values[reader] = pattern.sub(lambda _: value, values[reader])

    def level(self, source: str) -> int:
        """The loop depth after which `source` has its final value in an iteration: that of
        the innermost loop variable, local or hoisted value it reads; the innermost depth
        where it reads a temporary of the body or the output (written in the loops)."""
        output = self.tensors.get(self.formula.output)
        level = 0
        for name in _IDENTIFIER.findall(source):
            if name in self.depth:
                level = max(level, self.depth[name])
            elif name in self.levels:
                level = max(level, self.levels[name])
            elif _TEMPORARY.fullmatch(name) or \
                    (output is not None and (name == output or name.startswith(output + "_"))):
                return self.innermost
        return level

    def visit_Name(self, node: ast.Name) -> tuple[str, str]:
        if node.name in self.indices:
            if isinstance(self.indices[node.name], tuple):
                raise Unsupported("packed index")
            return f"I_{node.name}", "int"
        if node.name in self.locals:
            return f"L_{node.name}", self.locals[node.name]
        raise Unsupported(node.name)

    def visit_Subscript(self, node: ast.Subscript) -> tuple[str, str]:
        lookup = self.constant_lookup(node)
        if lookup is not None:
            return lookup
        return self.access(node)

    def constant_lookup(self, node: ast.Subscript) -> tuple[str, str] | None:
        """`p[k]` of a compile-time pack `p` of scalars of one type (`zero_point[i__1]`, an
        attribute) and a runtime int `k`: an item of a constant tuple, indexed as the closure
        path indexes it; only where `k` is provably within the pack (else the closure path runs
        and reports it). None when `p` is not compile-time (a tensor access)."""
        names = free_names(node.base)
        if names & (set(self.indices) | set(self.locals) | set(self.arrays)) or any(
                isinstance(self.instance.symbols.get(n), TensorValue) for n in names):
            return None
        if len(node.items) != 1 or node.trailing_comma or \
                isinstance(node.items[0], (ast.Slice, ast.Expand)):
            raise Unsupported("pack indexing")
        try:
            pack = evaluate(node.base, self.instance.environment(self.profile))
        except Diagnostic:
            raise Unsupported("compile-time error") from None
        types = set(map(type, pack)) if isinstance(pack, tuple) else set()
        if len(types) != 1 or not types <= {bool, int, float}:
            raise Unsupported("non-scalar constant")
        position, kind = self.visit(node.items[0])
        interval = self.interval(node.items[0])
        if kind != "int" or interval is None or \
                not (-len(pack) <= interval[0] and interval[1] < len(pack)):
            raise Unsupported("pack index")
        return f"{self.constant(pack)}[{position}]", \
            {bool: "bool", int: "int", float: "real"}[types.pop()]

    def visit_Unary(self, node: ast.Unary) -> tuple[str, str]:
        """`-x`, `+x`, `!x`: rules.unary is Python's `-`, identity and `not` on the kinds it
        accepts (int(±inf) negates itself); the closure path reports the others."""
        operand, kind = self.visit(node.operand)
        rule = rules.unary_function(node.op, kind, self.profile)
        if rule.kind is None:
            raise Unsupported(f"'{node.op}' on {kind}")
        if node.op == "-":
            return f"(-{operand})", rule.kind
        if node.op == "+":
            return operand, rule.kind
        return f"(not {operand})", rule.kind

    def visit_Select(self, node: ast.Select) -> tuple[str, str]:
        """`c ? a : b`: the condition, then only the branch taken, as on the tree walk. Where
        a branch guards or checks an index, the select is a statement `if c: .. else: ..`
        whose branches compute their value into a temp, so their lines act only when taken;
        otherwise a Python conditional expression."""
        if node.otherwise is None:
            raise Unsupported("select without an else branch")
        cond, kind = self.visit(node.cond)
        outer, self.lines = self.lines, []
        then, then_kind = self.visit(node.then)
        then_lines = self.take()
        other, other_kind = self.visit(node.otherwise)
        other_lines = self.take()
        self.lines = outer
        # branches of different types have no kind before they run (the closure path selects
        # values as they are); int kinds differ by the int(±inf) they may be
        result = rules.select_kind(then_kind, other_kind)
        if kind != "bool" or result is None:
            raise Unsupported("select")
        if not then_lines and not other_lines:
            return f"({then} if {cond} else {other})", result
        temp = self.fresh()
        self.lines.append(f"if {cond}:")
        self.lines.extend(f"    {line}" for line in [*then_lines, f"{temp} = {then}"])
        self.lines.append("else:")
        self.lines.extend(f"    {line}" for line in [*other_lines, f"{temp} = {other}"])
        return temp, result

    def visit_SelectItem(self, node: SelectItem) -> tuple[str, str]:
        """An item of an element-wise select (refinterp.lower.fold.SelectItem): the tree walk
        computes both branches, so it is compiled only where nothing in it can fail."""
        emitted = len(self.lines)
        (cond, kind), (then, then_kind), (other, other_kind) = (
            self.visit(part) for part in (node.cond, node.then, node.otherwise))
        result = rules.select_kind(then_kind, other_kind)
        if len(self.lines) != emitted or any(map(may_raise, (cond, then, other))):
            raise Unsupported("element-wise select that may fail")
        if kind != "bool" or result is None:
            raise Unsupported("select")
        return f"({then} if {cond} else {other})", result

    def visit_Builtin(self, node: ast.Builtin) -> tuple[str, str]:
        return self.call(node.name, node.args)

    def visit_Call(self, node: ast.Call) -> tuple[str, str]:
        if len(node.callee) != 1 or node.attributes is not None or node.generics:
            raise Unsupported("call")
        return self.call(node.callee[0], node.args)

    def unsupported(self, node: ast.Node) -> tuple[str, str]:
        """Outside the generated subset (a literal never gets here: it is compile-time)."""
        raise Unsupported(type(node).__name__)

    visit_IntLiteral = visit_RealLiteral = visit_BoolLiteral = visit_Constant = unsupported
    visit_StringLiteral = visit_Placeholder = visit_ListExpr = visit_Range = unsupported
    visit_Expand = visit_Zip = visit_Slice = visit_Bounded = unsupported
    visit_Substitute = visit_Member = unsupported

    def visit_Binary(self, node: ast.Binary) -> tuple[str, str]:
        if fold_with_initial(node):  # `[p0, ..] op .. op init`, as fold.py leaves it
            return self.fold(node.op, node.left, node.right)
        (left, left_kind), (right, right_kind) = self.in_order([node.left, node.right])
        return self.binary(node.op, left, left_kind, right, right_kind)

    def binary(self, op: str, left: str, left_kind: str, right: str, right_kind: str
               ) -> tuple[str, str]:
        """`left op right` by rules.binary_function for the operands' kinds (mixed ones
        converted as the profile says): inline where Python's operator is that rule, else a
        call."""
        rule = rules.binary_function(op, left_kind, right_kind, self.profile)
        if rule.kind is None:  # an error in every iteration: the closure path reports it
            raise Unsupported(f"'{op}' on {left_kind} and {right_kind}")
        op = rules.OP_ALIASES.get(op, op)
        same = left_kind == right_kind
        if op in ("+", "-", "*") and same and left_kind in ("int", "real"):
            return f"({left} {op} {right})", rule.kind
        if op in rules.COMPARISON_OPS and \
                rules.kind_type(left_kind) == rules.kind_type(right_kind):  # none converted
            return f"({left} {op} {right})", rule.kind
        if op in ("&&", "||") and ({left, right} & {"True", "False"}):
            # a compile-time operand (`c || ..` folded): both are computed, so the other one
            # is dropped only where it cannot raise
            known, other = (left, right) if left in ("True", "False") else (right, left)
            absorbing = "False" if op == "&&" else "True"
            if known != absorbing:
                return other, rule.kind
            if not may_raise(other):
                return known, rule.kind
        if op in ("&&", "||", "^", "=>"):  # of two bools
            # both operands are evaluated, as on the closure path (no short circuit)
            source = {"&&": f"({left} & {right})", "||": f"({left} | {right})",
                      "^": f"({left} != {right})", "=>": f"((not {left}) or {right})"}[op]
            return source, rule.kind
        if op == "/" and same and left_kind == "real" and \
                self.constant_value(right) not in (None, 0.0):
            # rules.real_divide is Python's `/` but for a zero divisor
            return f"({left} / {right})", rule.kind
        return f"{self.bound(rule.function, total_binary(op, left_kind, right_kind))}" \
               f"({left}, {right})", rule.kind

    def visit_Fold(self, node: ast.Fold) -> tuple[str, str]:
        return self.fold(node.op, node, None)

    def fold(self, op: str, node: ast.Fold, initial: ast.Expr | None) -> tuple[str, str]:
        """`[p0, p1, ..] op ..` as refinterp.lower.fold leaves it (at least two items, not
        cumulative), or `[p0, ..] op .. op init` (at least one item): every item computed left
        to right, then init, then the left-deep chain `(p0 op p1) op p2 ..`
        (`expr.fold_pack`), or `((init op p0) op p1) ..` (`expr.fold_from`), as on the tree
        walk. The operands that may raise are computed into temps first, so that no
        operation fails before a later operand."""
        operand = node.operand
        if node.cumulative or op not in FOLD_OPS or not isinstance(operand, ast.ListExpr) or \
                len(operand.items) < (2 if initial is None else 1) or \
                any(isinstance(i, (ast.Expand, ast.Range)) for i in operand.items):
            raise Unsupported(f"fold '{op} ..'")
        parts = [*operand.items, *([initial] if initial is not None else [])]
        computed = self.in_order(parts)
        sources = self.settle([s for s, _ in computed], len(self.lines))
        chain = list(zip(sources, (k for _, k in computed)))
        if initial is not None:  # the chain starts from init
            chain = [chain[-1], *chain[:-1]]
        result, kind = chain[0]
        for source, item_kind in chain[1:]:
            result, kind = self.binary(op, result, kind, source, item_kind)
        return result, kind

    def call(self, name: str, args: tuple[ast.Expr, ...]) -> tuple[str, str]:
        """A cast or a one-argument built-in function, by the numeric rules (the function
        rules.cast_function / builtin_function gives for the operand's kind)."""
        target = self.instance.dtypes.get(name, name)
        if len(args) != 1:
            raise Unsupported("arguments")
        operand, kind = self.visit(args[0])
        if target in CASTS:
            if target == rules.kind_type(kind):  # a no-op (§2.4) on a generated Python value
                return operand, kind
            rule = rules.cast_function(target, kind, self.profile)
            total = total_cast(target, kind)
            interval = self.interval(args[0]) if (target, kind) == ("real", "int") else None
            if interval is not None and INT64_MIN <= interval[0] and interval[1] <= INT64_MAX:
                # an index expression, far within the float range: rules' real(int) is
                # Python's float there (it only differs past the range, giving ±inf)
                return f"{self.bound(float, True)}({operand})", rule.kind
        else:
            rule = rules.builtin_function(name, kind, self.profile)
            total = total_builtin(name, kind)
        if rule.kind is None:  # an error in every iteration: the closure path reports it
            raise Unsupported(f"'{name}' of {kind}")
        return f"{self.bound(rule.function, total)}({operand})", rule.kind

    def bound(self, function: Callable, total: bool = False) -> str:
        """A kernel variable holding `function`, bound once before the loops (a local is read
        faster than `K[n]`): `G_n` for a function that never raises on the operands it gets
        (`total`), else `F_n` (`may_raise` looks for calls of those)."""
        prefix = "G" if total else "F"
        for n, known in enumerate(self.constants):
            if known is function and f"{prefix}_{n}" in self.prologue:
                return f"{prefix}_{n}"
        source = self.constant(function)
        name = f"{prefix}_{len(self.constants) - 1}"
        self.prologue[name] = f"{name} = {source}"
        return name

    def constant_value(self, source: str) -> Any:
        """The value of a compile-time real constant's source `K[n]`, else None."""
        if source.startswith("K[") and source.endswith("]") and source[2:-1].isdigit():
            return self.constants[int(source[2:-1])]
        return None

    def update(self, op: str, flat: str, out_kind: str, kind: str, body: list[str]) -> str:
        """Append the lines combining `v` (of `kind`) with the output's element `{flat}[o]` by
        the update operator `op` (`=` keeps `v`), as the closure path's `combine` and `checked`
        (scalar.py) do; the result has the output's kind, else Unsupported."""
        if op not in ("=", ":="):
            if op not in UPDATE_OPS:
                raise Unsupported(op)
            rule = rules.binary_function(UPDATE_OPS[op], out_kind, kind, self.profile)
            if rule.kind is None:
                raise Unsupported(op)
            if kind == out_kind and op in ("+=", "*=") and kind in ("int", "real"):
                body.append(f"v = {flat}[o] {UPDATE_OPS[op]} v")
            elif kind == out_kind and op in ("&=", "|="):  # of two bools
                body.append(f"v = {flat}[o] {'and' if op == '&=' else 'or'} v")
            else:
                body.append(f"v = {self.bound(rule.function)}({flat}[o], v)")
            kind = rule.kind
        if out_kind == "int" and kind != "int" and rules.kind_type(kind) == "int":
            # a value that may be int(±inf): stored, it saturates
            body.append("if v.__class__ is not int: v = MAX if v > 0 else MIN")
            kind = "int"
        if kind != out_kind:  # the closure path reports it
            raise Unsupported("value type")
        return kind

    def access(self, node: ast.Subscript) -> tuple[str, str]:
        """An element of a tensor `x[..]`, of an item of a pack of tensors `xs[k][..]`, or an
        item of a pack of scalars chosen at run time `[a, b, ..][j]` (left so by fold)."""
        base = node.base
        if isinstance(base, ast.ListExpr):
            return self.pick(node)
        if isinstance(base, ast.Subscript):
            layout = self.item_layout(base, node)
        elif isinstance(base, ast.Name):
            layout = self.tensor_layout(base.name)
        else:
            raise Unsupported("access base")
        offset = self.offset(node, layout)
        return f"{layout.flat}[{offset}]", layout.kind

    def pick(self, node: ast.Subscript) -> tuple[str, str]:
        """`[a, b, ..][j]`: every item computed (as the tree walk computes the whole pack), then
        the one j picks; j must be provably in range (the tree walk has no diagnostic for it)."""
        items = node.base.items
        if len(node.items) != 1 or node.trailing_comma or \
                any(isinstance(i, (ast.Expand, ast.Range)) for i in items):
            raise Unsupported("pack indexing")
        position = node.items[0]
        *sources, (index, index_kind) = self.in_order([*items, position])
        if len({kind for _, kind in sources}) != 1 or index_kind != "int" or \
                not self.in_range(position, len(items)):
            raise Unsupported("pack index")
        return f"({''.join(f'{s}, ' for s, _ in sources)})[{index}]", sources[0][1]

    def offset(self, node: ast.Subscript, layout: Layout) -> str:
        """Source of the flat offset, emitting guards and range checks before use."""
        ndim = len(layout.extents)
        dims: list[tuple[str, bool]] = []  # (index source, provably in range)
        for item in node.items:
            if isinstance(item, ast.Expand) and item.count is None and \
                    isinstance(item.operand, ast.Name) and \
                    isinstance(self.indices.get(item.operand.name), tuple):
                # `i..` of a packed index `i < s`: one loop variable per dimension
                name_, bounds = item.operand.name, self.indices[item.operand.name]
                for k, bound in enumerate(bounds):
                    dimension = len(dims)
                    extent = layout.least[dimension] if dimension < ndim else -1
                    dims.append((f"I_{name_}_{k}", bound <= extent))
                continue
            if isinstance(item, (ast.Expand, ast.Slice)):
                raise Unsupported("expanded index")
            emitted = len(self.lines)
            index, provable = self.single_index(item, layout, len(dims))
            if len(self.lines) != emitted:  # the indices left of it that may fail fail first
                sources = self.settle([d for d, _ in dims], emitted)
                dims = [(d, proven) for d, (_, proven) in zip(sources, dims)]
            dims.append((index, provable))
        if len(dims) != ndim:
            raise Unsupported("rank")
        terms = []
        for dimension, (index, provable) in enumerate(dims):
            if not provable:
                if not index.isidentifier():  # checked, then used: computed once
                    temp = self.fresh()
                    self.lines.append(f"{temp} = {index}")
                    index = temp
                self.check(node, "", index, layout.extents[dimension], layout.message)
            stride = layout.strides[dimension]
            terms.append(index if stride == 1 else f"{index} * {stride}")
        # the terms of indices bound outside the innermost loop, added once (ints: exact)
        invariant = [t for t in terms if self.level(t) < self.innermost]
        if len(invariant) > 1 or invariant and not invariant[0].isidentifier():
            terms = [self.hoist(f"({' + '.join(invariant)})"),
                     *(t for t in terms if t not in invariant)]
        return " + ".join(terms) if terms else "0"

    def single_index(self, item: ast.Expr, layout: Layout, dimension: int) -> tuple[str, bool]:
        """(Source, provably in range) of one index; a guard `|e|` skips or remaps here."""
        if dimension >= len(layout.extents):
            raise Unsupported("rank")
        extent, least = layout.extents[dimension], layout.least[dimension]
        if isinstance(item, ast.Bounded):
            parts = [item.index] if item.lower is None else [item.index, item.lower, item.upper]
            values = self.in_order(parts)  # the tree walk computes all three, then resolves
            if any(kind != "int" for _, kind in values):
                raise Unsupported("non-int index")
            temp = self.fresh()
            self.lines.append(f"{temp} = {values[0][0]}")
            if item.lower is None:
                self.lines.append(f"if not 0 <= {temp} < {extent}: continue")
                return temp, True
            # a bound that may raise is computed whether or not it is taken
            low, high = self.settle([values[1][0], values[2][0]], len(self.lines))
            self.lines.append(f"if {temp} < 0: {temp} = {low}")
            self.lines.append(f"elif {temp} >= {extent}: {temp} = {high}")
            # a remapped value is checked like any index, unless both are in range
            return temp, self.in_range(item.lower, least) and self.in_range(item.upper, least)
        return self.index_value(item), self.in_range(item, least)

    def check(self, node: ast.Node, name: str, temp: str, extent: int | str,
              message: str | None = None) -> None:
        """A range check of `temp`, reported as `message` (by default, of tensor `name`)."""
        if message is None:
            array = self.arrays.get(name)
            shape = f" of shape {list(array.shape)}" if isinstance(array, np.ndarray) else ""
            message = f"an index is out of range for '{name}'{shape}"
        self.accesses.append((node, message))
        names = ", ".join(f"{n!r}: {self.index_tuple(n)}" for n in self.indices)
        self.lines.append(f"if not 0 <= {temp} < {extent}: "
                          f"raise OOR({len(self.accesses) - 1}, ({temp},), {{{names}}})")

    def index_tuple(self, name: str) -> str:
        """Source of an index symbol's current value (a tuple for a packed index)."""
        bound = self.indices[name]
        if isinstance(bound, tuple):
            return "(" + "".join(f"I_{name}_{k}, " for k in range(len(bound))) + ")"
        return f"I_{name}"

    def index_value(self, node: ast.Expr) -> str:
        source, kind = self.visit(node)
        if kind != "int":
            raise Unsupported("non-int index")
        return source

    # ------------------------------------------------------------------ the formula

    def generate(self) -> str:
        formula = self.formula
        if len(self.depth) > MAX_LOOPS:
            raise Unsupported(f"{len(self.depth)} nested loops (at most {MAX_LOOPS})")
        body: list[str] = []
        for local in formula.locals:
            emitted = len(self.lines)
            source, kind = self.visit(local.value)
            name = f"L_{local.name}"
            level = self.level(source) if len(self.lines) == emitted and \
                not may_raise(source) else self.innermost
            if level < self.innermost:  # loop-invariant and cannot fail: hoisted
                self.define(name, source, level)
            else:
                self.lines.append(f"{name} = {source}")
                self.levels[name] = level
            self.locals[local.name] = kind
        body.extend(self.take())
        if formula.condition is not None:
            cond, kind = self.visit(formula.condition)
            body.extend(self.take())
            if kind != "bool":
                raise Unsupported("condition")
            body.append(f"if not {cond}: continue")
        target = ast.Subscript(ast.Name(formula.output), formula.access, span=formula.node.span)
        if formula.item is None and isinstance(self.arrays.get(formula.output), list):
            body.extend(self.packed_store(target))
            return self.kernel(body)
        value, kind = self.visit(formula.value)
        body.extend(self.take())
        body.append(f"v = {value}")  # the value, then where it goes, as on the tree walk
        if formula.item is None:
            layout = self.tensor_layout(formula.output)
        else:  # `ys[k][..] = ..`
            item = ast.Subscript(ast.Name(formula.output), (formula.item,), span=target.span)
            layout = self.item_layout(item, target)
        out_flat, out_kind = layout.flat, layout.kind
        offset = self.offset(target, layout)
        body.extend(self.take())
        body.append(f"o = {offset}")
        kind = self.update(formula.op, out_flat, out_kind, kind, body)
        if out_kind == "int":
            body.append("if not MIN <= v <= MAX: raise OVERFLOW(v)")
        body.append(f"{out_flat}[o] = v")
        # (an item `ys[k]` of a pack may be chosen by the innermost index: not kept)
        kept = self.accumulator(body, out_flat, offset) if formula.item is None else None
        return self.kernel(body, (out_flat, kept) if kept is not None else None)

    def accumulator(self, body: list[str], flat: str, offset: str) -> str | None:
        """Where the output element `{flat}[o]` does not depend on the innermost loop and
        nothing else reads or writes the output, the innermost loop keeps that element in a
        local `A` instead (read before the loop, written back after it: `kernel`): the same
        operations on the same values in the same order, without an indexed load and store
        per iteration. Rewrites `body` and returns `offset`, or returns None (body unchanged).
        An error inside the loop discards every output anyway (`compile_formula.run` copies
        the flat lists back only after the kernel returns)."""
        if not self.depth or may_raise(offset) or self.level(offset) >= self.innermost:
            return None
        element = f"{flat}[o]"
        if f"o = {offset}" not in body or any(re.search(r"\bA\b", line) for line in body):
            return None
        rewritten = [line.replace(element, "A") for line in body if line != f"o = {offset}"]
        elsewhere = re.compile(rf"\b{re.escape(flat)}\b|\bo\b")  # the output, its offset
        if rewritten[-1] != "A = v" or any(elsewhere.search(line) for line in [
                *rewritten, *(v for values in self.hoisted.values() for v in values.values())]):
            return None
        # `v = E; v = A + v; A = v` reads better, and runs faster, as `A = A + (E)`
        if len(rewritten) >= 3 and rewritten[-1] == "A = v" and \
                re.fullmatch(r"v = A [+*] v", rewritten[-2]) and \
                rewritten[-3].startswith("v = ") and not re.search(r"\bv\b", rewritten[-3][4:]):
            rewritten[-3:] = [f"A = A {rewritten[-2][6]} ({rewritten[-3][4:]})"]
        body[:] = rewritten
        return offset

    def packed_store(self, target: ast.Subscript) -> list[str]:
        """The lines of a packed assignment `ys[..] = v` (`=` or `:=`; §2.12): the value (one
        for every item, or a pack `[v0, v1, ..]` of one per item), then each item's position,
        then the writes, as the tree walk's update of several cells. Its position is resolved
        once, against no extent, so a guard `|e|` (which would skip here) is refused."""
        formula = self.formula
        pack, arrays = self.pack(formula.output)
        if formula.op not in ("=", ":=") or \
                any(isinstance(i, ast.Bounded) for i in formula.access):
            raise Unsupported("packed update")
        value = formula.value
        if isinstance(value, ast.ListExpr):
            if len(value.items) != len(arrays) or \
                    any(isinstance(i, (ast.Expand, ast.Range)) for i in value.items):
                raise Unsupported("packed values")
            values = []
            for j, item in enumerate(value.items):  # each computed before the next's checks
                source, kind = self.visit(item)
                self.lines.append(f"v{j} = {source}")
                values.append((f"v{j}", kind))
        else:
            source, kind = self.visit(value)
            self.lines.append(f"v = {source}")
            values = [("v", kind)] * len(arrays)
        writes = []
        for j, (array, (name, kind)) in enumerate(zip(arrays, values)):
            flat = self.item_variable(pack, j)
            layout = self.layout(flat, [array], None,
                                 f"an index is out of range for item {j} of "
                                 f"'{formula.output}' of shape {list(array.shape)}")
            if kind != layout.kind:
                raise Unsupported("value type")
            self.lines.append(f"o{j} = {self.offset(target, layout)}")
            if kind == "int":
                self.lines.append(f"if not MIN <= {name} <= MAX: raise OVERFLOW({name})")
            writes.append(f"{flat}[o{j}] = {name}")
        return self.take() + writes

    def kernel(self, body: list[str], accumulate: tuple[str, str] | None = None) -> str:
        """The source of the kernel: the body inside the formula's loops; with `accumulate`
        (the output's flat list and an offset, `accumulator`), that element held in `A` around
        the innermost loop."""
        formula = self.formula
        loops = []
        for r in formula.indices:  # declaration order, row-major within a packed index
            if isinstance(r.bound, tuple):
                loops.extend(f"for I_{r.name}_{k} in range({n}):"
                             for k, n in enumerate(r.bound))
            else:  # index variables are prefixed: an index `o` or `v` must not clash
                loops.append(f"for I_{r.name} in range({r.bound}):")
        source = ["def kernel(" + ", ".join(["K", "OOR", "OVERFLOW", "MIN", "MAX",
                                             *self.tensors.values()]) + "):"]
        source.extend(f"    {line}" for line in self.prologue.values())
        self.merge_hoisted(body + ([accumulate[1]] if accumulate else []))
        flat, kept = accumulate if accumulate else (None, None)
        depth = 1
        for loop in ["", *loops]:  # the values hoisted before the loops, then into each loop
            if loop:
                if accumulate and depth == len(loops):  # around the innermost loop
                    source.append("    " * depth + f"A = {flat}[{kept}]")
                source.append("    " * depth + loop)
                depth += 1
            source.extend("    " * depth + f"{name} = {value}"
                          for name, value in self.hoisted.get(depth - 1, {}).items())
        if not loops:  # a rank-0 formula runs once; `continue` needs a loop
            source.append("    " * depth + "for _once in (0,):")
            depth += 1
        source.extend("    " * depth + line for line in body)
        if accumulate:
            source.append("    " * (depth - 1) + f"{flat}[{kept}] = A")
        return "\n".join(source) + "\n"

    def take(self) -> list[str]:
        lines, self.lines = self.lines, []
        return lines


class IntOverflow(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value


def _say(report: list[str] | None, how: str) -> None:
    if report is not None:
        report.append(how)


def _iteration(error: Exception, formula: Formula) -> dict | None:
    """The index values of the iteration in which the kernel raised `error`: its loop
    variables, read from the kernel's frame in the traceback (nothing is tracked per
    iteration)."""
    traceback = error.__traceback__
    while traceback is not None and traceback.tb_frame.f_code.co_name != "kernel":
        traceback = traceback.tb_next
    if traceback is None:
        return None
    variables = traceback.tb_frame.f_locals
    try:
        return {r.name: tuple(variables[f"I_{r.name}_{k}"] for k in range(len(r.bound)))
                if isinstance(r.bound, tuple) else variables[f"I_{r.name}"]
                for r in formula.indices}
    except KeyError:  # not in a loop yet
        return None


def _generate(generator: Generator) -> str:
    """The generated source, or Unsupported (also for a formula nested too deeply)."""
    try:
        return generator.generate()
    except RecursionError:
        raise Unsupported("nested too deeply") from None


def compile_formula(instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                    profile: rules.Profile,
                    fail: Callable[[ast.Node, str, dict | None], Diagnostic],
                    report: list[str] | None = None) -> Callable[[], None] | None:
    """A runner for `formula` from generated source, or None outside the supported subset;
    `report` (if given) receives how the formula runs and, for the tree walk, why.

    The source depends on the instance, the formula, the profile and the layout of the arrays
    (kinds, shapes, null inputs, pack lengths: never their values), so it is generated and
    compiled once per instance for each layout (`_compiled`, kept on the instance) and
    only the runner, which reads this run's arrays, is made per call: generating and
    compiling cost about 0.4 ms per formula, every invocation of an operator in a loop."""
    store = derived(instance, "compiled formulas", dict)
    key = (id(formula), profile.name, _layout(arrays))
    entry = store.get(key)
    if entry is None or entry[0] is not formula:
        entry = (formula, *_compiled(instance, formula, arrays, profile))
        store[key] = entry
    _, messages, compiled = entry
    for message in messages:
        _say(report, message)
    if compiled is None:
        return None
    kernel, generator, names = compiled
    iterations = formula.iterations()

    def elements(array: np.ndarray, name: str) -> Any:
        """The elements of `array`, row-major, read as Python values: a list, or for an input
        larger than the formula's iteration count (which reads only part of it, as gather_nd
        does) a memoryview of it, read in place rather than copied (its items are the same
        Python floats, ints and bools)."""
        if name != formula.output and array.size > iterations and \
                array.dtype in (np.float64, np.int64, np.bool_):
            return memoryview(np.ascontiguousarray(array).reshape(-1))
        return array.ravel().tolist()

    def run() -> None:
        # a flat sequence per tensor, a list of them per pack of tensors
        flats = [[elements(a, name) for a in arrays[name]] if isinstance(arrays[name], list)
                 else elements(arrays[name], name) for name in names]
        try:
            kernel(generator.constants, OutOfRange, IntOverflow, INT64_MIN, INT64_MAX, *flats)
        except OutOfRange as error:
            node, message = generator.accesses[error.access]
            raise fail(node, message, error.indices) from None
        except IntOverflow as error:
            raise fail(formula.node, f"the int result {error.value} does not fit in int64",
                       _iteration(error, formula)) from None
        except rules.NumericError as error:
            raise fail(formula.node, error.message, _iteration(error, formula)) from None
        output, target = flats[names.index(formula.output)], arrays[formula.output]
        pairs = zip(target, output) if isinstance(target, list) else [(target, output)]
        for array, flat in pairs:  # the output, or every item of an output pack
            array[...] = np.array(flat, dtype=array.dtype).reshape(array.shape)

    return run


def is_compiled(instance: OperatorInstance, formula: Formula) -> bool:
    """Whether `formula`'s code was generated for `instance` before (for some profile and
    layout): `auto`'s cost model then counts no generation (engines.choose)."""
    store = derived(instance, "compiled formulas", dict)
    return any(entry[0] is formula and entry[2] is not None for entry in store.values())


def _layout(arrays: dict[str, Any]) -> tuple:
    """What generated code may depend on of the arrays: per name, null, or the kind and
    shape of the array (of each array of a pack)."""
    def of(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return (value.dtype.str, value.shape)
        if isinstance(value, list):
            return tuple(of(item) for item in value)
        return type(value).__name__
    return tuple((name, of(value)) for name, value in arrays.items())


def _compiled(instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
              profile: rules.Profile) -> tuple[list[str], tuple | None]:
    """The messages `compile_formula` reports and (the kernel, its generator, the names of the
    tensors it reads in order), or None where the tree walk runs the formula."""
    messages: list[str] = []
    if formula.counted is not None:  # the tree walk counts the stores (plan.CountedExtent)
        messages.append(f"tree walk (it counts the dynamic extent '{formula.counted.name}')")
        return messages, None
    nesting = max(map(tree_depth, nodes((formula.value, formula.condition, formula.access,
                                    tuple(local.value for local in formula.locals)))))
    if nesting > MAX_NESTING:
        messages.append(f"tree walk (nested {nesting} deep, above {MAX_NESTING})")
        return messages, None
    generator = Generator(instance, formula, arrays, profile)
    how = "generated code"
    try:
        source = _generate(generator)
    except Unsupported as unsupported:
        # a rank-polymorphic or configurable formula: fold what the instance decides (packed
        # indices, selects on attributes, optional operands) and try again
        reasons = [f"not generated: {unsupported}"]
        try:
            folded = fold_formula(instance, formula, arrays, profile, reasons)
        except RecursionError:
            folded, reasons = None, reasons + ["nested too deeply"]
        if folded is None:
            messages.append(f"tree walk ({reasons[0]}; not folded: {reasons[-1]})")
            return messages, None
        generator = Generator(instance, folded, arrays, profile)
        try:
            source = _generate(generator)
        except Unsupported as still:
            messages.append(f"tree walk ({reasons[0]}; folded, still not generated: {still})")
            return messages, None
        how = "generated code after folding"
    namespace: dict[str, Any] = {}
    try:
        code = compile(source, f"<formula {formula.node.span}>", "exec")
    except (SyntaxError, RecursionError) as error:  # nested too deeply for Python
        messages.append(f"tree walk (generated code does not compile: {error})")
        return messages, None
    messages.append(how)
    exec(code, namespace)
    generator.arrays = {}  # kept with the kernel: it must not keep this run's arrays alive
    return messages, (namespace["kernel"], generator, list(generator.tensors))

