"""Folds `p + ..`, counts `e..(n)`, ':' index items, compile-time packs indexed at run time,
pack locals and element-wise selects, as partially evaluated (refinterp.lower.compiled.fold) and
compiled (refinterp.lower.compiled): bit-identical to the reference, errors included, and equal to
independent NumPy computations of the standard-library operators that use them."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
import pytest

from refinterp import api
from refinterp.core.diagnostics import Diagnostic
from refinterp.lower.compiled import engine as compiled_engine

RNG = np.random.default_rng(11)


@contextmanager
def _reference_only() -> Iterator[None]:
    original = compiled_engine.compile_formula
    compiled_engine.compile_formula = lambda *args: None
    try:
        yield
    finally:
        compiled_engine.compile_formula = original


def _outcome(target: Any, inputs: dict, attributes: dict) -> tuple[str, Any, list[bool]]:
    """('ok', outputs, compiled) or ('error', (code, message, notes), compiled); `compiled`
    says, per formula run, whether it ran as generated code."""
    compiled: list[bool] = []
    original = compiled_engine.compile_formula

    def recording(*args: Any) -> Any:
        run_kernel = original(*args)
        compiled.append(run_kernel is not None)
        return run_kernel
    compiled_engine.compile_formula = recording
    try:
        result = api.evaluate(target, inputs=inputs, attributes=attributes, engine="scalar")
    except Diagnostic as diag:
        return "error", (diag.code, diag.message, list(diag.notes)), compiled
    finally:
        compiled_engine.compile_formula = original
    return "ok", result.outputs, compiled


def _both(target: Any, inputs: dict, attributes: dict | None = None
          ) -> tuple[tuple[str, Any, list[str]], tuple[str, Any, list[str]]]:
    """The outcomes with generated code and on the reference alone, checked bit-identical."""
    attributes = attributes or {}
    fast = _outcome(target, inputs, attributes)
    with _reference_only():
        slow = _outcome(target, inputs, attributes)
    assert fast[0] == slow[0], (fast[1], slow[1])
    if fast[0] == "ok":
        assert set(fast[1]) == set(slow[1])
        for name, value in fast[1].items():
            assert value.dtype == slow[1][name].dtype
            np.testing.assert_array_equal(value, slow[1][name])
    else:
        assert fast[1] == slow[1]
    return fast, slow


def _generated(compiled: list[bool]) -> bool:
    return bool(compiled) and all(compiled)


def real(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


# ---------------------------------------------------------------- the standard library

def _depth_to_space(x: np.ndarray, bs: tuple[int, int]) -> np.ndarray:
    b, ic, h, w = x.shape
    c = ic // (bs[0] * bs[1])
    return x.reshape(b, bs[0], bs[1], c, h, w).transpose(0, 3, 4, 1, 5, 2) \
        .reshape(b, c, h * bs[0], w * bs[1])


def _space_to_depth(x: np.ndarray, bs: tuple[int, int]) -> np.ndarray:
    b, c, hh, ww = x.shape
    h, w = hh // bs[0], ww // bs[1]
    return x.reshape(b, c, h, bs[0], w, bs[1]).transpose(0, 3, 5, 1, 2, 4) \
        .reshape(b, bs[0] * bs[1] * c, h, w)


def _round(v: np.ndarray) -> np.ndarray:
    """`round`: half away from zero."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _nearest_resize(x: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """SYMMETRIC coordinates, ROUND_PREFER_FLOOR, on the last two axes."""
    picks = []
    for extent, out in zip(x.shape[2:], size):
        scale = extent / out
        r = np.arange(out) * scale + (0.5 * scale - 0.5)
        picks.append(np.clip(np.ceil(r - 0.5).astype(int), 0, extent - 1))
    return x[:, :, picks[0][:, None], picks[1][None, :]]


def _linear_resize(x: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """SYMMETRIC (half-pixel) coordinates, border replicated, on the last two axes."""
    out = x
    for axis, (extent, n) in enumerate(zip(x.shape[2:], size), start=2):
        r = (np.arange(n) + 0.5) * (extent / n) - 0.5
        low = np.floor(r).astype(int)
        f = r - low
        a = np.take(out, np.clip(low, 0, extent - 1), axis=axis)
        b = np.take(out, np.clip(low + 1, 0, extent - 1), axis=axis)
        shape = [1] * out.ndim
        shape[axis] = n
        out = a * (1 - f).reshape(shape) + b * f.reshape(shape)
    return out


def _gather_nd(data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    return data[tuple(np.moveaxis(indices, -1, 0))]


def _scatter_nd(data: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
    out = data.copy()
    for z in np.ndindex(*indices.shape[:-1]):
        out[tuple(indices[z])] = updates[z]
    return out


X4 = real(2, 3, 4, 5)
D2S = real(1, 8, 2, 3)
S2D = real(1, 2, 4, 6)
PAD = real(3, 4)
GATHER = real(4, 3, 2)
GATHER_AT = RNG.integers(0, 3, (5, 2))
SCATTER_AT = np.array([[0, 1], [2, 3], [1, 0]])
QUANT = real(1, 3, 4, 4) * 2
ZP, SCALE = [0, 1, -2], [0.1, 0.25, 0.05]
MINS, MAXS = [-1.0, -2.0, -0.5], [1.0, 1.5, 0.5]
RESIZE = real(1, 1, 3, 4)
VALUES = [float(v) for v in RNG.standard_normal(12)]


def _zp_quantize(x: np.ndarray) -> np.ndarray:
    zp, sc = np.array(ZP).reshape(1, 3, 1, 1), np.array(SCALE).reshape(1, 3, 1, 1)
    return (np.clip(zp + _round(x / sc), -128, 127) - zp) * sc


def _min_max_quantize(x: np.ndarray) -> np.ndarray:
    mn, mx = np.array(MINS).reshape(1, 3, 1, 1), np.array(MAXS).reshape(1, 3, 1, 1)
    sc = mx - mn
    q = _round((np.clip(x, mn, mx) - mn) / sc * 255.0) - 128.0
    return (q + 128.0) / 255.0 * sc + mn


# (operator, inputs, attributes, NumPy expectation of the one output or None, generated?)
STDLIB: list[tuple[str, dict, dict, Any, bool]] = [
    ("layout.flatten", {"input": X4}, {"axis": 1, "rank": 2}, X4.reshape(2, 12, 5), True),
    ("layout.flatten", {"input": X4}, {"axis": -3}, X4.reshape(2, 60), True),
    ("layout.unflatten", {"input": X4.reshape(2, 12, 5)}, {"axis": 1, "shape": [3, 4]}, X4,
     True),
    ("layout.depth_to_space", {"input": D2S}, {"block_size": [2, 2]},
     _depth_to_space(D2S, (2, 2)), True),
    ("layout.space_to_depth", {"input": S2D}, {"block_size": [2, 2]},
     _space_to_depth(S2D, (2, 2)), True),
    ("layout.space_to_depth", {"input": S2D.transpose(0, 2, 3, 1)},
     {"block_size": [2, 3], "data_format": "NXC", "blocks_first": False}, None, True),
    ("layout.constant", {}, {"shape": [3, 4], "value": VALUES},
     np.array(VALUES).reshape(3, 4), True),
    ("layout.constant", {}, {"shape": [2, 3], "value": [1.5] * 6}, np.full((2, 3), 1.5), True),
    ("layout.tensor", {}, {"shape": [4, 3], "value": VALUES}, np.array(VALUES).reshape(4, 3),
     True),
    ("layout.gather_nd", {"data": GATHER, "indices": GATHER_AT}, {},
     _gather_nd(GATHER, GATHER_AT), True),
    ("layout.gather_nd", {"data": GATHER, "indices": GATHER_AT[:, :1]}, {},
     _gather_nd(GATHER, GATHER_AT[:, :1]), True),
    ("layout.scatter_nd", {"data": PAD, "indices": SCATTER_AT, "updates": real(3)}, {}, None,
     True),
    ("math.argmax", {"input": real(3, 5, 2)}, {"axis": 1}, None, True),
    ("math.argmin", {"input": real(3, 5)}, {"axis": -1, "squeeze": True}, None, True),
    ("quant.zero_point_linear_quantize", {"input": QUANT},
     {"zero_point": ZP, "scale": SCALE, "bits": 8}, _zp_quantize(QUANT), True),
    ("quant.min_max_linear_quantize", {"input": QUANT}, {"min": MINS, "max": MAXS, "bits": 8},
     _min_max_quantize(QUANT), True),
    ("image.nearest_resize", {"input": RESIZE}, {"axes": [2, 3], "size": [5, 7]},
     _nearest_resize(RESIZE, (5, 7)), True),
    ("image.linear_resize", {"input": RESIZE}, {"axes": [2, 3], "size": [5, 7]},
     _linear_resize(RESIZE, (5, 7)), True),
    ("image.linear_upsample", {"input": RESIZE}, {"axes": [2, 3], "factor": [2, 2]}, None,
     True),
    # the selects on `method` decide a branch whose index guards (or range checks) run only
    # when it is taken: generated as statements `if c: .. else: ..`
    ("layout.pad", {"input": PAD}, {"padding": [1, 2, 2, 0]},
     np.pad(PAD, ((1, 2), (2, 0))), True),
    ("layout.pad", {"input": PAD, "value": np.array(-1.5)}, {"padding": [1, 0, 0, 1]},
     np.pad(PAD, ((1, 0), (0, 1)), constant_values=-1.5), True),
    ("layout.pad", {"input": PAD}, {"padding": [2, 1, 1, 2], "method": "REFLECT"},
     np.pad(PAD, ((2, 1), (1, 2)), mode="reflect"), True),
    ("layout.pad", {"input": PAD}, {"padding": [2, 1, 1, 2], "method": "REPLICATE"},
     np.pad(PAD, ((2, 1), (1, 2)), mode="edge"), True),
    ("layout.pad", {"input": PAD}, {"padding": [2, 1, 1, 2], "method": "SYMMETRIC"},
     np.pad(PAD, ((2, 1), (1, 2)), mode="symmetric"), True),
    ("layout.pad", {"input": PAD}, {"padding": [0, 0, 2, 3], "method": "REFLECT"},
     np.pad(PAD, ((0, 2), (0, 3)), mode="reflect"), True),
    ("layout.pad", {"input": X4}, {"axes": [1, -1], "padding": [1, 0, 2, 3],
                                   "method": "SYMMETRIC"},
     np.pad(X4, ((0, 0), (1, 2), (0, 0), (0, 3)), mode="symmetric"), True),
    ("layout.pad", {"input": (PAD > 0)}, {"padding": [1, 1, 0, 1]},
     np.pad(PAD > 0, ((1, 0), (1, 1))), True),
    ("layout.pad", {"input": np.arange(12).reshape(3, 4)},
     {"padding": [1, 1, 2, 2], "method": "REPLICATE"},
     np.pad(np.arange(12).reshape(3, 4), ((1, 2), (1, 2)), mode="edge"), True),
]


@pytest.mark.parametrize("name, inputs, attributes, expected, generated", STDLIB,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(STDLIB)])
def test_stdlib_operators_equal_the_tree_walk_and_numpy(name, inputs, attributes, expected,
                                                        generated):
    fast, _ = _both(name, inputs, attributes)
    assert fast[0] == "ok", fast[1]
    if generated:  # the others wait for codegen constructs folding does not decide
        assert _generated(fast[2]), fast[2]
    if expected is not None:
        (output,) = fast[1].values()
        np.testing.assert_allclose(output, expected, rtol=1e-12, atol=1e-12)


def test_argmax_and_scatter_nd_equal_numpy():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 5.0]])  # ties: the first one
    for squeeze in (False, True):
        fast, _ = _both("math.argmax", {"input": x}, {"axis": 1, "squeeze": squeeze})
        np.testing.assert_array_equal(fast[1]["output"],
                                      np.argmax(x, axis=1, keepdims=not squeeze))
        fast, _ = _both("math.argmin", {"input": x}, {"axis": 0, "squeeze": squeeze})
        np.testing.assert_array_equal(fast[1]["output"],
                                      np.argmin(x, axis=0, keepdims=not squeeze))
    updates = np.array([7.0, 8.0, 9.0])
    fast, _ = _both("layout.scatter_nd", {"data": PAD, "indices": SCATTER_AT,
                                          "updates": updates})
    np.testing.assert_array_equal(fast[1]["output"], _scatter_nd(PAD, SCATTER_AT, updates))


def test_out_of_range_gather_indices_fail_alike():
    """An index read through ':' out of range for `data`: the same error, iteration and
    notes on both paths."""
    indices = np.array([[0, 1], [2, 3], [4, 0]])
    fast, _ = _both("layout.gather_nd", {"data": GATHER, "indices": indices})
    assert fast[0] == "error" and fast[1][0] == "E0501" and _generated(fast[2])



def test_pad_too_wide_to_reflect_fails_alike():
    """REFLECT (and SYMMETRIC) past the opposite edge reads out of range: an error in the same
    iteration, with the same notes, on both paths (the branch's range check runs where it is
    taken)."""
    for method, padding in (("REFLECT", [3, 0, 0, 0]), ("SYMMETRIC", [0, 0, 0, 5])):
        fast, _ = _both("layout.pad", {"input": PAD}, {"padding": padding, "method": method})
        assert fast[0] == "error" and fast[1][0] == "E0501" and _generated(fast[2])


GRID_INPUT = real(1, 2, 4, 5)
GRID = RNG.uniform(-1.3, 1.3, (1, 3, 4, 2))


def _grid_sample_zeros_linear(x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Bilinear grid sampling with zero padding, corners not aligned (PyTorch's default)."""
    n, c, h, w = x.shape
    out = np.zeros((n, c) + grid.shape[1:3])
    for b, p, q in np.ndindex(n, *grid.shape[1:3]):
        gx, gy = grid[b, p, q]
        fx, fy = ((gx + 1.0) * w - 1.0) * 0.5, ((gy + 1.0) * h - 1.0) * 0.5
        x0, y0 = int(np.floor(fx)), int(np.floor(fy))
        for yy, wy in ((y0, 1.0 - abs(y0 - fy)), (y0 + 1, 1.0 - abs(y0 + 1 - fy))):
            for xx, wx in ((x0, 1.0 - abs(x0 - fx)), (x0 + 1, 1.0 - abs(x0 + 1 - fx))):
                if 0 <= yy < h and 0 <= xx < w:
                    out[b, :, p, q] += wy * wx * x[b, :, yy, xx]
    return out


