"""The JAX back end (refinterp.backends.jax) on the Nx contract: translations against NumPy
written here, the harness on a selection of golden/nx cases (layout variants included), and
one minimal reproduction per documented difference (docs/backends.md, "JAX (XLA) on the Nx
contract"), its expected values computed by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import refinterp.api as api  # noqa: E402
from refinterp.backends.jax import JaxBackend, JaxJitBackend  # noqa: E402
from refinterp.harness.backends import Unsupported, resolve  # noqa: E402
from refinterp.harness.suite_run import check_case  # noqa: E402
from refinterp.harness.suite import Case, load_case  # noqa: E402
from testsupport.module_suites import module_suite

NAN, INF = math.nan, math.inf


def jax_run(operator: str, inputs: dict, attributes: dict | None = None,
            generics: tuple[str, ...] = (), backend: type = JaxBackend) -> dict:
    """The jax back end's outputs for one invocation (no case folder needed)."""
    case = Case(f"unit/{operator}", Path("."), {"operator": operator,
                                                "attributes": attributes or {},
                                                "generics": list(generics)})
    return backend().prepare(case).run(inputs)


def spec_run(operator: str, inputs: dict, attributes: dict | None = None,
             generics: tuple[str, ...] = ()) -> dict:
    """refinterp's outputs (what the nx module defines; checked against hand values)."""
    return api.run_operator(operator, inputs, attributes or {}, generics=generics)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------- the module


def test_import_is_the_framework_and_only_nx_operators_are_translated():
    import refinterp.backends.jax as module
    assert module.__name__ == "refinterp.backends.jax"
    assert hasattr(jax, "numpy")  # `import jax` inside the package is the framework
    assert JaxBackend.name == "jax" and JaxBackend.profile == "spec"
    with pytest.raises(Unsupported, match="model cases"):
        JaxBackend().prepare(Case("models/x", Path("."), {"operator": None}))
    with pytest.raises(Unsupported, match="nx module only"):
        JaxBackend().prepare(Case("math.add/x", Path("."), {"operator": "math.add"}))
    assert isinstance(resolve("refinterp.backends.jax:JaxBackend"), JaxBackend)
    # the spec strings of earlier releases (docs/backends.md) still name the same classes
    assert type(resolve("refinterp.backends.jax:Backend")) is JaxBackend
    assert type(resolve("refinterp.backends.jax:JitBackend")) is JaxJitBackend


def test_64_bit_types_are_enabled():
    out = jax_run("nx.add", {"a": np.array([2 ** 60]), "b": np.array([1])})["out"]
    assert out.dtype == np.int64 and out[0] == 2 ** 60 + 1
    out = jax_run("nx.add", {"a": np.array([1.0]), "b": np.array([2.0 ** -40])})["out"]
    assert out.dtype == np.float64 and out[0] == 1.0 + 2.0 ** -40


def test_unknown_modes_are_unsupported_not_approximated():
    with pytest.raises(Unsupported, match="'Mean'"):
        jax_run("nx.associative_scan", {"x": np.ones(3)}, {"axis": 0, "op": "Mean"})
    with pytest.raises(Unsupported, match="'Max'"):
        jax_run("nx.scatter", {"template": np.zeros(3), "indices": np.array([0]),
                               "updates": np.ones(1)}, {"axis": 0, "mode": "Max"})


# --------------------------------------------------------------------------- element-wise


def test_integer_division_and_remainder_truncate_toward_zero():
    a, b = np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])
    np.testing.assert_array_equal(jax_run("nx.div", {"a": a, "b": b})["out"], [3, -3, -3, 3])
    np.testing.assert_array_equal(jax_run("nx.mod_", {"a": a, "b": b})["out"], [1, -1, 1, -1])
    x, y = np.array([-7.5, 7.5, -0.0]), np.array([2.0, -2.0, 3.0])
    out = jax_run("nx.mod_", {"a": x, "b": y})["out"]
    np.testing.assert_array_equal(out, np.fmod(x, y))
    assert np.signbit(out[2])  # fmod(-0.0, 3) = -0.0


