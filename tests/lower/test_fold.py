"""Partial evaluation (refinterp.lower.compiled.fold) lets the compiled engine compile the
standard library's own rank-polymorphic, configurable formulas, with results bit-identical
to the reference."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api
from refinterp.lower.compiled import engine as compiled_engine
from refinterp.lower.compiled.engine import compile_formula

RNG = np.random.default_rng(7)

CASES = [
    ("linalg.matmul", {"A": RNG.standard_normal((3, 4)), "B": RNG.standard_normal((4, 5))}, {}),
    ("linalg.matmul", {"A": RNG.standard_normal((2, 4, 3)), "B": RNG.standard_normal((4, 5)),
                       "C": RNG.standard_normal((3, 5))}, {"transA": True}),
    ("linalg.matmul", {"A": RNG.standard_normal((2, 1, 3, 4)),
                       "B": RNG.standard_normal((3, 5, 4))}, {"transB": True}),
    ("math.add", {"x": RNG.standard_normal((3, 4)), "y": RNG.standard_normal((3, 4))}, {}),
    ("math.add", {"x": RNG.standard_normal((2, 1, 4)), "y": RNG.standard_normal((3, 1))}, {}),
    ("math.add", {"x": RNG.standard_normal((2, 3)), "y": RNG.standard_normal((2,))},
     {"rhs_align": 0}),
    ("nn.relu", {"x": RNG.standard_normal((3, 4))}, {}),
    ("nn.relu", {"x": RNG.standard_normal((2, 3, 2))}, {"alpha": 0.25, "max": 0.5}),
    ("nn.conv", {"input": RNG.standard_normal((1, 2, 5, 5)),
                 "filter": RNG.standard_normal((3, 2, 3, 3))}, {}),
    ("nn.conv", {"input": RNG.standard_normal((2, 4, 6)),
                 "filter": RNG.standard_normal((4, 2, 3)), "bias": RNG.standard_normal(4)},
     {"groups": 2, "stride": [2], "padding": [1, 1]}),
    # substitution `i[axes] <- ...` (pooling and the layout family)
    ("nn.max_pool", {"input": RNG.standard_normal((1, 2, 6, 5))},
     {"size": [3, 2], "stride": [2, 1], "padding": [1, 1, 0, 1]}),
    ("nn.max_pool", {"input": RNG.standard_normal((2, 7))},
     {"axes": [1], "size": [3], "dilation": [2]}),
    ("nn.sum_pool", {"input": RNG.standard_normal((1, 1, 4, 4))},
     {"size": [3, 3], "padding": [1, 1, 1, 1]}),
    ("layout.slice", {"input": RNG.standard_normal((4, 5))},
     {"axes": [1], "begin": [1], "end": [4]}),
    ("layout.squeeze", {"input": RNG.standard_normal((4, 1, 5))}, {"axes": [1]}),
    ("layout.unsqueeze", {"input": RNG.standard_normal((4, 5))}, {"axes": [1]}),
    ("layout.tile", {"input": RNG.standard_normal((2, 3))}, {"repeats": [2, 2]}),
]


def _run(name, inputs, attributes, compile_formula):
    original = compiled_engine.compile_formula
    compiled_engine.compile_formula = compile_formula
    try:
        return api.evaluate(name, inputs=inputs, attributes=attributes,
                            engine="scalar").outputs
    finally:
        compiled_engine.compile_formula = original


@pytest.mark.parametrize("name, inputs, attributes", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_codegen_compiles_folded_stdlib_formulas(name, inputs, attributes):
    compiled: list[bool] = []

    def recording(*args):
        made = compile_formula(*args)
        compiled.append(made is not None)
        return made

    fast = _run(name, inputs, attributes, recording)
    assert compiled and all(compiled), f"{name}: codegen refused a formula ({compiled})"
    closures = _run(name, inputs, attributes, lambda *args: None)
    assert set(fast) == set(closures)
    for output in fast:
        assert fast[output].dtype == closures[output].dtype
        assert np.array_equal(fast[output], closures[output]), f"{name}: {output} differs"


def test_verbose_names_each_formulas_path_and_why() -> None:
    """The compiled engine's log names, per formula, generated code (after folding where
    needed) or the reference with the construct that kept it there."""
    from refinterp import api
    import numpy as np

    logged: list[str] = []
    api.evaluate("linalg.matmul", inputs={"A": np.ones((2, 3)), "B": np.ones((3, 2))},
                 engine="scalar", hooks=api.Hooks(log=lambda instance, how: logged.append(how)))
    assert logged and logged[0].startswith("compiled; formula at line ")
    assert "generated code after folding" in logged[0] and "reference" not in logged[0]
    logged.clear()
    api.evaluate("nn.max_pool", inputs={"input": np.ones((1, 1, 4, 4))},
                 attributes={"size": [3, 3]}, engine="scalar",
                 hooks=api.Hooks(log=lambda instance, how: logged.append(how)))
    assert "generated code after folding" in logged[0]  # substitution folds
    logged.clear()
    program = api.load_source("""operator f {
    @input { x: real[n]; }
    @output { ys: real[n]..(2); }
    @lower { ys[i] += x[i], i < n; }
}""")  # a packed assignment that updates stays on the reference
    api.evaluate(program, inputs={"x": np.ones(3)}, engine="scalar",
                 hooks=api.Hooks(log=lambda instance, how: logged.append(how)))
    assert "reference (not generated: packed update; folded, still not generated: " \
           "packed update)" in logged[0]
