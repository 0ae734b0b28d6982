"""The compiled engine's generated code is compiled once per instance (docs/performance.md, bullet
"Engine choice"): `compiled.engine.compile_formula` keeps the kernel on the
instance, keyed by the formula, the profile and the layout of the arrays (never their values),
and makes only the closure that reads them per call. A rerun must compute the same function,
report its errors as before (with the values of this run), and `auto`'s cost model counts no
second generation.

Expected values come from NumPy code in this file.
"""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api
from refinterp.core.cache import BoundedCache
from refinterp.language import instance as instance_module
from refinterp.lower import engines
from refinterp.lower.compiled import engine as compiled_engine

GATHER = """operator g {
    @input { x: real[5]; k: int[3]; }
    @output { y: real[3]; }
    @lower { y[i] = x[k[i]], i < 3; }
}
"""


@pytest.fixture
def compiles(monkeypatch) -> list[str]:
    """The names of the operators whose formulas are compiled from now on, counted from an
    empty instance cache (earlier tests may have compiled the same instances)."""
    monkeypatch.setattr(instance_module, "_instances",
                        BoundedCache(instance_module.INSTANCE_CACHE_SIZE))
    made: list[str] = []
    original = compiled_engine._compiled

    def counting(instance, formula, arrays, profile):
        made.append(instance.definition.name)
        return original(instance, formula, arrays, profile)

    monkeypatch.setattr(compiled_engine, "_compiled", counting)
    return made


def test_a_rerun_of_an_instance_compiles_nothing(compiles) -> None:
    rng = np.random.default_rng(5)
    for _ in range(3):
        a, b = rng.standard_normal((4, 6)), rng.standard_normal((6, 3))
        z = api.evaluate("linalg.matmul", inputs={"A": a, "B": b},
                         engine="compiled").outputs["Z"]
        np.testing.assert_allclose(z, a @ b, rtol=1e-12)
    assert compiles == ["matmul", "matmul"]  # its two formulas, once


def test_another_layout_or_profile_compiles_again(compiles) -> None:
    x = np.arange(6.0).reshape(2, 3)
    api.evaluate("math.add", inputs={"x": x, "y": x}, engine="compiled")
    api.evaluate("math.add", inputs={"x": x.T.copy(), "y": x.T.copy()}, engine="compiled")
    api.evaluate("math.add", inputs={"x": x, "y": x}, engine="compiled", profile="khronos")
    assert len(compiles) == 3


def test_errors_of_a_cached_kernel_name_this_runs_values(tmp_path) -> None:
    (tmp_path / "g.sknd").write_text(GATHER)
    program = api.load(tmp_path / "g.sknd")
    x = np.arange(5.0) * 10
    out = api.evaluate(program, op="g", inputs={"x": x, "k": np.array([4, 0, 2])},
                       engine="compiled").outputs["y"]
    np.testing.assert_array_equal(out, [40.0, 0.0, 20.0])
    with pytest.raises(api.Diagnostic) as caught:
        api.evaluate(program, op="g", inputs={"x": x, "k": np.array([1, 7, 2])},
                     engine="compiled")
    text = str(caught.value)
    assert "out of range" in text and "i = 1" in text.replace(": ", " = ")
    out = api.evaluate(program, op="g", inputs={"x": x, "k": np.array([3, 3, 1])},
                       engine="compiled").outputs["y"]
    np.testing.assert_array_equal(out, [30.0, 30.0, 10.0])


def test_auto_chooses_the_same_engine_whether_or_not_the_code_was_made() -> None:
    """The estimate always counts the code's generation (COMPILED_FIXED_US), even for a formula
    an earlier run compiled: the engine `auto` picks — and so the bits a run gives — never
    depend on what ran before in the process (a suite's frozen bytes must not depend on the
    order its cases were built in; lower/engines.py docstring)."""
    x = np.ones((2, 3))
    captured = []

    def capture(instance, inputs, profile):
        captured.append((instance, inputs, engines.choose(instance, inputs)))
        return engines.make_engine("compiled")(instance, inputs, profile)

    api.evaluate("math.add", inputs={"x": x, "y": x}, engine=capture)
    api.evaluate("math.add", inputs={"x": x, "y": x}, engine=capture)
    (instance, inputs, before), (same, _, after) = captured
    assert same is instance  # the instance (and its compiled kernel) was kept
    assert before == after == engines.choose(instance, inputs)
    assert after.compiled_us == pytest.approx(
        engines.COMPILED_FIXED_US + engines.COMPILED_ITERATION_US * 6)


def test_the_kept_kernel_keeps_no_array_of_its_run() -> None:
    import gc
    import weakref

    x = np.ones((5, 6))
    alive = weakref.ref(x)
    api.evaluate("math.add", inputs={"x": x, "y": x}, engine="compiled")
    del x
    gc.collect()
    assert alive() is None
