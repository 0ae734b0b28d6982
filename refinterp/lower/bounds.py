"""The bounds run: a @lower block run as the reference runs it (the definition: the values are
the very same), carrying beside every real value its error magnitude m (running error analysis,
refinterp.numeric.error_bounds; docs/golden.md "Per-element error bounds").

- A value read from a tensor carries the magnitude stored beside it (`Magnitudes`, one float64
  array per value array, by identity); a literal or compile-time value carries the magnitude
  of entering the computation (0 where it is exactly a value of d, |c| where d must round it);
  a compile-time expression that computes a real is itself tracked, operation by operation.
- Every operation of the formula gives its result's magnitude by its rule
  (`BoundsClosures.numeric`): the formula's own structure decides the bound.
- A reduction is bounded for any order of its terms t_i (`_Reduction`): a `+=` gets
  |r| + (n - 2)·Σ|t_i| + Σ m(t_i) (Higham §4.2), a `*=`
  (n - 1)·(|r| + η/u) + Σ |r/t_i|·m(t_i); `<=` and `>=` (min, max) the chosen term's m; a
  `+` fold over a pack is a sum like `+=`.
- A decision (a comparison, a cast to int, ...) that is not robust marks everything its
  iteration stores as unbounded (NaN); so does a condition that is not robust, also when it
  skips the store. An int or bool cell so marked marks every iteration that reads it.

Real values are `Real`s: floats that carry `m`; every rule of refinterp.numeric.rules sees the
plain float, so every value is bit for bit the definition's.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.invocation import OperatorInstance
from refinterp.language.values import NULL, Value
from refinterp.lower.common import (allocate_outputs, lowered_outputs, lowering_arrays,
                                    lowering_plan)
from refinterp.lower.plan import Formula
from refinterp.lower.reference import Frame, FormulaClosures, _Skip
from refinterp.numeric import error_bounds as eb
from refinterp.numeric import rules
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor

Magnitudes = Any  # a float64 array beside a value array, a list of them for a pack, or None

_COMPARISON = "a comparison within its error bound"
_INTEGER = "a rounding to an integer within its error bound"
_SINGULAR = "a divisor or function argument whose error interval reaches a pole or the edge " \
            "of the domain"
_OPERATIONS = (ast.Binary, ast.Unary, ast.Builtin, ast.Call, ast.Select, ast.Fold)


class Real(float):
    """A real value of the definition with its error magnitude `m` (units of u, > 0)."""

    __slots__ = ("m",)

    def __new__(cls, value: float, m: float) -> "Real":
        made = float.__new__(cls, value)
        made.m = m
        return made


def tracked(value: float, m: float) -> float:
    """`value` carrying magnitude m (a plain float when m is 0)."""
    return Real(value, m) if m != 0.0 else value


def magnitude(value: Any) -> float:
    """The magnitude a value carries (0 for a plain value)."""
    return value.m if type(value) is Real else 0.0


def run_bounds(instance: OperatorInstance, inputs: dict[str, Any],
               magnitudes: dict[str, Magnitudes], profile: rules.Profile,
               precision: eb.Precision, events: Counter | None = None
               ) -> tuple[dict[str, Any], dict[str, Magnitudes]]:
    """Run the @lower block of `instance` on `inputs` as the reference runs it, with the
    inputs' error magnitudes (`magnitudes`, by input name; an input without one enters as
    `error_bounds.entering` says); return the outputs and theirs. `events` counts why elements
    became unbounded ("a comparison within its error bound (math.sknd:12)": count)."""
    plan = lowering_plan(instance)
    outputs = allocate_outputs(instance, plan)
    arrays = lowering_arrays(instance, inputs, outputs)
    table = MagnitudeTable()
    for name, value in arrays.items():
        given = magnitudes.get(name) if name in inputs and name not in outputs else None
        table.register(value, given, precision)
    events = events if events is not None else Counter()
    for formula in plan.formulas:
        before = arrays[formula.output]
        BoundsClosures(instance, formula, arrays, profile, table, precision, events).run()
        after = arrays[formula.output]
        if after is not before:  # a counting formula trimmed its output (plan.CountedExtent)
            table.put(after, table[id(before)][tuple(slice(0, n) for n in after.shape)].copy())
    results = lowered_outputs(instance, plan, arrays)
    return results, {name: table.of(value) for name, value in results.items()}


class MagnitudeTable(dict[int, np.ndarray]):
    """The magnitude array of every value array of a run, by id() of the value array: safe,
    the table holds every array it names (`put`), so no other array has its id meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self._held: list[np.ndarray] = []

    def put(self, array: np.ndarray, magnitudes: np.ndarray) -> None:
        self[id(array)] = magnitudes
        self._held.append(array)

    def register(self, value: Any, given: Magnitudes, precision: eb.Precision) -> None:
        """Enter the magnitudes of an array (or of each array of a pack), once."""
        if value is NULL:
            return
        if isinstance(value, list):
            for k, item in enumerate(value):
                self.register(item, given[k] if isinstance(given, list) else None, precision)
            return
        if id(value) in self:
            return
        m = given if given is not None else eb.entering(value, precision)
        self.put(value, np.array(np.broadcast_to(m, value.shape), dtype=np.float64))

    def of(self, value: Any) -> Magnitudes:
        """The magnitudes of an array, or of each array of a pack."""
        if isinstance(value, list):
            return [self[id(item)] for item in value]
        return self[id(value)]


