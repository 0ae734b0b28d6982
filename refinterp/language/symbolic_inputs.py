"""The inputs of an operator or graph checked without values (`refinterp shapes` with no
input given; docs/semantics.md "Shapes without values"): each dynamic extent of a declared
input shape becomes a symbol (refinterp.numeric.symbolic) with its declared bound — named by
its declared name (`x: real[b|64, 3]` gives `b`, so inputs that share a name share a symbol),
or `input.axis` for a `~` (`~|10` in the second axis of `x`: `x.1`)."""

from __future__ import annotations

from typing import Any

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.expr import Environment, evaluate
from refinterp.language.inputs import LengthError, declared_dims
from refinterp.language.instance import declared_environment, shaped_inputs
from refinterp.language.invocation import TensorType
from refinterp.numeric import rules
from refinterp.numeric.symbolic import Extent, SymInt, symbol
from refinterp.syntax import ast


def symbolic_input_types(definition: ast.OperatorDef, attributes: dict[str, Any],
                         given: dict[str, Any], profile: rules.Profile = rules.SPEC
                         ) -> dict[str, TensorType]:
    """The types of the inputs not in `given` whose declared shape has a known rank: each
    extent known from literals and attributes (defaults included) as an int, each other one a
    symbol. An input whose rank is not declared (`real[s..]`, `real`), a pack, or an extent
    computed from unknown names (`real[2 * s]`) is left out."""
    env = declared_environment(definition, attributes, profile)
    symbols: dict[str, SymInt] = {}
    found: dict[str, TensorType] = {}
    for decl in shaped_inputs(definition):
        if decl.name in given:
            continue
        shape: list[Any] = []
        for axis, extent in enumerate(decl.type.shape):
            dims = _known(extent, env)
            if dims is not None:
                shape.extend(dims)
                continue
            made = _symbol(decl.name, axis, extent, env, symbols)
            if made is None:
                break
            shape.append(made)
        else:
            found[decl.name] = TensorType(decl.type.name, tuple(shape))
    return found


def dynamic_extents(definition: ast.OperatorDef, attributes: dict[str, Any],
                    types: dict[str, Any], profile: rules.Profile = rules.SPEC
                    ) -> dict[str, Any]:
    """The input types of the root of a run with each extent a declared *dynamic* extent binds
    as a `numeric.symbolic.Extent`: its value, and the symbol it binds, for `is` (§2.4: two
    dynamic extents are the same only as the same symbol). Dynamic (§2.6): a `~`, a symbol
    declared with an upper bound anywhere among the inputs (`x: real[s|10]; y: real[s]`),
    and, in a graph, any shape symbol that is no attribute — the reading of
    `checks.check_main_graph`. An operator's unbounded `x: real[n]` is static: its value is
    known when the operator is instantiated, and `is` compares it by value."""
    env = declared_environment(definition, attributes, profile)
    bounded = {e.value.name for d in shaped_inputs(definition) for e in d.type.shape
               if e.bound is not None and isinstance(e.value, ast.Name)}
    found = dict(types)
    for decl in shaped_inputs(definition):
        info, spec = types.get(decl.name), decl.type
        if not isinstance(info, TensorType) or info.shape is None or \
                len(spec.shape) != len(info.shape):
            continue
        shape = list(info.shape)
        for axis, extent in enumerate(spec.shape):
            name = _symbol_name(decl.name, axis, extent)
            dynamic = definition.is_graph or name in bounded or \
                isinstance(extent.value, ast.Placeholder)  # (known attributes: `_known`)
            if name is not None and dynamic and _known(extent, env) is None and \
                    isinstance(shape[axis], int):
                shape[axis] = Extent(shape[axis], name)
        found[decl.name] = TensorType(info.dtype, tuple(shape), info.bounds)
    return found


def _known(extent: ast.Extent, env: Environment) -> list[Any] | None:
    """The extent's dimensions when literals and attributes give them, else None."""
    try:
        dims = declared_dims(extent, env)
    except (Diagnostic, LengthError):
        return None
    if all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        return dims
    return None


def _symbol_name(input_name: str, axis: int, extent: ast.Extent) -> str | None:
    """The name of the symbol an extent declares: a bare name (`b`, `b|64`), or
    `input.axis` for a `~`; None for a packed extent or an expression."""
    if extent.pack is not None:
        return None
    if isinstance(extent.value, ast.Name):
        return extent.value.name
    if isinstance(extent.value, ast.Placeholder):
        return f"{input_name}.{axis}"
    return None


def _symbol(input_name: str, axis: int, extent: ast.Extent, env: Environment,
            symbols: dict[str, SymInt]) -> SymInt | None:
    """The symbol of an extent (`_symbol_name`) with its declared upper bound, one per name;
    None where the extent declares none."""
    name = _symbol_name(input_name, axis, extent)
    if name is None:
        return None
    high = None
    if extent.bound is not None:
        try:
            bound = evaluate(extent.bound, env)
        except Diagnostic:
            return None
        if isinstance(bound, int) and not isinstance(bound, bool):
            high = bound
    if name not in symbols:
        symbols[name] = symbol(name, high)
    return symbols[name]