def test_real_arithmetic_and_transcendentals_against_numpy():
    x = rng(1).uniform(-0.9, 0.9, (3, 4))
    y = rng(2).uniform(0.5, 3.0, (3, 4))
    for op, expect in [("pow", lambda: y ** x), ("atan2", lambda: np.arctan2(x, y))]:
        inputs = {"base": y, "exponent": x} if op == "pow" else {"y": x, "x": y}
        np.testing.assert_allclose(jax_run(f"nx.{op}", inputs)["out"], expect(), rtol=1e-14)
    for op, function in [("exp", np.exp), ("sin", np.sin), ("tanh", np.tanh),
                         ("asin", np.arcsin), ("acos", np.arccos), ("cosh", np.cosh)]:
        np.testing.assert_allclose(jax_run(f"nx.{op}", {"x": x})["out"], function(x),
                                   rtol=1e-14)
    np.testing.assert_allclose(jax_run("nx.erf", {"x": np.array([0.5, -1.0])})["out"],
                               [math.erf(0.5), math.erf(-1.0)], rtol=1e-15)


def test_rounding_family():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -2.7, 2.7])
    assert jax_run("nx.round", {"x": x})["out"].tolist() == [1, 2, 3, -1, -3, -3, 3]
    assert jax_run("nx.trunc", {"x": x})["out"].tolist() == [0, 1, 2, 0, -2, -2, 2]
    assert jax_run("nx.floor", {"x": x})["out"].tolist() == [0, 1, 2, -1, -3, -3, 2]
    ints = np.array([-3, 0, 2 ** 62])
    for op in ("round", "trunc", "ceil", "floor"):  # the identity on ints
        np.testing.assert_array_equal(jax_run(f"nx.{op}", {"x": ints})["out"], ints)


def test_recip_sign_max_min_where_and_bitwise():
    np.testing.assert_array_equal(jax_run("nx.recip", {"x": np.array([1, -1, 2, -3])})["out"],
                                  [1, -1, 0, 0])
    assert np.isnan(jax_run("nx.sign", {"x": np.array([NAN])})["out"][0])
    out = jax_run("nx.max", {"a": np.array([1.0, NAN, 3.0]), "b": np.array([NAN, 2.0, 1.0])})
    assert np.isnan(out["out"][:2]).all() and out["out"][2] == 3.0
    cond = np.array([True, False, True])
    out = jax_run("nx.where", {"cond": cond, "if_true": np.arange(3), "if_false": -np.arange(3)})
    np.testing.assert_array_equal(out["out"], [0, -1, 2])
    a, b = np.array([-1, 12, 2 ** 63 - 1]), np.array([5, 10, -2 ** 63])
    np.testing.assert_array_equal(jax_run("nx.xor", {"a": a, "b": b})["out"], a ^ b)
    np.testing.assert_array_equal(jax_run("nx.and_", {"a": a, "b": b})["out"], a & b)


# ------------------------------------------------------------------ reductions, scans, sort


def test_reductions_keepdims_and_arg_extremes():
    x = rng(3).uniform(-2, 2, (3, 4, 5))
    out = jax_run("nx.reduce_sum", {"x": x}, {"axes": [0, 2], "keepdims": True})["out"]
    np.testing.assert_allclose(out, x.sum(axis=(0, 2), keepdims=True), rtol=1e-14)
    out = jax_run("nx.reduce_min", {"x": x}, {"axes": [1]})["out"]
    np.testing.assert_array_equal(out, x.min(axis=1))
    y = np.array([[1.0, NAN, 3.0, NAN], [2.0, 5.0, 5.0, 1.0]])
    np.testing.assert_array_equal(jax_run("nx.argmax", {"x": y}, {"axis": 1})["out"], [1, 1])
    out = jax_run("nx.argmin", {"x": y}, {"axis": 1, "keepdims": True})["out"]
    np.testing.assert_array_equal(out, [[1], [3]])


def test_scans_against_numpy():
    x = rng(4).integers(-3, 4, (4, 3))
    for op, expect in [("Sum", np.cumsum(x, axis=0)), ("Prod", np.cumprod(x, axis=0)),
                       ("Max", np.maximum.accumulate(x, axis=0)),
                       ("Min", np.minimum.accumulate(x, axis=0))]:
        out = jax_run("nx.associative_scan", {"x": x}, {"axis": 0, "op": op})["out"]
        np.testing.assert_array_equal(out, expect)
    out = jax_run("nx.associative_scan", {"x": np.array([1.0, NAN, 5.0])},
                  {"axis": 0, "op": "Max"})["out"]
    assert out[0] == 1.0 and np.isnan(out[1:]).all()


def test_ascending_sort_is_stable_with_nan_last():
    x = np.array([[2.0, NAN, -1.0, 2.0, -0.0, 0.0]])
    out = jax_run("nx.sort", {"x": x}, {"axis": 1})["out"]
    np.testing.assert_array_equal(out[0, :5], [-1.0, -0.0, 0.0, 2.0, 2.0])
    assert np.isnan(out[0, 5])
    order = jax_run("nx.argsort", {"x": x}, {"axis": 1})["out"]
    np.testing.assert_array_equal(order, np.argsort(x, axis=1, kind="stable"))


