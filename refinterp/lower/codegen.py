"""Fast path of the scalar engine: a formula compiled to Python source (nested `for` loops over
flat lists), for the common subset where every index is a single int and every operand type is
known. The result must equal the closure path of `scalar.py` exactly (same loop order, same
operations in the same order, same numeric rules), which tests/test_codegen.py checks; anything
outside the subset returns None and runs on the closure path. A formula refused as written is
first partially evaluated in its instance (refinterp.lower.fold: packed indices expanded,
selects and `??` on compile-time values decided, pack locals inlined) and tried again.

Arithmetic `+ - *` and comparisons are inlined only when both operands have the same type, where
Python's own int and float operations are the spec's (exact ints, IEEE reals); every other
operation calls refinterp.numeric.rules, as the closure path does.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.binding import free_names
from refinterp.language.expr import evaluate
from refinterp.language.invocation import OperatorInstance
from refinterp.language.types import CASTS
from refinterp.language.values import TensorValue
from refinterp.lower.fold import fold_formula
from refinterp.lower.plan import INT64_MAX, INT64_MIN, UPDATE_OPS, Formula
from refinterp.numeric import rules
from refinterp.numeric.representation import kind_of
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor

INLINE = {"+": "+", "-": "-", "*": "*", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
          "==": "==", "!=": "!="}


class Unsupported(Exception):
    """The formula is outside the generated subset; the closure path runs it."""


class OutOfRange(Exception):
    """An unguarded index fell outside its tensor (raised by generated code)."""

    def __init__(self, access: int, position: tuple, indices: dict) -> None:
        super().__init__(access)
        self.access, self.position, self.indices = access, position, indices


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
        self.accesses: list[tuple[ast.Node, str]] = []
        self.tensors: dict[str, str] = {}  # tensor name -> variable of its flat list
        self.lines: list[str] = []
        self.temp = 0

    # ------------------------------------------------------------------ helpers

    def constant(self, value: Any) -> str:
        self.constants.append(value)
        return f"K[{len(self.constants) - 1}]"

    def fresh(self) -> str:
        self.temp += 1
        return f"t{self.temp}"

    def tensor(self, name: str) -> tuple[str, np.ndarray]:
        array = self.arrays.get(name)
        if not isinstance(array, np.ndarray):
            raise Unsupported(name)
        if name not in self.tensors:
            self.tensors[name] = f"T_{len(self.tensors)}"
        return self.tensors[name], array

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
        """(Python source, kind) of a scalar expression; a compile-time one is a constant."""
        folded = self.compile_time(node)
        if folded is not None:
            return folded
        return super().visit(node, *args)

    def visit_Name(self, node: ast.Name) -> tuple[str, str]:
        if node.name in self.indices:
            if isinstance(self.indices[node.name], tuple):
                raise Unsupported("packed index")
            return f"I_{node.name}", "int"
        if node.name in self.locals:
            return f"L_{node.name}", self.locals[node.name]
        raise Unsupported(node.name)

    def visit_Subscript(self, node: ast.Subscript) -> tuple[str, str]:
        return self.access(node)

    def visit_Unary(self, node: ast.Unary) -> tuple[str, str]:
        operand, kind = self.visit(node.operand)
        if node.op == "-" and kind in ("int", "real"):
            return f"(-{operand})", kind
        if node.op == "+" and kind in ("int", "real"):
            return operand, kind
        if node.op == "!" and kind == "bool":
            return f"(not {operand})", "bool"
        raise Unsupported(node.op)

    def visit_Select(self, node: ast.Select) -> tuple[str, str]:
        if node.otherwise is None:
            raise Unsupported("select without an else branch")
        cond, kind = self.visit(node.cond)
        emitted = len(self.lines)
        then, then_kind = self.visit(node.then)
        other, other_kind = self.visit(node.otherwise)
        if kind != "bool" or then_kind != other_kind:
            raise Unsupported("select")
        if len(self.lines) != emitted:
            # a guard or range check in a branch must only act when that branch is
            # taken (the closure path evaluates just the chosen branch)
            raise Unsupported("checks inside a branch")
        return f"({then} if {cond} else {other})", then_kind

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
    visit_Expand = visit_Zip = visit_Fold = visit_Slice = visit_Bounded = unsupported
    visit_Substitute = visit_Member = unsupported

    def visit_Binary(self, node: ast.Binary) -> tuple[str, str]:
        left, left_kind = self.visit(node.left)
        right, right_kind = self.visit(node.right)
        if left_kind != right_kind:
            raise Unsupported("mixed operand types")  # the closure path reports it
        op = node.op
        if op in ("+", "-", "*") and left_kind in ("int", "real"):
            return f"({left} {op} {right})", left_kind
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return f"({left} {INLINE[op]} {right})", "bool"
        if left_kind == "bool" and op in ("&&", "||", "^", "=>"):
            # both operands are evaluated, as on the closure path (no short circuit)
            source = {"&&": f"({left} & {right})", "||": f"({left} | {right})",
                      "^": f"({left} != {right})", "=>": f"((not {left}) or {right})"}[op]
            return source, "bool"
        if op in ("/", "\\", "%", "**", "<<", ">>") and left_kind in ("int", "real"):
            return f"BIN({op!r}, {left}, {right}, P)", left_kind
        raise Unsupported(op)

    def call(self, name: str, args: tuple[ast.Expr, ...]) -> tuple[str, str]:
        """A cast or a one-argument built-in function, by the numeric rules."""
        target = self.instance.dtypes.get(name, name)
        if len(args) != 1:
            raise Unsupported("arguments")
        operand, kind = self.visit(args[0])
        if target in CASTS:
            if target == "str":
                raise Unsupported("str")
            # int(real) may give an int(±inf) sentinel, which Python's int operators do not
            # know: its kind matches no inlined operation, so the formula takes the closure path
            kind = "int~" if target == "int" and kind == "real" else target
            return f"CAST({target!r}, {operand}, P)", kind
        result = kind if name in ("abs", "sign") else "real"
        return f"BUILTIN({name!r}, {operand}, P)", result

    def access(self, node: ast.Subscript) -> tuple[str, str]:
        if not isinstance(node.base, ast.Name):
            raise Unsupported("access base")
        flat, array = self.tensor(node.base.name)
        offset = self.offset(node, node.base.name, array)
        return f"{flat}[{offset}]", kind_of(array)

    def offset(self, node: ast.Subscript, name: str, array: np.ndarray) -> str:
        """Source of the flat offset, emitting guards and range checks before use."""
        dims: list[tuple[str, bool]] = []  # (index source, provably in range)
        for item in node.items:
            if isinstance(item, ast.Expand) and item.count is None and \
                    isinstance(item.operand, ast.Name) and \
                    isinstance(self.indices.get(item.operand.name), tuple):
                # `i..` of a packed index `i < s`: one loop variable per dimension
                name_, bounds = item.operand.name, self.indices[item.operand.name]
                for k, bound in enumerate(bounds):
                    dimension = len(dims)
                    extent = array.shape[dimension] if dimension < array.ndim else -1
                    dims.append((f"I_{name_}_{k}", bound <= extent))
                continue
            if isinstance(item, (ast.Expand, ast.Slice)):
                raise Unsupported("expanded index")
            dims.append(self.single_index(item, array, len(dims), name, node))
        if len(dims) != array.ndim:
            raise Unsupported("rank")
        terms = []
        for dimension, (index, provable) in enumerate(dims):
            if not provable:
                temp = self.fresh()
                self.lines.append(f"{temp} = {index}")
                self.check(node, name, temp, array.shape[dimension])
                index = temp
            stride = int(np.prod(array.shape[dimension + 1:]))
            terms.append(index if stride == 1 else f"{index} * {stride}")
        return " + ".join(terms) if terms else "0"

    def single_index(self, item: ast.Expr, array: np.ndarray, dimension: int, name: str,
                     node: ast.Node) -> tuple[str, bool]:
        if dimension >= array.ndim:
            raise Unsupported("rank")
        extent = array.shape[dimension]
        if isinstance(item, ast.Bounded):
            value = self.index_value(item.index)
            temp = self.fresh()
            self.lines.append(f"{temp} = {value}")
            if item.lower is None:
                self.lines.append(f"if not 0 <= {temp} < {extent}: continue")
            else:
                low, high = self.index_value(item.lower), self.index_value(item.upper)
                self.lines.append(f"if {temp} < 0: {temp} = {low}")
                self.lines.append(f"elif {temp} >= {extent}: {temp} = {high}")
            return temp, True
        value = self.index_value(item)
        provable = (isinstance(item, ast.Name) and item.name in self.indices
                    and isinstance(self.indices[item.name], int)
                    and self.indices[item.name] <= extent)
        if value.lstrip("-").isdigit():
            provable = 0 <= int(value) < extent
        return value, provable

    def check(self, node: ast.Node, name: str, temp: str, extent: int) -> None:
        self.accesses.append((node, name))
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
        if formula.item is not None or not isinstance(self.arrays.get(formula.output),
                                                      np.ndarray):
            raise Unsupported("pack output")

        body: list[str] = []
        for local in formula.locals:
            source, kind = self.visit(local.value)
            self.lines.append(f"L_{local.name} = {source}")
            self.locals[local.name] = kind
        body.extend(self.take())
        if formula.condition is not None:
            cond, kind = self.visit(formula.condition)
            body.extend(self.take())
            if kind != "bool":
                raise Unsupported("condition")
            body.append(f"if not {cond}: continue")
        value, kind = self.visit(formula.value)
        body.extend(self.take())
        out_flat, out_array = self.tensor(formula.output)
        out_kind = kind_of(out_array)
        target = ast.Subscript(ast.Name(formula.output), formula.access, span=formula.node.span)
        offset = self.offset(target, formula.output, out_array)
        body.extend(self.take())
        if kind != out_kind:
            raise Unsupported("value type")
        body.append(f"o = {offset}")
        body.append(f"v = {value}")
        op = formula.op
        if op in ("+=", "*=") and kind in ("int", "real"):
            body.append(f"v = {out_flat}[o] {UPDATE_OPS[op]} v")
        elif op in ("&=", "|=") and kind == "bool":
            body.append(f"v = {out_flat}[o] {'and' if op == '&=' else 'or'} v")
        elif op in ("<=", ">="):
            body.append(f"v = BIN({UPDATE_OPS[op]!r}, {out_flat}[o], v, P)")
        elif op not in ("=", ":="):
            raise Unsupported(op)
        if out_kind == "int":
            body.append("if not MIN <= v <= MAX: raise OVERFLOW(v)")
        body.append(f"{out_flat}[o] = v")
        loops = []
        for r in formula.indices:  # declaration order, row-major within a packed index
            if isinstance(r.bound, tuple):
                loops.extend(f"for I_{r.name}_{k} in range({n}):"
                             for k, n in enumerate(r.bound))
            else:  # index variables are prefixed: an index `o` or `v` must not clash
                loops.append(f"for I_{r.name} in range({r.bound}):")
        source = ["def kernel(" + ", ".join(["K", "BIN", "CAST", "BUILTIN", "P", "OOR", "OVERFLOW",
                                             "MIN", "MAX", *self.tensors.values()]) + "):"]
        depth = 1
        for loop in loops:
            source.append("    " * depth + loop)
            depth += 1
        if not loops:  # a rank-0 formula runs once; `continue` needs a loop
            source.append("    " * depth + "for _once in (0,):")
            depth += 1
        source.extend("    " * depth + line for line in body)
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


def compile_formula(instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                    profile: rules.Profile,
                    fail: Callable[[ast.Node, str, dict | None], Diagnostic],
                    report: list[str] | None = None) -> Callable[[], None] | None:
    """A runner for `formula` from generated source, or None outside the supported subset;
    `report` (if given) receives how the formula runs and, for the tree walk, why."""
    generator = Generator(instance, formula, arrays, profile)
    how = "generated code"
    try:
        source = generator.generate()
    except Unsupported as unsupported:
        # a rank-polymorphic or configurable formula: fold what the instance decides (packed
        # indices, selects on attributes, optional operands) and try again
        reasons = [f"not generated: {unsupported}"]
        folded = fold_formula(instance, formula, arrays, profile, reasons)
        if folded is None:
            _say(report, f"tree walk ({reasons[0]}; not folded: {reasons[-1]})")
            return None
        generator = Generator(instance, folded, arrays, profile)
        try:
            source = generator.generate()
        except Unsupported as still:
            _say(report, f"tree walk ({reasons[0]}; folded, still not generated: {still})")
            return None
        how = "generated code after folding"
    _say(report, how)
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<formula {formula.node.span}>", "exec"), namespace)
    kernel = namespace["kernel"]
    names = list(generator.tensors)

    def run() -> None:
        flats = [arrays[name].ravel().tolist() for name in names]
        try:
            kernel(generator.constants, rules.binary, rules.cast, rules.builtin, profile,
                   OutOfRange, IntOverflow, INT64_MIN, INT64_MAX, *flats)
        except OutOfRange as error:
            node, name = generator.accesses[error.access]
            shape = list(arrays[name].shape)
            raise fail(node, f"an index is out of range for '{name}' of shape {shape}",
                       error.indices) from None
        except IntOverflow as error:
            raise fail(formula.node, f"the int result {error.value} does not fit in int64",
                       None) from None
        except rules.NumericError as error:
            raise fail(formula.node, error.message, None) from None
        output = names.index(formula.output)
        target = arrays[formula.output]
        target[...] = np.array(flats[output], dtype=target.dtype).reshape(target.shape)

    return run

