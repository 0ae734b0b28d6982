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
                   generics: tuple[str, ...] = ()) -> str:
    """The graph text. `inputs`: arrays by name (a pack as a list); `outputs`: arrays by name
    (a list for a pack), or a dtype name (`"real"`) where the shape is unknown."""
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
    call += "(" + ", ".join(inputs) + ")"
    # a packed result states its length (spec §2.10, "must be explicitly denoted")
    targets = ", ".join(f"{n}..({len(v)})" if isinstance(v, list) else n
                        for n, v in outputs.items())
    lines += [f"        {targets} = {call};", "    }", "}", ""]
    return "\n".join(lines)
