"""The vector engine: runs a lowering plan (plan.py) with whole-array NumPy operations.

It computes the function the scalar engine defines (scalar.py), formula by formula:

- the iteration space of a formula has one axis per index symbol (a packed index one axis per
  component), in declaration order; an index symbol's value is an `arange` broadcast along its
  axis, so every subexpression is an array over just the axes it depends on;
- a tensor access is a gather (a view when every index is a plain axis or a constant, else
  advanced indexing); a guarded index `|e|` narrows the mask of live iterations (a skipped
  iteration contributes nothing), a remapped one `|e <> lo : hi|` becomes a `where`;
- a condition and the branches of `?:` are masks: a subexpression is checked (index ranges,
  numeric errors) only on the iterations the scalar engine would evaluate;
- the store depends on the left-hand side: an assignment to positions that address each cell
  once through a view (each index an axis or a constant — a slice — or affine in the axes, as
  `g * m + i` — a strided view) is a view assignment; `+=` of a product into such a view is an
  `einsum` (a contraction); other updates reduce over the axes missing from the output; any other
  position pattern is a scatter in iteration order (`ufunc.at`, last write wins for `=`);
- a formula reading its own output (`:=` under a condition, as in argmax) runs its reduced axes
  one step at a time (outermost), vectorised over the output cells, which are independent.

Anything it cannot do exactly — an error the scalar engine would report, an int that may leave
int64, an iteration-order dependence it cannot prove harmless — raises `Fallback`, and that one
formula runs on the scalar engine instead (never a wrong answer). Reals may differ from the
scalar engine by summation order and the last place of transcendental functions; ints and bools
are identical (docs/rules.md, "Engines").

The iteration space is processed in boxes: axes that must take one value at a time (a pack
item selected by an index) and, when the space exceeds the memory budget, the outermost axes,
are iterated in row-major order; the rest is vectorised.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from refinterp.numeric import array_rules as A
from refinterp.numeric.representation import kind_of
from refinterp.numeric import rules
from refinterp.language.binding import free_names
from refinterp.core.diagnostics import Diagnostic
from refinterp.language.expr import evaluate, fold_pack
from refinterp.language.instance import OperatorInstance
from refinterp.syntax import ast
from refinterp.language.types import CASTS
from refinterp.language.values import NULL, TensorValue, Value
from refinterp.lower.plan import Formula, plan_lowering
from refinterp.lower.scalar import allocate_outputs, lowering_arrays, run_formula

DEFAULT_MAX_MEMORY = 2 * 2 ** 30   # bytes of temporaries one box may take (--max-memory)
BYTES_PER_ITERATION = 48           # estimate: a few int64/float64 temporaries per iteration
MIN_CELLS_PER_STEP = 32            # below this, a sequential formula runs faster scalar
UPDATE_OPS = {"+=": "+", "*=": "*", "&=": "&&", "|=": "||", "<=": "<<", ">=": ">>"}
Mask = np.ndarray | None


class Fallback(Exception):
    """This formula must run on the scalar engine (`reason` says why)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Axis:
    """One axis of the iteration space: an index symbol, or one component of a packed one."""

    name: str
    component: int | None
    size: int


@dataclass(frozen=True)
class Guard:
    """A guarded index value `|e|` (lower/upper: the remapped values of `|e <> lo : hi|`)."""

    value: Any
    lower: Any = None
    upper: Any = None


class _Full:
    def __repr__(self) -> str:
        return ":"


FULL = _Full()


def _and(a: Mask, b: Mask) -> Mask:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def _any(mask: Mask) -> bool:
    return True if mask is None else bool(np.any(mask))


@dataclass
class FormulaReport:
    """How one formula ran: 'vector', or 'scalar' with the reason of the fallback."""

    formula: Formula
    engine: str
    reason: str = ""


def run_vector(instance: OperatorInstance, inputs: dict[str, Any],
               profile: rules.Profile = rules.SPEC,
               max_memory: int = DEFAULT_MAX_MEMORY,
               reports: list[FormulaReport] | None = None) -> dict[str, Any]:
    """Run the @lower block of `instance` vectorised; the same contract as
    scalar.run_lowering. Each formula the vector engine cannot run exactly runs on the scalar
    engine; `reports` (if given) receives one FormulaReport per formula."""
    cache = _instance_cache(instance, profile)
    if "plan" not in cache:
        cache["plan"] = plan_lowering(instance)
    plan = cache["plan"]
    outputs = allocate_outputs(instance, plan)
    arrays = lowering_arrays(instance, inputs, outputs)
    for formula in plan.formulas:
        runner = VectorFormula(instance, formula, arrays, profile, max_memory)
        try:
            runner.run()
            report = FormulaReport(formula, "vector")
        except (Fallback, A.Deferred) as why:  # Deferred: a value with no array form
            if runner.saved is not None:  # some boxes were written before the fallback
                _restore(arrays[formula.output], runner.saved)
            run_formula(instance, formula, arrays, profile)
            report = FormulaReport(formula, "scalar", why.reason)
        if reports is not None:
            reports.append(report)
    return {name: arrays[name] for name in outputs}  # a formula may adopt a new array


def _restore(target: Any, saved: Any) -> None:
    if isinstance(target, list):
        for array, copy in zip(target, saved):
            np.copyto(array, copy)
    else:
        np.copyto(target, saved)


