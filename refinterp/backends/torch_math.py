"""Torch translations of the `math`, `linalg` and `misc` stdlib operators.

Each translation's docstring gives its mapping: SkriptND attribute -> torch argument. The
`_align` attributes of the broadcasting operators only insert unit axes (`aligned`); the
broadcast itself is torch's.
"""

from __future__ import annotations

from typing import Any

import torch

from refinterp.backends.torch_common import (INT, Call, aligned, axis_of, translation,
                                             unsupported)

# --------------------------------------------------------------------------- unary

UNARY = {
    "iden": torch.clone, "neg": torch.neg, "rcp": torch.reciprocal, "sqr": torch.square,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "exp": torch.exp, "log": torch.log,
    "log2": torch.log2, "sin": torch.sin, "sinh": torch.sinh, "asin": torch.asin,
    "cos": torch.cos, "cosh": torch.cosh, "acos": torch.acos, "asinh": torch.asinh,
    "acosh": torch.acosh, "tan": torch.tan, "tanh": torch.tanh, "atan": torch.atan,
    "atanh": torch.atanh, "abs": torch.abs, "sign": torch.sign, "not": torch.logical_not,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round,
}


def _unary(function: Any) -> Any:
    def run(c: Call) -> Any:
        """No attributes: `y = torch.<function>(x)` (round: torch.round, decimals=0)."""
        return function(c["x"])
    return run


for _name, _function in UNARY.items():
    translation(f"math.{_name}", "y")(_unary(_function))


@translation("math.rsqr", "y")
def rsqr(c: Call) -> Any:
    """No attributes: torch.reciprocal(torch.square(x)) (torch has no rsqr)."""
    return torch.reciprocal(torch.square(c["x"]))


# --------------------------------------------------------------------------- binary


def _binary(function: Any) -> Any:
    def run(c: Call) -> Any:
        """lhs_align, rhs_align -> unit axes inserted before torch broadcasting."""
        x, y = aligned((c["x"], c.attr("lhs_align")), (c["y"], c.attr("rhs_align")))
        return function(x, y)
    return run


def _div(x: Any, y: Any) -> Any:
    # reals: true division; ints: SkriptND (profile spec) floors -> rounding_mode="floor"
    if x.dtype == INT and y.dtype == INT:
        return torch.div(x, y, rounding_mode="floor")
    return torch.div(x, y)


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": _div,
    "mod": torch.remainder,           # floored modulo (sign of the divisor), as profile spec
    "pow": torch.pow, "min": torch.minimum, "max": torch.maximum,  # NaN-propagating
    "lt": torch.lt, "gt": torch.gt, "le": torch.le, "ge": torch.ge, "eq": torch.eq,
    "ne": torch.ne, "and": torch.logical_and, "or": torch.logical_or,
    "xor": torch.logical_xor,
}
for _name, _function in BINARY.items():
    translation(f"math.{_name}", "z")(_binary(_function))


@translation("math.select", "z")
def select(c: Call) -> Any:
    """cond_align, lhs_align, rhs_align -> unit axes; torch.where(c, x, y)."""
    cond, x, y = aligned((c["c"], c.attr("cond_align")), (c["x"], c.attr("lhs_align")),
                         (c["y"], c.attr("rhs_align")))
    return torch.where(cond, x, y)


@translation("math.axpb", "y")
def axpb(c: Call) -> Any:
    """a_align, x_align, b_align -> unit axes; torch.addcmul(b, a, x) = b + a * x."""
    a, x, b = aligned((c["a"], c.attr("a_align")), (c["x"], c.attr("x_align")),
                      (c["b"], c.attr("b_align")))
    return a * x + b


@translation("math.axpby", "z")
def axpby(c: Call) -> Any:
    """a_align, x_align, b_align, y_align -> unit axes; a * x + b * y."""
    a, x, b, y = aligned((c["a"], c.attr("a_align")), (c["x"], c.attr("x_align")),
                         (c["b"], c.attr("b_align")), (c["y"], c.attr("y_align")))
    return a * x + b * y


