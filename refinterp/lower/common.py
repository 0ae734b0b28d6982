"""What every @lower engine shares, below all of them: the arrays a lowering reads and writes
(`allocate_outputs`, `lowering_arrays`, `lowered_outputs`, `constant_array`), the one refusal
(`Refused`: this engine cannot run this formula here, the definition must), what the engines
derive from one operator instance, kept on it (`InstanceFacts`, `facts_of`, `lowering_plan`),
and the tolerance between engines (`REAL_RTOL`, `REAL_ATOL`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Container, Mapping

import numpy as np

from refinterp.core.diagnostics import EngineDiagnostic
from refinterp.language.invocation import OperatorInstance, TensorType
from refinterp.language.values import NULL, TensorValue, Value
from refinterp.lower.plan import (INT64_MAX, INT64_MIN, LoweringPlan, allocation_shape,
                                  plan_lowering, start_value)
from refinterp.numeric import rules
from refinterp.numeric.array_rules import Refused  # defined there: numeric's array rules refuse
from refinterp.numeric.representation import NUMPY_DTYPES
from refinterp.syntax import ast

__all__ = ["REAL_ATOL", "REAL_RTOL", "InstanceFacts", "Refused", "allocate_outputs",
           "constant_array", "facts_of", "lowered_outputs", "lowering_arrays", "lowering_plan",
           "tests_given_tensor"]

# The documented tolerance between engines (docs/semantics.md, "Engines"): ints and bools are
# identical; reals agree to a relative 1e-9 plus an absolute 1e-12 (summation order, the last
# place of transcendental functions), with nan where the other has nan, the same infinities,
# and -0.0 equal to 0.0 (engines.difference checks it; the vector engine's sums keep within
# half of it, vector.sums).
REAL_RTOL = 1e-9
REAL_ATOL = 1e-12


@dataclass
class InstanceFacts:
    """What the engines derive from one operator instance alone, made on first use and kept on
    the instance (`facts_of`), so that it lives exactly as long as the instance it describes.
    Each engine reads and fills its own fields through its own accessor."""

    plan: LoweringPlan | None = None  # `lowering_plan`
    # the vector engine's per-formula facts and fresh outputs (lower.vector.space.vector_facts,
    # lower.vector.engine.fresh_outputs): typed there, this module being below that engine
    vector: Any = None
    fresh_outputs: Any = None
    # the compiled engine's kernels, by formula, profile and array layout
    # (lower.compiled.engine.compile_formula)
    kernels: dict[tuple, Any] = field(default_factory=dict)
    # `auto`'s estimates by which inputs are packs (lower.engines._estimates)
    estimates: dict[frozenset, Any] = field(default_factory=dict)


_FACTS = "lower"  # the one entry of `OperatorInstance.derived` the engines use


def facts_of(instance: OperatorInstance) -> InstanceFacts:
    """The engines' facts of `instance`, kept on it."""
    facts = instance.derived.get(_FACTS)
    if facts is None:
        facts = instance.derived[_FACTS] = InstanceFacts()
    return facts


def tests_given_tensor(node: Any, symbols: Mapping[str, Any], shadowing: Container[str]
                       ) -> bool:
    """Whether `node` is `?o` on an optional tensor input that was given (its symbol is a
    tensor, not null): true at every item. An absent `o` is null and `?o` false, as in
    compile-time expressions; an index or local named `o` (in `shadowing`) hides it."""
    operand = getattr(node, "operand", None)
    return getattr(node, "op", None) == "?" and isinstance(operand, ast.Name) and \
        operand.name not in shadowing and isinstance(symbols.get(operand.name), TensorValue)


def lowering_plan(instance: OperatorInstance) -> LoweringPlan:
    """`plan_lowering(instance)`, made once per instance."""
    facts = facts_of(instance)
    if facts.plan is None:
        facts.plan = plan_lowering(instance)
    return facts.plan


def allocate_outputs(instance: OperatorInstance, plan: LoweringPlan) -> dict[str, Any]:
    """Output arrays, filled with the neutral element of an implicit start, else zeros; a
    counted extent (`plan.CountedExtent`) is allocated at its bound."""
    outputs: dict[str, Any] = {}
    for name, info in instance.outputs.items():
        infos = info if isinstance(info, tuple) else (info,)
        arrays = []
        for item in infos:
            shape = item.shape if isinstance(info, tuple) else \
                allocation_shape(plan, name, item)
            if shape is None or any(e is None for e in shape):
                raise EngineDiagnostic(f"output '{name}' has no static shape to compute",
                                       instance.definition.span)
            dtype = NUMPY_DTYPES.get(item.dtype)
            if dtype is None:
                raise EngineDiagnostic(f"output '{name}' has type {item.dtype}, which has no "
                                       f"tensor representation", instance.definition.span)
            start = start_value(plan.implicit_start.get(name, 0), item.dtype)
            arrays.append(np.zeros(shape, dtype=dtype) if start == 0 else
                          np.full(shape, start, dtype=dtype))
        outputs[name] = arrays if isinstance(info, tuple) else arrays[0]
    return outputs


def lowering_arrays(instance: OperatorInstance, inputs: dict[str, Any],
                    outputs: dict[str, Any]) -> dict[str, Any]:
    """Every array a lowering may access by name: inputs (an absent optional one as null),
    @constant tensors and the outputs being computed."""
    arrays = dict(inputs)
    block = instance.definition.block("input")
    for decl in block.entries if block else ():
        arrays.setdefault(decl.name, NULL)  # an absent optional input reads as null
    for name, (info, value) in instance.constants.items():
        arrays[name] = constant_array(info, value)
    arrays.update(outputs)
    return arrays


def lowered_outputs(instance: OperatorInstance, plan: LoweringPlan, arrays: dict[str, Any]
                    ) -> dict[str, Any]:
    """The outputs once every formula has run (a counting formula replaces its output by the
    trimmed array). Outputs naming the same counted extent `s|k` must agree on it (§2.6: the
    symbol declares agreement of dynamic output shapes)."""
    outputs = {name: arrays[name] for name in instance.outputs}
    seen: dict[str, tuple[str, int]] = {}
    for formula in plan.formulas:
        counted = formula.counted
        if counted is None:
            continue
        extent = outputs[counted.output].shape[counted.dimension]
        other = seen.setdefault(counted.name, (counted.output, extent))
        if other[1] != extent:
            raise EngineDiagnostic(
                f"the dynamic extent '{counted.name}' is {extent} for output "
                f"'{counted.output}' but {other[1]} for output '{other[0]}'; outputs naming "
                f"the same extent must agree", formula.node.span, code="E0503")
    return outputs


def constant_array(info: TensorType | tuple, value: Value) -> Any:
    """A @constant's value as an array (a list of arrays for a pack of constants)."""
    if isinstance(info, tuple):
        return [constant_array(i, v) for i, v in zip(info, value)]
    dtype = NUMPY_DTYPES[info.dtype]
    shape = tuple(info.shape or ())
    if isinstance(value, tuple):
        return np.array([_extreme(v, info.dtype) for v in value], dtype=dtype).reshape(shape)
    return np.full(shape, _extreme(value, info.dtype), dtype=dtype)


def _extreme(value: Value, dtype: str) -> Value:
    """int(inf) and int(-inf) as a tensor of `dtype` holds them: the extreme int64 values (as
    a formula's int result, `reference.FormulaClosures.checked`), ±inf (as `real(int(inf))`),
    true."""
    if not isinstance(value, rules.IntInfinity):
        return value
    if dtype == "int":
        return INT64_MAX if value.sign > 0 else INT64_MIN
    return value.sign * math.inf if dtype == "real" else True