@pytest.mark.parametrize("mode", ["NEAREST", "LINEAR", "CUBIC"])
@pytest.mark.parametrize("padding", ["ZEROS", "REFLECT", "REPLICATE"])
def test_grid_sample_is_generated_bit_identical(mode, padding):
    """The taps outside the input (ZEROS) are a select whose taken branch reads the input; the
    cubic weights and the reflected index are element-wise selects on a pack computed at run
    time (fold.SelectItem: nothing in them can fail, so only the item taken is computed)."""
    fast, _ = _both("image.grid_sample", {"input": GRID_INPUT, "grid": GRID},
                    {"mode": mode, "padding": padding})
    assert fast[0] == "ok" and _generated(fast[2])
    if (mode, padding) == ("LINEAR", "ZEROS"):
        np.testing.assert_allclose(fast[1]["output"],
                                   _grid_sample_zeros_linear(GRID_INPUT, GRID), rtol=1e-12,
                                   atol=1e-12)

# ---------------------------------------------------------------- formulas written here

def _program(lower: str, inputs: str, outputs: str, attributes: str = "") -> Any:
    attrib = f"@attrib {{ {attributes} }}" if attributes else ""
    return api.load_source(f"operator f {{ {attrib} @input {{ {inputs} }} "
                           f"@output {{ {outputs} }} @lower {{ {lower} }} }}")


