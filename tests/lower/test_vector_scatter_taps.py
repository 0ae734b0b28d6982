"""The vector engine's tap-by-tap `+=` (vector.stores.Stores.add_by_taps): a real `+=` of a
product whose output positions are affine in the loop indices but reach some cells from
several iterations, as in a transposed convolution
`output[.., |stride * i + dilation * j - offset|..] += input[.., i..] * filter[.., j..]`.

Every case runs on the compiled engine (the definition's results) and on the vector engine,
and both are compared with an independent NumPy computation written here; the vector engine
must also agree with the reference within the engines' tolerance (`engines.difference`),
including where the terms of a cell cancel (the cells are then summed again in iteration
order) and with nan and infinities. Cases that are not of that form (positions that are not
affine, int sums) must not take the path and still compute right.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refinterp.api import run_operator
from refinterp.lower import engines
from refinterp.lower.vector import taps as vector_taps
from refinterp.lower.vector.stores import Stores
from testsupport.tap_cases import (THREE_FACTORS, check_tap_counts, expected_deconv,
                                  expected_three_factors, operator)

RNG = np.random.default_rng(2024)


@pytest.fixture
def taps(monkeypatch) -> list[bool]:
    """What each call of `Stores.add_by_taps` answered (True: the store ran tap by tap)."""
    answers: list[bool] = []
    original = Stores.add_by_taps

    def spy(self, *args):
        answer = original(self, *args)
        answers.append(answer)
        return answer
    monkeypatch.setattr(Stores, "add_by_taps", spy)
    return answers


def both_engines(name: str, inputs: dict, attributes: dict | None = None, file: Path | None = None,
                 max_memory: int = 2 ** 31) -> tuple[dict, dict]:
    """The outputs of the scalar and of the vector engine (no formula falling back)."""
    used: list[str] = []
    vector = engines.make_engine("vector", max_memory=max_memory,
                                 log=lambda instance, how: used.append(how))
    scalar = run_operator(name, inputs, attributes, file=file, engine="scalar")
    result = run_operator(name, inputs, attributes, file=file, engine=vector)
    assert used and all(how == "vector" for how in used), used
    for output in scalar:
        found = engines.difference(scalar[output], result[output], output)
        assert found is None, found
    return scalar, result


# ----------------------------------------------------------------------------- nn.deconv


DECONVS = [  # input shape, filter shape, attributes: enough iterations per tap for the path
    ((2, 4, 6, 6), (4, 3, 3, 3), {}),
    ((2, 4, 6, 6), (4, 3, 3, 3), {"stride": [2, 2]}),
    ((2, 4, 7, 5), (4, 3, 3, 2), {"stride": [3, 2], "dilation": [2, 1],
                                  "padding": [1, 0, 2, 1]}),
    ((2, 4, 6, 6), (4, 3, 3, 3), {"stride": [2, 1], "padding_align": "LOWER"}),
    ((2, 4, 6, 6), (4, 2, 3, 3), {"groups": 2, "dilation": [1, 2]}),
    ((2, 4, 6, 6), (4, 1, 3, 3), {"groups": 0}),
    ((2, 4, 12), (4, 3, 3), {"stride": [2], "padding": [2, 0]}),
    ((1, 2, 4, 4, 4), (2, 2, 2, 2, 2), {"stride": [2, 1, 2]}),
    ((2, 4, 6, 6), (4, 3, 3, 3), {"stride": [2, 2], "output_size": [12, 12]}),
]


@pytest.mark.parametrize("input_shape, filter_shape, attributes", DECONVS)
def test_deconv_runs_tap_by_tap(taps, input_shape, filter_shape, attributes):
    x, w = RNG.standard_normal(input_shape), RNG.standard_normal(filter_shape)
    scalar, vector = both_engines("nn.deconv", {"input": x, "filter": w}, attributes)
    assert True in taps
    expected = expected_deconv(x, w, attributes)
    np.testing.assert_allclose(scalar["output"], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vector["output"], expected, rtol=1e-12, atol=1e-12)


def to_format(canonical: np.ndarray, data_format: str) -> np.ndarray:
    """A channels-first [b, c, x..] tensor in `data_format` (a C-order copy)."""
    if data_format == "NXC":
        return np.ascontiguousarray(np.moveaxis(canonical, 1, -1))
    if data_format == "XCN":
        return np.ascontiguousarray(np.moveaxis(canonical, [0, 1], [-1, -2]))
    return canonical


@pytest.mark.parametrize("data_format, filter_format", [("NXC", "NXC"), ("XCN", "XCN"),
                                                        ("NCX", "CXN")])
def test_deconv_formats_and_bias_run_tap_by_tap(taps, data_format, filter_format):
    x, w = RNG.standard_normal((2, 4, 6, 5)), RNG.standard_normal((4, 3, 3, 3))
    bias = RNG.standard_normal(3)
    filters = {"NCX": w, "NXC": np.moveaxis(w, 1, -1), "XCN": np.moveaxis(w, [0, 1], [-1, -2]),
               "CXN": np.moveaxis(w, [0, 1], [-1, 0])}
    attributes = {"stride": [2, 1], "data_format": data_format, "filter_format": filter_format}
    scalar, vector = both_engines(
        "nn.deconv", {"input": to_format(x, data_format),
                      "filter": np.ascontiguousarray(filters[filter_format]), "bias": bias},
        attributes)
    assert True in taps
    expected = to_format(expected_deconv(x, w, {"stride": [2, 1]}) +
                         bias.reshape(1, 3, 1, 1), data_format)
    np.testing.assert_allclose(scalar["output"], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vector["output"], expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("max_memory", [150_000, 20_000])
def test_deconv_in_small_boxes_agrees(taps, max_memory):
    """A small memory budget cuts the iteration space into boxes, each run tap by tap; a tiny
    one into boxes too small for that, which scatter."""
    x, w = RNG.standard_normal((2, 4, 6, 6)), RNG.standard_normal((4, 3, 3, 3))
    attributes = {"stride": [2, 2]}
    scalar, vector = both_engines("nn.deconv", {"input": x, "filter": w}, attributes,
                                  max_memory=max_memory)
    assert len(taps) > 1 and (True in taps) == (max_memory > 100_000)
    np.testing.assert_allclose(vector["output"], expected_deconv(x, w, attributes),
                               rtol=1e-12, atol=1e-12)


def test_cancelling_terms_are_summed_again_in_iteration_order(taps):
    """Channels x and -x against one filter: every cell's terms cancel, so the result is the
    rounding of the order of the additions. Tap by tap in BLAS order, the sum differs from the
    definition's beyond the tolerance (shown with NumPy); the vector engine sums such cells
    again in iteration order and agrees with the reference."""
    x = RNG.standard_normal((2, 3, 6, 6)) * 1e6
    w = RNG.standard_normal((3, 3, 3, 3))
    x, w = np.concatenate([x, -x], axis=1), np.concatenate([w, w], axis=0)
    attributes = {"stride": [2, 2]}
    scalar, vector = both_engines("nn.deconv", {"input": x, "filter": w}, attributes)
    assert True in taps
    reordered = expected_deconv(x, w, attributes)
    assert engines.difference(scalar["output"], reordered, "output") is not None
    assert np.abs(scalar["output"]).max() < 1e-3  # nothing but rounding is left


def test_nan_and_infinities_come_out_as_in_the_scalar_engine(taps):
    x, w = RNG.standard_normal((2, 4, 6, 6)), RNG.standard_normal((4, 3, 3, 3))
    x[0, 1, 2, 3] = np.nan
    x[1, 2, 0, 0], x[1, 3, 0, 0] = np.inf, -np.inf  # inf - inf in the cells they share
    x[1, 0, 5, 5] = np.inf
    w[2, 1, 0, 0] = 0.0  # inf * 0
    bias = np.array([0.5, -np.inf, 1.0])
    scalar, vector = both_engines("nn.deconv", {"input": x, "filter": w, "bias": bias},
                                  {"stride": [2, 2]})
    assert True in taps
    out = vector["output"]
    assert np.isnan(out).any() and np.isposinf(out).any() and np.isneginf(out).any()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(scalar["output"]))


# ----------------------------------------------------------------------------- other formulas


def scatter_1d(x: np.ndarray, w: np.ndarray, position, size: int, keep=None) -> np.ndarray:
    """y[position(i, j)] += x[i, c] * w[c, j] where the position is inside (and keep(i, c))."""
    y = np.zeros(size)
    for i, c, j in itertools.product(range(x.shape[0]), range(x.shape[1]), range(w.shape[1])):
        p = position(i, j)
        if 0 <= p < size and (keep is None or keep(i, c)):
            y[p] += x[i, c] * w[c, j]
    return y


def test_a_negative_coefficient_and_a_condition_run_tap_by_tap(taps):
    """Positions running backwards, and a condition: a skipped iteration adds nothing."""
    x, w = RNG.standard_normal((40, 8)), RNG.standard_normal((8, 3))
    path = operator("x: real[40, 8]; w: real[8, 3];", "y: real[70];",
                    "y[|75 - 2 * i - j|] += x[i, c] * w[c, j], i < 40, c < 8, j < 3 "
                    "| x[i, c] > 0.0;")
    _, vector = both_engines("f", {"x": x, "w": w}, file=path)
    assert True in taps
    expected = scatter_1d(x, w, lambda i, j: 75 - 2 * i - j, 70, lambda i, c: x[i, c] > 0.0)
    np.testing.assert_allclose(vector["y"], expected, rtol=1e-12, atol=1e-12)


def test_an_output_axis_no_factor_uses_runs_tap_by_tap(taps):
    x, w = RNG.standard_normal((30, 8)), RNG.standard_normal((8, 4))
    path = operator("x: real[30, 8]; w: real[8, 4];", "y: real[3, 60];",
                    "y[b, |2 * i + j - 1|] += x[i, c] * w[c, j], b < 3, i < 30, c < 8, j < 4;")
    _, vector = both_engines("f", {"x": x, "w": w}, file=path)
    assert True in taps
    row = scatter_1d(x, w, lambda i, j: 2 * i + j - 1, 60)
    np.testing.assert_allclose(vector["y"], np.tile(row, (3, 1)), rtol=1e-12, atol=1e-12)


def test_positions_that_are_not_affine_take_the_scatter(taps):
    x, w = RNG.standard_normal((40, 8)), RNG.standard_normal((8, 3))
    p = RNG.integers(0, 30, 40)
    path = operator("x: real[40, 8]; w: real[8, 3]; p: int[40];", "y: real[30];",
                    "y[|p[i] + j|] += x[i, c] * w[c, j], i < 40, c < 8, j < 3;")
    _, vector = both_engines("f", {"x": x, "w": w, "p": p}, file=path)
    assert True not in taps
    expected = scatter_1d(x, w, lambda i, j: p[i] + j, 30)
    np.testing.assert_allclose(vector["y"], expected, rtol=1e-12, atol=1e-12)


def test_an_int_sum_of_that_form_stays_exact(taps):
    a = RNG.integers(-1000, 1000, (40, 8))
    b = RNG.integers(-1000, 1000, (8, 3))
    path = operator("a: int[40, 8]; b: int[8, 3];", "y: int[80];",
                    "y[|2 * i + j - 1|] += a[i, c] * b[c, j], i < 40, c < 8, j < 3;")
    scalar, vector = both_engines("f", {"a": a, "b": b}, file=path)
    assert True not in taps  # ints take the exact scatter
    expected = np.zeros(80, dtype=np.int64)
    for i, c, j in itertools.product(range(40), range(8), range(3)):
        if 0 <= 2 * i + j - 1 < 80:
            expected[2 * i + j - 1] += a[i, c] * b[c, j]
    assert (vector["y"] == expected).all() and (scalar["y"] == expected).all()


def test_a_guarded_factor_reading_padding_runs_tap_by_tap(taps):
    """`x[|i - 1|, c]` outside x skips the iteration; read as zero padding, it adds nothing."""
    x, w = RNG.standard_normal((40, 8)), RNG.standard_normal((8, 3))
    path = operator("x: real[40, 8]; w: real[8, 3];", "y: real[80];",
                    "y[|2 * i + j - 1|] += x[|i - 1|, c] * w[c, j], i < 41, c < 8, j < 3;")
    _, vector = both_engines("f", {"x": x, "w": w}, file=path)
    assert True in taps
    shifted = np.concatenate([np.zeros((1, 8)), x])  # row i is x[i - 1]
    expected = scatter_1d(shifted, w, lambda i, j: 2 * i + j - 1, 80)
    np.testing.assert_allclose(vector["y"], expected, rtol=1e-12, atol=1e-12)


def test_a_tap_in_two_dimensions_and_three_factors_run_tap_by_tap(taps):
    x, v, w = RNG.standard_normal((12, 4)), RNG.standard_normal(10), RNG.standard_normal((4, 3))
    path = operator(*THREE_FACTORS)
    _, vector = both_engines("f", {"x": x, "v": v, "w": w}, file=path)
    assert True in taps
    np.testing.assert_allclose(vector["y"], expected_three_factors(x, v, w), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("output, formula, inputs", [
    ("y: real[3, 60];",
     "y[b, |2 * i + j - 1|] += x[i, c] * w[c, j], b < 3, i < 30, c < 8, j < 4;",
     {"x": (30, 8), "w": (8, 4)}),
    ("y: real[9, 24, 11];",
     "y[|3 * b + 2 * q|, |2 * i + j - 1|, |k + j - 1|] += x[i, c] * v[k] * w[c, j], "
     "b < 3, q < 2, i < 12, k < 10, c < 4, j < 3;",
     {"x": (12, 4), "v": (10,), "w": (4, 3)}),
])
def test_tap_counts_per_cell_equal_counting_each_tap_value(monkeypatch, output, formula,
                                                           inputs):
    """The number of tap values storing into each cell (which bounds the roundings of its
    sum) equals counting them one by one: an outer product of one count per dimension where
    no tap is in two dimensions, else counted."""
    checked = check_tap_counts(monkeypatch)
    declared = " ".join(f"{name}: real[{', '.join(map(str, shape))}];"
                        for name, shape in inputs.items())
    path = operator(declared, output, formula)
    both_engines("f", {name: RNG.standard_normal(shape) for name, shape in inputs.items()},
                 file=path)
    assert checked


@st.composite
def tap_formulas(draw):
    """A random formula of the tap form: one or two guarded output positions affine in loop
    indices (coefficients of either sign), a sum over `c`, maybe a condition, maybe special
    values."""
    ni, nj, nc, nk = (draw(st.integers(1, n)) for n in (9, 4, 3, 5))
    a = draw(st.sampled_from([-3, -2, -1, 1, 2, 3]))
    b = draw(st.sampled_from([-2, -1, 1, 2]))
    o = draw(st.integers(-4, 4))
    size = draw(st.integers(1, 20))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))  # reproducible values
    inputs = {"x": rng.standard_normal((ni, nc)), "w": rng.standard_normal((nc, nj))}
    positions, output, bounds = [f"|{a} * i + {b} * j + {o}|"], [size], ""
    value = "x[i, c] * w[c, j]"
    if draw(st.booleans()):  # a second dimension sharing the tap j
        sign, shift = draw(st.sampled_from([-1, 1])), draw(st.integers(-2, 2))
        positions.append(f"|k + {sign} * j + {shift}|")
        output.append(draw(st.integers(1, 8)))
        inputs["v"] = rng.standard_normal(nk)
        value += " * v[k]"
        bounds = f", k < {nk}"
    condition = " | x[i, c] > -0.5" if draw(st.booleans()) else ""
    special = draw(st.sampled_from([None, np.nan, np.inf, -np.inf]))
    if special is not None and not condition:
        inputs["x"][draw(st.integers(0, ni - 1)), draw(st.integers(0, nc - 1))] = special
    declared = " ".join(f"{name}: real[{', '.join(map(str, array.shape))}];"
                        for name, array in inputs.items())
    formula = (f"y[{', '.join(positions)}] += {value}, i < {ni}, c < {nc}, j < {nj}{bounds}"
               f"{condition};")
    return operator(declared, f"y: real[{', '.join(map(str, output))}];", formula), inputs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tap_formulas())
def test_random_tap_formulas_agree(example):
    """Tap by tap even for a handful of iterations: the same function as the definition."""
    path, inputs = example
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vector_taps, "MIN_ITERATIONS_PER_TAP", 0)
        scalar = run_operator("f", inputs, file=path, engine="scalar")
        vector = run_operator("f", inputs, file=path, engine="vector")
    found = engines.difference(scalar["y"], vector["y"], "y")
    assert found is None, found
