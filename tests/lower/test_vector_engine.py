"""The vector engine computes the function the reference defines.

Random formulas from tests/vector_strategies.py run on both engines: the outputs must agree
(identical ints and bools; reals within refinterp.lower.engines' documented tolerance), or both
engines must report the same diagnostic. Hand-picked formulas check each store strategy and
that the vector engine really vectorises them (no silent fallback). The long run of the random
suite is tools/vector_equality.py.
"""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from refinterp.api import run_operator
from refinterp.core.diagnostics import Diagnostic
from refinterp.lower import engines
from refinterp.lower.vector.engine import run_vector

from testsupport.corpus_formulas import LOWERED, invocation
from testsupport.vector_cases import check_equal, op, run_both, vectorised, write
from testsupport.vector_strategies import Example, formulas


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas())
def test_random_formulas_agree(example):
    check_equal(example)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas())
def test_random_formulas_agree_khronos_profile(example):
    check_equal(example, profile="khronos")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(formulas())
def test_random_formulas_agree_in_small_chunks(example):
    """A tiny memory budget splits every iteration space into many boxes."""
    check_equal(example, max_memory=200)


# ---------------------------------------------------------------------- each strategy, pinned


RNG = np.random.default_rng(7)


def test_elementwise_is_vectorised():
    x = RNG.standard_normal((3, 4))
    out = vectorised(op("x: real[3, 4];", "y: real[3, 4];",
                        "y[i, j] = exp(x[i, j]) * 2.0, i < 3, j < 4;"), {"x": x})
    np.testing.assert_allclose(out["y"], np.exp(x) * 2.0, rtol=1e-12)


def test_contraction_is_vectorised():
    a, b = RNG.standard_normal((5, 6)), RNG.standard_normal((6, 7))
    out = vectorised(op("a: real[5, 6]; b: real[6, 7];", "y: real[5, 7];",
                        "y[i, j] += a[i, k] * b[k, j], i < 5, j < 7, k < 6;"),
                     {"a": a, "b": b})
    np.testing.assert_allclose(out["y"], a @ b, rtol=1e-12)


def test_int_contraction_is_exact():
    a = RNG.integers(-1000, 1000, (4, 5))
    b = RNG.integers(-1000, 1000, (5, 3))
    out = vectorised(op("a: int[4, 5]; b: int[5, 3];", "y: int[4, 3];",
                        "y[i, j] += a[i, k] * b[k, j], i < 4, j < 3, k < 5;"),
                     {"a": a, "b": b})
    assert (out["y"] == a @ b).all()


def test_guarded_convolution_is_vectorised():
    x, w = RNG.standard_normal(10), RNG.standard_normal(3)
    out = vectorised(op("x: real[10]; w: real[3];", "y: real[10];",
                        "y[i] += x[|i + k - 1|] * w[k], i < 10, k < 3;"), {"x": x, "w": w})
    padded = np.pad(x, 1)
    expected = np.array([sum(padded[i + k] * w[k] for k in range(3)) for i in range(10)])
    np.testing.assert_allclose(out["y"], expected, rtol=1e-12)


def test_guarded_factor_with_an_infinity_stays_exact():
    """0 * inf is nan: a skipped iteration next to an infinite factor contributes nothing."""
    x, w = np.array([1.0, 2.0, 3.0]), np.array([np.inf, 1.0, 1.0])
    check_equal(Example(op("x: real[3]; w: real[3];", "y: real[3];",
                           "y[i] += x[|i + k - 1|] * w[k], i < 3, k < 3;"), {"x": x, "w": w}))


def test_only_a_factor_that_is_an_access_reads_zero_padding():
    """A guarded access nested inside a factor (`[x[|i - 1|] + 1.0][0]`) must skip its
    iteration, not read a padded 0 (which would contribute (0 + 1) * w[0])."""
    x, w = np.arange(4.0), np.ones(4)
    out = vectorised(op("x: real[4]; w: real[4];", "y: real[];",
                        "y[] += [x[|i - 1|] + 1.0][0] * w[i], i < 4;"), {"x": x, "w": w})
    assert out["y"] == 6.0


