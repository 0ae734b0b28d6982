"""The vector engine's iteration space (docs/performance.md, "The vector engine").

A formula's iteration space has one axis per index symbol (a packed index: one axis per
component), in declaration order. It is run in boxes: axes that must take one value at a time
(a pack item selected by an index; the reduced axes of a formula reading its own output) and,
when the space exceeds the memory budget, the axes cheapest to split, are iterated in row-major
order; the rest of each box is vectorised. This module holds what a formula is known to need
before it runs (`FormulaShape` from its syntax, shared by the instances of its operator;
`FormulaFacts` per instance), how its space is cut into boxes (`plan_boxes`), and one box while
it is evaluated (`Box`), with the masks the other vector modules share.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from refinterp.core.cache import BoundedCache
from refinterp.language.binding import free_names
from refinterp.language.invocation import OperatorInstance
from refinterp.lower.common import Refused, facts_of, lowering_plan
from refinterp.lower.plan import Formula
from refinterp.syntax import ast
from refinterp.syntax.visitor import children

DEFAULT_MAX_MEMORY = 2 * 2 ** 30   # bytes of temporaries one box may take (--max-memory)
BYTES_PER_ITERATION = 48           # estimate: a few int64/float64 temporaries per iteration
MIN_CELLS_PER_STEP = 32            # below this, a sequential formula runs faster compiled
Mask = np.ndarray | None           # the iterations a value counts on; None: all of them


def both(a: Mask, b: Mask) -> Mask:
    """The iterations in both masks."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def anywhere(mask: Mask) -> bool:
    """Does the mask hold any iteration?"""
    return True if mask is None else bool(np.any(mask))


@dataclass(frozen=True)
class Axis:
    """One axis of the iteration space: an index symbol, or one component of a packed one."""

    name: str
    component: int | None
    size: int


