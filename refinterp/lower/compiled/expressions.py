"""Code generation for the compiled engine, part one: the expressions (`Expressions`, an
expression pass giving the Python source and kind of a scalar expression). Tensor accesses are
`accesses.Accesses`; the formula and its kernel, `kernel.Generator`.

Every operation, cast and built-in function is resolved once per formula, for the kinds of its
operands, by refinterp.numeric.rules (`binary_function`, `unary_function`, `cast_function`,
`builtin_function`): the very function the reference's generic `rules.binary` etc. call for
values of those kinds, bound to a kernel variable before the loops and called per element. It is
inlined only where a Python operator is that function: `+ - *` on two ints or two reals (exact
ints, IEEE reals), comparisons of one type, unary `- + !`, the logical operators on bools, real
`/` by a non-zero compile-time constant, and casts of a value to its own type. Kinds are "int",
"real", "bool" and the int kinds that may be int(±inf) (rules.INT_OR_INF ...: `int(real)`), on
which only comparisons and unary `-` are inlined (`rules.IntInfinity` implements those);
`real(i)` of an index expression is Python's `float`.

Order: operands are computed left to right, as on the reference. Guards and range checks are
lines before the expression that uses them, so an operand that may raise (a call of a rule
function, `may_raise`) left of an operand emitting such lines is computed into a temp before
them (`in_order`); a select whose branch emits lines is an `if`/`else` statement, so they act
only when the branch is taken. A value that depends only on outer loop indices and cannot raise
is computed once per iteration of the loop binding its last index (`hoist`); one that may raise
stays where the reference computes it.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.binding import free_names
from refinterp.language.expr import evaluate
from refinterp.language.invocation import OperatorInstance
from refinterp.language.types import CASTS, fold_with_initial
from refinterp.language.values import TensorValue
from refinterp.lower.common import Refused
from refinterp.lower.compiled.fold import FOLD_OPS, SelectItem, arithmetic_operands
from refinterp.lower.compiled.source import (CONSTANT, HOISTED, IDENTIFIER, TEMPORARY, atomic,
                                             combine_intervals, may_raise, total_binary,
                                             total_builtin, total_cast)
from refinterp.lower.plan import INT64_MAX, INT64_MIN, Formula
from refinterp.numeric import rules
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor


class Expressions(ExprVisitor[tuple[str, str]]):
    """The state of one formula's code generation and its scalar expressions. As an expression
    pass, `visit(node)` gives the (Python source, kind) of a scalar expression, or raises
    Refused (outside the generated subset)."""

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
        so that it fails before those lines act, as on the reference (left to right)."""
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
        """(Source, kind) of each node, computed left to right as on the reference: where a
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
                result = combine_intervals(node.op, result, interval)
            return result
        try:
            folded = self.compile_time(node)
        except Refused:
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
            raise Refused("compile-time error") from None
        if isinstance(value, bool):
            return repr(value), "bool"
        if isinstance(value, int):
            return repr(value), "int"
        if isinstance(value, float):
            return self.constant(value), "real"
        raise Refused("non-scalar constant")

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
        if source.isidentifier() or may_raise(source) or CONSTANT.fullmatch(source):
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
        for name in HOISTED.findall(text):
            uses[name] = uses.get(name, 0) + 1
        for values in self.hoisted.values():
            for name in [n for n in values if n.startswith("H_") and uses.get(n) == 1]:
                pattern = re.compile(rf"\b{name}\b")
                reader = next((n for n in values if n != name and pattern.search(values[n])),
                              None)
                if reader is None:  # read in the body, or at another depth
                    continue
                value = values.pop(name)
                value = value if atomic(value) else f"({value})"
                values[reader] = pattern.sub(lambda _: value, values[reader])

    def level(self, source: str) -> int:
        """The loop depth after which `source` has its final value in an iteration: that of
        the innermost loop variable, local or hoisted value it reads; the innermost depth
        where it reads a temporary of the body or the output (written in the loops)."""
        output = self.tensors.get(self.formula.output)
        level = 0
        for name in IDENTIFIER.findall(source):
            if name in self.depth:
                level = max(level, self.depth[name])
            elif name in self.levels:
                level = max(level, self.levels[name])
            elif TEMPORARY.fullmatch(name) or \
                    (output is not None and (name == output or name.startswith(output + "_"))):
                return self.innermost
        return level

    def visit_Name(self, node: ast.Name) -> tuple[str, str]:
        if node.name in self.indices:
            if isinstance(self.indices[node.name], tuple):
                raise Refused("packed index")
            return f"I_{node.name}", "int"
        if node.name in self.locals:
            return f"L_{node.name}", self.locals[node.name]
        raise Refused(node.name)


    def visit_Unary(self, node: ast.Unary) -> tuple[str, str]:
        """`-x`, `+x`, `!x`: rules.unary is Python's `-`, identity and `not` on the kinds it
        accepts (int(±inf) negates itself); the reference reports the others."""
        operand, kind = self.visit(node.operand)
        rule = rules.unary_function(node.op, kind, self.profile)
        if rule.kind is None:
            raise Refused(f"'{node.op}' on {kind}")
        if node.op == "-":
            return f"(-{operand})", rule.kind
        if node.op == "+":
            return operand, rule.kind
        return f"(not {operand})", rule.kind

    def visit_Select(self, node: ast.Select) -> tuple[str, str]:
        """`c ? a : b`: the condition, then only the branch taken, as on the reference. Where
        a branch guards or checks an index, the select is a statement `if c: .. else: ..`
        whose branches compute their value into a temp, so their lines act only when taken;
        otherwise a Python conditional expression."""
        if node.otherwise is None:
            raise Refused("select without an else branch")
        cond, kind = self.visit(node.cond)
        outer, self.lines = self.lines, []
        then, then_kind = self.visit(node.then)
        then_lines = self.take()
        other, other_kind = self.visit(node.otherwise)
        other_lines = self.take()
        self.lines = outer
        # branches of different types have no kind before they run (the reference selects
        # values as they are); int kinds differ by the int(±inf) they may be
        result = rules.select_kind(then_kind, other_kind)
        if kind != "bool" or result is None:
            raise Refused("select")
        if not then_lines and not other_lines:
            return f"({then} if {cond} else {other})", result
        temp = self.fresh()
        self.lines.append(f"if {cond}:")
        self.lines.extend(f"    {line}" for line in [*then_lines, f"{temp} = {then}"])
        self.lines.append("else:")
        self.lines.extend(f"    {line}" for line in [*other_lines, f"{temp} = {other}"])
        return temp, result

    def visit_SelectItem(self, node: SelectItem) -> tuple[str, str]:
        """An item of an element-wise select (refinterp.lower.compiled.fold.SelectItem): the
        reference computes both branches, so it is compiled only where nothing in it can
        fail."""
        emitted = len(self.lines)
        (cond, kind), (then, then_kind), (other, other_kind) = (
            self.visit(part) for part in (node.cond, node.then, node.otherwise))
        result = rules.select_kind(then_kind, other_kind)
        if len(self.lines) != emitted or any(map(may_raise, (cond, then, other))):
            raise Refused("element-wise select that may fail")
        if kind != "bool" or result is None:
            raise Refused("select")
        return f"({then} if {cond} else {other})", result

    def visit_Builtin(self, node: ast.Builtin) -> tuple[str, str]:
        return self.call(node.name, node.args)

    def visit_Call(self, node: ast.Call) -> tuple[str, str]:
        if len(node.callee) != 1 or node.attributes is not None or node.generics:
            raise Refused("call")
        return self.call(node.callee[0], node.args)

    def unsupported(self, node: ast.Node) -> tuple[str, str]:
        """Outside the generated subset (a literal never gets here: it is compile-time)."""
        raise Refused(type(node).__name__)

    visit_IntLiteral = visit_RealLiteral = visit_BoolLiteral = visit_Constant = unsupported
    visit_StringLiteral = visit_Placeholder = visit_ListExpr = visit_Range = unsupported
    visit_Expand = visit_Zip = visit_Slice = visit_Bounded = unsupported
    visit_Substitute = visit_Member = unsupported

    def visit_Binary(self, node: ast.Binary) -> tuple[str, str]:
        if fold_with_initial(node):  # `[p0, ..] op .. op init`, as compiled.fold leaves it
            return self.fold(node.op, node.left, node.right)
        (left, left_kind), (right, right_kind) = self.in_order([node.left, node.right])
        return self.binary(node.op, left, left_kind, right, right_kind)

    def binary(self, op: str, left: str, left_kind: str, right: str, right_kind: str
               ) -> tuple[str, str]:
        """`left op right` by rules.binary_function for the operands' kinds (mixed ones
        converted as the profile says): inline where Python's operator is that rule, else a
        call."""
        rule = rules.binary_function(op, left_kind, right_kind, self.profile)
        if rule.kind is None:  # an error in every iteration: the reference reports it
            raise Refused(f"'{op}' on {left_kind} and {right_kind}")
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
            # both operands are evaluated, as on the reference (no short circuit)
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
        """`[p0, p1, ..] op ..` as refinterp.lower.compiled.fold leaves it (at least two items, not
        cumulative), or `[p0, ..] op .. op init` (at least one item): every item computed left
        to right, then init, then the left-deep chain `(p0 op p1) op p2 ..`
        (`expr.fold_pack`), or `((init op p0) op p1) ..` (`expr.fold_from`), as on the tree
        walk. The operands that may raise are computed into temps first, so that no
        operation fails before a later operand."""
        operand = node.operand
        if node.cumulative or op not in FOLD_OPS or not isinstance(operand, ast.ListExpr) or \
                len(operand.items) < (2 if initial is None else 1) or \
                any(isinstance(i, (ast.Expand, ast.Range)) for i in operand.items):
            raise Refused(f"fold '{op} ..'")
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
            raise Refused("arguments")
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
        if rule.kind is None:  # an error in every iteration: the reference reports it
            raise Refused(f"'{name}' of {kind}")
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