def test_non_contiguous_inputs_use_their_own_strides():
    """A transposed input is copied to C order before a strided view is taken; a guarded
    (padded) and an unguarded access both read the right elements."""
    a = RNG.standard_normal((6, 5)).T  # shape (5, 6), Fortran order
    b = RNG.standard_normal((7, 6)).T  # shape (6, 7)
    out = vectorised(op("a: real[5, 6]; b: real[6, 7];", "y: real[5, 7];",
                        "y[i, j] += a[i, k] * b[k, j], i < 5, j < 7, k < 6;"),
                     {"a": a, "b": b})
    np.testing.assert_allclose(out["y"], a @ b, rtol=1e-12)
    x, w = RNG.standard_normal((10, 2))[:, 1], RNG.standard_normal(6)[::2]
    out = vectorised(op("x: real[10]; w: real[3];", "y: real[10];",
                        "y[i] += x[|i + k - 1|] * w[k], i < 10, k < 3;"), {"x": x, "w": w})
    padded = np.pad(x, 1)
    expected = np.array([sum(padded[i + k] * w[k] for k in range(3)) for i in range(10)])
    np.testing.assert_allclose(out["y"], expected, rtol=1e-12)


@pytest.mark.parametrize("update,reduce", [("+=", np.sum), ("*=", np.prod), ("<=", np.min),
                                           (">=", np.max)])
def test_reductions_are_vectorised(update, reduce):
    x = RNG.standard_normal((4, 6))
    out = vectorised(op("x: real[4, 6];", "y: real[4];",
                        f"y[i] {update} x[i, k], i < 4, k < 6;"), {"x": x})
    np.testing.assert_allclose(out["y"], reduce(x, axis=1), rtol=1e-12)


def test_bool_reductions_are_vectorised():
    m = RNG.integers(0, 2, (5, 3)).astype(bool)
    out = vectorised(op("m: bool[5, 3];", "y: bool[5]; z: bool[5];",
                        "y[i] &= m[i, k], i < 5, k < 3;", "z[i] |= m[i, k], i < 5, k < 3;"),
                     {"m": m})
    assert (out["y"] == m.all(axis=1)).all() and (out["z"] == m.any(axis=1)).all()


def test_argmax_reading_its_output_is_vectorised():
    x = RNG.standard_normal((40, 7))
    x[3, 2] = x[3, 5] = 9.0  # a tie: the first index wins
    out = vectorised(op("x: real[40, 7];", "y: int[40];",
                        "y[i] = 0, i < 40;",
                        "y[i] := k, i < 40, k < 7 | x[i, k] > x[i, y[i]];"), {"x": x})
    assert (out["y"] == np.argmax(x, axis=1)).all() and out["y"][3] == 2


def test_scatter_last_write_wins():
    index = np.array([2, 0, 2, 1, 2])
    values = np.arange(5.0)
    out = vectorised(op("v: real[5]; p: int[5];", "y: real[3];",
                        "y[p[k]] = v[k], k < 5;"), {"v": values, "p": index})
    assert list(out["y"]) == [1.0, 3.0, 4.0]


def test_scatter_add_in_order():
    index = np.array([2, 0, 2, 1, 2])
    values = RNG.standard_normal(5)
    out = vectorised(op("v: real[5]; p: int[5];", "y: real[3];",
                        "y[p[k]] += v[k], k < 5;"), {"v": values, "p": index})
    expected = np.zeros(3)
    np.add.at(expected, index, values)
    assert (out["y"] == expected).all()  # ufunc.at keeps the iteration order: bit-identical


def test_condition_and_select_masks():
    x = RNG.standard_normal(12)
    out = vectorised(op("x: real[12];", "y: real[12];",
                        "y[i] = x[i] > 0.0 ? sqrt(x[i]) : -x[i], i < 12 | i % 2 == 0;"),
                     {"x": x})
    expected = np.where(x > 0, np.sqrt(np.abs(x)), -x)
    expected[1::2] = 0.0
    np.testing.assert_allclose(out["y"], expected, rtol=1e-15)