def walk(root: object) -> Iterator[ast.Node]:
    """Every AST node in `root` (a node, a tuple of them, or None), depth first."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Node):
            yield node
            stack.extend(reversed(list(children(node))))
        elif isinstance(node, tuple):
            stack.extend(reversed(node))


# ---------------------------------------------------------------------------- formula facts


class FormulaShape:
    """What the vector engine knows of a formula from its syntax alone, shared by every instance
    of its operator (`formula_shape`): whether it reads its own output, the `xs[k][...]` pack
    selectors, and the free names of each of its expression nodes."""

    def __init__(self, formula: Formula) -> None:
        self.node = formula.node
        self.parts = _computed(formula)
        self.index_names = frozenset(r.name for r in formula.indices)
        self.local_names = frozenset(local.name for local in formula.locals)
        self.reads_output = _reads_output(formula)
        # ... only at the very position it writes?
        self.same_position_reads = self.reads_output and _same_position_reads(formula)
        self.selectors = _item_selectors(formula)  # pack name -> names its `k` uses
        # free names by id(node): `parts` keeps every node alive, so an id names one node
        self.names: dict[int, frozenset[str]] = {}
        for part in self.parts:
            _collect_names(part, self.names)

    def free_names(self, node: ast.Node) -> frozenset[str]:
        names = self.names.get(id(node))
        return names if names is not None else frozenset(free_names(node))


# Shapes by the source span of the formula (cheap to hash, where hashing the tree itself costs
# a walk of it), each checked to be of the very tree it was made from.
_SHAPES: BoundedCache[FormulaShape] = BoundedCache(1024)


def formula_shape(formula: Formula) -> FormulaShape:
    """The shape of a formula, made once per formula syntax tree."""
    node = formula.node
    shape = _SHAPES.get(node.span)
    if shape is None or shape.node is not node:  # new, or another tree at that span
        shape = FormulaShape(formula)
        _SHAPES.put(node.span, shape)
    return shape


def _collect_names(root: object, names: dict[int, frozenset[str]]) -> frozenset[str]:
    """The free names of `root` (as binding.free_names: its `Name` nodes), recording those of
    every node under it."""
    if isinstance(root, tuple):
        return frozenset().union(*(_collect_names(item, names) for item in root))
    if not isinstance(root, ast.Node):
        return frozenset()
    found = frozenset().union(*(_collect_names(child, names) for child in children(root)))
    if isinstance(root, ast.Name):
        found = found | {root.name}
    names[id(root)] = found
    return found


RUNTIME = object()  # in FormulaFacts.folded: the node is computed per iteration
_UNKNOWN = object()  # FormulaFacts.contraction_footprint not found yet


class FormulaFacts:
    """What the vector engine needs to know of a formula of an instance before running it,
    found once per instance (kept on it, `vector_facts`): its shape, its axes, and the
    compile-time values of its subexpressions."""

    def __init__(self, formula: Formula) -> None:
        self.formula = formula
        self.shape = formula_shape(formula)
        axes: list[Axis] = []
        for index in formula.indices:
            if isinstance(index.bound, tuple):
                axes += [Axis(index.name, c, n) for c, n in enumerate(index.bound)]
            else:
                axes.append(Axis(index.name, None, int(index.bound)))
        self.axes = tuple(axes)
        # per profile: each node's compile-time value, or RUNTIME. Keyed by id(node): `formula`,
        # held here, keeps every one of its nodes alive, so an id names one node
        self.folded: dict[str, dict[int, Any]] = {}
        self._footprint: Any = _UNKNOWN  # contraction_footprint, once found

    @property
    def reads_output(self) -> bool:
        return self.shape.reads_output

    def contraction_footprint(self, arrays: dict[str, Any]) -> int | None:
        """`contraction_box`'s estimate of the bytes a contraction of this formula allocates,
        or None when the formula is no product of tensor accesses into unguarded positions;
        found once (it depends on the formula, its extents and which names are tensors, all
        fixed for the instance)."""
        if self._footprint is _UNKNOWN:
            self._footprint = _contraction_footprint(self, arrays)
        return self._footprint

    def axes_of(self, names: set[str] | frozenset[str]) -> set[int]:
        return {a for a, axis in enumerate(self.axes) if axis.name in names}


def vector_facts(instance: OperatorInstance) -> tuple[FormulaFacts, ...]:
    """The facts of each formula of `instance`, in plan order, found once and kept on the
    instance (`common.InstanceFacts.vector`)."""
    facts = facts_of(instance)
    if facts.vector is None:
        facts.vector = tuple(FormulaFacts(f) for f in lowering_plan(instance).formulas)
    return facts.vector


def _computed(formula: Formula) -> tuple:
    """The expressions computed per iteration, and the output position."""
    f = formula
    return (f.value, f.condition, f.item, f.access, *(local.value for local in f.locals))


def _reads_output(formula: Formula) -> bool:
    for node in walk(_computed(formula)):
        if isinstance(node, ast.Subscript):
            base = node.base.base if isinstance(node.base, ast.Subscript) else node.base
            if isinstance(base, ast.Name) and base.name == formula.output:
                return True
    return False


def _same_position_reads(formula: Formula) -> bool:
    """A formula reading its output is vectorised over output cells only if every read is at
    the very position it writes (the cells are then independent)."""
    f = formula
    for node in walk((f.value, f.condition, *(local.value for local in f.locals))):
        if isinstance(node, ast.Subscript) and isinstance(node.base, ast.Name) and \
                node.base.name == f.output and node.items != f.access:
            return False
    return True


def _item_selectors(formula: Formula) -> dict[str, frozenset[str]]:
    """For each `xs[k][...]` access: the tensor pack's name and the names `k` uses."""
    selectors: dict[str, set[str]] = {}
    for node in walk(_computed(formula)):
        if isinstance(node, ast.Subscript) and isinstance(node.base, ast.Subscript) and \
                isinstance(node.base.base, ast.Name):
            names = selectors.setdefault(node.base.base.name, set())
            for item in node.base.items:
                names.update(free_names(item))
    return {name: frozenset(names) for name, names in selectors.items()}


# ---------------------------------------------------------------------------- boxes


def scalar_axes(facts: FormulaFacts, arrays: dict[str, Any]) -> set[int]:
    """Axes that take one value at a time: those selecting an item of a pack of tensors,
    and, for a formula reading its output, those the output position does not use."""
    formula = facts.formula
    scalar: set[int] = set()
    for name, names in facts.shape.selectors.items():
        if isinstance(arrays.get(name), list):
            scalar.update(facts.axes_of(names))
    if formula.item is not None:
        scalar.update(facts.axes_of(free_names(formula.item)))
    if facts.reads_output:
        if formula.op not in ("=", ":="):
            raise Refused("an update that reads its own output")
        if not facts.shape.same_position_reads:
            raise Refused("the output is read at another position than it is written")
        stored = free_names(formula.access)
        scalar.update(a for a, axis in enumerate(facts.axes) if axis.name not in stored)
    return scalar


