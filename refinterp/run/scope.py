"""The scope of a @compose or @update block (spec §2.10, §2.11): the tensors visible, the scoped
name of the block (labels, auto-labels), and which names a component reads — for releasing an
intermediate tensor after its last reader and for telling tensor from compile-time
expressions."""

from __future__ import annotations

from dataclasses import dataclass, field
from collections import ChainMap
from itertools import islice
from typing import Any, Callable, Iterator, Mapping

from refinterp.core.cache import IdentityCache
from refinterp.language.binding import free_names
from refinterp.language.expr import Environment
from refinterp.language.instance import OperatorInstance
from refinterp.language.modules import LoadedModule
from refinterp.language.values import NULL, TensorValue
from refinterp.numeric import rules
from refinterp.numeric.representation import kind_of
from refinterp.syntax import ast
from refinterp.syntax.visitor import ExprVisitor, children, nodes


ScopePath = tuple[str, ...]


@dataclass
class BlockScope:
    """Tensors visible in a @compose / @update block (packs as lists), the instance's symbols,
    and the name scope (spec §2.10 "Labelling operator invocations"): `path` is the dotted scoped
    name of the operator instance or labelled block (None when it has no name), `propagate`
    says that the single component of the block inherits the path (auto-label rule 1), and
    `block` is "compose" or "update" (what may be assigned, §2.11); `nested` is true inside
    regions and loop bodies, whose names shadow the outer ones. `shape_of` gives a tensor's
    shape as `x.shape` reads it: with the symbols of a run's dynamic extents where the executor
    knows them (`run.jagged.DynamicExtents.tensor_type`)."""

    instance: OperatorInstance
    module: LoadedModule
    tensors: dict[str, Any] = field(default_factory=dict)
    path: ScopePath | None = None
    propagate: bool = False
    block: str = "compose"
    nested: bool = False
    shape_of: Callable[[Any], tuple] = lambda array: tuple(array.shape)

    def child(self, path: ScopePath | None = None) -> "BlockScope":
        """A nested scope (a region or loop body): same tensors, own assignments."""
        return BlockScope(self.instance, self.module, dict(self.tensors),
                          self.path if path is None else path, False, self.block, True,
                          self.shape_of)

    def environment(self, profile: rules.Profile) -> Environment:
        """The instance's symbols and, over them, the block's tensors as compile-time values
        (visible to `x.shape` / `x.rank`); a value assigned to the environment goes over both."""
        env = self.instance.environment(profile)
        env.values = ChainMap({}, TensorValues(self.tensors, self.shape_of), env.values)
        return env


class TensorValues(Mapping[str, TensorValue]):
    """The tensors of a block as compile-time values (kind and shape), each made when read:
    an expression reads a few of a graph's hundreds of tensors. Packs and absent tensors are
    not values here (the instance's symbol of that name, if any, shows through)."""

    def __init__(self, tensors: dict[str, Any],
                 shape_of: Callable[[Any], tuple] = lambda array: tuple(array.shape)) -> None:
        self._tensors = tensors
        self._shape_of = shape_of

    def __getitem__(self, name: str) -> TensorValue:
        value = self._tensors[name]
        if isinstance(value, list) or value is NULL:
            raise KeyError(name)
        return TensorValue(kind_of(value), self._shape_of(value))

    def __iter__(self) -> Iterator[str]:
        return (name for name, value in self._tensors.items()
                if not isinstance(value, list) and value is not NULL)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True)
class Liveness:
    """For each component k of a @compose block: `live[k]`, the tensor names read after it (by
    a later component, as the output, or as a variable), and `dying[k]`, the names live
    before k and not after it (`live[k-1] - live[k]`; for k = 0, empty)."""

    live: tuple[frozenset[str], ...]
    dying: tuple[frozenset[str], ...]

    def release(self, tensors: dict[str, Any], k: int, added: int) -> None:
        """Drop from `tensors` what no component after the k-th reads, given that component k
        added the last `added` names. Only the names that may have died are looked at — those
        in `dying[k]` and k's own — so a block of n components costs O(n) in all."""
        after = self.live[k]
        candidates = list(tensors) if k == 0 else \
            [*self.dying[k], *islice(reversed(tensors), added)]
        for name in candidates:  # k = 0: inputs, constants, variables and k's own
            if name not in after:
                tensors.pop(name, None)


def liveness(definition: ast.OperatorDef) -> Liveness | None:
    """The `Liveness` of a definition's @compose block, for releasing an intermediate tensor
    after its last reader; None when an @update block reads the intermediate tensors.

    Computed once per definition tree (parsed files are shared, so the standard library's once
    per process)."""
    if definition.block("update") is not None:
        return None
    found = _LIVE.get(definition)
    if found is None:
        entries = definition.block("compose").entries
        needed = frozenset(d.name for b in ("output", "variable")
                           if definition.block(b) is not None
                           for d in definition.block(b).entries)
        sets: list[frozenset[str]] = []
        for entry in reversed(entries):
            sets.append(needed)
            needed = needed | _reads(entry)
        live = tuple(reversed(sets))
        dying = (frozenset(),) + tuple(before - after for before, after in zip(live, live[1:]))
        found = Liveness(live, dying)
        _LIVE.put(definition, found)
    return found


# `liveness` by definition (its syntax tree).
_LIVE: IdentityCache[Liveness] = IdentityCache(1024)


def _reads(component: ast.Component) -> set[str]:
    """The names a component reads: its right-hand side, and any name inside a target that is
    not itself a plain target name (an index, a pack item)."""
    plain = {t.name for t in component.targets if isinstance(t, ast.LName)}
    inside = set().union(*(free_names(t) for t in component.targets
                           if not isinstance(t, ast.LName))) if component.targets else set()
    return free_names(component.value) | (inside - plain)


def value_names(node: object) -> set[str]:
    """Names an expression (a node, or a tuple of them) uses as values: not as the base of
    `.shape` / `.rank` / `.size`, nor under the null test `?x`. Iterative, so that a chain of
    any length (`x + x + ... + x`) is read without recursion."""
    names: set[str] = set()
    stack = list(nodes(node))
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Name):
            names.add(item.name)
        elif isinstance(item, ast.Member) or (isinstance(item, ast.Unary) and item.op == "?"):
            continue  # `x.shape` reads no value of x; `?x` asks whether x is given
        else:
            stack.extend(children(item))
    return names