# --------------------------------------------------------------------------- movement


def test_movement_against_numpy():
    t = rng(5).normal(size=(2, 3, 4))
    np.testing.assert_array_equal(jax_run("nx.permute", {"t": t}, {"axes": [2, 0, 1]})["out"],
                                  t.transpose(2, 0, 1))
    np.testing.assert_array_equal(jax_run("nx.reshape", {"t": t}, {"shape": [6, 4]})["out"],
                                  t.reshape(6, 4))
    np.testing.assert_array_equal(
        jax_run("nx.shrink", {"t": t}, {"ranges": [1, 2, 0, 3, 1, 3]})["out"], t[1:2, 0:3, 1:3])
    np.testing.assert_array_equal(
        jax_run("nx.flip", {"t": t}, {"axes": [True, False, True]})["out"], t[::-1, :, ::-1])
    m = np.arange(6).reshape(2, 3)
    out = jax_run("nx.pad", {"t": m, "fill_value": np.array(-1)}, {"padding": [1, 0, 0, 2]})
    np.testing.assert_array_equal(out["out"], np.pad(m, ((1, 0), (0, 2)), constant_values=-1))
    out = jax_run("nx.expand", {"t": np.array([[1.0], [2.0]])}, {"shape": [2, 3]})["out"]
    np.testing.assert_array_equal(out, [[1.0] * 3, [2.0] * 3])
    out = jax_run("nx.cat", {"tensors": [m, m * 10]}, {"axis": 1})["out"]
    np.testing.assert_array_equal(out, np.concatenate([m, m * 10], axis=1))
    np.testing.assert_array_equal(jax_run("nx.to_host", {"t": t})["buf"], t.ravel())
    out = jax_run("nx.full", {"value": np.array(2.5)}, {"shape": [2, 1]})["out"]
    np.testing.assert_array_equal(out, [[2.5], [2.5]])


def test_cast_truncates_and_saturates():
    x = np.array([2.7, -2.7, INF, -INF, 0.0])
    out = jax_run("nx.cast", {"x": x}, generics=("int",))["out"]
    assert out.tolist() == [2, -2, 2 ** 63 - 1, -2 ** 63, 0] and out.dtype == np.int64
    out = jax_run("nx.cast", {"x": np.array([NAN, 0.0, -0.0, 0.5])}, generics=("bool",))["out"]
    assert out.tolist() == [True, False, False, True]


def test_gather_with_smaller_extents_and_scatter_order():
    data = rng(6).normal(size=(3, 4, 2))
    indices = np.array([[[3], [0], [1]], [[2], [2], [0]]])  # [2, 3, 1]: smaller off axis 1
    out = jax_run("nx.gather", {"data": data, "indices": indices}, {"axis": 1})["out"]
    expect = np.empty(indices.shape)
    for i, j, k in np.ndindex(indices.shape):
        expect[i, j, k] = data[i, indices[i, j, k], k]
    np.testing.assert_array_equal(out, expect)
    template = np.zeros((2, 4))
    idx = np.array([[1, 1, 3], [0, 2, 0]])
    upd = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = jax_run("nx.scatter", {"template": template, "indices": idx, "updates": upd},
                  {"axis": 1, "mode": "Set"})["out"]
    np.testing.assert_array_equal(out, [[0.0, 2.0, 0.0, 3.0], [6.0, 0.0, 5.0, 0.0]])
    out = jax_run("nx.scatter", {"template": template, "indices": idx, "updates": upd},
                  {"axis": 1, "mode": "Add"})["out"]
    np.testing.assert_array_equal(out, [[0.0, 3.0, 0.0, 3.0], [10.0, 0.0, 5.0, 0.0]])


