"""Per-element error bounds of golden outputs (docs/golden.md, "Per-element error bounds
(draft)"): for every element of an output, the error magnitude m such that an implementation
computing the same definition in a floating type d errs by at most about u_d·m
(refinterp.numeric.error_bounds: the rules; refinterp.lower.bounds: the bounds engine;
refinterp.run.bounds: through compositions). The comparison that uses them is
refinterp.golden.tolerance's (`allowed_errors`, `within`).

    bounds = error_magnitudes("nn.softmax", inputs={"input": x})
    m, rule = bounds["output"]     # m: float64 array like the output (inf unknown, NaN
                                   # unbounded); rule: what gave it
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import numpy as np

# the set-up of refinterp.api.evaluate (target, inputs, attributes, profile), reused
from refinterp.api import Program, _attributes, _canonical, _profile, resolve
from refinterp.core.diagnostics import ArgumentDiagnostic
from refinterp.language.instance import Invocation
from refinterp.language.invocation import tensor_type
from refinterp.numeric import error_bounds as eb
from refinterp.run.bounds import BoundsExecutor
from refinterp.run.limits import Limits
from refinterp.run.params import ParameterStore

RUNNING = "running error analysis"


class ErrorBound(NamedTuple):
    """One output's magnitudes (an array like the output, a list for a pack; None when no
    element has a bound) and the rule that gave them."""

    magnitudes: Any
    rule: str


@dataclass
class BoundsRun:
    """The outputs of a run (the definition's values, bit for bit) and their error bounds."""

    outputs: dict[str, Any]
    bounds: dict[str, ErrorBound]
    dtype: str


def compute_bounds(target: Program | str | Path, *, op: str | None = None,
                   inputs: Mapping[str, Any] | None = None,
                   attributes: Mapping[str, Any] | None = None,
                   params: Mapping[str, np.ndarray] | None = None,
                   generics: tuple[str, ...] = (), profile: str = "spec",
                   dtype: str = "float32", stdlib: str | Path | None = None) -> BoundsRun:
    """Run an operator or graph (the target as `refinterp.api.evaluate` takes it) computing
    every output and its error magnitudes for an implementation in `dtype` ("float32" or
    "float64"): a `BoundsRun`."""
    if dtype not in eb.PRECISIONS:
        raise ArgumentDiagnostic(f"no error bounds for '{dtype}'; choose one of "
                                 f"{', '.join(eb.PRECISIONS)}")
    limits = Limits()
    found = resolve(target, op, stdlib=stdlib)
    program, definition, module = found.program, found.definition, found.module
    precision = eb.precision(dtype)
    arrays = {name: _canonical(name, value, limits) for name, value in (inputs or {}).items()}
    values = _attributes(attributes)
    store = ParameterStore(graph=f"{module.name}.{definition.name}",
                           arrays={k: _canonical(k, v, limits, "parameter")
                                   for k, v in (params or {}).items()},
                           folder=None if program.main.library else program.path.parent)
    active = _profile(profile)
    invocation = Invocation(values, {k: tensor_type(v) for k, v in arrays.items()},
                            tuple(generics), active)
    executor = BoundsExecutor(program.loaded, active, precision, params=store, limits=limits)
    outputs = executor.run(definition, module, invocation, arrays)
    bounds = {name: _bound(executor, value) for name, value in outputs.items()}
    return BoundsRun(outputs, bounds, dtype)


def error_magnitudes(target: Program | str | Path, **options: Any) -> dict[str, ErrorBound]:
    """The error bound of every output: {output name: (magnitudes | None, rule text)}; the
    options are those of `compute_bounds`. The rule text is "running error analysis", or says
    which elements have none: "unknown at N elements: intrinsic X" (a value computed by an
    intrinsic without a rule reaches them), "unbounded at N elements: <why>" (a decision or a
    singularity lies within its operands' error bounds)."""
    return compute_bounds(target, **options).bounds


def _bound(executor: BoundsExecutor, value: Any) -> ErrorBound:
    magnitudes = executor.table.get(value)
    items = magnitudes if isinstance(magnitudes, list) else [magnitudes]
    flat = np.concatenate([np.ravel(m) for m in items if m is not None]) if items else \
        np.zeros(0)
    unknown = int(np.count_nonzero(np.isinf(flat)))
    unbounded = int(np.count_nonzero(np.isnan(flat)))
    parts = []
    if unknown:
        names = ", ".join(sorted(executor.unknown)) or "an unknown value"
        parts.append(f"unknown at {unknown} elements: intrinsic {names}")
    if unbounded:
        why = "; ".join(sorted(executor.events)) or "a decision within its error bound"
        parts.append(f"unbounded at {unbounded} elements: {why}")
    if flat.size and unknown == flat.size:
        return ErrorBound(None, f"unknown: intrinsic {', '.join(sorted(executor.unknown))}")
    return ErrorBound(magnitudes, "; ".join(parts) or RUNNING)
