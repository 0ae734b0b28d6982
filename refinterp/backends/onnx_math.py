"""ONNX translations of the `math`, `linalg` and `algo` operators (for the onnxruntime back end).

Every translation reads the case (`GraphBuilder`) and adds ONNX nodes; the comment on each
says how SkriptND attributes map to ONNX attributes. ONNX broadcasting is NumPy's (right
aligned), SkriptND's default alignment; `*_align` attributes are mapped by reshaping the
operand to the output rank first (the `px`/`py` positions of the stdlib's `@using`).
"""

from __future__ import annotations

import math
from typing import Callable

from refinterp.backends.onnx_graph import (TRANSLATIONS, GraphBuilder, positive_axes,
                                            positive_axis, translation, unsupported)




# ----------------------------------------------------------------------------- unary

# SkriptND operator -> ONNX operator, applied to x. math.round -> Round: ONNX rounds halves to
# even, SkriptND away from zero (docs/backends.md, differences).
UNARY = {"iden": "Identity", "neg": "Neg", "rcp": "Reciprocal", "sqrt": "Sqrt", "exp": "Exp",
         "log": "Log", "sin": "Sin", "sinh": "Sinh", "asin": "Asin", "cos": "Cos",
         "cosh": "Cosh", "acos": "Acos", "asinh": "Asinh", "acosh": "Acosh", "tan": "Tan",
         "tanh": "Tanh", "atan": "Atan", "atanh": "Atanh", "abs": "Abs", "sign": "Sign",
         "not": "Not", "floor": "Floor", "ceil": "Ceil", "round": "Round"}


def _unary(op: str) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        g.output("y", g.node(op, [g.input("x")]))
    return translate


for _name, _op in UNARY.items():
    TRANSLATIONS[f"math.{_name}"] = _unary(_op)


@translation("math.sqr")
def _sqr(g: GraphBuilder) -> None:
    """sqr(x) = Mul(x, x) (ONNX has no square)."""
    x = g.input("x")
    g.output("y", g.node("Mul", [x, x]))


@translation("math.rsqr")
def _rsqr(g: GraphBuilder) -> None:
    """rsqr(x) = Reciprocal(Mul(x, x))."""
    x = g.input("x")
    g.output("y", g.node("Reciprocal", [g.node("Mul", [x, x])]))


@translation("math.rsqrt")
def _rsqrt(g: GraphBuilder) -> None:
    """rsqrt(x) = Reciprocal(Sqrt(x)) (two roundings; ONNX has no rsqrt)."""
    g.output("y", g.node("Reciprocal", [g.node("Sqrt", [g.input("x")])]))


@translation("math.log2")
def _log2(g: GraphBuilder) -> None:
    """log2(x) = Div(Log(x), ln 2) (ONNX has no log2)."""
    g.output("y", g.node("Div", [g.node("Log", [g.input("x")]), g.const(math.log(2.0))]))


# ----------------------------------------------------------------------------- binary


def aligned(g: GraphBuilder, names: list[str], aligns: list[str | None]) -> list[str]:
    """The operands reshaped for ONNX (NumPy) broadcasting: an operand with an `*_align`
    attribute gets unit axes before and after it, so that its axes sit at the positions the
    stdlib's `@using` gives (`px = align < 0 ? rz - (r + |align|) : align`)."""
    ranks = [len(g.shape(n)) for n in names]
    given = [g.attr(a) if a else None for a in aligns]
    rz = max(r + abs(a or 0) for r, a in zip(ranks, given))
    result = []
    for name, rank, align in zip(names, ranks, given):
        if align is None:
            result.append(g.input(name))
            continue
        start = rz - (rank + abs(align)) if align < 0 else align
        shape = [1] * start + list(g.shape(name)) + [1] * (rz - rank - start)
        result.append(g.node("Reshape", [g.input(name), g.ints(shape)]))
    return result


# SkriptND -> ONNX, inputs (x, y) in order, NumPy broadcasting after alignment. Int `div` ->
# Div truncates toward zero (SkriptND rounds down); `mod` -> Mod (fmod=0 for int: the sign of
# the divisor, as SkriptND; fmod=1 for real, which ONNX requires: C fmod, the sign of x).
BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "min": "Min",
          "max": "Max", "lt": "Less", "gt": "Greater", "le": "LessOrEqual",
          "ge": "GreaterOrEqual", "eq": "Equal", "and": "And", "or": "Or", "xor": "Xor"}


def _binary(op: str) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        if g.kind("x") != g.kind("y"):
            raise unsupported("operands of different types (ONNX requires one type)")
        x, y = aligned(g, ["x", "y"], ["lhs_align", "rhs_align"])
        g.output("z", g.node(op, [x, y]))
    return translate


