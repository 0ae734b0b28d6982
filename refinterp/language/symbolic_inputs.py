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
from refinterp.language.invocation import TensorType, entries
from refinterp.language.values import NULL
from refinterp.numeric import rules
from refinterp.numeric.symbolic import Extent, SymInt, symbol
from refinterp.syntax import ast


def symbolic_input_types(definition: ast.OperatorDef, attributes: dict[str, Any],
                         given: dict[str, Any], profile: rules.Profile = rules.SPEC
                         ) -> dict[str, TensorType]:
    """The types of the inputs not in `given` whose declared shape has a known rank: each
    extent known from literals and attributes as an int, each other one a symbol. An input
    whose rank is not declared (`real[s..]`, `real`), a pack, or an extent computed from
    unknown names (`real[2 * s]`) is left out."""
    env = Environment(dict(attributes), profile=profile)
    symbols: dict[str, SymInt] = {}
    found: dict[str, TensorType] = {}
    for decl in entries(definition, "input"):
        spec = decl.type
        if decl.name in given or spec.shape is None or spec.pack is not None or spec.optional or \
                spec.name not in ("real", "int", "bool"):
            continue
        shape: list[Any] = []
        for axis, extent in enumerate(spec.shape):
            dims = _known(extent, env)
            if dims is not None:
                shape.extend(dims)
                continue
            made = _symbol(decl.name, axis, extent, env, symbols)
            if made is None:
                break
            shape.append(made)
        else:
            found[decl.name] = TensorType(spec.name, tuple(shape))
    return found


def dynamic_extents(definition: ast.OperatorDef, attributes: dict[str, Any],
                    types: dict[str, Any], profile: rules.Profile = rules.SPEC
                    ) -> dict[str, Any]:
    """The input types of the root of a run with each extent a declared dynamic extent binds
    (`b` of `real[b|64, 3]`, a `~`) as a `numeric.symbolic.Extent`: its value, and the symbol
    it binds, for `is` (§2.4: two dynamic extents are the same only as the same symbol)."""
    env = Environment(dict(attributes), profile=profile)
    found = dict(types)
    for decl in entries(definition, "input"):
        info, spec = types.get(decl.name), decl.type
        if not isinstance(info, TensorType) or info.shape is None or spec.shape is None or \
                len(spec.shape) != len(info.shape) or spec.pack is not None:
            continue
        shape = list(info.shape)
        for axis, extent in enumerate(spec.shape):
            if extent.pack is None and _known(extent, env) is None and \
                    isinstance(extent.value, (ast.Name, ast.Placeholder)) and \
                    isinstance(shape[axis], int):
                name = extent.value.name if isinstance(extent.value, ast.Name) else \
                    f"{decl.name}.{axis}"
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


def _symbol(input_name: str, axis: int, extent: ast.Extent, env: Environment,
            symbols: dict[str, SymInt]) -> SymInt | None:
    """The symbol of a dynamic extent: a bare name (`b`, `b|64`) or `~` (`~|10`), not packed;
    None for anything else."""
    if extent.pack is not None:
        return None
    if isinstance(extent.value, ast.Name):
        name = extent.value.name
    elif isinstance(extent.value, ast.Placeholder):
        name = f"{input_name}.{axis}"
    else:
        return None
    high = None
    if extent.bound is not None:
        try:
            bound = evaluate(extent.bound, env)
        except Diagnostic:
            return None
        if isinstance(bound, int) and not isinstance(bound, bool) and bound is not NULL:
            high = bound
    if name not in symbols:
        symbols[name] = symbol(name, high)
    return symbols[name]
