"""OCANNL `%cd` blocks (refinterp/einsum/ocannl_cd.py): gradient nodes and backprop code checked by
finite differences of forward computations written in NumPy (and by `jax.grad` where JAX is
installed), the golden backprop cases of the ocannl module suite, `*+` / `++`, block comments
and merge buffers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from refinterp import api
from refinterp.einsum import ocannl_cd as cd
from refinterp.core.diagnostics import Diagnostic
from testsupport.module_suites import module_suite
from testsupport.ocannl_cases import POINTPOW, POINTPOW_SCOPE, finite_difference

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "ocannl" / "cases"

# the forward assignment and the grad_asn of OCANNL's matmul (`*`) and relu, as %cd code
MATMUL = ('c =:+ a * b ~logic:"ij;jk=>ik"; ~~("grad_asn of" c; '
          'a.grad =+ c.grad * b ~logic:"ik;jk=>ij"; b.grad =+ a * c.grad ~logic:"ij;ik=>jk")')
RELU = 'y =: relu x; ~~("grad_asn of" y; x.grad =+ y -?/ y.grad)'
# pointpow's op_asn and grad_asn (p = 3) with slot fillers under pointwise projections
def matmul_case(seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(3, 2))


def test_backprop_of_a_product_is_the_finite_difference_gradient() -> None:
    a, b, w = matmul_case()
    env = cd.run_block(MATMUL, {"a": a, "b": b, "c_grad": w})
    # the loss sum(w * (a @ b)) has c.grad = w; its gradients by differences of NumPy's a @ b
    fd_a = finite_difference(lambda x: float(np.sum(w * (x @ b))), a)
    fd_b = finite_difference(lambda x: float(np.sum(w * (a @ x))), b)
    np.testing.assert_allclose(env["a_grad"], fd_a, atol=1e-7)
    np.testing.assert_allclose(env["b_grad"], fd_b, atol=1e-7)
    np.testing.assert_allclose(env["c"], a @ b, rtol=1e-13)


def test_backprop_of_relu_is_the_finite_difference_gradient() -> None:
    rng = np.random.default_rng(4)
    x = rng.choice([-1.0, 1.0], size=(2, 3)) * rng.uniform(0.1, 2.0, size=(2, 3))  # no kink
    w = rng.normal(size=(2, 3))
    env = cd.run_block(RELU, {"x": x, "y_grad": w})
    fd = finite_difference(lambda v: float(np.sum(w * np.maximum(v, 0.0))), x)
    np.testing.assert_allclose(env["x_grad"], fd, atol=1e-7)


def test_gradients_accumulate_onto_given_ones() -> None:
    a, b, w = matmul_case(5)
    old = np.ones((3, 4))
    env = cd.run_block(MATMUL, {"a": a, "b": b, "c_grad": w, "a_grad": old})
    np.testing.assert_allclose(env["a_grad"], old + w @ b.T, rtol=1e-13)


def test_jax_grad_agrees_where_installed() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    a, b, w = matmul_case(6)
    env = cd.run_block(MATMUL, {"a": a, "b": b, "c_grad": w})
    ga, gb = jax.grad(lambda x, y: (w * (x @ y)).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(env["a_grad"], np.asarray(ga), rtol=1e-12)
    np.testing.assert_allclose(env["b_grad"], np.asarray(gb), rtol=1e-12)


@pytest.mark.parametrize("name", ["grad_matmul", "grad_relu", "grad_pointpow"])
def test_golden_backprop_cases_hold_finite_difference_gradients(name: str) -> None:
    """The cases of the module suite built from golden/ocannl/cases/ocannl.toml."""
    suite = module_suite("ocannl")
    entry = [c for c in json.loads((suite / "manifest.json").read_text())["cases"]
             if c["id"] == f"ocannl/{name}"]
    assert len(entry) == 1
    folder = suite / entry[0]["path"]
    inputs, outputs = dict(np.load(folder / "inputs.npz")), dict(np.load(folder / "outputs.npz"))
    if name == "grad_matmul":
        a, b, w = inputs["a"], inputs["b"], inputs["c_grad"]
        np.testing.assert_allclose(
            outputs["a_grad"], finite_difference(lambda x: float(np.sum(w * (x @ b))), a),
            atol=1e-6)
        np.testing.assert_allclose(
            outputs["b_grad"], finite_difference(lambda x: float(np.sum(w * (a @ x))), b),
            atol=1e-6)
    elif name == "grad_pointpow":
        x, w = inputs["x"], inputs["y_grad"]
        assert inputs["p_t"].tolist() == [3.0]
        np.testing.assert_allclose(outputs["y"], x ** 3, rtol=1e-13)
        np.testing.assert_allclose(
            outputs["x_grad"], finite_difference(lambda v: float(np.sum(w * v ** 3)), x),
            atol=1e-6)
    else:
        x, w = inputs["x"], inputs["y_grad"]
        assert np.all(np.abs(x) > 1e-5)  # away from the kink
        np.testing.assert_allclose(
            outputs["x_grad"],
            finite_difference(lambda v: float(np.sum(w * np.maximum(v, 0.0))), x), atol=1e-6)


@pytest.mark.parametrize("name, block, shapes, scope", [
    ("grad_matmul", MATMUL, {"a": (3, 4), "b": (4, 2), "c_grad": (3, 2)}, {}),
    ("grad_relu", RELU, {"x": (2, 3), "y_grad": (2, 3)}, {}),
    ("grad_pointpow", POINTPOW, {"x": (2, 3), "p_t": (1,), "y_grad": (2, 3)}, POINTPOW_SCOPE),
])
def test_golden_backprop_models_are_the_block_writers_output(name, block, shapes,
                                                             scope) -> None:
    path = GOLDEN / "ocannl" / f"{name}.sknd"
    assert path.read_text() == cd.block_model_text(block, shapes, **scope)
    assert f'model = "ocannl/{name}.sknd"' in (GOLDEN / "ocannl.toml").read_text()


def test_the_block_model_computes_what_the_block_does() -> None:
    a, b, w = matmul_case(7)
    model = GOLDEN / "ocannl" / "grad_matmul.sknd"
    found = api.evaluate(model, inputs={"a": a, "b": b, "c_grad": w}).outputs
    np.testing.assert_allclose(found["a_grad"], w @ b.T, rtol=1e-13)
    np.testing.assert_allclose(found["b_grad"], a.T @ w, rtol=1e-13)


def test_einsum_operators_and_block_comments() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    env = cd.run_block('c =: a *+ "ij;jk=>ik" b; ~~("sum of" c; s =: c ++ "...|...->... => 0")',
                       {"a": a, "b": b})
    np.testing.assert_allclose(env["c"], a @ b, rtol=1e-13)
    np.testing.assert_allclose(env["s"], [np.sum(a @ b)], rtol=1e-12)
    assert not [k for k in env if k.startswith("einsum_t")]  # temporaries are not results
    # onto an existing value: c + the product
    env = cd.run_block('c =+ a *+ "ij;jk=>ik" b', {"a": a, "b": b, "c": np.ones((2, 4))})
    np.testing.assert_allclose(env["c"], 1.0 + a @ b, rtol=1e-13)


def test_merge_buffers_are_nodes_of_their_own() -> None:
    grad, merged = np.arange(4.0), np.full(4, 0.5)
    # data-parallel merging of a param's gradient: p.grad =+ p.grad.merge
    env = cd.run_block("p.grad =+ p.grad.merge", {"p": np.zeros(4), "p_grad": grad,
                                                   "p_grad_merge": merged})
    np.testing.assert_array_equal(env["p_grad"], grad + merged)
    env = cd.run_block("q =: p.value.merge", {"p_merge": merged})
    np.testing.assert_array_equal(env["q"], merged)


def test_block_mistakes_are_diagnostics() -> None:
    with pytest.raises(Diagnostic) as missing:
        cd.run_block("y =: relu x", {})
    assert missing.value.code == "E0305" and "'x'" in missing.value.message
    with pytest.raises(Diagnostic) as accessor:
        cd.parse_block("y =: x.grad.value")
    assert accessor.value.code == "E0100"
    with pytest.raises(Diagnostic) as comment:
        cd.parse_block('~~("no scope")')
    assert comment.value.code == "E0100"