def test_folds_are_left_deep_chains_in_the_tree_walks_order():
    """Real sums and products whose rounding depends on the order; min/max, `&&`, `||`; one
    item (no operation) and an empty pack (the identity)."""
    program = _program(
        "y[i] = x[i, :] + .., i < n; p[i] = x[i, :] * .., i < n; "
        "m[i] = (x[i, :] << ..) + (x[i, :] >> ..), i < n; "
        "b[i] = (x[i, :] > 0.0) && .. || (x[i, :] < -1.0) || .., i < n;",
        "x: real[n, 4];", "y: real[n]; p: real[n]; m: real[n]; b: bool[n];")
    x = np.array([[0.1, 0.2, 0.3, 1e16], [1e16, 1.0, -1e16, 1.0], [0.7, 0.1, 0.3, 0.9]])
    fast, _ = _both(program, {"x": x})
    assert _generated(fast[2])
    np.testing.assert_array_equal(fast[1]["y"], ((x[:, 0] + x[:, 1]) + x[:, 2]) + x[:, 3])
    np.testing.assert_array_equal(fast[1]["p"], ((x[:, 0] * x[:, 1]) * x[:, 2]) * x[:, 3])
    program = _program("y[i] = x[i, :] + .., i < n; z[i] = [x[i, 0]] * .., i < n; "
                       "w[i] = [] + .., i < n;",
                       "x: int[n, 2];", "y: int[n]; z: int[n]; w: int[n];")
    fast, _ = _both(program, {"x": np.array([[1, 2], [3, -4]])})
    assert _generated(fast[2])
    assert fast[1]["y"].tolist() == [3, -1] and fast[1]["z"].tolist() == [1, 3]
    assert fast[1]["w"].tolist() == [0, 0]


