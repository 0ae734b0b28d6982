"""OCANNL `%op` tensor expressions (refinterp/einsum/ocannl_op.py) with OCANNL's shape
inference for params (refinterp/einsum/ocannl_shapes.py): the seed's examples evaluated on
given arrays and checked against NumPy written here."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.einsum import ocannl_op as op
from refinterp.einsum import ocannl_shapes as shapes


def test_mlp_layer_infers_w_and_b_from_their_use() -> None:
    x = np.random.default_rng(1).normal(size=(5, 3))  # batch 5, output 3
    run = op.evaluate('relu("w" * x + "b" hid_dim)', {"x": x}, kinds={"x": (1, 0)},
                      dims={"hid_dim": 4}, seed=7)
    w, b = run.params["w"], run.params["b"]
    assert w.shape == (4, 3) and b.shape == (4,)  # w: input 3 -> output 4; b: output 4
    assert run.shapes["w"] == ((), (3,), (4,))
    assert np.allclose(run.value, np.maximum(x @ w.T + b, 0.0))
    rng = np.random.default_rng(7)  # the params are drawn in order of appearance
    assert np.array_equal(w, rng.uniform(size=(4, 3))) and np.array_equal(b, rng.uniform(size=4))


def test_given_params_and_a_declared_param() -> None:
    rng = np.random.default_rng(2)
    x, w, b = rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=4)
    # the seed's `w = Tensor.param "w"`, `b = Tensor.param ~output_dims:[hid_dim] "b"`
    run = op.evaluate('relu(w * x + "b" hid_dim)', {"x": x}, kinds={"x": (1, 0)},
                      params={"w": w, "b": b}, dims={"hid_dim": 4})
    assert np.allclose(run.value, np.maximum(x @ w.T + b, 0.0))


def test_three_layer_perceptron() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 5))
    text = ('relu("w3" * relu("w2" * relu("w1" * x + "b1" 8) + "b2" 7) + "b3" 2)')
    run = op.evaluate(text, {"x": x}, kinds={"x": (1, 0)}, seed=4)
    p = run.params
    assert [p[k].shape for k in ("w1", "b1", "w2", "b2", "w3", "b3")] == \
        [(8, 5), (8,), (7, 8), (7,), (2, 7), (2,)]
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731
    h = relu(x @ p["w1"].T + p["b1"])
    h = relu(h @ p["w2"].T + p["b2"])
    assert np.allclose(run.value, relu(h @ p["w3"].T + p["b3"]))


def test_micrograd_literals_and_labelled_numbers() -> None:
    assert op.evaluate('"a" [ -4 ] + "b" [ 2 ]', {}).value.tolist() == [-2.0]
    run = op.evaluate("(\"hey\" * 'q' 2.0) + 'p' 1.0", {}, params={"hey": [[3.0]]})
    assert run.shapes["hey"] == ((), (1,), (1,)) and run.value.tolist() == [7.0]


def test_pointwise_operators_and_pointpow() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.uniform(1.0, 2.0, size=(2, 3)), rng.uniform(1.0, 2.0, size=(3,))
    run = op.evaluate("exp(x *. y) - x /. y **. 2.0 + !.half",
                      {"x": x, "y": y}, constants={"half": 0.5})
    assert np.allclose(run.value, np.exp(x * y) - x / y ** 2.0 + 0.5)
    assert np.allclose(op.evaluate("- x", {"x": x}).value, -x)


def test_compose_over_input_axes_and_batch_broadcasting() -> None:
    rng = np.random.default_rng(6)
    a = rng.normal(size=(2, 4, 3))  # batch 2, output 4, input 3
    b = rng.normal(size=(3, 5))     # output 3, input 5
    run = op.evaluate("a * b", {"a": a, "b": b}, kinds={"a": (1, 1), "b": (0, 1)})
    assert run.shapes["a * b"] == ((2,), (5,), (4,))
    assert np.allclose(run.value, np.einsum("bok,ki->boi", a, b))


def test_unsettled_and_mismatched_shapes_are_diagnostics() -> None:
    with pytest.raises(Diagnostic) as unknown:
        op.evaluate('"w" * x', {"x": np.ones(3)})
    assert unknown.value.code == "E0305" and "output axes of 'w'" in unknown.value.message
    span = unknown.value.span  # the whole expression, whose inference failed
    assert (span.line, span.col, span.end_col) == (1, 1, len('"w" * x') + 1)
    with pytest.raises(Diagnostic) as mismatch:
        op.evaluate('"a" [ 1; 2 ] + "b" [ 1; 2; 3 ]', {})
    assert mismatch.value.code == "E0306" and "'\"a\" [ 1; 2 ] + \"b\"" in mismatch.value.message
    assert mismatch.value.span is not None
    with pytest.raises(Diagnostic) as given:
        op.evaluate('"w" 2 * x', {"x": np.ones(3)}, params={"w": np.ones((3, 3))})
    assert given.value.code == "E0306"
    with pytest.raises(Diagnostic) as untied:  # b's output axes: nothing bounds them
        op.evaluate("w * x + b", {"x": np.ones(3)})
    assert untied.value.code == "E0305"
    assert "output axes of 'w', the output axes of 'b'" in untied.value.message
    for text, code in [('relu("w" * ', "E0100"), ('"b" nodim', "E0100"), ("x", "E0305"),
                       ('x ++ "...|... => 0"', "E0100")]:
        with pytest.raises(Diagnostic) as bad:
            op.evaluate(text, {})
        assert bad.value.code == code


def test_row_inequalities() -> None:
    assert shapes.fits((2, 3), (3,)) and shapes.fits((2, 3), (1, 3)) and shapes.fits((3,), ())
    assert not shapes.fits((3,), (2, 3)) and not shapes.fits((2, 3), (2, 2))
    assert shapes.join([(3,), (2, 1)]) == (2, 3)


def test_command_line(tmp_path) -> None:
    from testsupport.ocannl_cases import cli

    out = tmp_path / "out.npz"
    status, _, _ = cli("einsum", "--expr", 'relu("w" * x + "b" hid_dim)', "--input",
                       "x=[[1.0, -2.0, 3.0]]", "--input", "w=[[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]",
                       "--kinds", "x=1,0", "--dim", "hid_dim=2", "-o", str(out))
    assert status == 0
    found = dict(np.load(out))
    b = found["b"]  # drawn from the seed; w was given
    assert np.allclose(found["out"], np.maximum(np.array([[4.0, -2.0]]) + b, 0.0))
    status, _, _ = cli("einsum", "v =: v1 ** v2; g1 =+ p_t *. t1 * g", "--slots",
                       "lhs=y,rhs1=x,rhs2=p_t", "--projections", ".", "--input", "x=[3.0]",
                       "--input", "p_t=[2.0]", "--input", "y_grad=[1.0]", "-o", str(out))
    assert status == 0 and dict(np.load(out))["x_grad"].tolist() == [6.0]
    assert cli("einsum", "--expr", '"w" * x', "--input", "x=[1.0]")[0] == 1
    assert cli("einsum", "ij->ji", "--emit", "--dim", "a=1")[0] == 2
    assert cli("einsum", "--expr", "x", "--emit")[0] == 2
