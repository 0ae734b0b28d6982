"""`--max-lower-iterations` counts what the engine that runs a formula costs (docs/limits.md,
"@lower iterations, counted by engine"): an iteration of a formula the vector engine runs as
a contraction counts a tenth (CONTRACTION_DISCOUNT, written out here as 10), every other
iteration one, so a convolution the vector engine runs in seconds passes the default while
the reference and compiled engines, and any formula run one element at a time, keep the
limit's guarantee: a diagnostic naming it before the formula runs."""

from __future__ import annotations

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.core.diagnostics import Diagnostic

PROGRAM = """
operator matmul {
    @input { a: real[m, k]; b: real[k, n]; }
    @output { c: real[m, n]; }
    @lower { c[i, j] += a[i, l] * b[l, j], i < m, j < n, l < k; }
}

operator scale {
    @input { a: real[m, k]; b: real[k, n]; }
    @output { c: real[m, n]; }
    @lower { c[i, j] += a[i, l] + b[l, j], i < m, j < n, l < k; }
}
"""


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "main.sknd"
    path.write_text(PROGRAM)
    return path


def run(program, op: str, engine: str, n: int, limit: int) -> ri.Run:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    return ri.evaluate(program, op=op, inputs={"a": a, "b": b}, engine=engine,
                       limits=ri.Limits(max_lower_iterations=limit))


@pytest.mark.parametrize("engine", ["vector", "auto"])
def test_a_contraction_on_the_vector_engine_counts_a_tenth(program, engine):
    # 20^3 = 8,000 iterations, counted 800 against a limit of 1,000: runs, exactly
    result = run(program, "matmul", engine, 20, 1000)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((20, 20)), rng.standard_normal((20, 20))
    np.testing.assert_allclose(result.outputs["c"], a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_the_scalar_engines_count_every_iteration(program, engine):
    with pytest.raises(Diagnostic) as caught:
        run(program, "matmul", engine, 20, 1000)
    assert caught.value.code == "E1201"
    assert "8000 times" in caught.value.message
    assert all("contraction" not in note for note in caught.value.notes)


@pytest.mark.parametrize("engine", ["vector", "auto"])
def test_a_contraction_above_ten_times_the_limit_is_refused(program, engine):
    # 30^3 = 27,000 iterations count 2,700 > 1,000
    with pytest.raises(Diagnostic) as caught:
        run(program, "matmul", engine, 30, 1000)
    assert caught.value.code == "E1201"
    assert "it counts 2700 as a contraction on the vector engine" in caught.value.notes
    assert any("--max-lower-iterations" in note for note in caught.value.notes)


@pytest.mark.parametrize("engine", ["vector", "auto", "reference"])
def test_a_formula_that_is_no_contraction_counts_every_iteration(program, engine):
    # a sum of accesses, not a product: the vector engine's element-wise path
    with pytest.raises(Diagnostic) as caught:
        run(program, "scale", engine, 20, 1000)
    assert caught.value.code == "E1201"
    assert all("contraction" not in note for note in caught.value.notes)


def test_a_custom_engine_counts_every_iteration(program):
    from refinterp.lower.engines import ENGINES
    with pytest.raises(Diagnostic) as caught:
        rng = np.random.default_rng(1)
        ri.evaluate(program, op="matmul", engine=lambda *args: ENGINES["vector"](*args),
                    inputs={"a": rng.standard_normal((20, 20)),
                            "b": rng.standard_normal((20, 20))},
                    limits=ri.Limits(max_lower_iterations=1000))
    assert caught.value.code == "E1201"


def test_a_vgg_sized_convolution_is_checked_not_run_on_the_reference(capsys):
    # VGG-19's first 3x3 convolution over 224x224 (1.85e9 iterations) passes the default on the
    # vector engine (not run here: seconds); on the reference it is refused before running
    from refinterp.cli import main
    status = main(["eval", "--op", "nn.conv", "--random", "input=real[1,64,224,224]",
                   "--random", "filter=real[64,64,3,3]", "--attrib", "padding=[1,1,1,1]",
                   "--engine", "reference"])
    assert status == 1
    assert "E1201" in capsys.readouterr().err


def test_the_default_admits_a_vgg_sized_convolution_on_the_vector_engine():
    # checked without running it: the cost the limit sees for the formula
    from refinterp.language.instance import instantiate_cached
    from refinterp.lower.common import lowering_plan
    from refinterp.lower.engines import ENGINES, lower_cost
    from refinterp.language.invocation import Invocation, TensorType
    found = ri.resolve("nn.conv")
    invocation = Invocation({"padding": (1, 1, 1, 1)},
                            {"input": TensorType("real", (1, 64, 224, 224)),
                             "filter": TensorType("real", (64, 64, 3, 3))}, (), ri._profile("spec"))
    instance = instantiate_cached(found.definition, invocation)
    inputs = {"input": np.empty(0), "filter": np.empty(0)}
    (formula,) = [f for f in lowering_plan(instance).formulas if f.iterations() > 10 ** 9]
    assert formula.iterations() == 64 * 224 * 224 * 64 * 9
    for engine in ("vector", "auto"):
        assert lower_cost(ENGINES[engine], instance, formula, inputs) == \
            -(-formula.iterations() // 10) <= ri.Limits().max_lower_iterations
    for engine in ("reference", "compiled"):
        assert lower_cost(ENGINES[engine], instance, formula, inputs) == formula.iterations()
