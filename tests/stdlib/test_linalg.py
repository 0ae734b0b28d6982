"""Module `linalg` (spec §4.3): dot, matvec, matmul and outer against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic

from .conftest import run


def close(actual, expected) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-14)


def test_dot(rng):
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    close(run("linalg.dot", {"x": x, "y": y})["z"], np.dot(x, y))
    b = np.array(0.75)
    close(run("linalg.dot", {"x": x, "y": y, "b": b})["z"], np.dot(x, y) + 0.75)
    with pytest.raises(Diagnostic):
        run("linalg.dot", {"x": x, "y": y[:4]})


def test_matvec(rng):
    a, x = rng.standard_normal((3, 4)), rng.standard_normal(4)
    close(run("linalg.matvec", {"A": a, "x": x})["y"], a @ x)
    x3, b = rng.standard_normal(3), rng.standard_normal(4)
    close(run("linalg.matvec", {"A": a, "x": x3, "b": b}, {"transA": True})["y"], a.T @ x3 + b)
    with pytest.raises(Diagnostic, match="length of x"):
        run("linalg.matvec", {"A": a, "x": x3})


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_matmul_transposes(trans_a, trans_b, rng):
    a = rng.standard_normal((4, 3) if trans_a else (3, 4))
    b = rng.standard_normal((5, 4) if trans_b else (4, 5))
    expected = (a.T if trans_a else a) @ (b.T if trans_b else b)
    out = run("linalg.matmul", {"A": a, "B": b}, {"transA": trans_a, "transB": trans_b})["Z"]
    close(out, expected)


def test_matmul_batches_broadcast_and_c_is_added(rng):
    a, b = rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((5, 4, 2))
    close(run("linalg.matmul", {"A": a, "B": b})["Z"], np.matmul(a, b))
    c = rng.standard_normal((5, 3, 2))
    close(run("linalg.matmul", {"A": a, "B": b, "C": c})["Z"], np.matmul(a, b) + c)
    with pytest.raises(Diagnostic, match="must match"):
        run("linalg.matmul", {"A": a, "B": rng.standard_normal((3, 2))})


def test_outer(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(4)
    close(run("linalg.outer", {"x": x, "y": y})["z"], np.outer(x, y))
    x2, y2 = rng.standard_normal((2, 3)), rng.standard_normal((2,))
    close(run("linalg.outer", {"x": x2, "y": y2})["z"], np.multiply.outer(x2, y2))
