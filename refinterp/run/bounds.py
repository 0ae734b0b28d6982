"""Error magnitudes through a whole run (docs/golden.md "Per-element error bounds"): the
executor of refinterp.run.compose with the bounds engine (refinterp.lower.bounds) for @lower
blocks and a side table that carries every tensor's magnitudes between @compose steps.

- A tensor the table does not know enters the computation: an input, a variable, a @constant,
  a compile-time scalar passed as a tensor (`math.div(sum, real(n))`): 0 where its values are
  exactly values of d, |v| where d must round them (`error_bounds.entering`).
- A tensor an operator computes carries the magnitudes its @lower formulas (or, recursively, its
  @compose block) gave; a typed carried loop value's copy and a jagged pack's zero padding keep
  them.
- An intrinsic (an operator without @lower or @compose) has a rule where one is evident:
  `SELECTIONS`, whose real outputs are input values chosen or moved (1-Lipschitz in the largest
  norm: at most the largest magnitude of the inputs) and whose int or bool outputs are decided
  from the inputs (exact when the inputs are, unknown otherwise). Every other intrinsic gives
  unknown (inf) magnitudes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from refinterp.language.instance import Invocation, OperatorInstance
from refinterp.language.modules import LoadedModule, LoadedProgram
from refinterp.language.values import NULL
from refinterp.lower.bounds import Magnitudes, run_bounds
from refinterp.numeric import error_bounds as eb
from refinterp.numeric import rules
from refinterp.run.abstract import DeclaredVariables
from refinterp.run.compose import Executor
from refinterp.run.intrinsics import lookup as lookup_intrinsic
from refinterp.run.jagged import DynamicExtents
from refinterp.run.limits import Limits
from refinterp.run.params import ParameterStore
from refinterp.run.scope import BlockScope, ScopePath
from refinterp.syntax import ast

# intrinsics whose outputs select or move input values, or are decided from them
SELECTIONS = frozenset({"algo.top_k", "layout.nonzero", "nx.and_", "nx.or_", "nx.xor",
                        "nx.sort", "nx.argsort"})


class MagnitudeTable:
    """The magnitudes of a run's tensors, by array identity (each entry keeps its array alive,
    so an identity is never reused within the run)."""

    def __init__(self, precision: eb.Precision) -> None:
        self.precision = precision
        self.entries: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id -> (array, magnitudes)

    def put(self, value: Any, magnitudes: Magnitudes) -> None:
        if isinstance(value, list):
            for item, m in zip(value, magnitudes):
                self.put(item, m)
        elif isinstance(value, np.ndarray):
            self.entries[id(value)] = (value, magnitudes)

    def get(self, value: Any) -> Magnitudes:
        """The magnitudes of a tensor (a list for a pack; None for null); a tensor not seen
        before enters the computation (`error_bounds.entering`)."""
        if value is NULL:
            return None
        if isinstance(value, list):
            return [self.get(item) for item in value]
        entry = self.entries.get(id(value))
        if entry is not None and entry[0] is value:
            return entry[1]
        m = eb.entering(value, self.precision)
        self.put(value, m)
        return m


class BoundsExecutor(Executor):
    """Runs an operator or graph computing the definition's values (the reference's
    closures) and every tensor's error magnitudes (`table`); `events` counts why elements are
    unbounded, `unknown` names the intrinsics without a rule that ran."""

    def __init__(self, program: LoadedProgram, profile: rules.Profile, precision: eb.Precision,
                 params: ParameterStore | DeclaredVariables | None = None,
                 limits: Limits = Limits()) -> None:
        self.precision = precision
        self.table = MagnitudeTable(precision)
        self.events: Counter = Counter()
        self.unknown: set[str] = set()
        self._last_tensor: Any = None
        super().__init__(program, profile, engine=self.lower, params=params, limits=limits)
        self.jagged = _PaddedMagnitudes(self.table)

    def lower(self, instance: OperatorInstance, arrays: dict[str, Any],
              profile: rules.Profile) -> dict[str, Any]:
        """The engine of @lower blocks: the bounds engine, with the inputs' magnitudes."""
        magnitudes = {name: self.table.get(value) for name, value in arrays.items()}
        outputs, found = run_bounds(instance, arrays, magnitudes, profile, self.precision,
                                    self.events)
        for name, value in outputs.items():
            self.table.put(value, found[name])
        return outputs

    def run_instance(self, definition: ast.OperatorDef, module: LoadedModule,
                     invocation: Invocation, inputs: dict[str, Any],
                     path: ScopePath | None) -> dict[str, Any]:
        outputs = super().run_instance(definition, module, invocation, inputs, path)
        qualified = f"{module.name}.{definition.name}"
        if definition.block("lower") is None and definition.block("compose") is None and \
                lookup_intrinsic(qualified) is not None:
            self.intrinsic(qualified, inputs, outputs)
        return outputs

    def intrinsic(self, qualified: str, inputs: dict[str, Any], outputs: dict[str, Any]
                  ) -> None:
        """The magnitudes of an intrinsic's outputs (see the module docstring)."""
        if qualified in SELECTIONS:
            largest = 0.0
            for value in inputs.values():
                for m in _items(self.table.get(value)):
                    if m.size:
                        largest = eb.worse(largest, float(np.max(m)) if not np.isnan(m).any()
                                           else np.nan)
            for value in outputs.values():
                for item in _items(value):
                    real = item.dtype.kind == "f"
                    fill = largest if real or largest == 0.0 or np.isnan(largest) else np.inf
                    self.table.put(item, np.full(item.shape, fill))
            return
        self.unknown.add(qualified)
        for value in outputs.values():
            for item in _items(value):
                self.table.put(item, np.full(item.shape, np.inf))

    def tensor(self, node: ast.Expr, scope: BlockScope, path: ScopePath | None = None) -> Any:
        value = super().tensor(node, scope, path)
        self._last_tensor = value
        return value

    def carried_init(self, item: ast.Carried, scope: BlockScope) -> Any:
        """A typed carried value is a copy (or a broadcast) of its initial tensor: the same
        magnitudes."""
        value = super().carried_init(item, scope)
        source = self._last_tensor
        if value is not source and isinstance(value, np.ndarray) and \
                isinstance(source, np.ndarray):
            self.table.put(value, np.array(np.broadcast_to(self.table.get(source),
                                                           value.shape)))
        return value


class _PaddedMagnitudes(DynamicExtents):
    """Jagged packs padded with zeros (profile khronos): the padding is exact."""

    def __init__(self, table: MagnitudeTable) -> None:
        super().__init__()
        self.table = table

    def pad(self, value: Any) -> Any:
        padded = super().pad(value)
        if padded is not value:
            for old, new in zip(value, padded):
                if new is not old:
                    m = np.zeros(new.shape)
                    m[tuple(slice(0, n) for n in old.shape)] = self.table.get(old)
                    self.table.put(new, m)
        return padded


def _items(value: Any) -> list:
    if value is NULL or value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