class BoundsClosures(FormulaClosures):
    """A formula's closures (the reference's `FormulaClosures`) on values that carry their
    error magnitudes; `table` holds the magnitude array of every value array."""

    def __init__(self, instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                 profile: rules.Profile, table: MagnitudeTable,
                 precision: eb.Precision, events: Counter) -> None:
        super().__init__(instance, formula, arrays, profile)
        self.table = table
        self.precision = precision
        self.events = events
        # the roots of the values computed per iteration, by identity (a few nodes)
        self.roots = tuple(local.value for local in formula.locals) + (formula.value,)
        self.frame: Frame | None = None   # the iteration being computed
        self.taint = 0.0                  # its marker: inf (unknown) or NaN (unbounded)
        self.marking = False              # storing only the marker (a condition that skipped)
        self.marker: Callable[[Frame, Value], None] | None = None
        # the terms of += and *= cells, by (id of the array, position): safe, `table` holds
        # every array of the run
        self.sums: dict[tuple[int, tuple], _Reduction] = {}

    # ------------------------------------------------------------------ iterations

    def visit(self, node: Any, *args: Any) -> Callable[[Frame], Value]:
        compiled = super().visit(node, *args)
        if self.is_compile_time(node):
            compiled = self.compile_time(node, compiled)
        if node is self.formula.condition:
            return self.guarded_condition(compiled)
        if any(node is root for root in self.roots):
            return self.rooted(compiled)
        return compiled

    def begin(self, frame: Frame) -> None:
        """A new iteration starts unmarked (each iteration has its own frame)."""
        if frame is not self.frame:
            self.frame = frame
            self.taint = 0.0

    def rooted(self, compiled: Callable[[Frame], Value]) -> Callable[[Frame], Value]:
        def root(frame: Frame) -> Value:
            self.begin(frame)
            return compiled(frame)
        return root

    def guarded_condition(self, compiled: Callable[[Frame], Value]
                          ) -> Callable[[Frame], Value]:
        """The condition; when a decision in it was not robust and it skips the store, the
        cells the store would have updated are marked all the same."""
        def condition(frame: Frame) -> Value:
            self.begin(frame)
            flag = compiled(frame)
            if self.taint and flag is not NULL and \
                    not (all(flag) if isinstance(flag, tuple) else flag):
                self.mark(frame)
            return flag
        return condition

    def mark(self, frame: Frame) -> None:
        if self.marker is None:
            self.marker = self.compile_store()
        self.marking = True
        try:
            self.marker(frame, 0.0)  # the value is not used: only the marker is stored
        except (_Skip, Diagnostic):
            pass
        finally:
            self.marking = False

    # ------------------------------------------------------------------ values

    def compile_time(self, node: Any, compiled: Callable[[Frame], Value]
                     ) -> Callable[[Frame], Value]:
        """A compile-time value with its magnitude: an operation computing a real is tracked
        operation by operation (if that gives the very same value), anything else enters as
        `error_bounds.entering_scalar` says."""
        try:
            constant = compiled({})
        except Diagnostic:
            return compiled  # it fails only in an iteration that computes it
        if not _has_real(constant):
            return compiled
        value = None
        if isinstance(node, _OPERATIONS):
            taint = self.taint
            try:
                candidate = ExprVisitor.visit(self, node)({})
                if _same(candidate, constant):
                    value = candidate
            except Diagnostic:
                pass
            self.taint = taint
        if value is None:
            value = _entering(constant, self.precision)
        return lambda frame: value

    def value_at(self, node: ast.Node, name: str, array: Any, position: tuple, frame: Frame
                 ) -> Value:
        value = super().value_at(node, name, array, position, frame)
        m = self.table[id(array)][position]
        if m == 0.0:
            return value
        if type(value) is float:
            return Real(value, float(m))
        self.taint = eb.worse(self.taint, float(m))  # an int or bool decided non-robustly
        return value

    def numeric(self, node: ast.Node, function: Callable, *args: Value) -> Value:
        """The rule's value (on the plain operands) and, beside it, its magnitude."""
        name, operands = args[0], args[1:]
        ms = [magnitude(a) for a in operands]
        plain = [float(a) if type(a) is Real else a for a in operands]
        result = super().numeric(node, function, name, *plain)
        p = self.precision
        if type(result) is float:
            m = eb.overflowed(result, _real_rule(function, name, plain, ms, result, p), p)
            if m != m and all(x == x for x in ms):
                beyond = eb.overflowed(result, 0.0, p) != 0.0
                self.note(node, f"a value beyond {p.name}'s range" if beyond else
                          _reason(function, name))
            return tracked(result, m)
        if any(ms):
            flag = _decision(function, name, plain, ms, p)
            if flag:
                if flag != flag and all(x == x for x in ms):
                    self.note(node, _reason(function, name))
                self.taint = eb.worse(self.taint, flag)
        return result

    def note(self, node: ast.Node, reason: str) -> None:
        span = node.span
        self.events[f"{reason} ({Path(span.path).name}:{span.line})"] += 1

    def visit_Fold(self, node: ast.Fold) -> Callable[[Frame], Value]:
        """A `+` fold over a pack is a sum in any order (`_Reduction`)."""
        folded = super().visit_Fold(node)
        if node.op != "+" or node.cumulative:
            return folded
        operand = super().visit(node.operand)

        def fold(frame: Frame) -> Value:
            value = folded(frame)
            if not isinstance(value, float):
                return value
            cell = _Reduction(product=False)
            for term in operand(frame):
                if isinstance(term, float):
                    cell.add(float(term), magnitude(term))
            return tracked(float(value), cell.magnitude(float(value), self.precision))
        return fold

    # ------------------------------------------------------------------ stores

    def combine(self, node: ast.Node, op: str, array: Any, position: tuple, value: Value,
                dtype: str) -> Value:
        current_m = float(self.table[id(array)][position])
        if self.marking:
            return array[position].item()
        if op not in ("+=", "*=") or dtype != "real":
            if current_m and op not in ("=", ":="):
                if dtype == "real":  # min / max: the cell is an operand too
                    current = float(array[position])
                    result = float(super().combine(node, op, array, position, value, dtype))
                    return tracked(result, eb.lipschitz(current, current_m, float(value),
                                                        magnitude(value), result,
                                                        self.precision))
                self.taint = eb.worse(self.taint, current_m)
            return super().combine(node, op, array, position, value, dtype)
        result = float(super().combine(node, op, array, position, value, dtype))
        return tracked(result, self.accumulate(op, array, position, value, current_m, result))

    def accumulate(self, op: str, array: Any, position: tuple, value: Value, current_m: float,
                   result: float) -> float:
        """The magnitude of a `+=` (`*=`) cell after one more term, in any order: the cell's
        value before the formula is a term too unless it is the neutral 0 (1) exactly."""
        key = (id(array), position)
        cell = self.sums.get(key)
        if cell is None:
            cell = self.sums[key] = _Reduction(op == "*=")
            current = float(array[position])
            if current != (1.0 if cell.product else 0.0) or current_m != 0.0:
                cell.add(current, current_m)
        cell.add(float(value), magnitude(value))
        return cell.magnitude(result, self.precision)

    def put(self, array: Any, position: tuple, value: Value) -> None:
        m = magnitude(value)
        magnitudes = self.table[id(array)]
        if self.marking:
            m = eb.worse(float(magnitudes[position]), self.taint)
        elif isinstance(value, float) and not math.isfinite(value):
            m = eb.markers(m)  # an infinity or NaN must be met exactly
        if self.taint:
            m = eb.worse(m, self.taint)
        super().put(array, position, value)
        magnitudes[position] = m


