"""Tensor expressions inside `%cd` assignments (refinterp/einsum/ocannl_cd_expr.py): `*.` and
the other NTDSL.O operators, `!.` / `!..` constants, inline declarations on the left, slot
fillers under a `~projections` in scope; checked against NumPy written here."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.einsum import ocannl_cd as cd
from testsupport.ocannl_cases import POINTPOW, POINTPOW_SCOPE, finite_difference


def test_pointwise_update_equals_the_built_in_form() -> None:
    rng = np.random.default_rng(11)
    p, grad = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    inputs = {"p": p, "p_grad": grad, "learning_rate": np.array([0.1])}
    lifted = cd.run_block("p =+ learning_rate *. p.grad", inputs)
    built_in = cd.run_block('p =+ learning_rate * p.grad ~logic:"."', inputs)
    np.testing.assert_allclose(lifted["p"], p + 0.1 * grad, rtol=1e-15)
    np.testing.assert_array_equal(lifted["p"], built_in["p"])
    assert set(lifted) == set(inputs)  # intermediates are not results


def test_sgd_with_weight_decay_and_momentum() -> None:
    """The seed's sgd_one: inline declarations on the left, `!.` constants, `*.`."""
    rng = np.random.default_rng(12)
    p, grad, momentum = (rng.normal(size=5) for _ in range(3))
    block = ('"sgd_delta" =: p.grad + (!.weight_decay *. p); '
             '"sgd_momentum" =: (!.momentum *. sgd_momentum) + sgd_delta; '
             "p =- learning_rate *. sgd_momentum")
    env = cd.run_block(block, {"p": p, "p_grad": grad, "sgd_momentum": momentum,
                               "learning_rate": np.array([0.01])},
                       constants={"weight_decay": 1e-3, "momentum": 0.9})
    delta = grad + 1e-3 * p
    velocity = 0.9 * momentum + delta
    np.testing.assert_allclose(env["sgd_delta"], delta, rtol=1e-15)
    np.testing.assert_allclose(env["sgd_momentum"], velocity, rtol=1e-15)
    np.testing.assert_allclose(env["p"], p - 0.01 * velocity, rtol=1e-15)


def test_scalar_loss_divided_by_an_int_constant() -> None:
    margins = np.arange(6.0).reshape(2, 3)
    env = cd.run_block('loss =: (m ++ "...|...->... => 0") /. !..batch_size', {"m": margins},
                       constants={"batch_size": 4})
    np.testing.assert_allclose(env["loss"], [15.0 / 4], rtol=1e-15)


def test_pointpow_backprop_is_the_finite_difference_gradient() -> None:
    rng = np.random.default_rng(13)
    x, w = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    env = cd.run_block(POINTPOW, {"x": x, "p_t": np.array([3.0]), "y_grad": w},
                       **POINTPOW_SCOPE)
    np.testing.assert_allclose(env["y"], x ** 3, rtol=1e-13)
    fd = finite_difference(lambda v: float(np.sum(w * v ** 3)), x)
    np.testing.assert_allclose(env["x_grad"], fd, atol=1e-7)
    # p = 2: g1 =+ p_t *. t1 * g
    env = cd.run_block("v =: v1 ** v2; g1 =+ p_t *. t1 * g",
                       {"x": x, "p_t": np.array([2.0]), "y_grad": w},
                       slots=POINTPOW_SCOPE["slots"], projections=".")
    np.testing.assert_allclose(env["x_grad"], 2.0 * x * w, rtol=1e-15)


def test_slot_fillers_take_their_slots_projections() -> None:
    """matmul's backprop written with slot fillers under the projections `ij;jk=>ik`."""
    rng = np.random.default_rng(14)
    a, b, w = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    env = cd.run_block("v =:+ v1 * v2; g1 =+ g * t2; g2 =+ t1 * g",
                       {"a": a, "b": b, "c_grad": w},
                       slots={"lhs": "c", "rhs1": "a", "rhs2": "b"}, projections="ij;jk=>ik")
    np.testing.assert_allclose(env["c"], a @ b, rtol=1e-13)
    np.testing.assert_allclose(env["a_grad"], w @ b.T, rtol=1e-13)
    np.testing.assert_allclose(env["b_grad"], a.T @ w, rtol=1e-13)
    assert cd.fill_slots('g1 =+ g * t2 ~logic:"t"', {"lhs": "c", "rhs1": "a", "rhs2": "b"}) \
        == 'a.grad =+ c.grad * b ~logic:"t"'


def test_expression_mistakes_are_diagnostics() -> None:
    cases = [("p =+ lr *. (q", {}, "E0100"),        # unclosed
             ("p =+ !.rate *. q", {}, "E0100"),     # rate has no value
             ("p =+ (a * b) *. q", {}, "E0100")]    # NTDSL.O's compose in an expression
    for text, scope, code in cases:
        with pytest.raises(Diagnostic) as error:
            cd.parse_block(text, **scope)
        assert error.value.code == code, text
    with pytest.raises(Diagnostic) as slot:
        cd.parse_block("g1 =+ g", slots={"lhs": "y"})
    assert slot.value.code == "E0100" and "rhs1" in slot.value.message
    with pytest.raises(Diagnostic) as unslotted:
        cd.parse_block("g1 =+ g * w", slots={"lhs": "c", "rhs1": "a"}, projections="ij;jk=>ik")
    assert unslotted.value.code == "E0100" and "'w' fills no slot" in unslotted.value.message
