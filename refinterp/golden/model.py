"""The `model.sknd` of an operator case: a self-contained graph that invokes the operator under
test once, with the case's attributes, on graph inputs named like the operator's inputs, and
returns its outputs under the operator's output names (docs/golden.md, "model.sknd").

For example, `math.add` on real[2,3] and real[3]:

    # refinterp golden case math.add/broadcast
    import math;

    graph case {
        @input {
            x: real[2, 3];
            y: real[3];
        }
        @output {
            z: real[2, 3];
        }
        @compose {
            z = math.add(x, y);
        }
    }

An output whose shape is not known (an error case) is declared with its dtype only (`real`: any
shape). A pack input `xs` of n arrays is declared `xs: real[2, 3]..(n)` (an extent that differs
between the items as `~`: `real[~, 3]..(2)`) and passed as `xs`; a pack output `ys` is declared
`ys: real[2, 1]..(n)` and bound as `ys..`. A NaN attribute value is written `(inf - inf)`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refinterp.language.values import format_literal
from refinterp.numeric.representation import kind_of

GRAPH_NAME = "case"


def _type(array: np.ndarray) -> str:
    return f"{kind_of(array)}[{', '.join(map(str, array.shape))}]"


def _declaration(name: str, value: Any) -> str:
    """`name: type;` of an array, of a pack of arrays (all of one type), or of a dtype alone."""
    if isinstance(value, str):
        return f"{name}: {value};"
    if isinstance(value, list):
        kinds = {kind_of(v) for v in value}
        ranks = {np.ndim(v) for v in value}
        if len(kinds) > 1 or len(ranks) > 1:
            raise ValueError(f"pack '{name}' mixes dtypes or ranks; a pack declaration "
                             f"cannot hold it")
        if not value:
            raise ValueError(f"pack '{name}' is empty; its type cannot be declared")
        # an extent that differs between the items is declared `~|largest`: dynamic, with the
        # upper bound a main graph's input must state (spec §2.6)
        extents = [str(e[0]) if len(set(e)) == 1 else f"~|{max(e)}"
                   for e in zip(*(np.shape(v) for v in value))]
        return f"{name}: {kinds.pop()}[{', '.join(extents)}]..({len(value)});"
    return f"{name}: {_type(value)};"


def _attribute(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_attribute(v) for v in value) + "]"
    if isinstance(value, np.generic):
        value = value.item()
    if value is None:
        return "null"
    if isinstance(value, float) and value != value:
        return "(inf - inf)"  # SkriptND has no NaN literal; IEEE inf - inf is NaN (§2.3)
    return format_literal(value)


def operator_model(case_id: str, operator: str, inputs: dict[str, Any],
                   outputs: dict[str, Any], attributes: dict[str, Any],
                   generics: tuple[str, ...] = (), types: dict[str, str] | None = None,
                   saturate: bool = False) -> str:
    """The graph text. `inputs`: arrays by name (a pack as a list); `outputs`: arrays by name
    (a list for a pack), or a dtype name (`"real"`) where the shape is unknown. `types`: the
    Nx type of some inputs and outputs (a typed case of the nx module, docs/nx.md "Typed
    evaluation"): each such input enters the call through `nx.as_type`, each such output
    leaves it through `nx.as_type` (clamping instead of wrapping with `saturate`)."""
    module = operator.split(".")[0]
    lines = [f"# refinterp golden case {case_id}", f"import {module};", "",
             f"graph {GRAPH_NAME} {{", "    @input {"]
    lines += [f"        {_declaration(n, v)}" for n, v in inputs.items()]
    lines += ["    }", "    @output {"]
    lines += [f"        {_declaration(n, v)}" for n, v in outputs.items()]
    lines += ["    }", "    @compose {"]
    call = operator
    if generics:
        call += "<" + ", ".join(generics) + ">"
    if attributes:
        call += "{" + ", ".join(f"{k} = {_attribute(v)}" for k, v in attributes.items()) + "}"
    types = types or {}
    if types:
        check_local_names(list(inputs) + list(outputs))
    lines += [f"        {n}{TYPED} = {_as_type(types[n], n)};" for n in inputs if n in types]
    call += "(" + ", ".join(n + TYPED if n in types else n for n in inputs) + ")"
    # a packed result states its length (spec §2.10, "must be explicitly denoted")
    targets = ", ".join(f"{n}..({len(v)})" if isinstance(v, list) else
                        n + EXACT if n in types else n for n, v in outputs.items())
    lines.append(f"        {targets} = {call};")
    lines += [f"        {n} = {_as_type(types[n], n + EXACT, saturate)};"
              for n in outputs if n in types]
    lines += ["    }", "}", ""]
    return "\n".join(lines)


def _as_type(type_name: str, argument: str, saturate: bool = False) -> str:
    """The invocation restricting `argument` to the Nx type `type_name` (docs/nx.md)."""
    flag = ", saturate = true" if saturate else ""
    return f"nx.as_type{{type = '{type_name}'{flag}}}({argument})"


# the suffixes of a typed case's local names: an input restricted to its type, an output
# before its restriction (golden names never end so: check_local_names)
TYPED, EXACT = "_typed", "_exact"


def check_local_names(names: list[str]) -> None:
    """A typed model's local names must not be those of its inputs or outputs."""
    clash = [n for n in names if n.endswith((TYPED, EXACT))]
    if clash:
        raise ValueError(f"the names {clash} end in {TYPED} or {EXACT}, the local names of a "
                         f"typed case's model")