for _name, _op in BINARY.items():
    TRANSLATIONS[f"math.{_name}"] = _binary(_op)


@translation("math.ne")
def _ne(g: GraphBuilder) -> None:
    """ne = Not(Equal(x, y)) (ONNX has no not-equal)."""
    if g.kind("x") != g.kind("y"):
        raise unsupported("operands of different types (ONNX requires one type)")
    x, y = aligned(g, ["x", "y"], ["lhs_align", "rhs_align"])
    g.output("z", g.node("Not", [g.node("Equal", [x, y])]))


@translation("math.mod")
def _mod(g: GraphBuilder) -> None:
    """mod -> Mod; fmod = 1 for reals (ONNX allows no other), 0 for ints."""
    x, y = aligned(g, ["x", "y"], ["lhs_align", "rhs_align"])
    g.output("z", g.node("Mod", [x, y], fmod=1 if g.kind("x") == "real" else 0))


@translation("math.select")
def _select(g: GraphBuilder) -> None:
    """select(c, x, y) -> Where(c, x, y); cond_align/lhs_align/rhs_align by reshaping."""
    c, x, y = aligned(g, ["c", "x", "y"], ["cond_align", "lhs_align", "rhs_align"])
    g.output("z", g.node("Where", [c, x, y]))


@translation("math.axpb")
def _axpb(g: GraphBuilder) -> None:
    """axpb(a, x, b) = Add(Mul(a, x), b); a_align/x_align/b_align by reshaping."""
    a, x, b = aligned(g, ["a", "x", "b"], ["a_align", "x_align", "b_align"])
    g.output("y", g.node("Add", [g.node("Mul", [a, x]), b]))


@translation("math.axpby")
def _axpby(g: GraphBuilder) -> None:
    """axpby(a, x, b, y) = Add(Mul(a, x), Mul(b, y)); the *_align attributes by reshaping."""
    a, x, b, y = aligned(g, ["a", "x", "b", "y"], ["a_align", "x_align", "b_align", "y_align"])
    g.output("z", g.node("Add", [g.node("Mul", [a, x]), g.node("Mul", [b, y])]))


@translation("math.clamp")
def _clamp(g: GraphBuilder) -> None:
    """clamp(x, a, b): rank-0 bounds without alignment -> Clip(x, a, b), ONNX's clamp;
    tensor bounds (Clip takes scalars only) -> Min(Max(x, a), b), the definition ONNX gives
    Clip; val_align/min_align/max_align by reshaping."""
    if not g.shape("a") and not g.shape("b") and all(
            g.attr(k) is None for k in ("val_align", "min_align", "max_align")):
        g.output("y", g.node("Clip", [g.input("x"), g.input("a"), g.input("b")]))
        return
    x, a, b = aligned(g, ["x", "a", "b"], ["val_align", "min_align", "max_align"])
    g.output("y", g.node("Min", [g.node("Max", [x, a]), b]))


# ----------------------------------------------------------------------------- packs (n-ary)


def _chain(op: str) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        xs = g.input("xs")
        if g.kind("xs") == "bool" and op in ("Sum", "Min", "Max", "Mul"):
            raise unsupported("bool operands (T: num)")
        if op in ("Sum", "Min", "Max") and not (op == "Sum" and g.kind("xs") == "int"):
            g.output("y", g.node(op, xs))  # variadic in ONNX
            return
        result = g.node("Identity", [xs[0]])
        for item in xs[1:]:
            result = g.node({"Sum": "Add"}.get(op, op), [result, item])
        g.output("y", result)
    return translate


# sum_n -> Sum (reals; ONNX Sum has no int type: a chain of Add), min_n -> Min, max_n -> Max
# (variadic); prod_n, any_n, all_n -> a chain of Mul / Or / And from the first item on.
TRANSLATIONS["math.sum_n"] = _chain("Sum")
TRANSLATIONS["math.min_n"] = _chain("Min")
TRANSLATIONS["math.max_n"] = _chain("Max")
TRANSLATIONS["math.prod_n"] = _chain("Mul")
TRANSLATIONS["math.any_n"] = _chain("Or")
TRANSLATIONS["math.all_n"] = _chain("And")


def _arg_n(op: str) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        """argmin_n/argmax_n: the items stacked on a new axis 0 (Unsqueeze + Concat), then
        ArgMin/ArgMax axis 0, keepdims 0, select_last_index 0 (the first index wins ties)."""
        if g.kind("xs") == "bool":
            raise unsupported("bool operands (T: num)")
        items = [g.node("Unsqueeze", [x, g.ints([0])]) for x in g.input("xs")]
        stacked = g.node("Concat", items, axis=0)
        g.output("y", g.node(op, [stacked], axis=0, keepdims=0, select_last_index=0))
    return translate


