"""The scalar engine on the spec's own conv and deconv (§4.4.1), against independent NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from refinterp.language.instance import Invocation, TensorInfo, instantiate
from refinterp.lower.scalar import run_lowering
from refinterp.language.modules import Loader

CORPUS = Path(__file__).resolve().parent.parent / "spec_tests" / "corpus"
rng = np.random.default_rng(11)


def run(file: str, name: str, inputs: dict, attributes: dict | None = None) -> dict:
    tree = Loader().load(CORPUS / file).main.tree
    definition = next(d for d in tree.definitions if d.name == name)
    infos = {k: TensorInfo("real", v.shape) for k, v in inputs.items()}
    return run_lowering(instantiate(definition, Invocation(attributes or {}, infos)), inputs)


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
    instance = instantiate(definition, Invocation({}, {"x": TensorInfo("int", (3,))}))
    for generated in (True, False):  # the generated kernel reruns the closures for the note
        with pytest.raises(Diagnostic) as caught:
            run_lowering(instance, {"x": np.array([1, 0, 2])}, generated=generated)
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
    instance = instantiate(definition, Invocation({}, {"m": TensorInfo("bool", (2,))}))
    for generated in (True, False):
        out = run_lowering(instance, {"m": np.array([False, False])}, generated=generated)
        assert out["y"].tolist() == [0, 0]
        with pytest.raises(Diagnostic, match="division by zero") as caught:
            run_lowering(instance, {"m": np.array([False, True])}, generated=generated)
        assert caught.value.notes == ["at i = 1"]