def test_a_long_fold_stays_on_the_tree_walk():
    """A chain of hundreds of operations would nest too deeply for Python's compiler."""
    program = _program("y[i] = x[i, :] + .., i < n;", "x: real[n, m];", "y: real[n];")
    fast, _ = _both(program, {"x": np.ones((2, 300))})
    assert fast[2] == [False] and fast[1]["y"].tolist() == [300.0, 300.0]


def test_errors_in_folds_and_colon_items_happen_in_the_same_iteration():
    program = _program("y[i] = (10 / x[i, :]) + .., i < n;", "x: int[n, 3];", "y: int[n];")
    fast, _ = _both(program, {"x": np.array([[1, 2, 5], [3, 0, 1]])})
    assert fast[0] == "error" and "i = 1" in " ".join(fast[1][2]) and _generated(fast[2])
    program = _program("y[i] = x[i + 1, :] + .., i < n;", "x: real[n, 2];", "y: real[n];")
    fast, _ = _both(program, {"x": real(3, 2)})
    assert fast[0] == "error" and fast[1][0] == "E0501" and _generated(fast[2])


def test_a_guarded_fold_item_is_generated_but_a_guard_beside_colon_is_not():
    """A skip among a fold's items: generated code computes every item, left to right, before
    the first operation, as the reference does (an item that may fail comes before a later
    item's guard). A guard beside ':' stays on the reference (its position is resolved once)."""
    program = _program("y[i] = [x[|i + 1|], 10 / x[i]] + .., i < n; "
                       "z[i] = x2[|i + 1|, :] + .., i < n;", "x: int[n]; x2: int[n, 2];",
                       "y: int[n]; z: int[n];")
    fast, _ = _both(program, {"x": np.array([1, 2, 0]), "x2": np.ones((3, 2), dtype=int)})
    assert fast[0] == "ok" and fast[2] == [True, False]
    assert fast[1]["y"].tolist() == [12, 5, 0] and fast[1]["z"].tolist() == [2, 2, 0]
    # the division fails at i = 2 before the guard of the item after it skips
    program = _program("y[i] = [10 / x[i], x[|i + 1|], x[i]] + .., i < n;", "x: int[n];",
                       "y: int[n];")
    fast, _ = _both(program, {"x": np.array([1, 2, 0])})
    assert fast[0] == "error" and "zero" in fast[1][1] and "i = 2" in " ".join(fast[1][2])
    assert _generated(fast[2])