TRANSLATIONS["math.argmin_n"] = _arg_n("ArgMin")
TRANSLATIONS["math.argmax_n"] = _arg_n("ArgMax")


# ----------------------------------------------------------------------------- reductions


def reduce_axes(g: GraphBuilder) -> list[int]:
    """`axes` (default: every axis) counted from the front."""
    rank = len(g.shape("input"))
    return positive_axes(g.attr("axes", list(range(rank))), rank)


def _reduce(g: GraphBuilder, op: str, source: str, **extra: object) -> str:
    """op over `axes` (an input since opset 18), keepdims = not squeeze; an empty `axes` is
    noop_with_empty_axes = 1 (ONNX would otherwise reduce every axis)."""
    axes = reduce_axes(g)
    inputs = [source, g.ints(axes)] if axes else [source]
    return g.node(op, inputs, keepdims=0 if g.attr("squeeze", False) else 1,
                  noop_with_empty_axes=1, **extra)


def _reduction(op: str) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        g.output("output", _reduce(g, op, g.input("input")))
    return translate


# min_reduce -> ReduceMin, max_reduce -> ReduceMax, sum_reduce -> ReduceSum,
# prod_reduce -> ReduceProd, mean_reduce -> ReduceMean (axes, squeeze -> keepdims = not squeeze).
for _name, _op in {"min_reduce": "ReduceMin", "max_reduce": "ReduceMax",
                   "sum_reduce": "ReduceSum", "prod_reduce": "ReduceProd",
                   "mean_reduce": "ReduceMean"}.items():
    TRANSLATIONS[f"math.{_name}"] = _reduction(_op)


@translation("math.any_reduce", "math.all_reduce")
def _bool_reduce(g: GraphBuilder) -> None:
    """any_reduce / all_reduce -> ReduceMax / ReduceMin on bool (opset 20 allows bool: False <
    True), axes and squeeze as for the other reductions. Reducing an empty axis: ONNX's
    identity of ReduceMax is the type's minimum (False), of ReduceMin its maximum (True) -
    SkriptND's identities of or / and."""
    op = "ReduceMax" if g.case.operator == "math.any_reduce" else "ReduceMin"
    g.output("output", _reduce(g, op, g.input("input")))


@translation("math.lp_reduce")
def _lp_reduce(g: GraphBuilder) -> None:
    """lp_reduce: p = 1 -> ReduceL1, p = 2 -> ReduceL2; other p have no ONNX operator."""
    p = g.attr("p")
    op = {1.0: "ReduceL1", 2.0: "ReduceL2"}.get(p)
    if op is None:
        raise unsupported(f"lp_reduce with p = {p} (ONNX has ReduceL1 and ReduceL2 only)")
    g.output("output", _reduce(g, op, g.input("input")))


@translation("math.moments")
def _moments(g: GraphBuilder) -> None:
    """moments: mean = ReduceMean(x), variance = ReduceMean((x - mean)^2) (population
    variance; ONNX has no moments operator; the deviation uses the kept-dims mean)."""
    x = g.input("input")
    axes = reduce_axes(g)
    squeeze = 0 if g.attr("squeeze", False) else 1
    kept = g.node("ReduceMean", [x, g.ints(axes)], keepdims=1)
    dev = g.node("Sub", [x, kept])
    g.output("mean", g.node("ReduceMean", [x, g.ints(axes)], keepdims=squeeze))
    g.output("variance", g.node("ReduceMean", [g.node("Mul", [dev, dev]), g.ints(axes)],
                                keepdims=squeeze))


def _arg(op: str) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        """argmin/argmax -> ArgMin/ArgMax: axis -> axis, squeeze -> keepdims = not squeeze,
        select_last_index = 0 (SkriptND returns the first index of ties)."""
        g.output("output", g.node(op, [g.input("input")], axis=g.attr("axis"),
                                  keepdims=0 if g.attr("squeeze", False) else 1,
                                  select_last_index=0))
    return translate


TRANSLATIONS["math.argmin"] = _arg("ArgMin")
TRANSLATIONS["math.argmax"] = _arg("ArgMax")


def _arg_nd(op: str) -> Callable[[GraphBuilder], None]:
    def translate(g: GraphBuilder) -> None:
        """argmin_nd/argmax_nd over one axis -> ArgMin/ArgMax (a pack of one index tensor);
        several axes have no ONNX operator."""
        axes = reduce_axes(g)
        if len(axes) != 1:
            raise unsupported("argmin_nd/argmax_nd over several axes (ONNX reduces one axis)")
        g.output("output.0", g.node(op, [g.input("input")], axis=axes[0],
                                    keepdims=0 if g.attr("squeeze", False) else 1,
                                    select_last_index=0))
    return translate