class _Reduction:
    """The terms of one `+=` or `*=` cell so far, for its magnitude in any order of evaluation
    (every order makes n - 1 operations, the last of which gives the result r):

    - a sum: every partial sum is at most Σ|t| and the last is r, so
      m = |r| + (n - 2)·Σ|t| + Σ m(t) (Higham §4.2, the last partial sum being r itself);
    - a product: each multiplication errs by at most u relative (and η absolute), so
      m = (n - 1)·(|r| + η/u) + Σ |r/t_i|·m(t_i), the sum kept as a running product; a term
      exactly 0 makes the product exactly 0.

    Unbounded where some order can leave d's range: from 3 terms on, a partial sum can be as
    large as Σ|t|, a partial product as large as Π max(|t|, 1) and as small as Π min(|t|, 1)
    (below d's smallest normal number it loses its relative precision)."""

    __slots__ = ("product", "n", "total", "moved", "large", "small", "zero")

    def __init__(self, product: bool) -> None:
        self.product = product
        self.n = 0
        self.total = 0.0   # Σ|t| (a sum) or Π|t| (a product)
        self.moved = 0.0   # Σ m(t) (a sum) or Σ |Π/t_i|·m(t_i) (a product)
        self.large = 1.0   # Π max(|t|, 1)
        self.small = 1.0   # Π min(|t|, 1) over the non-zero terms
        self.zero = False  # a term is exactly 0

    def add(self, t: float, m: float) -> None:
        t = abs(t)
        if self.product:
            self.moved = eb.term(t, self.moved) + eb.term(self.total if self.n else 1.0, m)
            self.total = (self.total if self.n else 1.0) * t
            self.large *= max(t, 1.0)
            if t == 0.0 and m == 0.0:
                self.zero = True
            elif t != 0.0:
                self.small *= min(t, 1.0)
        else:
            self.total += t
            self.moved += m
        self.n += 1

    def magnitude(self, r: float, p: eb.Precision) -> float:
        if not math.isfinite(r):
            return eb.markers(self.moved)
        if self.n <= 1:
            return self.moved
        if self.product:
            if self.zero:
                return 0.0
            if self.n > 2 and (self.large > p.largest or
                               self.small < math.ldexp(1.0, p.min_exponent - 1)):
                return math.nan
            rounding = p.rounding(r, self.moved == 0.0) if self.n == 2 else \
                (self.n - 1) * (abs(r) + p.underflow)
            return rounding + self.moved
        if self.n > 2 and self.total > p.largest:
            return math.nan
        rounding = p.rounding(r, self.moved == 0.0, underflow=False) if self.n == 2 else \
            abs(r) + eb.term(self.n - 2, self.total)
        return rounding + self.moved