@translation("math.clamp", "y")
def clamp(c: Call) -> Any:
    """val_align, min_align, max_align -> unit axes; torch.clamp(x, min=a, max=b)."""
    x, a, b = aligned((c["x"], c.attr("val_align")), (c["a"], c.attr("min_align")),
                      (c["b"], c.attr("max_align")))
    shape = torch.broadcast_shapes(x.shape, a.shape, b.shape)
    return torch.clamp(x.expand(shape), a.expand(shape), b.expand(shape))


# --------------------------------------------------------------------------- n-ary


def _stacked(function: Any) -> Any:
    def run(c: Call) -> Any:
        """No attributes: `function(torch.stack(xs), dim=0)`."""
        return function(torch.stack(c["xs"]), dim=0)
    return run


for _name, _function in {"sum_n": torch.sum, "prod_n": torch.prod, "min_n": torch.amin,
                         "max_n": torch.amax, "argmin_n": torch.argmin,
                         "argmax_n": torch.argmax, "any_n": torch.any,
                         "all_n": torch.all}.items():
    translation(f"math.{_name}", "y")(_stacked(_function))


# --------------------------------------------------------------------------- reductions


def _axes(c: Call, rank: int) -> list[int]:
    """`axes` (default every axis) as given; torch normalises and checks them."""
    axes = c.ints("axes")
    return list(range(rank)) if axes is None else axes


def _reduction(function: Any) -> Any:
    def run(c: Call) -> Any:
        """axes -> dim (a tuple, as given), squeeze -> keepdim = not squeeze."""
        x = c["input"]
        return function(x, dim=tuple(_axes(c, x.dim())), keepdim=not c.attr("squeeze", False))
    return run


for _name, _function in {"sum_reduce": torch.sum, "min_reduce": torch.amin,
                         "max_reduce": torch.amax, "mean_reduce": torch.mean,
                         "any_reduce": torch.any, "all_reduce": torch.all}.items():
    translation(f"math.{_name}", "output")(_reduction(_function))


@translation("math.prod_reduce", "output")
def prod_reduce(c: Call) -> Any:
    """axes -> one torch.prod(dim=axis, keepdim=True) per axis (torch.prod takes one dim);
    squeeze -> the reduced axes squeezed at the end."""
    x = c["input"]
    axes = _axes(c, x.dim())
    normal = [axis_of(a, x.dim()) for a in axes]
    if len(set(normal)) != len(normal):
        # one torch.prod per axis would reduce a repeated axis twice: not expressible
        raise unsupported(f"repeated axes {axes} in one torch.prod chain")
    for axis in axes:
        x = torch.prod(x, dim=axis, keepdim=True)
    return x.squeeze(tuple(normal)) if c.attr("squeeze", False) else x


@translation("math.lp_reduce", "output")
def lp_reduce(c: Call) -> Any:
    """p -> ord, axes -> dim, squeeze -> keepdim = not squeeze: torch.linalg.vector_norm."""
    x = c["input"]
    return torch.linalg.vector_norm(x, ord=c.attr("p"), dim=tuple(_axes(c, x.dim())),
                                    keepdim=not c.attr("squeeze", False))


@translation("math.moments", "mean", "variance")
def moments(c: Call) -> Any:
    """axes -> dim, squeeze -> keepdim = not squeeze; population variance -> correction=0:
    torch.var_mean returns (variance, mean)."""
    x = c["input"]
    variance, mean = torch.var_mean(x, dim=tuple(_axes(c, x.dim())), correction=0,
                                    keepdim=not c.attr("squeeze", False))
    return mean, variance


def _arg(function: Any) -> Any:
    def run(c: Call) -> Any:
        """axis -> dim, squeeze -> keepdim = not squeeze."""
        return function(c["input"], dim=c.attr("axis"), keepdim=not c.attr("squeeze", False))
    return run