class VectorFormula:
    """Runs one formula over its iteration space, box by box."""

    def __init__(self, instance: OperatorInstance, formula: Formula, arrays: dict[str, Any],
                 profile: rules.Profile, max_memory: int) -> None:
        self.instance, self.formula, self.arrays, self.profile = (
            instance, formula, arrays, profile)
        self.max_memory = max_memory
        self.symbols = instance.symbols
        self.axes: list[Axis] = []
        for index in formula.indices:
            if isinstance(index.bound, tuple):
                self.axes += [Axis(index.name, c, n) for c, n in enumerate(index.bound)]
            else:
                self.axes.append(Axis(index.name, None, int(index.bound)))
        self.index_names = {r.name for r in formula.indices}
        self.local_names = {local.name for local in formula.locals}
        # compile-time values by node id, kept with the instance
        self.constants = _instance_cache(instance, profile).setdefault("constants", {})
        self.environment: Any = None  # for compile-time subexpressions, made when needed
        self.reads_output = _cached(formula.node, "reads", self._reads_output)
        self.saved: Any = None  # a copy of the output, when it is written box by box
        self.padding_allowed = False  # may a guarded access read a zero-padded view?
        self.padded = False           # did one?
        # strided views of this box by id -> the array they read (kept alive with them)
        self.view_bases: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # for the whole run: (id(input), paddings) -> (input, its C-order, possibly padded copy)
        self.prepared: dict[tuple[int, tuple], tuple[np.ndarray, np.ndarray]] = {}
        self.finite: dict[int, tuple[np.ndarray, bool]] = {}  # id(base) -> (base, all finite?)
        self.kind = self._output_kind()

    # ------------------------------------------------------------------ planning

    def _output_kind(self) -> str:
        info = self.instance.outputs[self.formula.output]
        return (info[0] if isinstance(info, tuple) else info).dtype

    def _expressions(self) -> list[Any]:
        f = self.formula
        return [f.value, f.condition, f.item, f.access, *(local.value for local in f.locals)]

    def _reads_output(self) -> bool:
        """Whether the formula reads the output it writes (then its order matters)."""
        output = self.formula.output
        f = self.formula
        for node in _walk((f.value, f.condition, f.item, *(local.value for local in f.locals),
                           f.access)):
            if isinstance(node, ast.Subscript):
                base = node.base.base if isinstance(node.base, ast.Subscript) else node.base
                if isinstance(base, ast.Name) and base.name == output:
                    return True
        return False

    def _split_order(self, rest: list[int]) -> list[int]:
        """The vectorised axes in the order they are split into chunks, cheapest first.
        Every chunk reads again what the accesses not indexed by the split axis read (split by
        output channel, a convolution gathers the whole input window per chunk; split by row,
        it re-reads only the small filter), so an axis costs the sizes of the tensors whose
        accesses do not mention it. Ties keep the iteration order."""
        f = self.formula
        local_names = {local.name: free_names(local.value) for local in f.locals}
        reads: list[tuple[int, set[str]]] = []  # (tensor size, names its indices use)

        def mentioned(node: object) -> set[str]:
            names = set(free_names(node)) if isinstance(node, ast.Node) else set()
            for name in list(names):
                names |= local_names.get(name, set())
            return names

        for node in _walk((f.value, f.condition, *(local.value for local in f.locals))):
            if isinstance(node, ast.Subscript) and isinstance(node.base, ast.Name):
                array = self.arrays.get(node.base.name)
                if isinstance(array, np.ndarray):
                    names = set().union(*(mentioned(item) for item in node.items))
                    reads.append((array.size, names))
        output = self.arrays.get(f.output)
        if isinstance(output, np.ndarray):
            reads.append((output.size, set().union(*(mentioned(i) for i in f.access))))
        cost = {a: sum(size for size, names in reads if self.axes[a].name not in names)
                for a in rest}
        return sorted(rest, key=lambda a: (cost[a], rest.index(a)))

    def _axes_of(self, names: set[str]) -> set[int]:
        return {a for a, axis in enumerate(self.axes) if axis.name in names}

    def _item_selectors(self) -> dict[str, frozenset[str]]:
        """For each `xs[k][...]` access: the tensor pack's name and the names `k` uses."""
        selectors: dict[str, set[str]] = {}

        for node in _walk(tuple(self._expressions())):
            if isinstance(node, ast.Subscript) and isinstance(node.base, ast.Subscript) and \
                    isinstance(node.base.base, ast.Name):
                names = selectors.setdefault(node.base.base.name, set())
                for item in node.base.items:
                    names.update(free_names(item))
        return {name: frozenset(names) for name, names in selectors.items()}

    def _scalar_axes(self) -> set[int]:
        """Axes that take one value at a time: those selecting an item of a pack of tensors,
        and, for a formula reading its output, those the output position does not use."""
        scalar: set[int] = set()
        selectors = _cached(self.formula.node, "selectors", self._item_selectors)
        for name, names in selectors.items():
            if isinstance(self.arrays.get(name), list):
                scalar.update(self._axes_of(names))
        if self.formula.item is not None:
            scalar.update(self._axes_of(free_names(self.formula.item)))
        if self.reads_output:
            if self.formula.op not in ("=", ":="):
                raise Fallback("an update that reads its own output")
            if not _cached(self.formula.node, "same-position", self._same_position_reads):
                raise Fallback("the output is read at another position than it is written")
            stored = free_names(self.formula.access)
            scalar.update(a for a, axis in enumerate(self.axes) if axis.name not in stored)
        return scalar

    def _same_position_reads(self) -> bool:
        """A formula reading its output is vectorised over output cells only if every read
        is at the very position it writes (the cells are then independent)."""
        output, store = self.formula.output, self.formula.access
        same = True

        def visit(node: object) -> None:
            nonlocal same
            if isinstance(node, ast.Subscript) and isinstance(node.base, ast.Name) and \
                    node.base.name == output and node.items != store:
                same = False
            if isinstance(node, ast.Node):
                for value in vars(node).values():
                    visit(value)
            elif isinstance(node, tuple):
                for item in node:
                    visit(item)

        f = self.formula
        for expr in (f.value, f.condition, *(local.value for local in f.locals)):
            visit(expr)
        return same

    def _boxes(self, scalar: set[int]) -> tuple[list[list[tuple[int, int]]], bool]:
        """The boxes to run, in row-major order of their sequential axes, and whether that
        order differs from the iteration order (some vectorised axis precedes a sequential
        one)."""
        sizes = [axis.size for axis in self.axes]
        sequential = sorted(scalar)
        rest = [a for a in range(len(sizes)) if a not in scalar]
        budget = max(1, self.max_memory // BYTES_PER_ITERATION)
        if math.prod(sizes[a] for a in rest) > budget and self.formula.op != ":=" and \
                not self.reads_output:
            rest = self._split_order(rest)  # only a run that is split pays for choosing how
        block: tuple[int, int] | None = None  # (axis, block length)
        while rest and math.prod(sizes[a] for a in rest) > budget:
            inner = math.prod(sizes[a] for a in rest[1:])
            if inner <= budget:
                block = (rest[0], max(1, budget // max(1, inner)))
                break
            sequential.append(rest.pop(0))
        ordered = sorted(sequential) + ([block[0]] if block else [])
        reordered = ordered != list(range(len(ordered)))
        choices: list[list[tuple[int, int]]] = []
        for a in range(len(sizes)):
            if a in sequential:
                choices.append([(v, v + 1) for v in range(sizes[a])])
            elif block and a == block[0]:
                step = block[1]
                choices.append([(v, min(v + step, sizes[a])) for v in range(0, sizes[a], step)])
            else:
                choices.append([(0, sizes[a])])
        order = ordered + [a for a in range(len(sizes)) if a not in ordered]
        boxes = []
        for combination in itertools.product(*(choices[a] for a in order)):
            box = [None] * len(sizes)
            for a, span in zip(order, combination):
                box[a] = span
            boxes.append(box)
        self.sequential = set(sequential)
        return boxes, reordered

    def run(self) -> None:
        scalar = self._scalar_axes()
        if self.reads_output:
            steps = math.prod(self.axes[a].size for a in scalar)
            total = math.prod(axis.size for axis in self.axes)
            if steps and total // steps < MIN_CELLS_PER_STEP:
                raise Fallback("too few output cells per sequential step")
        boxes, self.reordered = self._boxes(scalar)
        self.written = None
        if self.reordered and self.formula.op in ("=", ":=") and not self.reads_output:
            self.written = {}  # id(array) -> bool mask of cells written by this formula
        if any(axis.size == 0 for axis in self.axes):
            return
        if len(boxes) > 1:  # a single box writes only once every check has passed
            target = self.arrays[self.formula.output]
            self.saved = [a.copy() for a in target] if isinstance(target, list) else \
                target.copy()
        for box in boxes:
            self.run_box(box)

    # ------------------------------------------------------------------ one box

    def begin(self, box: list[tuple[int, int]]) -> None:
        self.box = box
        n = len(box)
        self.shape = tuple(hi - lo for lo, hi in box)
        self.axis_arrays: dict[int, np.ndarray] = {}
        self.live: Mask = None
        values: dict[str, list[Any]] = {}
        for a, (axis, (lo, hi)) in enumerate(zip(self.axes, box)):
            if a in self.sequential or hi - lo == 1:
                value: Any = lo
            else:
                shape = [1] * n
                shape[a] = hi - lo
                value = np.arange(lo, hi, dtype=np.int64).reshape(shape)
                self.axis_arrays[a] = value
            values.setdefault(axis.name, []).append(value)
        self.frame: dict[str, Any] = {}
        for r in self.formula.indices:
            parts = values.get(r.name, [])
            self.frame[r.name] = tuple(parts) if isinstance(r.bound, tuple) else parts[0]

    def run_box(self, box: list[tuple[int, int]]) -> None:
        self.begin(box)
        f = self.formula
        for local in f.locals:
            self.frame[local.name] = self.ev(local.value, None)
        cond: Mask = None
        if f.condition is not None:
            flag = self.truth(self.ev(f.condition, None))
            if flag is False:
                return
            cond = None if flag is True else flag
        contracting = f.op == "+=" and self.kind in ("int", "real")
        if contracting:
            # factors may be zero-padded views (a guarded index outside the tensor reads 0,
            # which adds nothing to the contraction); other stores rerun without padding
            self.padded = False
            self.view_bases = {}
            nodes = self.factors(f.value)
            live = self.live
            factors = []
            for node in nodes:  # only a factor that is itself an access may read padding
                self.padding_allowed = isinstance(node, ast.Subscript)
                factors.append(self.ev(node, cond))
            self.padding_allowed = False
            value = None
        else:
            factors, value = None, self.ev(f.value, cond)
        target = self.output_target(cond)
        positions = self.positions(f.access, cond, target.shape, storing=True)
        valid = _and(self.live, cond)
        if not _any(valid):
            return
        if factors is not None:
            out = self.output_view(target, positions)
            if out is not None and self.contract(out[0], out[1], factors, valid):
                return
            if self.padded:  # evaluate again without padded views
                self.live = live
                factors = [self.ev(node, cond) for node in nodes]
                positions = self.positions(f.access, cond, target.shape, storing=True)
                valid = _and(self.live, cond)
            value = factors[0]
            for node, factor in zip(nodes[1:], factors[1:]):
                value = self.numeric2(node, "*", value, factor, cond)
        self.store(target, positions, value, valid)

    def factors(self, node: ast.Expr) -> list[ast.Expr]:
        """The operands of a product chain `a * b * c` (left-associated), looking through
        `?:` with a compile-time condition; else [node]."""
        if isinstance(node, ast.Select) and self.is_compile_time(node.cond):
            flag = self.ev(node.cond, None)
            if isinstance(flag, bool):
                chosen = node.then if flag else node.otherwise
                return self.factors(chosen) if chosen is not None else [node]
        if isinstance(node, ast.Binary) and node.op == "*":
            return self.factors(node.left) + [node.right]
        return [node]

    def truth(self, flag: Any) -> Any:
        """A condition's value: True, False or a bool mask."""
        if flag is NULL:
            raise Fallback("a null condition")
        if isinstance(flag, tuple):
            parts = [self.truth(f) for f in flag]
            if any(p is False for p in parts):
                return False
            masks = [p for p in parts if p is not True]
            return np.logical_and.reduce(np.broadcast_arrays(*masks)) if masks else True
        if isinstance(flag, np.bool_):
            return bool(flag)
        if isinstance(flag, np.ndarray):
            if flag.dtype != np.bool_:
                raise Fallback("a condition that is not bool")
            return flag
        if not isinstance(flag, bool):
            raise Fallback("a condition that is not bool")
        return flag

    def output_target(self, active: Mask) -> np.ndarray:
        target = self.arrays[self.formula.output]
        if self.formula.item is not None:
            k = self.ev(self.formula.item, active)
            if not isinstance(k, int) or isinstance(k, bool) or not isinstance(target, list) \
                    or not 0 <= k < len(target):
                raise Fallback("a pack item index that is not a valid int")
            return target[k]
        if isinstance(target, list):
            raise Fallback("a store into a whole pack of tensors")
        return target

    # ------------------------------------------------------------------ stores

    def plain(self, positions: list[Any]) -> list[tuple[str, int]] | None:
        """Each output dimension as ('const', value) or ('axis', a), if every position is a
        constant or a distinct vectorised axis; else None."""
        result, seen = [], set()
        for p in positions:
            if isinstance(p, (int, np.integer)) and not isinstance(p, bool):
                result.append(("const", int(p)))
                continue
            axis = next((a for a, array in self.axis_arrays.items() if p is array), None)
            if axis is None or axis in seen:
                return None
            seen.add(axis)
            result.append(("axis", axis))
        return result

    def selection(self, plain: list[tuple[str, int]]) -> tuple:
        return tuple(v if k == "const" else slice(*self.box[v]) for k, v in plain)

    def arrange(self, array: Any, axes: list[int]) -> np.ndarray:
        """`array` over the box, laid out along `axes` (the other axes have extent 1)."""
        full = np.broadcast_to(A.as_array(array), self.shape)
        others = [a for a in range(len(self.shape)) if a not in axes]
        return full.transpose(axes + others).reshape([self.shape[a] for a in axes])

    def check_kind(self, value: Any) -> np.ndarray:
        if value is NULL or isinstance(value, (tuple, Guard)):
            raise Fallback("the value to store is not a single number")
        array = A.as_array(value)
        if kind_of(array) != self.kind:
            raise Fallback(f"a {kind_of(array)} value for a {self.kind} output")
        return array

    def output_view(self, target: np.ndarray, positions: list[Any]
                    ) -> tuple[np.ndarray, list[int], bool] | None:
        """A writable view of the cells the positions address, with one dimension per output
        axis ("kept" axes), if the positions are constants and distinct plain axes (a slice), or
        affine in the axes with every cell addressed once (a strided view, e.g. `g * m + i`);
        else None. The flag says whether the view is a plain slice."""
        plain = self.plain(positions)
        if plain is not None:
            view = target[self.selection(plain) + (Ellipsis,)]  # a view, even of one cell
            return view, [v for k, v in plain if k == "axis"], True
        if not target.flags.c_contiguous:
            return None
        flat: dict[int, int] = {}
        offset = 0
        element_strides = [st // target.itemsize for st in target.strides]
        for p, stride in zip(positions, element_strides):
            term = _affine(p, self.shape)
            if term is None:
                return None
            origin, coefficients = term
            offset += origin * stride
            for a, c in coefficients.items():
                flat[a] = flat.get(a, 0) + c * stride
        kept = sorted(a for a, c in flat.items() if c != 0)
        reach = 0  # every cell once: each coefficient exceeds what the smaller ones span
        for a in sorted(kept, key=lambda a: abs(flat[a])):
            if abs(flat[a]) <= reach:
                return None
            reach += abs(flat[a]) * (self.shape[a] - 1)
        view = np.lib.stride_tricks.as_strided(
            target.reshape(-1)[offset:], shape=[self.shape[a] for a in kept],
            strides=[flat[a] * target.itemsize for a in kept])
        return view, kept, False

    def store(self, target: np.ndarray, positions: list[Any], value: Any, valid: Mask) -> None:
        value = self.check_kind(value)
        op = self.formula.op
        out = self.output_view(target, positions)
        kept = out[1] if out is not None else []
        reduced = [a for a in range(len(self.shape)) if a not in kept and self.shape[a] > 1]
        if out is not None and op in ("=", ":=") and not reduced and self.written is None:
            view, kept, plain = out
            if plain and self.adopt(target, kept, value, valid):
                return
            new = self.arrange(value, kept)
            if valid is not None:
                new = np.where(self.arrange(valid, kept), new, view)
            view[...] = new
        elif self.reads_output:
            raise Fallback("the output position is not plain in the kept axes")
        elif op in ("=", ":="):
            self.scatter_last(target, positions, value, valid)
        elif out is not None:
            self.reduce(out[0], kept, reduced, value, valid)
        else:
            self.scatter_update(target, positions, value, valid)

    def adopt(self, target: np.ndarray, kept: list[int], value: np.ndarray, valid: Mask
              ) -> bool:
        """Make a freshly computed value array the output itself, instead of copying it in,
        when it covers the whole output in its layout (the common `y[i..] = f(x[i..])`)."""
        if valid is not None or self.formula.item is not None or \
                self.arrays[self.formula.output] is not target or \
                value.shape != self.shape or not value.flags.owndata or \
                not value.flags.c_contiguous or value.dtype != target.dtype or \
                kept != sorted(kept) or [self.shape[a] for a in kept] != list(target.shape) \
                or math.prod(self.shape) != target.size:
            return False
        self.arrays[self.formula.output] = value.reshape(target.shape)
        return True

    def flat_positions(self, target: np.ndarray, positions: list[Any], value: np.ndarray,
                       valid: Mask) -> tuple[np.ndarray, np.ndarray]:
        """The flat target positions and values of the live iterations, in iteration order."""
        arrays = np.broadcast_arrays(*[np.asarray(p) for p in positions], value,
                                     np.ones(self.shape, dtype=bool) if valid is None
                                     else valid, np.empty(self.shape, dtype=bool))
        *index, values, keep, _ = arrays
        keep = keep.reshape(-1)
        flat = np.ravel_multi_index(tuple(i.reshape(-1)[keep] for i in index), target.shape) \
            if index else np.zeros(int(keep.sum()), dtype=np.int64)
        return flat, values.reshape(-1)[keep]

    def scatter_last(self, target: np.ndarray, positions: list[Any], value: np.ndarray,
                     valid: Mask) -> None:
        """`=` / `:=` in iteration order: the last write to a cell wins."""
        flat, values = self.flat_positions(target, positions, value, valid)
        unique, first_from_end = np.unique(flat[::-1], return_index=True)
        last = len(flat) - 1 - first_from_end
        if self.written is not None:
            written = self.written.setdefault(id(target), np.zeros(target.size, dtype=bool))
            if len(unique) != len(flat) or written[unique].any():
                raise Fallback("an assignment writes a cell twice out of iteration order")
            written[unique] = True
        target.reshape(-1)[unique] = values[last]

    def scatter_update(self, target: np.ndarray, positions: list[Any], value: np.ndarray,
                       valid: Mask) -> None:
        """An update at computed positions, applied in iteration order (`ufunc.at`)."""
        op = self.formula.op
        flat, values = self.flat_positions(target, positions, value, valid)
        view = target.reshape(-1)
        if self.kind == "int":
            if op != "+=" and op not in ("<=", ">="):
                raise Fallback(f"an int '{op}' scatter")
            bound = np.abs(values.astype(np.float64)).sum() + \
                (np.abs(view.astype(np.float64)).max() if view.size else 0.0)
            if op == "+=" and bound >= A.SAFE_INT:
                raise Fallback("an int sum may leave int64")
        if op in ("<=", ">=") and self.kind == "real" and self.profile.min_max_nan != "propagate":
            keep = ~np.isnan(values)  # std::min/max ignore a NaN right operand
            flat, values = flat[keep], values[keep]
        ufunc = {"+=": np.add, "*=": np.multiply, "&=": np.logical_and, "|=": np.logical_or,
                 "<=": np.minimum, ">=": np.maximum}[op]
        with np.errstate(all="ignore"):  # IEEE results (nan, inf) are the semantics here
            ufunc.at(view, flat, values)

    def reduce(self, view: np.ndarray, kept: list[int], reduced: list[int], value: np.ndarray,
               valid: Mask) -> None:
        """An update of the output cells of `view`: reduce over the axes the output lacks,
        then combine with the current values by the update operator."""
        op = self.formula.op
        neutral = _neutral(op, self.kind)
        full = np.broadcast_to(value, self.shape)
        if valid is not None:
            full = np.where(valid, full, neutral)
        order = kept + reduced
        others = [a for a in range(len(self.shape)) if a not in order]
        laid = full.transpose(order + others).reshape(
            [self.shape[a] for a in kept] + [-1])
        with np.errstate(all="ignore"):
            if self.kind == "int" and op in ("+=", "*="):
                magnitude = np.abs(laid.astype(np.float64))
                bound = magnitude.sum(axis=-1) if op == "+=" else magnitude.prod(axis=-1)
                if np.any(bound >= A.SAFE_INT):
                    raise Fallback(f"an int '{op}' reduction may leave int64")
            if op == "+=":
                result = laid.sum(axis=-1)
            elif op == "*=":
                result = laid.prod(axis=-1)
            elif op == "&=":
                result = laid.all(axis=-1)
            elif op == "|=":
                result = laid.any(axis=-1)
            elif self.kind == "real" and self.profile.min_max_nan != "propagate":
                result = (np.fmin if op == "<=" else np.fmax).reduce(laid, axis=-1)
            else:
                result = (np.minimum if op == "<=" else np.maximum).reduce(laid, axis=-1)
        self.combine(view, result)

    def combine(self, view: np.ndarray, result: Any) -> None:
        """view <- view (op) result, by the update operator's pairwise rule."""
        if self.kind == "real" and self.formula.op in ("+=", "*="):
            ufunc = np.add if self.formula.op == "+=" else np.multiply
            ufunc(view, result, out=view)  # IEEE + and *: rules.binary's real rule
            return
        try:
            view[...] = A.binary(UPDATE_OPS[self.formula.op], view, result, self.profile)
        except A.Deferred as why:
            raise Fallback(why.reason) from None

    def contract(self, view: np.ndarray, kept: list[int], factors: list[Any], valid: Mask
                 ) -> bool:
        """`+=` of a product into the cells of `view` as one einsum; False if not
        applicable."""
        arrays = [f for f in factors if isinstance(f, np.ndarray) and f.ndim == len(self.shape)]
        if len(arrays) != len(factors) or any(kind_of(f) != self.kind for f in arrays):
            return False
        if (valid is not None or self.padded) and self.kind == "real":
            # 0 * inf is nan: a skipped iteration (masked, or reading padding) must contribute
            # nothing, so every factor must be finite; a strided view is checked by its base
            if not all(self.all_finite(f) for f in arrays):
                return False
        if valid is not None:
            arrays.append(valid.astype(arrays[0].dtype))
        letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        if len(self.shape) > len(letters):
            return False
        operands, subscripts, present = [], [], set()
        for array in arrays:
            axes = [a for a in range(array.ndim) if array.shape[a] > 1]
            operands.append(array.reshape([array.shape[a] for a in axes]))
            subscripts.append("".join(letters[a] for a in axes))
            present.update(axes)
        out_axes = [a for a in kept if a in present]
        spec = ",".join(subscripts) + "->" + "".join(letters[a] for a in out_axes)
        repeat = math.prod(self.shape[a] for a in range(len(self.shape))
                           if a not in present and a not in kept)
        with np.errstate(all="ignore"):
            if self.kind == "int":
                bound = np.einsum(spec, *[np.abs(o.astype(np.float64)) for o in operands])
                if np.any(bound * repeat >= A.SAFE_INT):
                    raise Fallback("an int contraction may leave int64")
            result = _tensordot(spec, operands) if self.kind == "real" else None
            if result is None:
                result = np.einsum(spec, *operands, optimize=_einsum_path(spec, operands))
            if repeat != 1:
                result = result * (repeat if self.kind == "int" else float(repeat))
        shape = [self.shape[a] if a in present else 1 for a in kept]
        result = np.broadcast_to(result.reshape(shape), [self.shape[a] for a in kept])
        self.combine(view, result)
        return True

    # ------------------------------------------------------------------ positions

    def positions(self, items: tuple, active: Mask, shape: tuple, storing: bool = False
                  ) -> list[Any]:
        """The index of each dimension (int, int array or FULL), guards resolved against the
        extents: a skipped iteration leaves the live mask; an unguarded index out of range on
        an evaluated iteration is a Fallback (the scalar engine reports it)."""
        raw: list[Any] = []
        for item in items:
            if isinstance(item, ast.Slice):
                if storing or (item.start, item.stop, item.step) != (None, None, None):
                    raise Fallback("':' in a store or a slice index")
                raw.append(FULL)
                continue
            expanded = isinstance(item, ast.Expand)
            inner = item.operand if expanded else item
            value = self.ev(inner, active)
            if value is NULL:
                raise Fallback("a null index")
            if expanded and item.count is not None and not isinstance(value, tuple):
                count = self.ev(item.count, active)
                if not isinstance(count, int):
                    raise Fallback("a repeat count that is not an int")
                value = (value,) * count
            raw.extend(value if isinstance(value, tuple) else (value,))
        if len(raw) != len(shape):
            raise Fallback("an access with the wrong number of indices")
        return [p if p is FULL else self.resolve(p, extent, active)
                for p, extent in zip(raw, shape)]

    def resolve(self, value: Any, extent: int, active: Mask) -> Any:
        effective = _and(self.live, active)
        if isinstance(value, Guard):
            index = value.value
            if kind_of(index) != "int":
                raise Fallback("a guarded index that is not an int")
            inside = (index >= 0) & (index < extent)
            if value.lower is None:
                if not isinstance(inside, np.ndarray):
                    if not inside:
                        self.live = np.zeros(self.shape, dtype=bool) if effective is None \
                            else self.live_without(effective)
                    return min(max(int(index), 0), max(extent - 1, 0))
                self.live = _and(self.live, inside | ~effective) if effective is not None \
                    else _and(self.live, inside)
                return np.clip(index, 0, max(extent - 1, 0))
            value = np.where(index < 0, value.lower, np.where(index >= extent, value.upper,
                                                              index))
            if value.ndim == 0:
                value = int(value)
        if isinstance(value, (bool, np.bool_)) or kind_of(value) != "int":
            raise Fallback("an index that is not an int")
        if isinstance(value, np.ndarray):
            bad = (value < 0) | (value >= extent)
            if _any(_and(bad, effective)) and bad.any():
                raise Fallback("an index out of range")
            return np.clip(value, 0, max(extent - 1, 0)) if bad.any() else value
        if not 0 <= value < extent:
            if _any(effective):
                raise Fallback("an index out of range")
            return 0
        return int(value)

    def affine_view(self, items: tuple, active: Mask, array: np.ndarray) -> Any:
        """A strided view for an access whose every index is affine in the axes (`2 * i + j -
        1`), or None. A guarded index reaching outside the tensor needs a zero-padded copy,
        allowed only while the factors of a contraction are evaluated."""
        if any(isinstance(item, ast.Slice) for item in items):
            return None
        raw: list[Any] = []
        padding_allowed, self.padding_allowed = self.padding_allowed, False
        try:
            for item in items:
                expanded = isinstance(item, ast.Expand)
                if expanded and item.count is not None:
                    return None
                value = self.ev(item.operand if expanded else item, active)
                raw.extend(value if isinstance(value, tuple) else (value,))
        finally:
            self.padding_allowed = padding_allowed
        if len(raw) != array.ndim or not self.axis_arrays:
            return None
        terms, guarded = [], []
        for value in raw:
            is_guard = isinstance(value, Guard)
            if is_guard and value.lower is not None:
                return None
            raw_index = value.value if is_guard else value
            axis = next((a for a, array in self.axis_arrays.items() if raw_index is array), None)
            term = (self.box[axis][0], {axis: 1}) if axis is not None else \
                _affine(raw_index, self.shape)
            if term is None:
                return None
            terms.append(term)
            guarded.append(is_guard)
        pads = []
        for (origin, coefficients), extent, is_guard in zip(terms, array.shape, guarded):
            low = origin + sum(min(0, c * (self.shape[a] - 1)) for a, c in coefficients.items())
            high = origin + sum(max(0, c * (self.shape[a] - 1)) for a, c in coefficients.items())
            before, after = max(0, -low), max(0, high - (extent - 1))
            if (before or after) and not (is_guard and padding_allowed):
                return None
            pads.append((before, after))
        padded = any(before or after for before, after in pads)
        if padded:
            if sum(b + a for b, a in pads) > 4 * sum(array.shape):
                return None  # mostly padding: the gather is cheaper
            self.padded = True  # its zeros must meet finite factors only
        base = self.prepared_base(array, tuple(pads))
        item = base.itemsize
        strides_of_dims = [st for st in base.strides]
        offset = sum((origin + before) * st for (origin, _), (before, _), st in
                     zip(terms, pads, strides_of_dims))
        strides = [0] * len(self.shape)
        for (_, coefficients), st in zip(terms, strides_of_dims):
            for a, c in coefficients.items():
                strides[a] += c * st
        shape = [self.shape[a] if strides[a] or any(a in c for _, c in terms) else 1
                 for a in range(len(self.shape))]
        flat = base.reshape(-1)[offset // item:]
        view = np.lib.stride_tricks.as_strided(flat, shape=shape, strides=strides,
                                               writeable=False)
        if not any(coefficients for _, coefficients in terms):
            return _python(view.reshape(()))
        self.view_bases[id(view)] = (view, base)
        return view

    def prepared_base(self, array: np.ndarray, pads: tuple) -> np.ndarray:
        """`array` zero-padded by `pads` and in C order (a copy if the input is a
        non-contiguous view), made once per run: every box of a chunked run reuses it."""
        key = (id(array), pads)
        if key not in self.prepared:
            base = np.pad(array, pads) if any(b or a for b, a in pads) else array
            self.prepared[key] = (array, np.ascontiguousarray(base))
        return self.prepared[key][1]

    def all_finite(self, factor: np.ndarray) -> bool:
        """Is every value `factor` reads finite? A strided view of this box answers for the
        array it reads (cached for the run), so a broadcast view is never expanded."""
        entry = self.view_bases.get(id(factor))
        if entry is None or entry[0] is not factor:
            return bool(np.isfinite(factor).all())  # computed in this box
        base = entry[1]
        if id(base) not in self.finite:
            self.finite[id(base)] = (base, bool(np.isfinite(base).all()))
        return self.finite[id(base)][1]

    def live_without(self, effective: np.ndarray) -> np.ndarray:
        return _and(self.live, ~np.broadcast_to(effective, self.shape))

    def gather(self, array: np.ndarray, positions: list[Any]) -> Any:
        """array[positions] over the box (a view where every index is a constant or an
        axis)."""
        plain = self.plain(positions)
        if plain is not None:
            view = array[self.selection(plain)]
            kept = [v for k, v in plain if k == "axis"]
            if not kept:
                return _python(view)
            order = sorted(range(len(kept)), key=lambda i: kept[i])
            view = view.transpose(order)
            shape = [1] * len(self.shape)
            for a in sorted(kept):
                shape[a] = self.shape[a]
            return view.reshape(shape)
        result = array[tuple(positions)]
        return _python(result) if result.ndim == 0 else result

    # ------------------------------------------------------------------ expressions

    def ev(self, node: ast.Expr, active: Mask) -> Any:  # noqa: C901 - one case per node
        """The value of `node` over the box: a Python value, an array, a tuple, NULL."""
        key = id(node)
        if key in self.constants:
            return self.constants[key]
        if self.is_compile_time(node):
            if self.environment is None:
                self.environment = self.instance.environment(self.profile)
            try:
                value = evaluate(node, self.environment)
            except Diagnostic:
                raise Fallback("a compile-time error") from None
            self.constants[key] = value
            return value
        if isinstance(node, (ast.IntLiteral, ast.RealLiteral, ast.BoolLiteral)):
            return node.value
        if isinstance(node, ast.Constant):
            return math.inf if node.name == "inf" else math.pi
        if isinstance(node, ast.Name):
            if node.name in self.frame:
                return self.frame[node.name]
            if node.name in self.symbols and not isinstance(self.symbols[node.name],
                                                            TensorValue):
                return self.symbols[node.name]
            raise Fallback(f"'{node.name}' is not a value here")
        if isinstance(node, ast.Subscript):
            return self.subscript(node, active)
        if isinstance(node, ast.Unary):
            operand = self.ev(node.operand, active)
            if node.op == "?":
                return operand is not NULL
            return self.lift(operand, active, lambda v, m: A.unary(node.op, v, self.profile, m),
                             lambda v: rules.unary(node.op, v, self.profile))
        if isinstance(node, ast.Binary):
            return self.binary(node, active)
        if isinstance(node, ast.Select):
            return self.select(node, active)
        if isinstance(node, ast.ListExpr):
            return self.list_expr(node, active)
        if isinstance(node, ast.Builtin):
            return self.call(node.name, node.args, active)
        if isinstance(node, ast.Call):
            if len(node.callee) != 1:
                raise Fallback("a qualified call in a formula")
            return self.call(node.callee[0], node.args, active)
        if isinstance(node, ast.Member):
            return self.member(node)
        if isinstance(node, ast.Fold):
            return self.fold(node, active)
        if isinstance(node, ast.Substitute):
            return self.substitute(node, active)
        if isinstance(node, ast.Bounded):
            return self.bounded(node, active)
        raise Fallback(f"{type(node).__name__} in a formula")

    def is_compile_time(self, node: ast.Expr) -> bool:
        if isinstance(node, (ast.Bounded, ast.Expand, ast.Zip, ast.Placeholder)):
            return False
        names = _free_names(node)
        runtime = self.index_names | self.local_names | set(self.arrays)
        return not names & runtime and all(
            not isinstance(self.symbols.get(n), TensorValue) for n in names)

    def lift(self, value: Any, active: Mask, array_rule: Callable, scalar_rule: Callable
             ) -> Any:
        """A one-operand rule item by item (packs), on arrays or on Python values."""
        if value is NULL:
            return NULL
        if isinstance(value, tuple):
            return tuple(self.lift(v, active, array_rule, scalar_rule) for v in value)
        if isinstance(value, Guard):
            raise Fallback("a guarded index used as a number")
        if isinstance(value, np.ndarray):
            try:
                return array_rule(value, _and(self.live, active))
            except A.Deferred as why:
                raise Fallback(why.reason) from None
        try:
            return scalar_rule(value)
        except rules.NumericError:
            raise Fallback("a numeric error") from None

    def numeric2(self, node: ast.Node, op: str, a: Any, b: Any, active: Mask) -> Any:
        """`a op b` by the numeric rules, item by item on packs."""
        if a is NULL or b is NULL:
            return NULL
        if isinstance(a, tuple) or isinstance(b, tuple):
            length = len(a) if isinstance(a, tuple) else len(b)
            a = a if isinstance(a, tuple) else (a,) * length
            b = b if isinstance(b, tuple) else (b,) * length
            if len(a) != len(b):
                raise Fallback("packs of different lengths")
            return tuple(self.numeric2(node, op, x, y, active) for x, y in zip(a, b))
        if isinstance(a, Guard) or isinstance(b, Guard):
            raise Fallback("a guarded index used as a number")
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            same = _int_identity(op, a, b)
            if same is not None:
                return same
            try:
                return A.binary(op, a, b, self.profile, _and(self.live, active))
            except A.Deferred as why:
                raise Fallback(why.reason) from None
        try:
            return rules.binary(op, a, b, self.profile)
        except rules.NumericError:
            raise Fallback("a numeric error") from None

    def binary(self, node: ast.Binary, active: Mask) -> Any:
        left = self.ev(node.left, active)
        if node.op == "??":
            return left if left is not NULL else self.ev(node.right, active)
        right = self.ev(node.right, active)
        if node.op in ("is", "in"):
            if isinstance(left, np.ndarray) or isinstance(right, np.ndarray) or \
                    _has_array(left) or _has_array(right):
                raise Fallback(f"'{node.op}' on tensor values")
            if left is NULL or right is NULL:
                return NULL
            if node.op == "is":
                return type(left) is type(right) and left == right
            return tuple(x in right for x in left) if isinstance(left, tuple) else left in right
        return self.numeric2(node, node.op, left, right, active)

    def select(self, node: ast.Select, active: Mask) -> Any:
        flag = self.ev(node.cond, active)
        if flag is NULL:
            return NULL
        if isinstance(flag, (bool, np.bool_)) or \
                (isinstance(flag, np.ndarray) and flag.ndim == 0 and flag.dtype == np.bool_):
            if flag:
                return self.ev(node.then, active)
            return self.ev(node.otherwise, active) if node.otherwise is not None else NULL
        if isinstance(flag, tuple):  # item by item, both branches evaluated (as scalar.py)
            a = self.ev(node.then, active)
            b = self.ev(node.otherwise, active) if node.otherwise is not None else NULL
            if any(isinstance(f, np.ndarray) for f in flag):
                raise Fallback("a pack of computed conditions in '?:'")
            return tuple((a[i] if isinstance(a, tuple) else a) if f else
                         (b[i] if isinstance(b, tuple) else b) for i, f in enumerate(flag))
        if not isinstance(flag, np.ndarray) or flag.dtype != np.bool_:
            raise Fallback("a non-bool condition in '?:'")
        then_mask, else_mask = _and(active, flag), _and(active, ~flag)
        chosen = []
        for branch, mask in ((node.then, then_mask), (node.otherwise, else_mask)):
            if not _any(_and(self.live, mask)):
                chosen.append(None)
                continue
            value = self.ev(branch, mask) if branch is not None else NULL
            if value is NULL or isinstance(value, (tuple, Guard)):
                raise Fallback("a null or packed branch of '?:'")
            chosen.append(value)
        a, b = chosen
        if a is None:
            return b if b is not None else NULL
        if b is None:
            return a
        a, b = A.as_array(a), A.as_array(b)
        if kind_of(a) != kind_of(b):
            raise Fallback("branches of '?:' of different types")
        return np.where(flag, a, b)

    def list_expr(self, node: ast.ListExpr, active: Mask) -> Any:
        items: list[Any] = []
        for item in node.items:
            if isinstance(item, ast.Expand):
                value = self.ev(item.operand, active)
                if item.count is not None and not isinstance(value, tuple):
                    count = self.ev(item.count, active)
                    if not isinstance(count, int):
                        raise Fallback("a repeat count that is not an int")
                    value = (value,) * count
                part = value if isinstance(value, tuple) else (value,)
            elif isinstance(item, ast.Range):
                start, stop = self.ev(item.start, active), self.ev(item.stop, active)
                step = self.ev(item.step, active) if item.step is not None else 1
                if not all(isinstance(v, int) for v in (start, stop, step)):
                    raise Fallback("a range with computed ends")
                part = tuple(range(start, stop, step))
            else:
                part = (self.ev(item, active),)
            if any(v is NULL for v in part):
                return NULL
            items.extend(part)
        return tuple(items)

    def call(self, name: str, args: tuple, active: Mask) -> Any:
        target = self.instance.dtypes.get(name, name)
        if target in CASTS:
            if not args:
                return rules.default_value(target)
            return self.lift(self.ev(args[0], active), active,
                             lambda v, m: A.cast(target, v, self.profile, m),
                             lambda v: rules.cast(target, v, self.profile))
        if len(args) != 1:
            raise Fallback(f"'{name}' with {len(args)} arguments")
        return self.lift(self.ev(args[0], active), active,
                         lambda v, m: A.builtin(name, v, self.profile, m),
                         lambda v: rules.builtin(name, v, self.profile))

    def member(self, node: ast.Member) -> Any:
        if isinstance(node.base, ast.Name) and node.base.name in self.symbols:
            base = self.symbols[node.base.name]
            if isinstance(base, TensorValue):
                return base.shape if node.name == "shape" else len(base.shape)
            return len(base) if isinstance(base, tuple) else NULL
        raise Fallback("a member of a computed value")

    def fold(self, node: ast.Fold, active: Mask) -> Any:
        if node.op not in ("+", "*", "&&", "||", "<<", ">>") and not node.cumulative:
            raise Fallback(f"the fold '{node.op} ..' on tensor values")
        pack = self.ev(node.operand, active)
        if pack is NULL:
            return NULL
        if not isinstance(pack, tuple):
            raise Fallback("a fold of a non-pack")
        base = "any"
        if isinstance(node.operand, ast.Subscript) and isinstance(node.operand.base, ast.Name):
            array = self.arrays.get(node.operand.base.name)
            if isinstance(array, np.ndarray):
                base = kind_of(array)
        return fold_pack(node.op, pack, node.cumulative, base,
                         lambda op, a, b: self.numeric2(node, op, a, b, active))

    def subscript(self, node: ast.Subscript, active: Mask) -> Any:
        base, item = node.base, None
        if isinstance(base, ast.Subscript) and isinstance(base.base, ast.Name) and \
                base.base.name in self.arrays and not base.trailing_comma:
            item, base = base.items[0], base.base
        if isinstance(base, ast.Name) and base.name in self.arrays:
            return self.access(node, base.name, item, active)
        pack = self.ev(base, active)
        if pack is NULL:
            return NULL
        if len(node.items) != 1 or node.trailing_comma or not isinstance(pack, tuple):
            raise Fallback("an unusual pack index")
        return self.pick(pack, node.items[0], active)

    def pick(self, pack: tuple, item: ast.IndexItem, active: Mask) -> Any:
        """An item or a selection of a pack (§2.4); an index array gathers from a pack of
        numbers."""
        if isinstance(item, ast.Slice):
            parts = [self.ev(p, active) if p is not None else None
                     for p in (item.start, item.stop, item.step)]
            if not all(p is None or isinstance(p, int) for p in parts):
                raise Fallback("a pack slice with computed ends")
            return tuple(pack[slice(*parts)])
        position = self.ev(item, active)
        if position is NULL:
            return NULL
        if isinstance(position, tuple):
            if not all(isinstance(p, (int, bool)) for p in position):
                raise Fallback("a computed pack selection")
            if position and isinstance(position[0], bool):
                return tuple(v for v, keep in zip(pack, position) if keep)
            return tuple(pack[p] for p in position)
        if isinstance(position, int) and not isinstance(position, bool):
            if not -len(pack) <= position < len(pack):
                raise Fallback("a pack index out of range")
            return pack[position]
        if isinstance(position, np.ndarray) and kind_of(position) == "int" and pack and \
                all(not isinstance(v, (tuple, np.ndarray, Guard)) and v is not NULL
                    for v in pack):
            kinds = {rules.kind(v) for v in pack}
            if len(kinds) != 1:
                raise Fallback("a pack of mixed types indexed by an array")
            table = A.as_array(np.array(pack))
            effective = _and(self.live, active)
            bad = (position < -len(pack)) | (position >= len(pack))
            if _any(_and(bad, effective)) and bad.any():
                raise Fallback("a pack index out of range")
            return table[np.clip(position, -len(pack), len(pack) - 1)]
        raise Fallback("a pack indexed by a computed value")

    def substitute(self, node: ast.Substitute, active: Mask) -> Any:
        values = self.ev(node.target.base, active)
        new = self.ev(node.value, active)
        if values is NULL or new is NULL:
            return NULL
        if not isinstance(values, tuple):
            raise Fallback("a substitution into a non-pack")
        chosen = self.pick(tuple(range(len(values))), node.target.items[0], active)
        result = list(values)
        if isinstance(chosen, tuple):
            news = new if isinstance(new, tuple) else (new,) * len(chosen)
            for position, value in zip(chosen, news):
                result[position] = value
        elif isinstance(chosen, int):
            result[chosen] = new
        else:
            raise Fallback("a computed substitution position")
        return tuple(result)

    def bounded(self, node: ast.Bounded, active: Mask) -> Any:
        raw = self.ev(node.index, active)
        low = self.ev(node.lower, active) if node.lower is not None else None
        high = self.ev(node.upper, active) if node.upper is not None else None
        if isinstance(raw, tuple):
            lows = low if isinstance(low, tuple) else (low,) * len(raw)
            highs = high if isinstance(high, tuple) else (high,) * len(raw)
            return tuple(Guard(r, lo, hi) for r, lo, hi in zip(raw, lows, highs))
        return Guard(raw, low, high)

    def access(self, node: ast.Subscript, name: str, item: ast.Expr | None, active: Mask
               ) -> Any:
        target = self.arrays[name]
        if target is NULL:
            return NULL
        if item is not None:
            k = self.ev(item, active)
            if not isinstance(target, list) or not isinstance(k, int) or \
                    isinstance(k, bool) or not 0 <= k < len(target):
                raise Fallback("a pack item index that is not a valid int")
            target = target[k]
        if isinstance(target, list):
            raise Fallback("a whole pack of tensors read at once")
        view = self.affine_view(node.items, active, target)
        if view is not None:
            return view
        positions = self.positions(node.items, active, target.shape)
        full = [d for d, p in enumerate(positions) if p is FULL]
        if not full:
            return self.gather(target, positions)
        values = []
        for combination in itertools.product(*(range(target.shape[d]) for d in full)):
            chosen = list(positions)
            for d, v in zip(full, combination):
                chosen[d] = v
            values.append(self.gather(target, chosen))
        return tuple(values)


_INSTANCES: dict[tuple[int, str], tuple[OperatorInstance, dict[str, Any]]] = {}


def _instance_cache(instance: OperatorInstance, profile: rules.Profile) -> dict[str, Any]:
    """What the engine derives from an instance alone (its lowering plan, the compile-time
    values of formula subexpressions), kept while the instance is run again."""
    key = (id(instance), profile.name)
    entry = _INSTANCES.get(key)
    if entry is None or entry[0] is not instance:
        if len(_INSTANCES) > 256:
            _INSTANCES.clear()
        entry = (instance, {})
        _INSTANCES[key] = entry
    return entry[1]


_PATHS: dict[tuple, Any] = {}


def _tensordot(spec: str, operands: list[np.ndarray]) -> np.ndarray | None:
    """A two-factor real contraction of matrices or vectors (`ab,bc->ac`) as `np.tensordot`
    (one BLAS product), or None when it is not one: a letter shared by both factors and the
    result (a batch axis), a letter repeated within a factor, or one to sum within a single
    factor."""
    if len(operands) != 2 or any(o.ndim > 2 for o in operands):
        return None  # higher ranks (a convolution's windows): einsum's own path is faster
    inputs, out = spec.split("->")
    left, right = inputs.split(",")
    shared = [c for c in left if c in right]
    if any(c in out for c in shared) or len(set(left)) != len(left) or \
            len(set(right)) != len(right) or \
            any(c not in out for c in left + right if c not in shared):
        return None
    result = np.tensordot(operands[0], operands[1],
                          axes=([left.index(c) for c in shared], [right.index(c) for c in shared]))
    order = [c for c in left if c not in shared] + [c for c in right if c not in shared]
    return result.transpose([order.index(c) for c in out])


def _einsum_path(spec: str, operands: list[np.ndarray]) -> Any:
    """The contraction order for `np.einsum` (BLAS where it can), searched once per
    subscripts and shapes."""
    if len(operands) < 2:
        return False
    key = (spec, *(o.shape for o in operands))
    if key not in _PATHS:
        if len(_PATHS) > 1024:
            _PATHS.clear()
        _PATHS[key] = np.einsum_path(spec, *operands, optimize="greedy")[0]
    return _PATHS[key]


_ANALYSES: dict[tuple[int, str], tuple[ast.Node, Any]] = {}


def _walk(root: object) -> Iterator[ast.Node]:
    """Every AST node in `root` (a node, a tuple of them, or None), depth first."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Node):
            yield node
            stack.extend(reversed(list(vars(node).values())))
        elif isinstance(node, tuple):
            stack.extend(reversed(node))


def _cached(node: ast.Node, what: str, analyse: Callable[[], Any]) -> Any:
    """A static analysis of a formula, remembered per AST node."""
    entry = _ANALYSES.get((id(node), what))
    if entry is None or entry[0] is not node:
        entry = (node, analyse())
        _ANALYSES[(id(node), what)] = entry
    return entry[1]


_FREE_NAMES: dict[int, tuple[ast.Node, frozenset[str]]] = {}


def _free_names(node: ast.Expr) -> frozenset[str]:
    """binding.free_names, remembered per AST node (the tree is immutable)."""
    entry = _FREE_NAMES.get(id(node))
    if entry is None or entry[0] is not node:
        entry = (node, frozenset(free_names(node)))
        _FREE_NAMES[id(node)] = entry
    return entry[1]


def _affine(value: Any, shape: tuple) -> tuple[int, dict[int, int]] | None:
    """An int index as origin + sum of coefficient * (position along axis a in the box), or
    None if it is not affine in the axes."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value), {}
    if not isinstance(value, np.ndarray) or value.dtype != np.int64 or \
            value.ndim != len(shape):
        return None
    corner = (0,) * value.ndim
    origin = int(value[corner])
    coefficients: dict[int, int] = {}
    rebuilt: Any = origin
    for a in range(value.ndim):
        if value.shape[a] > 1:
            step = list(corner)
            step[a] = 1
            coefficients[a] = int(value[tuple(step)]) - origin
            ramp = np.arange(value.shape[a], dtype=np.int64).reshape(
                [value.shape[a] if b == a else 1 for b in range(value.ndim)])
            rebuilt = rebuilt + coefficients[a] * ramp
    if not np.array_equal(np.broadcast_to(rebuilt, value.shape), value):
        return None
    return origin, {a: c for a, c in coefficients.items() if c}


def _int_identity(op: str, a: Any, b: Any) -> np.ndarray | None:
    """`x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x` on an int array: x itself (the same
    object, so an index like `g * m + i` with g fixed at 0 stays recognisably the axis i)."""
    for array, other, ops in ((a, b, ("+", "-")), (b, a, ("+",))):
        if isinstance(array, np.ndarray) and array.dtype == np.int64 and \
                type(other) is int and ((other == 0 and op in ops) or
                                        (other == 1 and op == "*")):
            return array
    return None


def _neutral(op: str, kind: str) -> Any:
    if op == "+=":
        return 0.0 if kind == "real" else 0
    if op == "*=":
        return 1.0 if kind == "real" else 1
    if op == "&=":
        return True
    if op == "|=":
        return False
    if kind == "int":
        return A.INT64_MAX if op == "<=" else A.INT64_MIN
    return math.inf if op == "<=" else -math.inf


def _python(value: np.ndarray) -> Value:
    value = np.asarray(value)
    if value.dtype == np.bool_:
        return bool(value)
    if np.issubdtype(value.dtype, np.integer):
        return int(value)
    return float(value)


def _has_array(value: Any) -> bool:
    return isinstance(value, tuple) and any(isinstance(v, np.ndarray) or _has_array(v)
                                            for v in value)
