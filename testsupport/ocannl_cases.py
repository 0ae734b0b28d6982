"""Shared by the OCANNL tests: the seed's `pointpow` backprop block and its scope, a central
finite-difference gradient (the independent check of every gradient golden), and running the
command line with its output captured."""

from __future__ import annotations

import contextlib
import io

import numpy as np

from refinterp.cli import main

POINTPOW = 'v =: v1 ** v2; ~~("grad_asn of" t; g1 =+ p_t *. (t1 **. (p -. 1.)) * g)'
POINTPOW_SCOPE = {"slots": {"lhs": "y", "rhs1": "x", "rhs2": "p_t"}, "projections": ".",
                  "constants": {"p": 3.0}}


def finite_difference(loss, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """The gradient of a scalar function by central differences, cell by cell."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += step
        down[index] -= step
        grad[index] = (loss(up) - loss(down)) / (2 * step)
    return grad


def cli(*argv: str) -> tuple[int, str, str]:
    """`refinterp ARGV...` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()