def _unfold_reference(t, kernel, stride, dilation, padding):
    """im2col of the last len(kernel) axes by loops (NumPy), taps and windows row-major."""
    k = len(kernel)
    lead, n = t.shape[:t.ndim - k], t.shape[t.ndim - k:]
    before, after = padding[::2], padding[1::2]
    o = [(n[i] + before[i] + after[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
         for i in range(k)]
    out = np.zeros(lead + (math.prod(kernel), math.prod(o)), dtype=t.dtype)
    for li in np.ndindex(*lead):
        for ci, tap in enumerate(np.ndindex(*kernel)):
            for oi, window in enumerate(np.ndindex(*o)):
                pos = [window[i] * stride[i] + tap[i] * dilation[i] - before[i]
                       for i in range(k)]
                if all(0 <= p < n[i] for i, p in enumerate(pos)):
                    out[li + (ci, oi)] = t[li + tuple(pos)]
    return out


def test_unfold_and_fold_against_loops():
    attrs = {"kernel_size": [3, 2], "stride": [2, 1], "dilation": [1, 2],
             "padding": [1, 1, 0, 2]}
    t = rng(7).normal(size=(2, 5, 4))
    out = jax_run("nx.unfold", {"t": t}, attrs)["out"]
    expect = _unfold_reference(t, [3, 2], [2, 1], [1, 2], [1, 1, 0, 2])
    np.testing.assert_array_equal(out, expect)
    ints = np.arange(10).reshape(2, 5)
    out = jax_run("nx.unfold", {"t": ints}, {"kernel_size": [2], "stride": [2],
                                             "dilation": [1], "padding": [0, 1]})["out"]
    np.testing.assert_array_equal(out, _unfold_reference(ints, [2], [2], [1], [0, 1]))
    # fold is unfold's adjoint: <unfold(x), y> = <x, fold(y)>
    y = rng(8).normal(size=expect.shape)
    folded = jax_run("nx.fold", {"t": y}, dict(attrs, output_size=[5, 4]))["out"]
    np.testing.assert_allclose(np.sum(expect * y), np.sum(t * folded), rtol=1e-12)


def test_threefry_known_answers_of_random123():
    # Random123 kat_vectors, threefry2x32_20: (key, counter) -> result words
    words = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]

    def signed(w):
        return w - 2 ** 32 if w >= 2 ** 31 else w
    key = np.array([[signed(w) for w in k] for k, _, _ in words])
    counter = np.array([[signed(w) for w in c] for _, c, _ in words])
    out = jax_run("nx.threefry", {"key": key, "counter": counter})["out"]
    assert out.tolist() == [[signed(w) for w in r] for _, _, r in words]


# --------------------------------------------------------------------------- linear algebra, FFT


def test_matmul_broadcasts_batches_and_fft_family():
    a, b = rng(9).normal(size=(2, 1, 3, 4)), rng(10).normal(size=(5, 4, 2))
    np.testing.assert_allclose(jax_run("nx.matmul", {"a": a, "b": b})["out"], a @ b,
                               rtol=1e-13)
    z = rng(11).normal(size=(4, 5, 2))
    out = jax_run("nx.fft", {"t": z}, {"axes": [0, 1]})["out"]
    expect = np.fft.fftn(z[..., 0] + 1j * z[..., 1])
    np.testing.assert_allclose(out[..., 0] + 1j * out[..., 1], expect, atol=1e-13)
    spectrum = np.array([[1.0, 5.0], [2.0, 1.0], [3.0, 7.0]])  # imaginary parts at 0, n/2
    out = jax_run("nx.irfft", {"t": spectrum}, {"axes": [0]})["out"]
    # by hand, X0 = 1, X1 = 2 + i, X2 = 3 (the imaginary parts 5, 7 dropped), n = 4:
    # x[j] = (X0 + 2 Re(X1 i^j) + X2 (-1)^j) / 4 = 8/4, -4/4, 0/4, 0/4
    np.testing.assert_allclose(out, [2.0, -1.0, 0.0, 0.0], atol=1e-15)


def test_factorisations_reconstruct_with_canonical_signs():
    a = np.array([[4.0, 2.0, 0.6], [2.0, 5.0, 1.0], [0.6, 1.0, 3.0]])
    low = jax_run("nx.cholesky", {"t": a})["out"]
    np.testing.assert_allclose(low @ low.T, a, rtol=1e-14)
    assert np.all(np.triu(low, 1) == 0)
    m = rng(12).normal(size=(4, 3))
    q, r = (jax_run("nx.qr", {"t": m}, {"reduced": True})[k] for k in ("q", "r"))
    np.testing.assert_allclose(q @ r, m, atol=1e-14)
    assert np.all(np.diagonal(r) >= 0)
    u, s, vh = (jax_run("nx.svd", {"t": m})[k] for k in ("u", "s", "vh"))
    np.testing.assert_allclose((u * s) @ vh, m, atol=1e-14)
    np.testing.assert_allclose(s, np.linalg.svd(m, compute_uv=False), rtol=1e-14)
    w, v = (jax_run("nx.eigh", {"t": a})[k] for k in ("w", "v"))
    np.testing.assert_allclose(a @ v, v * w, atol=1e-13)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues -i, +i (ascending imag)
    w = jax_run("nx.eig", {"t": rotation}, {"vectors": False})["w"]
    np.testing.assert_allclose(w, [[0.0, -1.0], [0.0, 1.0]], atol=1e-15)
    tri = np.array([[2.0, 0.0], [1.0, 4.0]])
    x = jax_run("nx.triangular_solve", {"a": tri, "b": np.array([[2.0], [9.0]])})["x"]
    np.testing.assert_allclose(x, [[1.0], [2.0]], rtol=1e-15)  # 2x = 2, x + 4y = 9


# --------------------------------------------------------------------------- the harness

HARNESS_OUTCOMES = {
    "nx.add/special": ("pass", None),
    "nx.add/matrix@view-flipped": ("pass", None),
    "nx.where/real@view-padded": ("pass", None),
    "nx.reduce_sum/repeated_rows@view-broadcast": ("pass", None),
    "nx.matmul/empty_inner@view-zero-size": ("pass", None),
    "nx.sort/ascending_axis1@view-permuted": ("pass", None),
    "nx.unfold/k2x2@view-shrunk": ("pass", None),
    "nx.threefry/known_answers": ("pass", None),
    "nx.eig/rotation": ("pass", None),
    "nx.atan2/quadrants_and_signed_zeros": ("pass", None),
    "nx.add/shape_mismatch": ("pass", None),           # an error case JAX rejects
    "nx.sin/int_input": ("pass", None),                # lax.sin takes no int
    "nx.sort/descending_ties_and_nan": ("fail", "mismatch"),
    "nx.argsort/descending_special_nan_last": ("fail", "mismatch"),
    "nx.pow/int_exact_and_negative_exponents": ("fail", "mismatch"),
    "nx.div/int_by_zero": ("fail", "accepted-invalid"),
    "nx.shrink/stop_beyond": ("fail", "accepted-invalid"),
    "nx.scatter/unknown_mode": ("skip", None),
    # typed cases (docs/nx.md "Typed evaluation"): run in their Nx types
    "nx.add/s8_wraps": ("pass", None),
    "nx.scan_sum/u8_wraps": ("pass", None),
    "nx.cast/f32_to_s8_saturates": ("pass", None),
    "nx.exp/f16_overflow": ("pass", None),
    "nx.matmul/bf16": ("pass", None),
    "nx.mul/bf16_subnormals": ("fail", "mismatch"),          # XLA flushes them to zero
    "nx.cast/f64_to_bf16_rounds": ("fail", "mismatch"),      # XLA rounds through float32
}


@pytest.mark.parametrize("case_id", sorted(HARNESS_OUTCOMES))
def test_harness_outcomes_on_golden_cases(case_id):
    outcome = check_case(JaxBackend(), load_case(module_suite("nx") / case_id))
    assert (outcome.status, outcome.reason) == HARNESS_OUTCOMES[case_id], outcome.explanation


def test_jit_backend_rejects_the_slice_eager_dispatch_clamps():
    case = load_case(module_suite("nx") / "nx.shrink/stop_beyond")
    outcome = check_case(JaxJitBackend(), case)
    assert (outcome.status, outcome.reason) == ("pass", None), outcome.explanation
    assert "limit_indices" in outcome.explanation
    out = jax_run("nx.unfold", {"t": np.arange(12.0).reshape(2, 2, 3)},
                  {"kernel_size": [2, 2], "stride": [1, 1], "dilation": [1, 1],
                   "padding": [0, 0, 0, 0]}, backend=JaxJitBackend)["out"]
    np.testing.assert_array_equal(out[1], [[6.0, 7.0], [7.0, 8.0], [9.0, 10.0], [10.0, 11.0]])


def test_typed_cases_reach_jax_in_their_types():
    case = load_case(module_suite("nx") / "nx.add/s8_wraps")
    out = JaxBackend().prepare(case).run(case.inputs)["out"]
    assert out.dtype == np.int8 and out.tolist() == [-56, 56, -128, 127]
    case = load_case(module_suite("nx") / "nx.add/bf16_random")
    assert str(JaxBackend().prepare(case).run(case.inputs)["out"].dtype) == "bfloat16"


def test_diff_xla_bfloat16_has_no_subnormals_and_rounds_float64_through_float32():
    """XLA (CPU) flushes bfloat16 subnormals to zero and converts float64 -> bfloat16 via
    float32; the nx module's bfloat16 keeps subnormals and rounds once (docs/nx.md)."""
    tiny = {"a": np.array([2.0 ** -70]), "b": np.array([2.0 ** -60])}  # 2^-130: subnormal
    types = {"a": "bf16", "b": "bf16", "out": "bf16"}
    case = Case("unit/nx.mul", Path("."), {"operator": "nx.mul", "attributes": {},
                                          "generics": [], "types": types})
    assert float(JaxBackend().prepare(case).run(tiny)["out"][0]) == 0.0
    assert api.evaluate("nx.mul", inputs=tiny, nx_types=types).outputs["out"][0] == 2.0 ** -130
    x = {"x": np.array([1 + 2.0 ** -8 + 2.0 ** -52])}  # just above a bfloat16 tie
    case = Case("unit/nx.cast", Path("."), {"operator": "nx.cast", "attributes": {},
                                           "generics": ["real"], "types": {"out": "bf16"}})
    assert float(JaxBackend().prepare(case).run(x)["out"][0]) == 1.0
    assert api.evaluate("nx.cast", inputs=x, generics=("real",), nx_types={"out": "bf16"}
                        ).outputs["out"][0] == 1 + 2.0 ** -7


def test_layout_variants_reach_jax_as_strided_views():
    case = load_case(module_suite("nx") / "nx.add/matrix@view-flipped")
    inputs = case.layout_inputs
    assert any(v.strides[0] < 0 for v in inputs.values())  # a real negative-stride view
    out = JaxBackend().prepare(case).run(inputs)["out"]
    np.testing.assert_array_equal(out, inputs["a"] + inputs["b"])


# --------------------------------------------------------------------------- differences
# One minimal reproduction per row of the differences table: what JAX computes and what the
# contract (nx module) defines, both against values worked out by hand.


def test_diff_descending_sort_puts_nan_first():
    """nx.sort / argsort, descending: JAX orders NaN first (the reverse of its ascending
    order, ties still in ascending index order); the contract puts NaN last in both
    directions."""
    x = np.array([2.0, NAN, 5.0, 2.0])
    attrs = {"axis": 0, "descending": True}
    got = jax_run("nx.sort", {"x": x}, attrs)["out"]
    assert np.isnan(got[0]) and got[1:].tolist() == [5.0, 2.0, 2.0]
    assert jax_run("nx.argsort", {"x": x}, attrs)["out"].tolist() == [1, 2, 0, 3]
    spec = spec_run("nx.sort", {"x": x}, attrs)["out"]
    assert spec[:3].tolist() == [5.0, 2.0, 2.0] and np.isnan(spec[3])
    assert spec_run("nx.argsort", {"x": x}, attrs)["out"].tolist() == [2, 0, 3, 1]


def test_diff_integer_pow_with_a_negative_exponent():
    """nx.pow on ints, exponent < 0: jnp.power squares and multiplies over the exponent's
    low 6 bits (documented: "implementation-defined" for an array exponent), so b^-1 is
    b^63 wrapped to int64; the contract's choice truncates 1 / b^-e toward zero."""
    base, exponent = np.array([2, 3, 1, -1, 2]), np.array([-1, -1, -5, -3, 3])
    got = jax_run("nx.pow", {"base": base, "exponent": exponent})["out"]

    def wrapped(v):  # int64 two's complement of a Python int
        v %= 2 ** 64
        return v - 2 ** 64 if v >= 2 ** 63 else v
    assert got.tolist() == [wrapped(2 ** 63), wrapped(3 ** 63), 1, -1, 8]
    assert got[0] == -2 ** 63
    spec = spec_run("nx.pow", {"base": base, "exponent": exponent})["out"]
    assert spec.tolist() == [0, 0, 1, -1, 8]


def test_diff_unfold_and_fold_spread_non_finite_values():
    """nx.unfold / fold: lax.conv_general_dilated_patches (and its transpose) is a
    convolution with a one-hot kernel, so a NaN or inf in a window reaches every tap of
    that window as NaN (0 * inf, 0 * NaN); the contract copies / adds values (golden/nx:
    nx.unfold/special_values_stay_in_their_taps, nx.fold/special_values_add_where_they_land)."""
    attrs = {"kernel_size": [2], "stride": [1], "dilation": [1], "padding": [0, 0]}
    x = np.array([[1.0, NAN, 3.0, 4.0]])  # windows [1, nan], [nan, 3], [3, 4]
    got = jax_run("nx.unfold", {"t": x}, attrs)["out"][0]
    np.testing.assert_array_equal(got, [[NAN, NAN, 3.0], [NAN, NAN, 4.0]])
    np.testing.assert_array_equal(spec_run("nx.unfold", {"t": x}, attrs)["out"][0],
                                  [[1.0, NAN, 3.0], [NAN, 3.0, 4.0]])
    x = np.array([[1.0, INF, 3.0, 4.0]])
    got = jax_run("nx.unfold", {"t": x}, attrs)["out"][0]
    np.testing.assert_array_equal(got, [[NAN, INF, 3.0], [INF, NAN, 4.0]])
    # fold: output 1 = t[0, 1] + t[1, 0] = 2 + 4, output 2 = 3 + NaN
    t = np.array([[[1.0, 2.0, 3.0], [4.0, NAN, 6.0]]])
    fold = dict(attrs, output_size=[4])
    np.testing.assert_array_equal(jax_run("nx.fold", {"t": t}, fold)["out"],
                                  [[1.0, NAN, NAN, 6.0]])
    np.testing.assert_array_equal(spec_run("nx.fold", {"t": t}, fold)["out"],
                                  [[1.0, 6.0, NAN, 6.0]])


# Invalid invocations JAX computes (accepted-invalid): what JAX returns, by hand.
ACCEPTED = [
    ("nx.div", {"a": np.array([2, -3, 0]), "b": np.array([0, 0, 0])}, {}, (),
     {"out": np.array([-1, -1, -1])}),             # XLA: x / 0 = -1 for signed ints
    ("nx.mod_", {"a": np.array([2, -3]), "b": np.array([0, 0])}, {}, (),
     {"out": np.array([2, -3])}),                  # XLA: x % 0 = x
    ("nx.recip", {"x": np.array([0])}, {}, (), {"out": np.array([-1])}),
    ("nx.pow", {"base": np.array([0]), "exponent": np.array([-1])}, {}, (),
     {"out": np.array([0])}),
    ("nx.cast", {"x": np.array([NAN])}, {}, ("int",), {"out": np.array([0])}),
    ("nx.reduce_max", {"x": np.zeros((0, 2))}, {"axes": [0]}, (),
     {"out": np.array([-INF, -INF])}),             # XLA's identity of max
    ("nx.reduce_min", {"x": np.zeros((0, 1), dtype=np.int64)}, {"axes": [0]}, (),
     {"out": np.array([2 ** 63 - 1])}),
    ("nx.gather", {"data": np.array([[1.0, 2.0]]), "indices": np.array([[2, 0]])},
     {"axis": 1}, (), {"out": np.array([[NAN, 1.0]])}),  # take_along_axis fills NaN
    ("nx.pad", {"t": np.array([1.0, 2.0, 3.0]), "fill_value": np.array(0.0)},
     {"padding": [-1, 0]}, (), {"out": np.array([2.0, 3.0])}),  # negative pads crop
    ("nx.shrink", {"t": np.array([0.0, 1.0, 2.0, 3.0])}, {"ranges": [1, 5]}, (),
     {"out": np.array([0.0, 1.0, 2.0, 3.0])}),     # start clamped to extent - size = 0
    ("nx.rfft", {"t": np.array([1.0, 2.0])}, {"axes": []}, (),
     {"out": np.array([[1.0, 0.0], [2.0, 0.0]])}),  # no axes: the input as complex
    ("nx.irfft", {"t": np.array([[1.0, 2.0]])}, {"axes": [0]}, (),
     {"out": np.zeros(0)}),                        # 2 (1 - 1) = 0 output values
    ("nx.cholesky", {"t": np.array([[1.0, 2.0], [2.0, 1.0]])}, {}, (),
     {"out": np.array([[NAN, 0.0], [NAN, NAN]])}),  # not positive definite: NaN
    ("nx.threefry", {"key": np.array([2 ** 32, 0]), "counter": np.array([0, 0])}, {}, (),
     {"out": np.array([0x6B200159, 0x99BA4EFE - 2 ** 32])}),  # 2^32 wraps to the word 0
]


@pytest.mark.parametrize("operator, inputs, attributes, generics, expected", ACCEPTED,
                         ids=[a[0] for a in ACCEPTED])
def test_diff_jax_accepts_what_the_contract_rejects(operator, inputs, attributes, generics,
                                                     expected):
    """Each is an error in the nx module (refinterp raises); JAX computes a value."""
    got = jax_run(operator, inputs, attributes, generics)
    for name, value in expected.items():
        assert got[name].shape == value.shape
        np.testing.assert_array_equal(got[name], value)
    with pytest.raises(api.Error):
        spec_run(operator, inputs, attributes, generics)


def test_diff_eager_slice_clamps_the_start_where_jit_rejects():
    """nx.shrink with stop > extent: eager `lax.slice` (no strides) runs as
    `dynamic_slice`, which clamps the start so that stop - start elements fit (ranges
    [1, 5) of 4 elements gives elements 0..3); under `jax.jit` the slice's shape rule
    raises. The contract rejects the invocation."""
    t = np.array([0.0, 1.0, 2.0, 3.0])
    attrs = {"ranges": [3, 5]}  # 2 elements from 3: clamped to start 2
    np.testing.assert_array_equal(jax_run("nx.shrink", {"t": t}, attrs)["out"], [2.0, 3.0])
    with pytest.raises(TypeError, match="limit_indices"):
        jax_run("nx.shrink", {"t": t}, attrs, backend=JaxJitBackend)
    with pytest.raises(api.Error):
        spec_run("nx.shrink", {"t": t}, attrs)


def test_diff_non_finite_unfold_also_under_jit():
    attrs = {"kernel_size": [2], "stride": [1], "dilation": [1], "padding": [0, 0]}
    got = jax_run("nx.unfold", {"t": np.array([[1.0, NAN, 3.0]])}, attrs,
                  backend=JaxJitBackend)["out"][0]
    # every window holds the NaN, so every tap is NaN; the contract: [[1, nan], [nan, 3]]
    np.testing.assert_array_equal(got, [[NAN, NAN], [NAN, NAN]])


def test_note_jax_defaults_symmetrise_and_leave_signs_free():
    """What the back end avoids by its arguments (docs: "Defaults the back end overrides"):
    jnp.linalg.cholesky / eigh average A and Aᵀ (symmetrize_input=True) where the contract
    reads the lower triangle, and jnp.linalg.qr leaves LAPACK's signs (R[0, 0] = -5)."""
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)  # as JaxBackend.prepare does
    a = np.array([[4.0, 100.0], [2.0, 5.0]])  # lower triangle: [[4, 2], [2, 5]]
    assert np.isnan(np.asarray(jnp.linalg.cholesky(a))[1, 1])  # (100 + 2) / 2 = 51: not PD
    np.testing.assert_allclose(jax_run("nx.cholesky", {"t": a})["out"], [[2.0, 0.0],
                                                                         [1.0, 2.0]])
    b = np.array([[2.0, 100.0], [1.0, 2.0]])  # lower triangle: eigenvalues 1, 3
    np.testing.assert_allclose(np.asarray(jnp.linalg.eigh(b)[0]), [-48.5, 52.5])
    np.testing.assert_allclose(jax_run("nx.eigh", {"t": b}, {"vectors": False})["w"],
                               [1.0, 3.0])
    q, r = jnp.linalg.qr(np.array([[3.0], [4.0]]))
    np.testing.assert_allclose(np.asarray(r), [[-5.0]])
    np.testing.assert_allclose(np.asarray(q), [[-0.6], [-0.8]])
    out = jax_run("nx.qr", {"t": np.array([[3.0], [4.0]])})
    np.testing.assert_allclose(out["r"], [[5.0]])
    np.testing.assert_allclose(out["q"], [[0.6], [0.8]])
    # jnp.round rounds halves to even; the back end asks lax.round for AWAY_FROM_ZERO
    assert np.asarray(jnp.round(np.array([2.5, -0.5]))).tolist() == [2.0, -0.0]
    assert jax_run("nx.round", {"x": np.array([2.5, -0.5])})["out"].tolist() == [3.0, -1.0]


def test_note_signed_zeros_differ_invisibly():
    """lax.max / lax.min order -0.0 below 0.0 and lax.sign keeps the zero's sign, where the
    contract gives `a` for equal operands and +0.0 for sign(-0.0); the golden comparison
    takes -0.0 and 0.0 as one value (docs/golden.md), so no case fails on it."""
    a, b = np.array([-0.0, 0.0]), np.array([0.0, -0.0])
    assert np.signbit(jax_run("nx.max", {"a": a, "b": b})["out"]).tolist() == [False, False]
    assert np.signbit(jax_run("nx.min", {"a": a, "b": b})["out"]).tolist() == [True, True]
    assert np.signbit(spec_run("nx.max", {"a": a, "b": b})["out"]).tolist() == [True, False]
    assert np.signbit(jax_run("nx.sign", {"x": np.array([-0.0])})["out"]).tolist() == [True]
    assert np.signbit(spec_run("nx.sign", {"x": np.array([-0.0])})["out"]).tolist() == [False]
