"""Code generation for the compiled engine, part two: tensor accesses (`Accesses`): the flat
list an access reads, its layout, the offset of an element, and the guards and range checks
before it; an item of a pack of tensors; a constant pack indexed at run time.
"""

from __future__ import annotations

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.binding import free_names
from refinterp.language.expr import evaluate
from refinterp.language.values import TensorValue
from refinterp.lower.common import Refused
from refinterp.lower.compiled.expressions import Expressions
from refinterp.lower.compiled.source import Layout
from refinterp.numeric.representation import kind_of
from refinterp.syntax import ast


class Accesses(Expressions):
    """The tensor accesses of one formula's code generation (`visit_Subscript`)."""

    def tensor(self, name: str) -> tuple[str, np.ndarray]:
        array = self.arrays.get(name)
        if not isinstance(array, np.ndarray):
            raise Refused(name)
        if name not in self.tensors:
            self.tensors[name] = f"T_{len(self.tensors)}"
        return self.tensors[name], array

    def pack(self, name: str) -> tuple[str, list[np.ndarray]]:
        """The variable of a pack of tensors (a list of flat lists, one per item) and its
        arrays: a non-empty pack whose items have one kind."""
        arrays = self.arrays.get(name)
        if not isinstance(arrays, list) or not arrays or \
                not all(isinstance(a, np.ndarray) for a in arrays):
            raise Refused("pack of tensors")
        if len({kind_of(a) for a in arrays}) != 1:
            raise Refused("pack item types")
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
            raise Refused("pack item ranks")

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
        the element's indices are computed, as on the reference (reference.py `pack_item`), unless
        provably in range."""
        if not isinstance(base.base, ast.Name) or len(base.items) != 1 or base.trailing_comma \
                or isinstance(base.items[0], (ast.Slice, ast.Expand, ast.Bounded)):
            raise Refused("pack item")
        name = base.base.name
        pack, arrays = self.pack(name)
        index = self.index_value(base.items[0])
        if index.lstrip("-").isdigit():  # a compile-time item: that array's own layout
            item = int(index)
            if not 0 <= item < len(arrays):
                raise Refused("pack item out of range")  # the reference reports it
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


    def visit_Subscript(self, node: ast.Subscript) -> tuple[str, str]:
        lookup = self.constant_lookup(node)
        if lookup is not None:
            return lookup
        return self.access(node)

    def constant_lookup(self, node: ast.Subscript) -> tuple[str, str] | None:
        """`p[k]` of a compile-time pack `p` of scalars of one type (`zero_point[i__1]`, an
        attribute) and a runtime int `k`: an item of a constant tuple, indexed as the reference
        indexes it; only where `k` is provably within the pack (else the reference runs and
        reports it). None when `p` is not compile-time (a tensor access)."""
        names = free_names(node.base)
        if names & (set(self.indices) | set(self.locals) | set(self.arrays)) or any(
                isinstance(self.instance.symbols.get(n), TensorValue) for n in names):
            return None
        if len(node.items) != 1 or node.trailing_comma or \
                isinstance(node.items[0], (ast.Slice, ast.Expand)):
            raise Refused("pack indexing")
        try:
            pack = evaluate(node.base, self.instance.environment(self.profile))
        except Diagnostic:
            raise Refused("compile-time error") from None
        types = set(map(type, pack)) if isinstance(pack, tuple) else set()
        if len(types) != 1 or not types <= {bool, int, float}:
            raise Refused("non-scalar constant")
        position, kind = self.visit(node.items[0])
        interval = self.interval(node.items[0])
        if kind != "int" or interval is None or \
                not (-len(pack) <= interval[0] and interval[1] < len(pack)):
            raise Refused("pack index")
        return f"{self.constant(pack)}[{position}]", \
            {bool: "bool", int: "int", float: "real"}[types.pop()]


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
            raise Refused("access base")
        offset = self.offset(node, layout)
        return f"{layout.flat}[{offset}]", layout.kind

    def pick(self, node: ast.Subscript) -> tuple[str, str]:
        """`[a, b, ..][j]`: every item computed (as the reference computes the whole pack), then
        the one j picks; j must be provably in range (the reference has no diagnostic for it)."""
        items = node.base.items
        if len(node.items) != 1 or node.trailing_comma or \
                any(isinstance(i, (ast.Expand, ast.Range)) for i in items):
            raise Refused("pack indexing")
        position = node.items[0]
        *sources, (index, index_kind) = self.in_order([*items, position])
        if len({kind for _, kind in sources}) != 1 or index_kind != "int" or \
                not self.in_range(position, len(items)):
            raise Refused("pack index")
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
                raise Refused("expanded index")
            emitted = len(self.lines)
            index, provable = self.single_index(item, layout, len(dims))
            if len(self.lines) != emitted:  # the indices left of it that may fail fail first
                sources = self.settle([d for d, _ in dims], emitted)
                dims = [(d, proven) for d, (_, proven) in zip(sources, dims)]
            dims.append((index, provable))
        if len(dims) != ndim:
            raise Refused("rank")
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
            raise Refused("rank")
        extent, least = layout.extents[dimension], layout.least[dimension]
        if isinstance(item, ast.Bounded):
            parts = [item.index] if item.lower is None else [item.index, item.lower, item.upper]
            values = self.in_order(parts)  # the reference computes all three, then resolves
            if any(kind != "int" for _, kind in values):
                raise Refused("non-int index")
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
            raise Refused("non-int index")
        return source