TRANSLATIONS["math.argmin_nd"] = _arg_nd("ArgMin")
TRANSLATIONS["math.argmax_nd"] = _arg_nd("ArgMax")


@translation("math.cumsum")
def _cumsum(g: GraphBuilder) -> None:
    """cumsum -> CumSum: axis -> axis input, exclusive -> exclusive, reverse -> reverse."""
    g.output("output", g.node("CumSum", [g.input("input"), g.const(g.attr("axis"), "int")],
                              exclusive=int(g.attr("exclusive", False)),
                              reverse=int(g.attr("reverse", False))))


# ----------------------------------------------------------------------------- linalg


@translation("linalg.dot")
def _dot(g: GraphBuilder) -> None:
    """dot(x, y, b) -> MatMul(x, y) (1-D by 1-D gives a scalar), then Add(b) if given."""
    z = g.node("MatMul", [g.input("x"), g.input("y")])
    g.output("z", g.node("Add", [z, g.input("b")]) if g.has("b") else z)


def _transposed(g: GraphBuilder, name: str) -> str:
    """Input `name` with its last two axes swapped (Transpose)."""
    rank = len(g.shape(name))
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return g.node("Transpose", [g.input(name)], perm=perm)


@translation("linalg.matmul")
def _matmul(g: GraphBuilder) -> None:
    """matmul -> MatMul (batch dimensions broadcast as in NumPy, as SkriptND); transA/transB ->
    a Transpose of the last two axes first; C -> Add afterwards (SkriptND starts the sum from
    C: one more rounding order, within the reduction tolerance)."""
    a = _transposed(g, "A") if g.attr("transA", False) else g.input("A")
    b = _transposed(g, "B") if g.attr("transB", False) else g.input("B")
    z = g.node("MatMul", [a, b])
    g.output("Z", g.node("Add", [z, g.input("C")]) if g.has("C") else z)


@translation("linalg.matvec")
def _matvec(g: GraphBuilder) -> None:
    """matvec -> MatMul(A, x) (A transposed first with transA), then Add(b) if given."""
    a = _transposed(g, "A") if g.attr("transA", False) else g.input("A")
    y = g.node("MatMul", [a, g.input("x")])
    g.output("y", g.node("Add", [y, g.input("b")]) if g.has("b") else y)


@translation("linalg.outer")
def _outer(g: GraphBuilder) -> None:
    """outer(x, y) -> Mul(Reshape(x, [sx.., 1 ..(rank y)]), y) (NumPy broadcasting)."""
    sx, sy = g.shape("x"), g.shape("y")
    x = g.node("Reshape", [g.input("x"), g.ints(list(sx) + [1] * len(sy))], allowzero=1)
    g.output("z", g.node("Mul", [x, g.input("y")]))


# ----------------------------------------------------------------------------- algo


@translation("algo.top_k")
def _top_k(g: GraphBuilder) -> None:
    """top_k -> TopK: k -> K input (min(k, extent), as SkriptND's `k << m`), axis -> axis,
    largest -> largest, sorted -> sorted."""
    rank = len(g.shape("input"))
    axis = positive_axis(g.attr("axis", 0), rank)
    k = g.attr("k")
    if 0 <= axis < rank:
        k = min(k, g.shape("input")[axis])
    values, indices = g.node("TopK", [g.input("input"), g.ints([k])], outputs=2,
                             axis=g.attr("axis", 0), largest=int(g.attr("largest", True)),
                             sorted=int(g.attr("sorted", True)))
    g.output("values", values)
    g.output("indices", indices)


@translation("algo.nonmax_suppress")
def _nonmax_suppress(g: GraphBuilder) -> None:
    """nonmax_suppress -> NonMaxSuppression: box_format CORNERS -> center_point_box 0, CENTER
    -> 1 (other names: unsupported); max_outputs_per_class -> max_output_boxes_per_class
    (default n, the number of boxes); iou_threshold -> iou_threshold; score_threshold ->
    score_threshold (absent: no input). Output [k, 3] (batch, class, box) in both."""
    box_format = g.attr("box_format", "CORNERS")
    center = {"CORNERS": 0, "CENTER": 1}.get(box_format)
    if center is None:
        raise unsupported(f"box_format '{box_format}'")
    n = g.shape("boxes")[1]
    inputs = [g.input("boxes"), g.input("scores"),
              g.ints([g.attr("max_outputs_per_class", n)]),
              g.const([g.attr("iou_threshold", 0.0)], "real")]
    if g.attr("score_threshold") is not None:
        inputs.append(g.const([g.attr("score_threshold")], "real"))
    g.output("indices", g.node("NonMaxSuppression", inputs, center_point_box=center))