def test_errors_match_the_scalar_engine():
    """An int division by zero on an evaluated iteration is the reference's diagnostic;
    on an iteration the condition skips it is nothing."""
    n = np.array([4, 0, 2])
    text = op("n: int[3];", "y: int[3];", "y[i] = 12 / n[i], i < 3;")
    scalar, vector, _ = run_both(Example(text, {"n": n}))
    assert isinstance(scalar, str) and scalar == vector
    guarded = op("n: int[3];", "y: int[3];", "y[i] = 12 / n[i], i < 3 | n[i] != 0;")
    out = vectorised(guarded, {"n": n})
    assert list(out["y"]) == [3, 0, 6]


def test_int_overflow_defers_to_the_scalar_engine():
    """Intermediate ints are unbounded in the definition: (a * a) / a is a, even past int64."""
    a = np.array([2 ** 40, 3])
    text = op("a: int[2];", "y: int[2];", "y[i] = (a[i] * a[i]) / a[i], i < 2;")
    scalar, vector, used = run_both(Example(text, {"a": a}))
    assert list(scalar["y"]) == list(vector["y"]) == [2 ** 40, 3]
    assert "compiled" in used[0]


def test_chunking_matches_one_box():
    a, b = RNG.standard_normal((8, 9)), RNG.standard_normal((9, 10))
    text = op("a: real[8, 9]; b: real[9, 10];", "y: real[8, 10];",
              "y[i, j] += a[i, k] * b[k, j], i < 8, j < 10, k < 9;")
    whole = run_vector_on(text, {"a": a, "b": b}, 2 ** 31)
    chunked = run_vector_on(text, {"a": a, "b": b}, 100)
    np.testing.assert_allclose(chunked, whole, rtol=1e-12)
    np.testing.assert_allclose(whole, a @ b, rtol=1e-12)


def run_vector_on(text: str, inputs: dict, max_memory: int) -> np.ndarray:
    engine = engines.make_engine("vector", max_memory=max_memory)
    return run_operator("f", inputs, file=write(text), engine=engine)["y"]


def test_auto_follows_its_cost_model():  # the cases: tests/lower/test_engine_choice.py
    used: list[str] = []
    auto = engines.make_engine("auto", log=lambda inst, how: used.append(how))
    text = op("x: real[n];", "y: real[n];", "y[i] = x[i] + 1.0, i < n;")
    run_operator("f", {"x": np.zeros(10_000)}, file=write(text), engine=auto)
    assert used[0].startswith("auto chose vector (estimated ") and used[0].endswith(": vector")


def test_run_vector_reports_fallbacks():
    reports: list = []
    text = op("a: int[2];", "y: int[2];", "y[i] = (a[i] * a[i]) / a[i], i < 2;")
    def capture(inst, inputs, profile):
        return run_vector(inst, inputs, profile, reports=reports)

    run_operator("f", {"a": np.array([2 ** 40, 3])}, file=write(text), engine=capture)
    assert [r.engine for r in reports] == ["compiled"] and "int64" in reports[0].reason


# ---------------------------------------------------------------------- every corpus formula



@pytest.mark.parametrize("path, definition", LOWERED,
                         ids=[f"{p.stem}:{d.name}" for p, d in LOWERED])
def test_every_corpus_formula_agrees(path, definition):
    """Every @lower definition of the spec's corpus, on random inputs: the vector engine gives
    the reference's outputs (or its diagnostic)."""
    from refinterp.language.instance import instantiate
    from refinterp.lower.compiled.engine import run_compiled

    for seed in range(3):
        inv, arrays = invocation(definition, seed)
        results = []
        for run in (lambda i, a: run_compiled(i, a), lambda i, a: run_vector(i, a)):
            try:
                instance = instantiate(definition, inv)
                copies = {k: [x.copy() for x in v] if isinstance(v, list) else v.copy()
                          for k, v in arrays.items()}
                results.append(("ok", run(instance, copies)))
            except Diagnostic as diag:
                results.append(("error", diag.message))
        (scalar_kind, scalar), (vector_kind, vector) = results
        assert scalar_kind == vector_kind, (scalar, vector)
        if scalar_kind == "error":
            assert scalar == vector
            continue
        for name in scalar:
            assert engines.difference(scalar[name], vector[name], name) is None, \
                engines.difference(scalar[name], vector[name], name)


