"""The compiled engine on the spec's own conv and deconv (§4.4.1), against independent NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.language.instance import Invocation, TensorType, instantiate
from refinterp.lower.compiled.engine import run_compiled
from refinterp.lower.reference import run_reference
from refinterp.language.modules import Loader
from testsupport.paths import REPO_ROOT

CORPUS = REPO_ROOT / "spec_tests" / "corpus"
rng = np.random.default_rng(11)


def run(file: str, name: str, inputs: dict, attributes: dict | None = None) -> dict:
    tree = Loader().load(CORPUS / file).main.tree
    definition = next(d for d in tree.definitions if d.name == name)
    infos = {k: TensorType("real", v.shape) for k, v in inputs.items()}
    return run_compiled(instantiate(definition, Invocation(attributes or {}, infos)), inputs)


def test_conv_same_padding_stride_2_matches_numpy() -> None:
    x, f, bias = rng.standard_normal((1, 2, 7, 6)), rng.standard_normal((3, 2, 3, 3)), \
        rng.standard_normal(3)
    out = run("4_4_1_linear_operators_02.sknd", "conv", {"input": x, "filter": f, "bias": bias},
              {"stride": 2})["output"]
    # Independent reference from §4.4.1's formula with floor division (ceil_mode false):
    # paddings = (7 / 2 - 1) * 2 + 3 - 7 = 0 rows, (6 / 2 - 1) * 2 + 3 - 6 = 1 column; with
    # 'UPPER' alignment the offset is paddings / 2 = 0, so the extra column goes after.
    pad_rows, pad_cols = 0, 1
    padded = np.pad(x, ((0, 0), (0, 0), (pad_rows // 2, pad_rows - pad_rows // 2),
                        (pad_cols // 2, pad_cols - pad_cols // 2)))
    expected = np.zeros((1, 3, 3, 3))
    for n in range(3):
        for i in range(3):
            for j in range(3):
                window = padded[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3]
                expected[0, n, i, j] = np.sum(window * f[n]) + bias[n]
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_deconv_matches_scatter_reference() -> None:
    x, f = rng.standard_normal((1, 2, 5)), rng.standard_normal((2, 3, 3))
    out = run("4_4_1_linear_operators_03.sknd", "deconv", {"input": x, "filter": f})["output"]
    expected = np.zeros((1, 3, 5))
    for ci in range(2):
        for co in range(3):
            for i in range(5):
                for j in range(3):
                    o = i + j - 1  # stride 1, dilation 1, offset 1
                    if 0 <= o < 5:
                        expected[0, co, o] += x[0, ci, i] * f[ci, co, j]
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_error_note_shows_a_guarded_local_as_its_index() -> None:
    """The 'at …' note of a failing iteration prints loop-local values as the user wrote them:
    a local bound to a guarded index `|i + 1|` shows the index, not an internal wrapper."""
    import pytest

    from refinterp.core.diagnostics import Diagnostic
    from refinterp.core.source import SourceFile
    from refinterp.syntax import parse_module

    source = SourceFile("<test>", """operator f {
    @input { x: int[3]; }
    @output { y: int[3]; }
    @lower {
        j = |i + 1|, y[i] = 1 / x[j], i < 3;
    }
}
""")
    definition = parse_module(source).module.definitions[0]
    instance = instantiate(definition, Invocation({}, {"x": TensorType("int", (3,))}))
    for generated in (True, False):  # the generated kernel reruns the closures for the note
        with pytest.raises(Diagnostic) as caught:
            (run_compiled if generated else run_reference)(instance, {"x": np.array([1, 0, 2])})
        assert caught.value.notes == ["at i = 0, j = 1"]
        assert caught.value.message == "integer division by zero (1 / 0)"


def test_a_failing_constant_fails_only_in_an_iteration_that_computes_it() -> None:
    """`0 / 0` has no index in it, but it is still a per-iteration value: an iteration its
    condition skips does not compute it (found by the vector/scalar equality suite)."""
    import pytest

    from refinterp.core.diagnostics import Diagnostic
    from refinterp.core.source import SourceFile
    from refinterp.syntax import parse_module

    source = SourceFile("<test>", """operator f {
    @input { m: bool[2]; }
    @output { y: int[2]; }
    @lower {
        y[i] = 0 / 0, i < 2 | m[i];
    }
}
""")
    definition = parse_module(source).module.definitions[0]
    instance = instantiate(definition, Invocation({}, {"m": TensorType("bool", (2,))}))
    for generated in (True, False):
        run = run_compiled if generated else run_reference
        out = run(instance, {"m": np.array([False, False])})
        assert out["y"].tolist() == [0, 0]
        with pytest.raises(Diagnostic, match="division by zero") as caught:
            (run_compiled if generated else run_reference)(instance, {"m": np.array([False, True])})
        assert caught.value.notes == ["at i = 1"]


def test_a_fold_with_an_initial_value_starts_from_it_in_every_evaluator() -> None:
    """§2.4 `x op .. op init`: the fold of x starting from init, `((init op x0) op x1) ..`
    (`expr.fold_from`), at compile time, on the reference and in generated code alike. With
    reals the order shows in the rounding: from -1e16, adding 1e16, 1.0 and 1.0 gives 2.0;
    the items first, `((1e16 + 1.0) + 1.0) + -1e16`, would give 0.0 (each 1.0 is lost next to
    1e16). An empty x gives init, even for `<<`, whose plain fold of an empty pack is null."""
    from refinterp import api
    from refinterp.lower.compiled import engine as compiled_engine

    x, init = [1e16, 1.0, 1.0], -1e16
    from_init = init
    for item in x:  # computed independently: left to right from init
        from_init = from_init + item
    items_first = ((x[0] + x[1]) + x[2]) + init
    assert (from_init, items_first) == (2.0, 0.0)  # the order matters for these values

    assert api.evaluate_expression("x + .. + c", {"x": x, "c": init}) == from_init
    assert api.evaluate_expression("x * .. * 3.0", {"x": [0.1, 0.7]}) == (3.0 * 0.1) * 0.7
    assert api.evaluate_expression("x << .. << 7", {"x": []}) == 7

    program = api.load_source("""operator f {
    @input { x: real[n, 3]; c: real[n]; }
    @output { y: real[n]; z: real[n]; m: real[n]; }
    @lower {
        y[i] = x[i, :] + .. + c[i], i < n;
        z[i] = [x[i, 1], x[i, 2]] * .. * c[i], i < n;
        p = x[i, :], m[i] = p[3:] << .. << c[i], i < n;
    }
}""")
    inputs = {"x": np.array([x, [0.1, 0.7, 0.3]]), "c": np.array([init, 3.0])}
    original = compiled_engine.compile_formula
    results = []
    for generated in (True, False):
        if not generated:
            compiled_engine.compile_formula = lambda *args: None
        logged: list[str] = []
        try:
            results.append(api.evaluate(program, inputs=inputs, engine="scalar",
                                        hooks=api.Hooks(log=lambda instance, how:
                                                        logged.append(how))).outputs)
        finally:
            compiled_engine.compile_formula = original
        assert ("reference" in logged[0]) != generated, logged
    for outputs in results:
        assert outputs["y"].tolist() == [from_init, ((3.0 + 0.1) + 0.7) + 0.3]
        assert outputs["z"].tolist() == [(init * 1.0) * 1.0, (3.0 * 0.7) * 0.3]
        assert outputs["m"].tolist() == [init, 3.0]


def test_long_attribute_packs_are_typed_alike_and_fast() -> None:
    """A long pack of plain values (layout.constant's 25 600 values) is typed by one look per
    Python type: the same type as item by item, the same error for a mixed pack, the same
    diagnostic for a wrong item type."""
    import time

    import pytest

    from refinterp import api
    from refinterp.core.diagnostics import Diagnostic
    from refinterp.language.types import Type, type_of_value
    from refinterp.language.values import NULL

    def item_by_item(value: tuple) -> Type:
        items = {type_of_value(v) for v in value}
        if len(items) > 1:
            raise ValueError("a pack mixes types")
        return Type(items.pop().base if items else "any", packed=True)

    for pack in ((1.5, 2.0), (1, 2, 3), (True, False), ("a", "b"), (), (NULL,), (1, 2.0),
                 (True, 1), ((1, 2), (3, 4)), (np.float64(1.0), 2.0), (1.0,) * 1000):
        try:
            expected: object = item_by_item(pack)
        except ValueError as error:
            expected = str(error)
        try:
            got: object = type_of_value(pack)
        except ValueError as error:
            got = str(error)
        assert got == expected, pack

    values = [float(v) for v in range(160 * 160)]
    start = time.perf_counter()
    out = api.evaluate("layout.constant", attributes={"shape": [160, 160], "value": values},
                       engine="scalar").outputs["output"]
    assert out.ravel().tolist() == values and time.perf_counter() - start < 1.0
    with pytest.raises(Diagnostic) as caught:
        api.evaluate("quant.zero_point_linear_quantize", inputs={"input": np.ones((1, 2))},
                     attributes={"zero_point": [0.5, 1.5], "scale": [1.0, 1.0], "bits": 8})
    assert "attribute 'zero_point'" in caught.value.message


@pytest.mark.parametrize("engine", ["reference", "compiled", "vector", "auto"])
def test_a_pack_index_out_of_range_in_a_formula_is_a_diagnostic(tmp_path, engine):
    """§2.4: indexing a compile-time pack beyond its length is an error (E0501 at the index),
    on every engine — it was an internal IndexError; a mask must have the pack's length."""
    import numpy as np
    from refinterp.api import run_operator
    from refinterp.core.diagnostics import Diagnostic

    path = tmp_path / "f.sknd"
    path.write_text("operator f { @input { x: real[n]; } @output { y: real[n]; }\n"
                    "  @using { o = [1.0, 2.0]; }\n"
                    "  @lower { y[i] = x[i] + o[i], i < n; } }\n"
                    "operator g { @attrib { m: bool..(3) = [true, false, true]; }\n"
                    "  @input { x: real[n]; } @output { y: real[n]; }\n"
                    "  @using { o = [1.0, 2.0]; }\n"
                    "  @lower { y[i] = x[i] + o[m][0], i < n; } }\n")
    assert run_operator("f", {"x": np.zeros(2)}, file=path, engine=engine)["y"].tolist() == \
        [1.0, 2.0]
    with pytest.raises(Diagnostic) as error:
        run_operator("f", {"x": np.zeros(3)}, file=path, engine=engine)
    assert error.value.code == "E0501"
    assert "index 2 is out of range for a pack of length 2" in error.value.message
    assert error.value.span.line == 3
    with pytest.raises(Diagnostic) as error:
        run_operator("g", {"x": np.zeros(2)}, file=path, engine=engine)
    assert "length 3" in error.value.message and "length 2" in error.value.message