def _real_rule(function: Callable, name: str, operands: list, ms: list[float], r: float,
               p: eb.Precision) -> float:
    """The magnitude of a real result r of `function(name, *operands)`."""
    if function is rules.binary:
        a, b = (float(x) for x in operands)
        ma, mb = ms
        op = rules.OP_ALIASES.get(name, name)
        if op in ("+", "-"):
            return eb.add(r, ma, mb, p)
        if op == "*":
            return eb.multiply(a, ma, b, mb, r, p)
        if op == "/":
            return eb.divide(a, ma, b, mb, r, p)
        if op == "%":
            return eb.modulo(a, ma, b, mb, r, p)
        if op == "**":
            return eb.power(a, ma, b, mb, r, p)
        if op == "\\":  # ceil(a / b)
            quotient = a / b if b else r
            return _to_integer(quotient, eb.divide(a, ma, b, mb, quotient, p), p)
        return eb.lipschitz(a, ma, b, mb, r, p)  # << >>
    (x,), (m,) = operands, ms
    if function is rules.unary:
        return m
    if function is rules.cast:  # real(int), real(bool), real(real)
        return m if isinstance(x, float) else p.rounding(r, True)
    if name == "abs":
        return m
    if name == "sign":
        return eb.decision(abs(x), m, p)
    if name in ("floor", "ceil", "round"):
        return _to_integer(x, m, p, half=name == "round")
    if name == "frac":
        flag = eb.to_integer(x, m, p)
        return flag or p.rounding(r, m == 0.0) + m
    return eb.function(name, x, m, r, p)


