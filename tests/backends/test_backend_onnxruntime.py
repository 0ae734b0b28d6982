"""The ONNX Runtime back end (refinterp/backends/onnxruntime.py, docs/backends.md).

Three parts: translations checked on small inputs against NumPy written here; the harness run
in-process on a selection of golden cases with the outcomes docs/backends.md documents; and one
test per documented difference, with the values ONNX Runtime computes and the values SkriptND
defines both worked out by hand (never taken from refinterp).
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from refinterp.backends.onnxruntime import OnnxRuntimeBackend, table  # noqa: E402
from refinterp.harness import BackendSpec, load_suite, run_suite  # noqa: E402
from refinterp.harness.backends import Unsupported  # noqa: E402
from testsupport.paths import REPO_ROOT

ROOT = REPO_ROOT
SUITE = ROOT / "golden"


def case(operator: str, inputs: dict[str, Any], attributes: dict | None = None,
         outputs: dict[str, str] | None = None, generics: tuple = (),
         error: dict | None = None) -> SimpleNamespace:
    """A stand-in for a golden `Case`: what the back end reads of one."""
    manifest = {"generics": list(generics),
                "outputs": {k: {"dtype": d} for k, d in (outputs or {}).items()}}
    return SimpleNamespace(id=f"{operator}/test", operator=operator,
                           attributes=attributes or {}, inputs=inputs, error=error,
                           manifest=manifest)


def run(operator: str, inputs: dict[str, Any], attributes: dict | None = None,
        outputs: dict[str, str] | None = None, **extra: Any) -> dict[str, np.ndarray]:
    """The outputs ONNX Runtime gives for one invocation."""
    runner = OnnxRuntimeBackend().prepare(case(operator, inputs, attributes, outputs, **extra))
    return runner.run(inputs)


def reals(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


# ----------------------------------------------------------------------------- translations


def test_the_table_maps_most_stdlib_operators() -> None:
    mapped = table()
    assert len(mapped) >= 140
    assert {"math.add", "nn.conv", "nn.deconv", "image.resize", "algo.top_k",
            "nn.lstm", "layout.scatter_nd"} <= set(mapped)


def test_conv_with_asymmetric_padding_and_stride() -> None:
    x = np.arange(1 * 1 * 4 * 5, dtype=np.float64).reshape(1, 1, 4, 5)
    w = np.array([[[[1.0, 0.0], [0.0, -1.0]]]])
    padding = [1, 0, 0, 1]  # before (h, w), after (h, w)
    got = run("nn.conv", {"input": x, "filter": w},
              {"padding": padding, "stride": [2, 2]}, {"output": "real"})["output"]
    padded = np.pad(x[0, 0], ((1, 0), (0, 1)))
    oh, ow = (padded.shape[0] - 2) // 2 + 1, (padded.shape[1] - 2) // 2 + 1
    want = np.array([[padded[2 * i, 2 * j] - padded[2 * i + 1, 2 * j + 1] for j in range(ow)]
                     for i in range(oh)])
    np.testing.assert_array_equal(got[0, 0], want)


def test_max_pool_automatic_padding_is_the_stdlib_formula() -> None:
    # x = 6, size 3, stride 2: total ((6 / 2) - 1) * 2 + 3 - 6 = 1, UPPER: 0 before, 1 after;
    # output (6 + 1 - 3) / 2 + 1 = 3 (ONNX SAME_UPPER would also give 3 but pad 1 before here
    # only when the total is odd the other way: the explicit pads must be 0 / 1)
    x = reals(5, 1, 2, 8, 3, 9).reshape(1, 1, 6)
    got = run("nn.max_pool", {"input": x}, {"size": [3], "stride": [2]},
              {"output": "real"})["output"]
    np.testing.assert_array_equal(got.ravel(), [5, 8, 9])


def test_sum_pool_is_an_exact_window_sum_with_ceil_mode() -> None:
    x = np.arange(1, 9, dtype=np.float64).reshape(1, 1, 8)
    # size 3, stride 2, ceil_mode, no padding: (8 - 3) \ 2 + 1 = 4 windows [0:3], [2:5],
    # [4:7], [6:9] (the last one partly outside: SkriptND skips the missing cell)
    got = run("nn.sum_pool", {"input": x}, {"size": [3], "stride": [2], "ceil_mode": True,
                                           "padding": [0, 0]}, {"output": "real"})["output"]
    np.testing.assert_array_equal(got.ravel(), [1 + 2 + 3, 3 + 4 + 5, 5 + 6 + 7, 7 + 8])


def test_transpose_perm_holds_absolute_axes() -> None:
    x = np.arange(24).reshape(2, 3, 4)
    got = run("layout.transpose", {"input": x}, {"axis": 1, "perm": [2, 1]},
              {"output": "int"})["output"]
    np.testing.assert_array_equal(got, np.transpose(x, (0, 2, 1)))


def test_stack_negative_axis_counts_in_the_item_rank() -> None:
    a, b = np.arange(6).reshape(2, 3), np.arange(6, 12).reshape(2, 3)
    got = run("layout.stack", {"inputs": [a, b]}, {"axis": -1}, {"output": "int"})["output"]
    np.testing.assert_array_equal(got, np.stack([a, b], axis=1))  # -1 + rank 2 = 1


def test_pad_reflect_and_replicate() -> None:
    x = reals(1, 2, 3)
    reflect = run("layout.pad", {"input": x}, {"padding": [2, 1], "method": "REFLECT"},
                  {"output": "real"})["output"]
    np.testing.assert_array_equal(reflect, [3, 2, 1, 2, 3, 2])
    edge = run("layout.pad", {"input": x}, {"padding": [1, 2], "method": "REPLICATE"},
               {"output": "real"})["output"]
    np.testing.assert_array_equal(edge, [1, 1, 2, 3, 3, 3])


def test_alignment_reshapes_the_operand() -> None:
    x, y = reals(1, 2, 3), np.ones((2, 3, 4))
    got = run("math.sub", {"x": x, "y": y}, {"lhs_align": 1}, {"z": "real"})["z"]
    np.testing.assert_array_equal(got, x[None, :, None] - y)


def test_top_k_smallest_along_the_last_axis() -> None:
    x = reals(4, 1, 3, 2).reshape(1, 4)
    out = run("algo.top_k", {"input": x}, {"k": 2, "axis": -1, "largest": False},
              {"values": "real", "indices": "int"})
    np.testing.assert_array_equal(out["values"], [[1, 2]])
    np.testing.assert_array_equal(out["indices"], [[1, 3]])


def test_nearest_upsample_repeats_cells() -> None:
    x = reals(1, 2, 3)
    got = run("image.nearest_upsample", {"input": x}, {"factor": [2]},
              {"output": "real"})["output"]
    np.testing.assert_array_equal(got, [1, 1, 2, 2, 3, 3])


def test_lstm_one_step_matches_the_cell_equations() -> None:
    rng = np.random.default_rng(7)
    n, c = 2, 3
    X = rng.standard_normal((1, 1, c))
    W, R = rng.standard_normal((4 * n, c)), rng.standard_normal((4 * n, n))
    B, h0, c0 = rng.standard_normal(4 * n), rng.standard_normal((1, n)), \
        rng.standard_normal((1, n))
    out = run("nn.lstm", {"X": X, "W": W, "R": R, "B": B, "h0": h0, "c0": c0}, {},
              {"Y": "real", "hN": "real", "cN": "real"})
    s = X[0] @ W.T + B + h0 @ R.T
    i, f, g, o = np.split(s, 4, axis=1)  # SkriptND's gate order

    def sigmoid(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    c1 = sigmoid(f) * c0 + sigmoid(i) * np.tanh(g)
    h1 = sigmoid(o) * np.tanh(c1)
    np.testing.assert_allclose(out["cN"], c1, rtol=1e-5)  # LSTM runs in float32 (no kernel)
    np.testing.assert_allclose(out["hN"], h1, rtol=1e-5)
    np.testing.assert_allclose(out["Y"][0], h1, rtol=1e-5)


def test_float64_when_the_kernel_exists_else_float32() -> None:
    x = reals(0.25, 0.5)
    add = OnnxRuntimeBackend().prepare(case("math.add", {"x": x, "y": x}, outputs={"z": "real"}))
    assert add.dtype == "float64"
    tan = OnnxRuntimeBackend().prepare(case("math.tan", {"x": x}, outputs={"y": "real"}))
    assert tan.dtype == "float32"
    np.testing.assert_allclose(tan.run({})["y"], np.tan(x), rtol=1e-6)


def test_unexpressible_attributes_are_unsupported() -> None:
    with pytest.raises(Unsupported, match="SYMMETRIC"):
        OnnxRuntimeBackend().prepare(case("layout.pad", {"input": reals(1, 2)},
                                          {"padding": [1, 1], "method": "SYMMETRIC"}))
    with pytest.raises(Unsupported, match="several axes"):
        OnnxRuntimeBackend().prepare(case("nn.softmax", {"input": np.ones((2, 3))},
                                          {"axes": [0, 1]}))
    with pytest.raises(Unsupported, match="model cases"):
        OnnxRuntimeBackend().prepare(case(None, {}))


def test_error_cases_rejected_or_reported_as_accepted() -> None:
    error = {"code": "E0307", "message": "", "pattern": ""}
    x = np.ones((1, 1, 4, 4))
    with pytest.raises(Exception) as raised:  # ONNX Runtime refuses a zero stride
        OnnxRuntimeBackend().prepare(case("nn.max_pool", {"input": x},
                                          {"size": [2, 2], "stride": [2, 0]}, error=error)).run({})
    assert not isinstance(raised.value, Unsupported)
    assert "strides must only contain positive values" in str(raised.value)
    accepted = OnnxRuntimeBackend().prepare(case("nn.relu", {"x": reals(-1, 1)}, {"alpha": 1.5},
                                                 error=error))
    with pytest.raises(Unsupported, match="accepts this invocation"):
        accepted.run({})


# ----------------------------------------------------------------------------- the harness

# case id -> (status, reason) as docs/backends.md reports them
DOCUMENTED = {
    "math.add/special": ("pass", None),
    "nn.conv/nchw_stride2_dilation2_asymmetric_padding": ("pass", None),
    "nn.avg_pool/ceil_mode": ("pass", None),
    "image.nearest_resize/up_symmetric_round_prefer_ceil": ("pass", None),
    "math.div/int_by_zero": ("pass", None),  # an error case ONNX Runtime rejects
    "math.round/halves_away_from_zero": ("fail", "mismatch"),
    "math.div/int_rounding": ("fail", "mismatch"),
    "layout.nonzero/rank0_nonzero": ("fail", "shape"),
    "math.any_reduce/empty_reduced_axis": ("fail", "crash"),
    "nn.local_response_norm/even_size": ("fail", "crash"),
    "layout.shuffle/groups3": ("skip", None),
    "nn.relu/alpha_too_large": ("skip", None),  # accepted by ONNX Runtime: reported
}


def test_the_harness_gives_the_documented_outcomes() -> None:
    pattern = "^(" + "|".join(k.replace(".", r"\.") for k in DOCUMENTED) + ")$"
    results = {r.id: r for r in run_suite(SUITE, BackendSpec(name="onnxruntime"),
                                          include=pattern)}
    assert set(results) == set(DOCUMENTED)
    for key, (status, reason) in DOCUMENTED.items():
        assert (results[key].status, results[key].reason) == (status, reason), key
    assert "Matches profile khronos" in results["math.div/int_rounding"].explanation


def test_the_selection_exists_in_the_suite() -> None:
    assert set(DOCUMENTED) <= {c.id for c in load_suite(SUITE)}


# ----------------------------------------------------------------------------- differences
# Each test: the input, what ONNX Runtime gives (worked out by hand from the ONNX
# definition), what SkriptND defines (worked out by hand from the stdlib), and that they
# differ. docs/backends.md, "Differences", names the test of each row.


def test_round_halves() -> None:
    x = reals(-2.5, -0.5, 0.5, 1.5, 2.5)
    got = run("math.round", {"x": x}, outputs={"y": "real"})["y"]
    onnx_half_to_even = reals(-2, -0.0, 0, 2, 2)
    skriptnd_half_away = reals(-3, -1, 1, 2, 3)
    np.testing.assert_array_equal(got, onnx_half_to_even)
    assert not np.array_equal(got, skriptnd_half_away)


def test_int_division_truncates() -> None:
    x, y = np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])
    got = run("math.div", {"x": x, "y": y}, outputs={"z": "int"})["z"]
    np.testing.assert_array_equal(got, [3, -3, -3, 3])  # toward zero (C)
    skriptnd_floor = [3, -4, -4, 3]
    assert not np.array_equal(got, skriptnd_floor)


def test_real_modulo_is_fmod() -> None:
    x, y = reals(-7.5, 7.5, -7.5), reals(2, -2, -2)
    got = run("math.mod", {"x": x, "y": y}, outputs={"z": "real"})["z"]
    np.testing.assert_array_equal(got, [-1.5, 1.5, -1.5])  # sign of x
    skriptnd_floored = [0.5, -0.5, -1.5]  # x - y * floor(x / y): sign of y
    assert not np.array_equal(got, skriptnd_floored)


def test_sign_of_nan() -> None:
    got = run("math.sign", {"x": reals(math.nan, -3, 0)}, outputs={"y": "real"})["y"]
    assert np.isnan(got[0]) and list(got[1:]) == [-1, 0]
    skriptnd = reals(0, -1, 0)  # x > 0 ? 1 : x < 0 ? -1 : 0, comparisons with NaN false
    assert not np.array_equal(got, skriptnd, equal_nan=True)


def test_clamp_min_above_max() -> None:
    # scalar bounds -> Clip. A NaN minimum is ignored by ONNX Runtime's Clip, as by SkriptND
    # (x < nan is false): [1, -5, 7] clamped to [nan, 2] is [1, -5, 2] in both
    nan_min = run("math.clamp", {"x": reals(1.0, -5.0, 7.0), "a": reals(math.nan)[0],
                                 "b": reals(2.0)[0]}, outputs={"y": "real"})["y"]
    np.testing.assert_array_equal(nan_min, [1.0, -5.0, 2.0])
    # min 3 above max 2: Clip gives the maximum (the ONNX doc: "When 'min' is greater than
    # 'max', the clip operator sets all the 'input' values to the value of 'max'")
    crossed = run("math.clamp", {"x": reals(1.0, 5.0), "a": reals(3.0)[0], "b": reals(2.0)[0]},
                  outputs={"y": "real"})["y"]
    np.testing.assert_array_equal(crossed, [2.0, 2.0])
    skriptnd = [3.0, 2.0]  # x < a ? a : x > b ? b : x: 1 < 3 -> 3; 5 > 2 -> 2
    assert not np.array_equal(crossed, skriptnd)


def test_clamp_with_tensor_bounds_propagates_nan() -> None:
    got = run("math.clamp", {"x": reals(1.0, math.inf), "a": reals(math.nan, math.inf),
                             "b": reals(2.0, -math.inf)}, outputs={"y": "real"})["y"]
    # Min(Max(x, a), b): max(1, nan) = nan; max(inf, inf) = inf, min(inf, -inf) = -inf
    assert np.isnan(got[0]) and got[1] == -math.inf
    skriptnd = reals(1.0, -math.inf)  # inf < inf false, inf > -inf -> b = -inf
    assert not np.array_equal(got, skriptnd, equal_nan=True)


def test_mean_of_an_empty_axis() -> None:
    got = run("math.mean_reduce", {"input": np.zeros((3, 0))}, {"axes": [1]},
              {"output": "real"})["output"]
    np.testing.assert_array_equal(got, np.zeros((3, 1)))  # ONNX Runtime: 0
    # SkriptND: sum (0.0) / count (0) = 0 / 0 = NaN
    assert not np.isnan(got).any()


def test_boolean_reduction_of_an_empty_axis_fails() -> None:
    runner = OnnxRuntimeBackend().prepare(case("math.any_reduce",
                                               {"input": np.zeros((3, 0), bool)},
                                               {"axes": [1]}, {"output": "bool"}))
    # the ONNX doc: ReduceMax of an empty set is the type's minimum (False), SkriptND's any
    # of nothing is false too; ONNX Runtime raises instead
    with pytest.raises(Exception, match="empty set with bool"):
        runner.run({})


def test_nonzero_of_a_scalar() -> None:
    got = run("layout.nonzero", {"input": reals(5.0)[0]}, outputs={"index": "int"})["index"]
    assert got.shape == (1, 1)  # like NumPy's old 0-d behaviour
    # the ONNX doc and SkriptND: rank 0 has no coordinates, one nonzero -> shape (0, 1)
    assert got.shape != (0, 1)


def test_batch_norm_epsilon_is_a_float32_attribute() -> None:
    x, mean, var = reals(1.0, 2.0).reshape(1, 2), reals(0.0, 0.0), reals(0.5, 0.25)
    got = run("nn.batch_norm", {"input": x, "mean": mean, "variance": var},
              {"epsilon": 1e-3}, {"output": "real"})["output"]
    eps32 = float(np.float32(1e-3))  # 0.0010000000474974513
    np.testing.assert_array_equal(got, x / np.sqrt(var + eps32))
    skriptnd = x / np.sqrt(var + 1e-3)
    assert np.abs(got - skriptnd).max() > 1e-12


def test_gelu_tanh_float64_has_float32_accuracy() -> None:
    x = reals(-3.0, -1.0, 1.0, 2.0)
    got = run("nn.gelu", {"x": x}, {"approximate": "TANH"}, {"y": "real"})["y"]
    skriptnd = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    relative = np.abs(got - skriptnd) / np.abs(skriptnd)
    assert relative.max() > 1e-9  # far beyond 4 float64 ULPs (~1e-15)
    assert relative.max() < 1e-6


def test_sigmoid_float64_loses_relative_accuracy_for_negative_inputs() -> None:
    x = reals(-20.0)
    got = run("nn.sigmoid", {"x": x}, outputs={"y": "real"})["y"]
    exact = 1 / (1 + math.exp(20.0))  # 2.0611536181902037e-09, correctly rounded by NumPy
    assert abs(got[0] - exact) / exact > 1e-9
    assert abs(got[0] - exact) < 1e-15  # absolute error tiny: 0.5 tanh(x / 2) + 0.5 form


def test_softplus_does_not_overflow() -> None:
    x = reals(100.0, 710.0)
    got = run("nn.softplus", {"x": x}, outputs={"y": "real"})["y"]  # float32 kernel
    np.testing.assert_allclose(got, [100.0, 710.0], rtol=1e-6)  # x + log1p(exp(-x))
    # SkriptND: log(exp(x) + 1) as written: exp(710) overflows in float64 -> inf
    assert not np.isinf(got).any()


def test_local_response_norm_even_size_is_rejected() -> None:
    x = np.ones((1, 4, 2))
    with pytest.raises(Exception, match="size_ % 2 == 1"):
        OnnxRuntimeBackend().prepare(case("nn.local_response_norm", {"input": x}, {"size": [2]},
                                          {"output": "real"}))
    # the ONNX doc defines any size (window [c - floor((size-1)/2), c + ceil((size-1)/2)]), as
    # SkriptND does; ONNX Runtime follows it for odd sizes: ones, size 3, alpha 1, beta 0.5,
    # bias 1 -> 1 / sqrt(1 + (squares in the window) / 3), 2 squares at the edges, 3 inside
    odd = run("nn.local_response_norm", {"input": x.reshape(1, 4, 2, 1)}, {"size": [3]},
              {"output": "real"})["output"]
    edge, inside = 1 / math.sqrt(1 + 2 / 3), 1 / math.sqrt(1 + 3 / 3)
    np.testing.assert_allclose(odd[0, :, 0, 0], [edge, inside, inside, edge], rtol=1e-6)
    # ... but only for rank-4 inputs (the ONNX doc allows N x C x D1 x ... x Dk)
    runner = OnnxRuntimeBackend().prepare(case("nn.local_response_norm", {"input": x},
                                               {"size": [3]}, {"output": "real"}))
    with pytest.raises(Exception, match="NumDimensions\\(\\) == 4"):
        runner.run({})


def test_quantize_rounds_halves_to_even() -> None:
    x = reals(0.25, 0.75, -0.25).reshape(1, 3)  # x / 0.5 = 0.5, 1.5, -0.5
    got = run("quant.zero_point_linear_quantize", {"input": x},
              {"bits": 8, "scale": 0.5, "zero_point": 0}, {"output": "real"})["output"]
    np.testing.assert_array_equal(got, [[0.0, 1.0, 0.0]])  # codes 0, 2, 0 (half to even)
    skriptnd = [[0.5, 1.0, -0.5]]  # codes 1, 2, -1 (half away from zero)
    assert not np.array_equal(got, skriptnd)


def test_grid_sample_nearest_reflection_mirrors_the_coordinate() -> None:
    x = reals(0, 1, 2, 3).reshape(1, 1, 1, 4)
    grid = reals(1.2, 0.0).reshape(1, 1, 1, 2)  # x = 1.2 (beyond the right edge), y = 0
    got = run("image.grid_sample", {"input": x, "grid": grid},
              {"mode": "NEAREST", "padding": "REFLECT", "aligned": False},
              {"output": "real"})["output"]
    # position ((1.2 + 1) * 4 - 1) / 2 = 3.9. ONNX: reflect the coordinate in [-0.5, 3.5]:
    # 3.5 - 0.4 = 3.1, round -> 3 -> value 3. SkriptND: round(3.9) = 4, mirror the index at
    # s - 1 = 3: 2 * 3 - 4 = 2 -> value 2
    assert got.ravel()[0] == 3.0
    assert got.ravel()[0] != 2.0


def test_cubic_resize_runs_in_float32_beyond_the_tolerance() -> None:
    x = reals(0.3, -1.7, 2.9, 0.1, -0.6)
    size = 9
    got = run("image.cubic_resize", {"input": x.reshape(1, 5)},
              {"axes": [1], "size": [size], "coordinate_transform": "ASYMMETRIC"},
              {"output": "real"})["output"].ravel()
    assert got.dtype == np.float32  # ONNX Runtime has no float64 Resize

    def keys(t: float, a: float = -0.75) -> float:
        t = abs(t)
        if t <= 1:
            return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
        return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a if t < 2 else 0.0

    want = []
    for o in range(size):
        pos = o * len(x) / size  # ASYMMETRIC
        f = math.floor(pos)
        want.append(sum(keys(pos - i) * x[min(max(i, 0), len(x) - 1)]
                        for i in range(f - 1, f + 3)))
    want32 = np.array(want).astype(np.float32)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want32.view(np.int32))
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
    assert ulps.max() > 4  # beyond the 4 float32 ULPs of the golden's tolerance


# ----------------------------------------------------------------------------- timing tool


def test_bench_tool_prints_one_row_per_back_end(capsys) -> None:
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_backends",
                                                  ROOT / "tools" / "bench_backends.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--backend", "onnxruntime", "-k", r"^math\.add/rank0$"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[3:]}
    assert set(rows) == {"refinterp:auto", "onnxruntime"}
    assert rows["refinterp:auto"][1:3] == ["1", "1"] and rows["onnxruntime"][1:3] == ["1", "1"]
    assert rows["refinterp:auto"][-1] == "1.00"


def test_an_unknown_back_end_name_lists_the_installed_ones() -> None:
    """`--backend` with a name nothing defines: the message names the built-in back ends and
    the entry points installed (this package's own: onnxruntime, torch, jax, jax-jit)."""
    from refinterp.harness.backends import BackendNameError, resolve

    with pytest.raises(BackendNameError) as info:
        resolve("no-such-back-end")
    message = str(info.value)
    assert "refinterp:auto" in message and "installed:" in message
    assert all(name in message for name in ("onnxruntime", "torch", "jax"))


def test_the_back_end_is_named_by_entry_point_and_by_module_attribute() -> None:
    from refinterp.harness.backends import resolve

    assert type(resolve("onnxruntime")) is OnnxRuntimeBackend
    assert type(resolve("refinterp.backends.onnxruntime:OnnxRuntimeBackend")) is \
        OnnxRuntimeBackend
    assert type(resolve("refinterp.backends.onnxruntime:Backend")) is \
        OnnxRuntimeBackend  # the spec of earlier releases