def split_order(facts: FormulaFacts, arrays: dict[str, Any], rest: list[int]) -> list[int]:
    """The vectorised axes in the order they are split into chunks, cheapest first.
    Every chunk reads again what the accesses not indexed by the split axis read (split by
    output channel, a convolution gathers the whole input window per chunk; split by row,
    it re-reads only the small filter), so an axis costs the sizes of the tensors whose
    accesses do not mention it. Ties keep the iteration order."""
    f = facts.formula
    local_names = {local.name: free_names(local.value) for local in f.locals}
    reads: list[tuple[int, set[str]]] = []  # (tensor size, names its indices use)

    def mentioned(node: object) -> set[str]:
        names = set(free_names(node)) if isinstance(node, ast.Node) else set()
        for name in list(names):
            names |= local_names.get(name, set())
        return names

    for node in walk((f.value, f.condition, *(local.value for local in f.locals))):
        if isinstance(node, ast.Subscript) and isinstance(node.base, ast.Name):
            array = arrays.get(node.base.name)
            if isinstance(array, np.ndarray):
                names = set().union(*(mentioned(item) for item in node.items))
                reads.append((array.size, names))
    output = arrays.get(f.output)
    if isinstance(output, np.ndarray):
        reads.append((output.size, set().union(*(mentioned(i) for i in f.access))))
    cost = {a: sum(size for size, names in reads if facts.axes[a].name not in names)
            for a in rest}
    return sorted(rest, key=lambda a: (cost[a], rest.index(a)))


# A contraction run as one box (`contraction_box`): bytes per element of its factors (the
# views themselves, a contiguous copy for BLAS, its blocks) and per output cell (the sum, its
# magnitude and error bound, the block sums: up to 16, and scratch arrays)
CONTRACTION_FACTOR_BYTES = 3 * 8
CONTRACTION_CELL_BYTES = 24 * 8


def _contraction_footprint(facts: FormulaFacts, arrays: dict[str, Any]) -> int | None:
    """See `contraction_box`."""
    f = facts.formula
    if not isinstance(arrays.get(f.output), np.ndarray):
        return None
    factors: list[ast.Expr] = []
    node = f.value
    while isinstance(node, ast.Binary) and node.op == "*":
        factors.append(node.right)
        node = node.left
    factors.append(node)
    if len(factors) < 2 or not all(
            isinstance(x, ast.Subscript) and isinstance(x.base, ast.Name) and
            isinstance(arrays.get(x.base.name), np.ndarray) for x in factors):
        return None
    local_names = {local.name: free_names(local.value) for local in f.locals}
    stored = set().union(*(free_names(item) for item in f.access))
    if any(isinstance(node, ast.Bounded) for node in walk(
            (f.access, *(local.value for local in f.locals if local.name in stored)))):
        return None  # a guarded output position: a transposed convolution's taps

    def cells(nodes: tuple) -> int:
        names: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Node):
                names |= free_names(node)
        for name in list(names):
            names |= local_names.get(name, set())
        return math.prod(axis.size for axis in facts.axes if axis.name in names)

    return CONTRACTION_FACTOR_BYTES * sum(cells(tuple(x.items)) for x in factors) + \
        CONTRACTION_CELL_BYTES * cells(tuple(f.access)) + \
        BYTES_PER_ITERATION * sum(cells((local.value,)) for local in f.locals)


def contraction_box(facts: FormulaFacts, arrays: dict[str, Any], scalar: set[int],
                    max_memory: int) -> Boxes | None:
    """One box for the whole iteration space of a `+=` of a product of tensor accesses
    (matmul, linear, convolution), when what it really allocates fits `max_memory`: a
    contraction (`Stores.contract`) never makes an array over the iteration space, only over
    each factor's own axes and over the output cells, where `plan_boxes` counts
    BYTES_PER_ITERATION for every iteration (a convolution of 224M iterations then ran in six
    boxes, each with its own contraction, bounds and block sums). The estimate: per factor,
    per local and the output, the product of the extents of the axes its indices mention
    (a factor's array has exactly those axes). None when the formula is not of that form
    (a condition, a sequential axis, an output read, a guarded output position — the taps
    of a transposed convolution, whose boxes `Stores.add_by_taps` handles —, fewer than two
    factors, a factor that is not a tensor access) or does not fit; the caller must run the
    box as a contraction or plan the boxes again with `plan_boxes` (`VectorFormula.run`)."""
    f = facts.formula
    if f.op != "+=" or f.condition is not None or f.item is not None or scalar or \
            facts.reads_output:
        return None
    footprint = facts.contraction_footprint(arrays)
    if footprint is None or footprint > max_memory:
        return None
    return Boxes([[(0, axis.size) for axis in facts.axes]], frozenset(), False)