def _to_integer(x: float, m: float, p: eb.Precision, half: bool = False) -> float:
    """A real result rounded to an integer: exact where the decision is robust (beyond
    2^(digits-1) the value itself, with its magnitude)."""
    flag = eb.to_integer(x, m, p, half)
    if flag or abs(x) < 2.0 ** (p.digits - 1):
        return flag
    return m


def _decision(function: Callable, name: str, operands: list, ms: list[float],
              p: eb.Precision) -> float:
    """The marker of an int or bool result decided from operands with magnitudes."""
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in operands)
    if function is rules.binary and name in rules.COMPARISON_OPS and numbers:
        return eb.compare(float(operands[0]), ms[0], float(operands[1]), ms[1], p)
    if function is rules.cast and isinstance(operands[0], float):
        x, m = float(operands[0]), ms[0]
        return eb.to_integer(x, m, p) if name == "int" else eb.decision(abs(x), m, p)
    flag = 0.0  # any other int or bool result from an inexact operand: not known to be robust
    for m in ms:
        flag = eb.worse(flag, m if not m or math.isinf(m) else math.nan)
    return flag


def _reason(function: Callable, name: str) -> str:
    if function is rules.binary and name in rules.COMPARISON_OPS:
        return _COMPARISON
    if name in ("int", "bool", "floor", "ceil", "round", "frac", "sign", "%", "\\"):
        return _INTEGER
    return _SINGULAR


def _has_real(value: Value) -> bool:
    if isinstance(value, tuple):
        return any(_has_real(v) for v in value)
    return isinstance(value, float)


def _same(a: Value, b: Value) -> bool:
    """Bit-for-bit the same value (a tracked real equals its plain float)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) and \
            all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return float(a) == float(b) and math.copysign(1.0, a) == math.copysign(1.0, b) or \
            (a != a and b != b)
    return type(a) is type(b) and a == b


def _entering(value: Value, p: eb.Precision) -> Value:
    if isinstance(value, tuple):
        return tuple(_entering(v, p) for v in value)
    if isinstance(value, float):
        return tracked(value, eb.entering_scalar(value, p))
    return value