translation("math.argmin", "output")(_arg(torch.argmin))
translation("math.argmax", "output")(_arg(torch.argmax))


def _arg_nd(function: Any) -> Any:
    def run(c: Call) -> Any:
        """axes -> moved last and flattened, `function(dim=-1)`, torch.unravel_index over
        their extents (one int tensor per axis, the spec's pack); squeeze -> keepdim."""
        x = c["input"]
        d = x.dim()
        axes = [axis_of(a, d) for a in _axes(c, d)]
        if any(a < 0 or a >= d for a in axes) or len(set(axes)) != len(axes):
            # the permutation below would reject or mis-read them: not torch's own check
            raise unsupported(f"axes {c.ints('axes')} (out of range or repeated) in the "
                              f"permute/flatten decomposition")
        kept = [a for a in range(d) if a not in axes]
        moved = x.permute(kept + axes)
        extents = [x.shape[a] for a in axes]
        flat = moved.reshape([x.shape[a] for a in kept] + [-1])
        index = function(flat, dim=-1)
        parts = torch.unravel_index(index, tuple(extents))
        if not c.attr("squeeze", False):
            parts = [p.reshape([1 if a in axes else x.shape[a] for a in range(d)])
                     for p in parts]
        return list(parts)
    return run


translation("math.argmin_nd", "output")(_arg_nd(torch.argmin))
translation("math.argmax_nd", "output")(_arg_nd(torch.argmax))


@translation("math.cumsum", "output")
def cumsum(c: Call) -> Any:
    """axis -> dim; reverse -> torch.flip before and after; exclusive -> the running sum
    shifted by one (a zero first) -- torch.cumsum has no exclusive flag."""
    x, axis = c["input"], c.attr("axis")
    if c.attr("reverse", False):
        x = torch.flip(x, dims=[axis])
    y = torch.cumsum(x, dim=axis)
    if c.attr("exclusive", False):
        zero = torch.zeros_like(x.narrow(axis, 0, 1))
        y = torch.cat([zero, y.narrow(axis, 0, x.shape[axis] - 1)], dim=axis)
    if c.attr("reverse", False):
        y = torch.flip(y, dims=[axis])
    return y


# --------------------------------------------------------------------------- linalg


@translation("linalg.dot", "z")
def dot(c: Call) -> Any:
    """No attributes: torch.dot(x, y), plus the optional scalar b."""
    z = torch.dot(c["x"], c["y"])
    return z + c["b"] if c.get("b") is not None else z


@translation("linalg.matvec", "y")
def matvec(c: Call) -> Any:
    """transA -> A.T; torch.mv(A, x), plus the optional b."""
    a = c["A"].T if c.attr("transA", False) else c["A"]
    y = torch.mv(a, c["x"])
    return y + c["b"] if c.get("b") is not None else y


@translation("linalg.matmul", "Z")
def matmul(c: Call) -> Any:
    """transA / transB -> transpose(-2, -1); torch.matmul (batch broadcasting); the optional
    C is the initial value: C + A @ B (torch.addmm is 2-D only)."""
    a, b = c["A"], c["B"]
    if c.attr("transA", False):
        a = a.transpose(-2, -1)
    if c.attr("transB", False):
        b = b.transpose(-2, -1)
    z = torch.matmul(a, b)
    return c["C"] + z if c.get("C") is not None else z


@translation("linalg.outer", "z")
def outer(c: Call) -> Any:
    """No attributes: torch.tensordot(x, y, dims=0) (torch.outer is 1-D only)."""
    return torch.tensordot(c["x"], c["y"], dims=0)


# --------------------------------------------------------------------------- misc


@translation("misc.mesh_grid", "outputs")
def mesh_grid(c: Call) -> Any:
    """No attributes: torch.meshgrid(*inputs, indexing="ij")."""
    return list(torch.meshgrid(*c["inputs"], indexing="ij"))
