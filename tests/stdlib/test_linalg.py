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


# ------------------------------------------------------------------ repaired defects


@pytest.mark.parametrize("transA, shape_b, dimension", [(False, 3, "first"), (False, 1, "first"),
                                                        (True, 2, "second")])
def test_matvec_checks_the_length_of_b(rng, transA, shape_b, dimension):
    A = rng.standard_normal((2, 3))
    x = rng.standard_normal(2 if transA else 3)
    with pytest.raises(Diagnostic, match=f"the length of b must match the {dimension}") as error:
        run("linalg.matvec", {"A": A, "x": x, "b": rng.standard_normal(shape_b)},
            {"transA": transA})
    assert error.value.code == "E0307"


def test_matvec_with_a_bias_of_the_result_length(rng):
    A, x, b = rng.standard_normal((2, 3)), rng.standard_normal(2), rng.standard_normal(3)
    out = run("linalg.matvec", {"A": A, "x": x, "b": b}, {"transA": True})["y"]
    np.testing.assert_allclose(out, A.T @ x + b, rtol=1e-12)


@pytest.mark.parametrize("shape_a, shape_b", [((0, 3, 4), (4, 2)), ((0, 3, 4), (1, 4, 2)),
                                              ((4, 3), (1, 0, 3, 2)), ((2, 1, 4, 3), (5, 3, 2))])
def test_matmul_broadcasts_an_empty_batch_against_one(rng, shape_a, shape_b):
    A, B = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    out = run("linalg.matmul", {"A": A, "B": B})["Z"]
    expected = np.matmul(A, B)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)