def test_counts_repeat_or_drop_an_index():
    program = _program("y[0 ..(a), i, 0 ..(b)] = x[i] * 2, i < n;", "x: int[n];",
                       "y: int[1 ..(a), n, 1 ..(b)];", "a: bool; b: int;")
    for a, b in ((True, 0), (False, 2)):
        fast, _ = _both(program, {"x": np.array([1, 2, 3])}, {"a": a, "b": b})
        assert _generated(fast[2]) and fast[1]["y"].ravel().tolist() == [2, 4, 6]


def test_constant_pack_lookups_match_python_indexing():
    """`p[k]` of an attribute pack: in range (also from the end, `p[i - n]`) it is a constant
    lookup; out of range, or not provably in range, the reference runs, where an index out of
    range is E0501 at the index (§2.4) — the same with and without generated code."""
    program = _program("y[i] = p[i] + q[i - n] + q[[i, i] + ..], i < n;", "x: int[n];",
                       "y: real[n];", "p: real..(n); q: real..(m);")
    p, q = [0.5, 1.5, 2.5], [10.0, 20.0, 30.0, 40.0, 50.0]
    fast, _ = _both(program, {"x": np.zeros(3, dtype=int)}, {"p": p, "q": q})
    assert _generated(fast[2])
    assert fast[1]["y"].tolist() == [p[i] + q[i - 3] + q[i + i] for i in range(3)]
    program = _program("y[i] = p[x[i]], i < n;", "x: int[n];", "y: real[n];", "p: real..(k);")
    fast, _ = _both(program, {"x": np.array([2, 0, 1])}, {"p": p})
    assert fast[1]["y"].tolist() == [2.5, 0.5, 1.5] and not _generated(fast[2])
    for generated in (True, False):
        with _reference_only() if not generated else _nothing():
            with pytest.raises(Diagnostic) as error:
                api.evaluate(program, inputs={"x": np.array([0, 3])}, attributes={"p": p},
                             engine="scalar")
            assert error.value.code == "E0501"
            assert "index 3 is out of range for a pack of length 3" in error.value.message


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def test_pack_locals_that_may_fail_are_split_in_item_order():
    program = _program("r = 10 / x[i, :], y[i] = r[1] - r[0], i < n;", "x: int[n, 2];",
                       "y: int[n];")
    fast, _ = _both(program, {"x": np.array([[1, 2], [5, 3]])})
    assert _generated(fast[2]) and fast[1]["y"].tolist() == [-5, 1]
    fast, _ = _both(program, {"x": np.array([[1, 2], [0, 3]])})
    assert fast[0] == "error" and "zero" in fast[1][1] and _generated(fast[2])
    # an item that may skip keeps the formula on the reference
    program = _program("r = [10 / x[i, 0], x[|i + 1|, 0]], y[i] = r[0] + r[1], i < n;",
                       "x: int[n, 2];", "y: int[n];")
    fast, _ = _both(program, {"x": np.array([[1, 2], [5, 3]])})
    assert fast[2] == [False] and fast[1]["y"].tolist() == [15, 0]


def test_elementwise_selects_drop_only_the_items_not_taken():
    program = _program("y[i, j] = x[(c ? |i - 1 <> 0 : n - 1| : [i, j])..], i < n, j < n;",
                       "x: int[n, n];", "y: int[n, n];", "c: bool..(2);")
    x = np.arange(9).reshape(3, 3)
    fast, _ = _both(program, {"x": x}, {"c": [True, False]})
    assert _generated(fast[2])
    assert fast[1]["y"].tolist() == [[x[max(i - 1, 0), j] for j in range(3)] for i in range(3)]
    # a dropped item that may fail is computed by the reference: not folded
    program = _program("y[i] = (c ? [x[i + 1], x[i]] : [x[i], 5 / x[i]])[1], i < n;",
                       "x: int[n];", "y: int[n];", "c: bool..(2);")
    fast, _ = _both(program, {"x": np.array([1, 0])}, {"c": [True, True]})
    assert fast[0] == "error" and fast[2] == [False]
