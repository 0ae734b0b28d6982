"""A small grammar of random @lower formulas (hypothesis strategies) for checking that the vector
engine computes what the scalar engine defines: element-wise formulas, reductions with every
accumulation operator, guarded (`|e|`) and remapped (`|e <> lo : hi|`) indices, conditions,
`?:`, casts, built-ins, scatters to computed positions, `:=` reading its own output, and
packed shapes. Each example is the text of one operator plus random inputs for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

REAL_LITERALS = ["0.0", "1.5", "-2.0", "0.5", "3.0"]
INT_LITERALS = ["0", "1", "2", "-3", "5"]


@dataclass
class Example:
    text: str
    inputs: dict[str, np.ndarray]
    description: str = ""


@dataclass
class DrawScope:
    """What an expression may use: index symbols with their extents, and the input tensors."""

    draw: st.DrawFn
    indices: dict[str, int]
    tensors: dict[str, tuple[str, tuple[int, ...]]]  # name -> (kind, shape)
    output: str = "y"
    same_position: str | None = None  # the output access a `:=` condition may read
    parts: list[str] = field(default_factory=list)


def index_expression(scope: DrawScope, extent: int) -> str:
    """An index into a dimension of `extent`: plain when provably in range, else guarded
    (skipped) or remapped."""
    draw = scope.draw
    names = list(scope.indices)
    choice = draw(st.integers(0, 5))
    if choice == 0 or not names:
        return str(draw(st.integers(0, extent - 1)))
    v = draw(st.sampled_from(names))
    if choice == 1 and scope.indices[v] <= extent:
        return v
    w = draw(st.sampled_from(names))
    raw = draw(st.sampled_from([f"{v} + 1", f"{v} - 1", f"2 * {v} + {w}", f"{v} + {w} - 1",
                                f"{extent - 1} - {v}", v]))
    if draw(st.booleans()):
        return f"|{raw}|"
    return f"|{raw} <> 0 : {extent - 1}|"


def access(scope: DrawScope, kind: str) -> str | None:
    candidates = [n for n, (k, _) in scope.tensors.items() if k == kind]
    if not candidates:
        return None
    name = scope.draw(st.sampled_from(candidates))
    shape = scope.tensors[name][1]
    return f"{name}[{', '.join(index_expression(scope, e) for e in shape)}]"


def expression(scope: DrawScope, kind: str, depth: int) -> str:  # noqa: C901 - a grammar
    draw = scope.draw
    leaf = depth <= 0 or draw(st.integers(0, 3)) == 0
    if leaf:
        tensor = access(scope, kind)
        if kind == "real":
            options = [tensor] * 3 + [draw(st.sampled_from(REAL_LITERALS))]
        elif kind == "int":
            options = [tensor] * 2 + [draw(st.sampled_from(INT_LITERALS))] + \
                [draw(st.sampled_from(list(scope.indices)))] * bool(scope.indices)
        else:
            options = [tensor] * 2 + ["true", "false"]
        options = [o for o in options if o]
        return draw(st.sampled_from(options))
    sub = lambda k=kind: expression(scope, k, depth - 1)  # noqa: E731
    if kind == "bool":
        form = draw(st.integers(0, 4))
        if form == 0:
            operand = draw(st.sampled_from(["real", "int"]))
            return f"({sub(operand)} {draw(st.sampled_from(['<', '<=', '>', '==', '!=']))} " \
                   f"{sub(operand)})"
        if form == 1:
            return f"!{sub()}"
        if form == 2:
            return f"({sub()} ? {sub()} : {sub()})"
        return f"({sub()} {draw(st.sampled_from(['&&', '||', '^']))} {sub()})"
    form = draw(st.integers(0, 6))
    if form <= 2:
        ops = ["+", "-", "*", "<<", ">>"] + (["/"] if kind == "real" else ["/", "%"])
        return f"({sub()} {draw(st.sampled_from(ops))} {sub()})"
    if form == 3:
        return f"-{sub()}"
    if form == 4:
        return f"({expression(scope, 'bool', depth - 1)} ? {sub()} : {sub()})"
    if form == 5:
        functions = ["abs", "sign"] + (["exp", "sqrt", "floor", "round", "tanh"]
                                      if kind == "real" else [])
        return f"{draw(st.sampled_from(functions))}({sub()})"
    other = "int" if kind == "real" else "real"
    return f"{kind}({expression(scope, other, depth - 1)})"


def random_array(draw: st.DrawFn, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    if kind == "real":
        values = np.round(rng.standard_normal(shape) * 2, 2)
        if draw(st.integers(0, 9)) == 0:  # now and then a special value
            values.reshape(-1)[0] = draw(st.sampled_from([np.inf, -np.inf, np.nan, -0.0]))
        return values
    if kind == "int":
        return rng.integers(-4, 5, size=shape).astype(np.int64)
    return rng.integers(0, 2, size=shape).astype(bool)


@st.composite
def formulas(draw: st.DrawFn, max_depth: int = 3) -> Example:
    """One operator with one or two formulas on random inputs (see the module docstring)."""
    if draw(st.integers(0, 5)) == 0:
        return draw(packed_formulas())
    kind = draw(st.sampled_from(["real", "int", "bool"]))
    kept = {f"i{d}": draw(st.integers(1, 4)) for d in range(draw(st.integers(1, 2)))}
    reduced = {f"k{d}": draw(st.integers(1, 3)) for d in range(draw(st.integers(0, 2)))}
    tensors = {}
    for name, tensor_kind in (("x", "real"), ("n", "int"), ("m", "bool")):
        rank = draw(st.integers(1, 3))
        tensors[name] = (tensor_kind, tuple(draw(st.integers(1, 5)) for _ in range(rank)))
    ops = ["=", "+=", "*=", "<=", ">=", ":="] if kind != "bool" else ["=", "&=", "|=", ":="]
    op = draw(st.sampled_from(ops))
    # the output position: plain, permuted, with a constant, or a computed scatter
    layout = draw(st.integers(0, 3))
    names = list(kept)
    if layout == 1 and len(names) == 2:
        position, shape = [names[1], names[0]], [kept[names[1]], kept[names[0]]]
    elif layout == 2:
        position, shape = names + ["0"], [kept[n] for n in names] + [1]
    elif layout == 3 and reduced:
        k = next(iter(reduced))
        position = [f"{names[0]} + {k}"] + names[1:]
        shape = [kept[names[0]] + reduced[k] - 1] + [kept[n] for n in names[1:]]
    else:
        position, shape = names, [kept[n] for n in names]
    target = f"y[{', '.join(position)}]"
    bounds = ", ".join(f"{n} < {e}" for n, e in {**kept, **reduced}.items())
    scope = DrawScope(draw, {**kept, **reduced}, tensors)
    lines = []
    init_bounds = ", ".join(f"{n} < {e}" for n, e in kept.items())
    if op == ":=" or (op not in ("=",) and draw(st.booleans())):
        init_scope = DrawScope(draw, dict(kept), tensors)
        plain_target = target if layout != 3 else \
            f"y[{', '.join([names[0]] + names[1:])}]"
        lines.append(f"{plain_target} = {expression(init_scope, kind, 1)}, {init_bounds};")
        if layout == 3:  # the scatter target has more cells than the initialisation covers
            return draw(formulas(max_depth))
    condition = ""
    if op == ":=":
        other = "real" if kind == "real" else kind
        condition = f" | {expression(scope, other, 1)} {'>' if kind != 'bool' else '!='} " \
                    f"{target}" if kind != "bool" else f" | {expression(scope, 'bool', 1)}"
    elif draw(st.booleans()):
        condition = f" | {expression(scope, 'bool', 1)}"
    value = expression(scope, kind, draw(st.integers(0, max_depth)))
    lines.append(f"{target} {op} {value}, {bounds}{condition};")
    declarations = "; ".join(f"{name}: {k}[{', '.join(map(str, s))}]"
                             for name, (k, s) in tensors.items())
    text = (f"operator f {{\n    @input {{ {declarations}; }}\n"
            f"    @output {{ y: {kind}[{', '.join(map(str, shape))}]; }}\n"
            f"    @lower {{\n        " + "\n        ".join(lines) + "\n    }\n}\n")
    inputs = {name: random_array(draw, k, s) for name, (k, s) in tensors.items()}
    return Example(text, inputs)


@st.composite
def packed_formulas(draw: st.DrawFn) -> Example:
    """A packed index over a packed shape: element-wise, or reduced over some dimensions."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    op = draw(st.sampled_from(["=", "+=", ">="]))
    function = draw(st.sampled_from(["p[i..] * 2.0", "abs(p[i..]) + q[i..]",
                                     "p[i..] << q[i..]", "(p[i..] > 0.0 ? p[i..] : -1.0)"]))
    if op == "=":
        out_shape, target = shape, "y[i..]"
    else:
        out_shape, target = shape[:1], "y[i[0]]"
    text = ("operator f {\n    @input { p: real[s..(r)]; q: real[s..(r)]; }\n"
            f"    @output {{ y: real[{', '.join(map(str, out_shape))}]; }}\n"
            f"    @lower {{\n        {target} {op} {function}, i < s;\n    }}\n}}\n")
    inputs = {"p": random_array(draw, "real", shape), "q": random_array(draw, "real", shape)}
    return Example(text, inputs)
