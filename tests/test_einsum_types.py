"""`refinterp einsum` over ints and bools, broadcasting (NumPy's for its notation, OCANNL's for
its own), rank attributes inferred from the arrays, and `=+` against `=:+` — every expected
value from NumPy (`np.einsum`, broadcasting arithmetic or loops written here)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from refinterp import einsum as front
from refinterp.cli import main
from refinterp.core.diagnostics import Diagnostic


def run(spec: str, inputs: dict, **options) -> dict:
    attributes = options.pop("attributes", None)
    return front.evaluate(front.build(spec, **options), inputs, attributes,
                          engine="scalar").outputs


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


RNG = np.random.default_rng(11)
INTS_A, INTS_B = RNG.integers(-5, 6, size=(3, 4)), RNG.integers(-5, 6, size=(4, 2))
BOOLS_A, BOOLS_B = RNG.random((3, 4)) < 0.4, RNG.random((4, 2)) < 0.4


@pytest.mark.parametrize("spec", ["ij,jk->ik", "ij,jk", "ij->", "ij->ji", "ij,ij->i"])
def test_ints_and_bools_are_np_einsum(spec: str) -> None:
    second = ("b",) if "," in spec else ()
    for a, b in ((INTS_A, INTS_B), (BOOLS_A, BOOLS_B)):
        b = b if spec.split(",")[-1].startswith("jk") else a
        arrays = {"a": a, **({"b": b} if second else {})}
        found = run(spec, arrays)["out"]
        expected = np.einsum(spec, *arrays.values())
        assert found.dtype == expected.dtype, spec
        np.testing.assert_array_equal(found, expected, err_msg=spec)


def test_mixed_kinds_promote_as_numpy_does() -> None:
    found = run("ij,jk->ik", {"a": INTS_A, "b": INTS_B.astype(float) / 2})["out"]
    expected = np.einsum("ij,jk->ik", INTS_A, INTS_B.astype(float) / 2)
    assert found.dtype == np.float64
    np.testing.assert_array_equal(found, expected)
    found = run("ij,jk->ik", {"a": INTS_A, "b": BOOLS_B})["out"]
    np.testing.assert_array_equal(found, np.einsum("ij,jk->ik", INTS_A, BOOLS_B))


def test_ocannl_operations_over_ints() -> None:
    found = run('c =:@^ a -?/ b ~logic:"ij;jk=>ik"', {"a": INTS_A, "b": INTS_B})["c"]
    expected = np.full((3, 2), np.iinfo(np.int64).min)
    for i in range(3):
        for k in range(2):
            for j in range(4):
                expected[i, k] = max(expected[i, k], INTS_B[j, k] if INTS_A[i, j] > 0 else 0)
    assert found.dtype == np.int64
    np.testing.assert_array_equal(found, expected)
    with pytest.raises(Diagnostic) as error:
        run("c =: exp a", {"a": INTS_A})
    assert error.value.code == "E0901"


@pytest.mark.parametrize("spec, shapes", [
    ("...i,...i->...", [(3, 1, 4), (1, 5, 4)]),  # the example
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (4, 5)]),  # ellipses of different ranks
    ("...i,...i", [(3, 1, 4), (5, 1)]),  # implicit output; a label of extent 1 broadcasts
    ("i,i", [(3,), (1,)]),
    ("...,...->...", [(2, 1), (3,)]),
])
def test_numpy_broadcasting_is_np_einsum(spec: str, shapes) -> None:
    arrays = [RNG.normal(size=shape) for shape in shapes]
    found = run(spec, dict(zip("ab", arrays)))["out"]
    expected = np.einsum(spec, *arrays)
    assert found.shape == expected.shape
    np.testing.assert_allclose(found, expected, rtol=1e-12)


def test_ocannl_row_variables_broadcast_to_the_left_and_over_ones() -> None:
    a, b, c = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(3, 4)), RNG.normal(size=(1, 4))
    # `...|i` is a batch row and the output axis i: b's batch row (3) broadcasts to the left
    found = run("...|i; ...|i => ...|i", {"a": a, "b": b})["out"]
    np.testing.assert_allclose(found, a * b, rtol=1e-13)
    found = run("...|i; ...|i => ...|i", {"a": a, "b": c})["out"]
    np.testing.assert_allclose(found, a * c, rtol=1e-13)


def test_shapes_that_cannot_broadcast_stay_a_diagnostic() -> None:
    with pytest.raises(Diagnostic) as error:
        run("...i,...i->...", {"a": np.zeros((3, 4)), "b": np.zeros((2, 4))})
    assert error.value.code == "E0306"


@pytest.mark.parametrize("spec", ["...|...->... => 0", "...|... => 0", "... => 0"])
def test_summing_every_axis_needs_no_rank_attributes(spec: str) -> None:
    a = RNG.normal(size=(2, 3, 4))
    found = run(spec, {"a": a})["out"]
    assert found.shape == (1,)
    np.testing.assert_allclose(found, [a.sum()], rtol=1e-12)


def test_accumulating_onto_reads_the_old_value_and_clearing_does_not() -> None:
    a, b, old = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2)), RNG.normal(size=(2, 2))
    onto, clear = front.build('c =+ a * b ~logic:"@"'), front.build('c =:+ a * b ~logic:"@"')
    assert onto.reads_old() and "c_old: real" in onto.to_sknd()
    assert not clear.reads_old() and "c_old" not in clear.to_sknd()
    ranks = {"b_rank": 0, "o_rank": 1}
    # OCANNL's `@`: output axes of rhs2 match input axes of rhs1: c = b-contracted a
    found = front.evaluate(onto, {"a": b.T, "b": a.T, "c_old": old.T}, ranks).outputs["c"]
    np.testing.assert_allclose(found, old.T + b.T @ a.T, rtol=1e-13)
    found = front.evaluate(clear, {"a": b.T, "b": a.T}, ranks).outputs["c"]
    np.testing.assert_allclose(found, b.T @ a.T, rtol=1e-13)


def test_command_line_runs_ints_broadcasts_and_blocks() -> None:
    status, text, _ = cli("einsum", "ij,jk->ik", "--input", "a=[[1, 2], [3, 4]]",
                          "--input", "b=[[1, 0], [0, 1]]", "--json")
    assert status == 0 and '"dtype": "int"' in text
    status, text, _ = cli("einsum", "...i,...i->...", "--random", "a=real[3,1,4]",
                          "--random", "b=real[1,5,4]", "--json")
    assert status == 0 and '"shape": [3, 5]' in text
    status, text, _ = cli("einsum", "ij,jk->ik", "--emit", "--dtype", "bool")
    assert status == 0 and "a: bool[n_i, n_j];" in text and "||" in text
    status, text, _ = cli("einsum", "y =: relu x; x.grad =+ y -?/ y.grad",
                          "--input", "x=[-1.0, 2.0]", "--input", "y_grad=[5.0, 7.0]")
    assert status == 0 and "x_grad = [0. 7.]" in text
    assert cli("einsum", "y =: relu x; x.grad =+ y -?/ y.grad", "--names", "a", "--emit")[0] == 2


# ----------------------------------------------------------------------------- convolution axes


def conv1d(a: np.ndarray, kernel: np.ndarray, stride: int, dilation: int) -> np.ndarray:
    """A valid (unpadded) strided, dilated correlation, by loops."""
    count = (len(a) - dilation * (len(kernel) - 1) - 1) // stride + 1
    return np.array([sum(a[stride * o + dilation * k] * kernel[k] for k in range(len(kernel)))
                     for o in range(count)])


@pytest.mark.parametrize("spec, stride, dilation", [
    ("o+k; k => o", 1, 1), ("2*o+k; k => o", 2, 1), ("2*o+3*k; k => o", 2, 3),
    ("o+2*k; k => o", 1, 2),
])
def test_convolution_axes_are_valid_correlations(spec: str, stride: int, dilation: int) -> None:
    a, kernel = RNG.normal(size=11), RNG.normal(size=3)
    found = run(spec, {"a": a, "b": kernel})["out"]
    np.testing.assert_allclose(found, conv1d(a, kernel, stride, dilation), rtol=1e-12)


def test_offset_and_stride_only_axes_and_a_2d_convolution() -> None:
    a = RNG.normal(size=7)
    np.testing.assert_array_equal(run("o+2 => o", {"a": a})["out"], a[2:])
    np.testing.assert_array_equal(run("2*o => o", {"a": a})["out"], a[::2])
    image, kernel = RNG.normal(size=(5, 6, 2)), RNG.normal(size=(3, 2, 2, 4))
    found = run("i+k, j+l, c; k, l, c, d => i, j, d", {"a": image, "b": kernel})["out"]
    expected = np.zeros((3, 5, 4))
    for i, j, d in np.ndindex(*expected.shape):
        expected[i, j, d] = np.sum(image[i:i + 3, j:j + 2, :] * kernel[:, :, :, d])
    np.testing.assert_allclose(found, expected, rtol=1e-12)


def test_a_kernel_without_extent_is_a_diagnostic() -> None:
    with pytest.raises(Diagnostic) as error:
        front.build("o+k; j => o").to_sknd()
    assert error.value.code == "E0100" and "kernel axis 'k'" in error.value.message
