"""JAX translations of the element-wise, reduction, scan and sort primitives of `nx`.

`jax.lax` is used wherever it has the primitive: it neither broadcasts nor promotes, so an
invocation the contract forbids (operands of different shapes, an int given to `sin`, a real
to `and_`) is rejected by JAX as the contract requires. `jax.numpy` fills the gaps (integer
`pow`, `trunc`, rounding of ints, sort with a direction). Each docstring gives the mapping.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import lax

from refinterp.backends.jax_common import Call, is_int, translation, unsupported

# --------------------------------------------------------------------------- binary

BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul,
    "div": lax.div,        # ints: rounds toward zero (C), reals: IEEE
    "mod_": lax.rem,       # C remainder / fmod: the sign of the dividend
    "atan2": lax.atan2,
    "max": lax.max, "min": lax.min,  # XLA: NaN propagates
    "and_": lax.bitwise_and, "or_": lax.bitwise_or, "xor": lax.bitwise_xor,
}
COMPARISONS = {"cmpeq": lax.eq, "cmpne": lax.ne, "cmplt": lax.lt, "cmple": lax.le}


def _binary(function: Any, first: str, second: str) -> Any:
    def run(c: Call) -> Any:
        """No attributes: `out = lax.<op>(a, b)` (identical shapes; lax does not
        broadcast)."""
        return function(c[first], c[second])
    return run


for _name, _function in {**BINARY, **COMPARISONS}.items():
    _first, _second = ("y", "x") if _name == "atan2" else ("a", "b")
    translation(f"nx.{_name}", "out")(_binary(_function, _first, _second))


@translation("nx.pow", "out")
def pow_(c: Call) -> Any:
    """No attributes: reals `lax.pow(base, exponent)`; ints `jnp.power(base, exponent)`
    (lax.pow takes no integer base)."""
    base, exponent = c["base"], c["exponent"]
    if is_int(base):
        return jnp.power(base, exponent)
    return lax.pow(base, exponent)


# --------------------------------------------------------------------------- unary

UNARY = {
    "neg": lax.neg, "abs": lax.abs, "sqrt": lax.sqrt, "sign": lax.sign,
    "exp": lax.exp, "log": lax.log, "sin": lax.sin, "cos": lax.cos, "tan": lax.tan,
    "asin": lax.asin, "acos": lax.acos, "atan": lax.atan, "sinh": lax.sinh,
    "cosh": lax.cosh, "tanh": lax.tanh, "erf": lax.erf,
    "trunc": jnp.trunc,  # lax has no trunc; jnp.trunc returns ints unchanged
    "ceil": jnp.ceil, "floor": jnp.floor,  # lax.ceil / lax.floor on reals, ints unchanged
}


def _unary(function: Any) -> Any:
    def run(c: Call) -> Any:
        """No attributes: `out = <function>(x)`."""
        return function(c["x"])
    return run


for _name, _function in UNARY.items():
    translation(f"nx.{_name}", "out")(_unary(_function))


@translation("nx.recip", "out")
def recip(c: Call) -> Any:
    """No attributes: reals `lax.reciprocal(x)`; ints `lax.div(1, x)` (C division:
    lax.reciprocal and jnp.reciprocal take no int to an int)."""
    x = c["x"]
    if is_int(x):
        return lax.div(jnp.ones_like(x), x)
    return lax.reciprocal(x)


@translation("nx.round", "out")
def round_(c: Call) -> Any:
    """No attributes: reals `lax.round(x, RoundingMethod.AWAY_FROM_ZERO)` (C round); ints
    unchanged (`jnp.round` of an int array, the identity)."""
    x = c["x"]
    if is_int(x):
        return jnp.round(x)
    return lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO)


@translation("nx.where", "out")
def where(c: Call) -> Any:
    """No attributes: `lax.select(cond, if_true, if_false)` (a bool `cond` of the same
    shape)."""
    return lax.select(c["cond"], c["if_true"], c["if_false"])


# --------------------------------------------------------------------------- reductions

REDUCTIONS = {"reduce_sum": lax.reduce_sum, "reduce_prod": lax.reduce_prod,
              "reduce_max": lax.reduce_max, "reduce_min": lax.reduce_min}


def _reduction(function: Any) -> Any:
    def run(c: Call) -> Any:
        """axes -> `axes` of `lax.reduce_<op>(x, axes)`; keepdims -> `lax.expand_dims` of
        the result at the (sorted) reduced axes."""
        axes = tuple(c.ints("axes"))
        out = function(c["x"], axes)
        if c.attr("keepdims", False):
            out = lax.expand_dims(out, tuple(sorted(axes)))
        return out
    return run


for _name, _function in REDUCTIONS.items():
    translation(f"nx.{_name}", "out")(_reduction(_function))


def _arg_extreme(function: Any) -> Any:
    def run(c: Call) -> Any:
        """axis -> `lax.arg<op>(x, axis, index_dtype=int64)`; keepdims ->
        `lax.expand_dims(out, (axis,))`."""
        axis = int(c.attr("axis"))
        out = function(c["x"], axis, jnp.int64)
        if c.attr("keepdims", False):
            out = lax.expand_dims(out, (axis,))
        return out
    return run


translation("nx.argmax", "out")(_arg_extreme(lax.argmax))
translation("nx.argmin", "out")(_arg_extreme(lax.argmin))

SCANS = {"Sum": lax.cumsum, "Prod": lax.cumprod, "Max": lax.cummax, "Min": lax.cummin}


@translation("nx.associative_scan", "out")
def associative_scan(c: Call) -> Any:
    """axis -> `axis`; op 'Sum' / 'Prod' / 'Max' / 'Min' -> `lax.cumsum` / `cumprod` /
    `cummax` / `cummin` (inclusive, forward); any other op is unsupported (the contract has
    these four)."""
    op = c.attr("op")
    if op not in SCANS:
        raise unsupported(f"associative_scan op {op!r} (the contract has Sum, Prod, Max, Min)")
    return SCANS[op](c["x"], axis=int(c.attr("axis")))


def _scan(function: Any) -> Any:
    def run(c: Call) -> Any:
        """axis -> `axis` of `lax.cum<op>(x, axis)` (inclusive, forward)."""
        return function(c["x"], axis=int(c.attr("axis")))
    return run


for _op, _function in SCANS.items():
    translation(f"nx.scan_{_op.lower()}", "out")(_scan(_function))


# --------------------------------------------------------------------------- sort


@translation("nx.sort", "out")
def sort(c: Call) -> Any:
    """axis -> `axis`, descending -> `descending` of `jnp.sort(x, axis, stable=True,
    descending=...)`."""
    return jnp.sort(c["x"], axis=int(c.attr("axis")), stable=True,
                    descending=bool(c.attr("descending", False)))


@translation("nx.argsort", "out")
def argsort(c: Call) -> Any:
    """axis -> `axis`, descending -> `descending` of `jnp.argsort(x, axis, stable=True,
    descending=...)`, indices as int64."""
    order = jnp.argsort(c["x"], axis=int(c.attr("axis")), stable=True,
                        descending=bool(c.attr("descending", False)))
    return order.astype(jnp.int64)