def test_grouped_output_positions_are_a_strided_view():
    """`y[g * m + i, ...]` (grouped convolution's output channel) addresses each cell once:
    a strided view, so the contraction stays an einsum."""
    x, w = RNG.standard_normal((4, 6)), RNG.standard_normal((4, 3, 2))
    text = op("x: real[4, 6]; w: real[4, 3, 2];", "y: real[4, 3];",
              "y[g * 2 + i, j] += w[g * 2 + i, j, k] * x[g * 2 + k, |j + k|], "
              "g < 2, i < 2, j < 3, k < 2;")
    out = vectorised(text, {"x": x, "w": w})
    expected = np.zeros((4, 3))
    for g in range(2):
        for i in range(2):
            for j in range(3):
                for k in range(2):
                    expected[g * 2 + i, j] += w[g * 2 + i, j, k] * x[g * 2 + k, j + k]
    # (j + k < 6 always: the guard never skips here)
    np.testing.assert_allclose(out["y"], expected, rtol=1e-12)


def test_int_infinity_values_fall_back():
    """int(inf) has no int64 form: the formula runs on the compiled engine (found by the
    long equality run)."""
    text = op("x: real[1]; n: int[1];", "y: int[1];", "y[i] = int(x[0]), i < 1;",
              "y[i] += n[0], i < 1;")
    check_equal(Example(text, {"x": np.array([np.inf]), "n": np.array([3])}))


def test_a_fold_with_an_initial_value_starts_from_it_on_both_engines() -> None:
    """§2.4 `x op .. op init` is ((init op x0) op x1) ...: the vector engine follows the same
    rule as the reference (the order changes the rounding of a sum)."""
    import refinterp.api as api

    program = api.load_source("""
operator f {
    @input { x: real[n, 3]; }
    @output { y: real[n]; z: real[n]; }
    @lower {
        y[i] = x[i, :] + .. + -1e16, i < n;
        z[i] = x[i, :] << .. << 5.0, i < n;
    }
}
""")
    x = np.array([[1e16, 1.0, 1.0], [3.0, 7.0, 9.0]])
    expected_y = [((-1e16 + a) + b) + c for a, b, c in x.tolist()]  # from init, left to right
    expected_z = [min(5.0, *row) for row in x.tolist()]
    for engine in ("scalar", "vector"):
        outputs = api.evaluate(program, inputs={"x": x}, engine=engine).outputs
        assert outputs["y"].tolist() == expected_y and expected_y[0] == 2.0
        assert outputs["z"].tolist() == expected_z


def _in_order(values, start=0.0):
    """A plain Python sum, left to right, as the reference adds."""
    total = start
    for v in values:
        total += v
    return total


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_cumsum_adds_in_iteration_order(engine):
    from refinterp import api
    x = [1.0, 1e20, -1e20, 0.5]
    expected = [_in_order(x[:k + 1]) for k in range(len(x))]
    out = api.evaluate("math.cumsum", inputs={"input": np.array(x)}, attributes={"axis": 0},
                       engine=engine).outputs["output"]
    assert out.tolist() == expected  # [1, 1e20, 0, 0.5], not a pairwise or BLAS order


@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("x", [[1e20, 1.0, -1e20], [1.0, 1e20, -1e20, 0.5, 3.0],
                               [0.1] * 1000 + [1e20, -1e20]])
def test_sum_reduce_adds_in_iteration_order(engine, x):
    from refinterp import api
    out = api.evaluate("math.sum_reduce", inputs={"input": np.array(x)},
                       attributes={"axes": [0]}, engine=engine).outputs["output"]
    assert out.tolist() == [_in_order(x)]


@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_concat_with_an_empty_item(engine):
    from refinterp import api
    out = api.evaluate("layout.concat", inputs={"inputs": [np.zeros((0, 3)), np.ones((2, 3))]},
                       attributes={"axis": 0}, engine=engine).outputs["output"]
    assert out.shape == (2, 3) and out.tolist() == [[1.0] * 3] * 2