Spans = list[tuple[int, int]]  # per axis, the values [lo, hi) a box covers


@dataclass(frozen=True)
class Boxes:
    """The boxes of a run, in row-major order of their sequential axes."""

    spans: list[Spans]
    sequential: frozenset[int]  # axes that take one value per box
    reordered: bool             # does the box order differ from the iteration order?


def plan_boxes(facts: FormulaFacts, arrays: dict[str, Any], scalar: set[int],
               max_memory: int) -> Boxes:
    """The boxes to run: the `scalar` axes one value at a time, and, while a box would exceed
    `max_memory`, further axes (cheapest first, `split_order`) one value or one block at a
    time. The order differs from the iteration order when some vectorised axis precedes a
    sequential one."""
    sizes = [axis.size for axis in facts.axes]
    sequential = sorted(scalar)
    rest = [a for a in range(len(sizes)) if a not in scalar]
    budget = max(1, max_memory // BYTES_PER_ITERATION)
    if math.prod(sizes[a] for a in rest) > budget and facts.formula.op != ":=" and \
            not facts.reads_output:
        rest = split_order(facts, arrays, rest)  # only a run that is split pays for choosing
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
        box: list[Any] = [None] * len(sizes)
        for a, span in zip(order, combination):
            box[a] = span
        boxes.append(box)
    return Boxes(boxes, frozenset(sequential), reordered)


class Box:
    """One box of the iteration space while its formula is evaluated: each index symbol's value
    (an int on a sequential or one-value axis, else an `arange` broadcast along its axis), the
    locals computed so far (`frame`), and the live mask.

    `live` is the one piece of evaluation state that changes as the formula is evaluated: a
    guarded index `|e|` that falls outside its tensor removes its iterations from it (the whole
    update of a skipped iteration is skipped, wherever in the formula the guard stands), and
    later checks look only at live iterations."""

    def __init__(self, formula: Formula, axes: tuple[Axis, ...], spans: Spans,
                 sequential: frozenset[int]) -> None:
        self.spans = spans
        self.shape = tuple(hi - lo for lo, hi in spans)
        self.axis_arrays: dict[int, np.ndarray] = {}
        self.live: Mask = None
        n = len(spans)
        values: dict[str, list[Any]] = {}
        for a, (axis, (lo, hi)) in enumerate(zip(axes, spans)):
            if a in sequential or hi - lo == 1:
                value: Any = lo
            else:
                shape = [1] * n
                shape[a] = hi - lo
                value = np.arange(lo, hi, dtype=np.int64).reshape(shape)
                self.axis_arrays[a] = value
            values.setdefault(axis.name, []).append(value)
        # axis_of by identity: the arrays are kept alive by `axis_arrays`, so ids stay theirs
        self._axis_by_id = {id(array): a for a, array in self.axis_arrays.items()}
        self.frame: dict[str, Any] = {}
        for r in formula.indices:
            parts = values.get(r.name, [])
            self.frame[r.name] = tuple(parts) if isinstance(r.bound, tuple) else parts[0]

    def axis_of(self, value: Any) -> int | None:
        """The vectorised axis whose index array `value` is (the very object), or None."""
        return self._axis_by_id.get(id(value))

    def narrow(self, keep: Any, effective: Mask) -> None:
        """Remove from the live mask the iterations of `effective` (None: all) where `keep` (a
        bool or a bool array) is false."""
        if not isinstance(keep, np.ndarray):
            if not keep:
                self.live = np.zeros(self.shape, dtype=bool) if effective is None else \
                    both(self.live, ~np.broadcast_to(effective, self.shape))
            return
        self.live = both(self.live, keep | ~effective) if effective is not None else \
            both(self.live, keep)
