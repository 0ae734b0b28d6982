"""Spec §2.12: every example of "Defining lower level computation", run by the reference
and compared with independent NumPy code."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import Invocation, TensorType, instantiate
from refinterp.lower.reference import run_reference
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_module
from testsupport.spec_programs import MATMUL_Z

rng = np.random.default_rng(7)


def run(text: str, inputs: dict, attributes: dict | None = None, name: str | None = None):
    definitions = parse_module(SourceFile("<t>", text)).module.definitions
    definition = next(d for d in definitions if name in (None, d.name))

    def info(value):
        if isinstance(value, list):
            return tuple(info(v) for v in value)
        kind = "real" if value.dtype.kind == "f" else "int" if value.dtype.kind in "iu" else "bool"
        return TensorType(kind, value.shape)

    instance = instantiate(definition, Invocation(attributes or {},
                                                  {k: info(v) for k, v in inputs.items()}))
    return run_reference(instance, inputs)


MATMUL = """operator matmul {
  @input { A: real[m,k]; B: real[k,n]; }
  @output { C: real[m,n]; }
  @lower { C[i,j] += A[i,l] * B[l,j], i < m, l < k, j < n; }
}"""


def test_matmul() -> None:
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(run(MATMUL, {"A": a, "B": b})["C"], a @ b, rtol=1e-12)


def test_matmul_with_optional_initial_value_given_and_omitted() -> None:
    a, b, z = rng.standard_normal((2, 3)), rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    np.testing.assert_allclose(run(MATMUL_Z, {"A": a, "B": b, "Z": z})["C"], z + a @ b,
                               rtol=1e-12)
    np.testing.assert_allclose(run(MATMUL_Z, {"A": a, "B": b})["C"], a @ b, rtol=1e-12)


ADD_TO_ALL_ITEMS = """operator add_to_all {
  @input { xs: real[n,m]..(k); z: real[n,m]; }
  @output { ys: real[n,m]..(k); }
  @lower { ys[ki][ni,mi] = xs[ki][ni,mi] + z[ni,mi], ki < k, ni < n, mi < m; }
}"""
ADD_TO_ALL_PACKED = ADD_TO_ALL_ITEMS.replace(
    "ys[ki][ni,mi] = xs[ki][ni,mi] + z[ni,mi], ki < k, ni < n, mi < m;",
    "ys[ni,mi] = xs[ni,mi] + z[ni,mi], ni < n, mi < m;")


@pytest.mark.parametrize("text", [ADD_TO_ALL_ITEMS, ADD_TO_ALL_PACKED])
def test_add_to_all_both_forms(text: str) -> None:
    xs = [rng.standard_normal((2, 3)) for _ in range(3)]
    z = rng.standard_normal((2, 3))
    ys = run(text, {"xs": xs, "z": z})["ys"]
    for x, y in zip(xs, ys):
        np.testing.assert_array_equal(y, x + z)


MAX_IDX = """operator max_idx {
  @input { x: real[n]; }
  @output { idx: int[]; }
  @lower {
    idx[] = 0;
    idx[] := i, i < n | x[i,] > x[idx[],];
  }
}"""


def test_max_idx_takes_the_first_maximum() -> None:
    x = np.array([1.0, 5.0, 2.0, 5.0])
    assert run(MAX_IDX, {"x": x})["idx"] == int(np.argmax(x)) == 1


MAX_IDX_2D = """operator max_idx_2d {
  @input { x: real[m,n]; }
  @output { idx: int[]..(2); }
  @lower {
    idx[] = 0;
    idx[] := [i,j], i < m, j < n | x[i,j] > x[idx[]..];
  }
}"""


def test_max_idx_2d_with_ties_updates_the_pack_atomically() -> None:
    # The pack idx is tested and assigned as one unit; row-major order keeps the first of ties.
    x = np.array([[1.0, 7.0, 3.0], [7.0, 0.0, 7.0]])
    idx = run(MAX_IDX_2D, {"x": x})["idx"]
    assert (int(idx[0]), int(idx[1])) == np.unravel_index(np.argmax(x), x.shape) == (0, 1)


INTERMEDIATE = """operator f {
  @input { x: real[s..]; }
  @output { y: real[s..]; }
  @lower { LOCALS y[i..] = z + z * `sin`(x[i..]), i < s; }
}"""


@pytest.mark.parametrize("locals_", ["z = x[i..] * x[i..],", "with z = x[i..] * x[i..]:"])
def test_intermediate_values_both_syntaxes(locals_: str) -> None:
    x = rng.standard_normal((2, 3))
    y = run(INTERMEDIATE.replace("LOCALS", locals_), {"x": x})["y"]
    np.testing.assert_allclose(y, x * x + x * x * np.sin(x), rtol=1e-12)


SMOOTHING = """operator smooth {
  @attrib { w: int; }
  @input { x: real[s]; }
  @output { y: real[s]; }
  @lower { y[i] += x[|i + j - w/2|] / real(w), i < s, j < w; }
}"""


def test_smoothing_window_skips_out_of_range_entries() -> None:
    x = rng.standard_normal(7)
    w = 3
    expected = np.zeros(7)
    for i in range(7):
        for j in range(w):
            k = i + j - w // 2
            if 0 <= k < 7:
                expected[i] += x[k] / w
    np.testing.assert_allclose(run(SMOOTHING, {"x": x}, {"w": w})["y"], expected, rtol=1e-12)


REPLICATE = """operator replicate {
  @attrib { n: int; }
  @input { x: real[s]; }
  @output { y: real[s + 2 * n]; }
  @lower { y[i] = x[|i - n <> 0 : s - 1|], i < s + 2 * n; }
}"""


def test_replicate_remap() -> None:
    x = rng.standard_normal(4)
    np.testing.assert_array_equal(run(REPLICATE, {"x": x}, {"n": 2})["y"],
                                  np.pad(x, 2, mode="edge"))


def test_unguarded_out_of_range_access_is_a_diagnostic() -> None:
    text = SMOOTHING.replace("x[|i + j - w/2|]", "x[i + j - w/2]")
    with pytest.raises(Diagnostic) as info:
        run(text, {"x": np.zeros(5)}, {"w": 3})
    assert "out of range for 'x' of shape [5]" in info.value.message
    assert info.value.notes == ["at i = 0, j = 0"]


def test_int_results_outside_int64_are_a_diagnostic() -> None:
    text = ("operator f { @input { x: int[n]; } @output { y: int[]; } "
            "@lower { y[] *= x[i], i < n; } }")
    assert run(text, {"x": np.array([2, 3, 4])})["y"] == 24
    with pytest.raises(Diagnostic, match="does not fit in int64"):
        run(text, {"x": np.full(3, 2 ** 31, dtype=np.int64)})


def test_min_max_implicit_start() -> None:
    text = ("operator f { @input { x: real[n]; } @output { lo: real[]; hi: real[]; } "
            "@lower { lo[] <= x[i], i < n; hi[] >?= x[i], i < n; } }")
    x = rng.standard_normal(6)
    out = run(text, {"x": x})
    assert out["lo"] == x.min() and out["hi"] == x.max()


def test_unrolled_pack_index_is_the_outermost_loop() -> None:
    # §2.12 Loop unrolling: "as if the unrolled index would be the outermost loop".
    text = ADD_TO_ALL_ITEMS.replace(
        "ys[ki][ni,mi] = xs[ki][ni,mi] + z[ni,mi], ki < k, ni < n, mi < m;",
        "unroll..(ki -> k) ys[ki][ni,mi] = xs[ki][ni,mi] + z[ni,mi], ni < n, mi < m;")
    xs = [rng.standard_normal((2, 2)) for _ in range(2)]
    z = rng.standard_normal((2, 2))
    for x, y in zip(xs, run(text, {"xs": xs, "z": z})["ys"]):
        np.testing.assert_array_equal(y, x + z)


def test_full_range_index_reads_and_writes_a_dimension() -> None:
    # §2.4 / Khronos: `x[i.., :]` is the pack of values along the ':' dimension; on the left,
    # `y[:, k] = pack` writes one item per position. Khronos gather_nd reads
    # `indices[bi.., zi.., :]..` to get a whole index vector.
    text = ("operator f { @input { x: real[n, m]; } @output { y: real[m, n]; s: real[n]; } "
            "@lower { y[:, i] = x[i, :], i < n; s[i] = x[i, :] + .., i < n; } }")
    x = rng.standard_normal((3, 4))
    out = run(text, {"x": x})
    np.testing.assert_array_equal(out["y"], x.T)
    np.testing.assert_allclose(out["s"], x.sum(axis=1), rtol=1e-12)


def test_data_dependent_indices() -> None:
    # `data[index[i..]]`-style gathering (§4.1.6): indices read from a tensor.
    text = ("operator g { @input { data: real[n]; index: int[k]; } @output { y: real[k]; } "
            "@lower { y[i] = data[index[i]], i < k; } }")
    data, index = rng.standard_normal(5), np.array([4, 0, 2, 2])
    np.testing.assert_array_equal(run(text, {"data": data, "index": index})["y"], data[index])
    with pytest.raises(Diagnostic, match="out of range for 'data'"):
        run(text, {"data": data, "index": np.array([5])})


@pytest.mark.parametrize("fold, expected", [
    # §2.4 Folding inside a formula: the same rules as at compile time.
    ("x[i, :] < ..", lambda row: bool(np.all(row[:-1] < row[1:]))),
    ("x[i, :] >> ..", lambda row: float(row.max())),
    ("(x[i, :] > 0.0) && ..", lambda row: bool(np.all(row > 0.0))),
    ("(x[i, :] > 0.0) || ..", lambda row: bool(np.any(row > 0.0))),
])
def test_folds_in_formulas_follow_the_compile_time_rules(fold: str, expected) -> None:
    kind = "bool" if any(op in fold for op in ("<", "&&", "||")) else "real"
    text = (f"operator f {{ @input {{ x: real[n, m]; }} @output {{ y: {kind}[n]; }} "
            f"@lower {{ y[i] = {fold}, i < n; }} }}")
    x = np.array([[1.0, 2.0, 3.0], [3.0, -1.0, 2.0]])
    out = run(text, {"x": x})["y"]
    assert [out[i].item() for i in range(2)] == [expected(x[i]) for i in range(2)]


def test_empty_real_sum_in_a_formula_is_real_zero() -> None:
    text = ("operator f { @input { x: real[n, m]; } @output { y: real[n]; } "
            "@lower { y[i] = x[i, :] + .., i < n; } }")
    np.testing.assert_array_equal(run(text, {"x": np.zeros((2, 0))})["y"], np.zeros(2))


def test_bounded_index_outside_an_index_is_a_diagnostic() -> None:
    text = ("operator f { @input { x: real[n]; } @output { y: real[n]; } "
            "@lower { y[i] = real(|i| + 1), i < n; } }")
    with pytest.raises(Diagnostic, match="may only stand where a tensor is indexed"):
        run(text, {"x": np.zeros(2)})


def test_a_pack_index_without_dots_maps_the_access() -> None:
    # §2.12: "The indices themselves may be packed (denoted by ..)"; §2.4: "Arguments of unary
    # and binary operators may be packs, in which case the operations are taken element-wise,
    # and the result is also a pack". So only `p..` spreads a pack over several dimensions; an
    # index pack without `..` maps the access over its items. The spec's own gather_nd
    # (§4.1.6) relies on it: in `data[bi.., indices[bi.., zi.., di].., ti..]` with
    # `di = [0:d]`, `indices[bi.., zi.., di]` is the pack of the d components of one index
    # vector, which `..` then spreads over the d dimensions of `data`.
    from pathlib import Path

    text = (Path(__file__).parent / "corpus" / "4_1_6_data_indexing_operators_03.sknd"
            ).read_text()
    data = rng.standard_normal((3, 4, 2))
    indices = np.array([[[2, 1], [0, 3], [1, 0]], [[1, 1], [2, 0], [0, 0]]])  # z = (2, 3), d = 2
    out = run(text, {"data": data, "indices": indices})["output"]
    np.testing.assert_array_equal(out, data[indices[..., 0], indices[..., 1]])
    # batch_dims = 1, d = 1: output[b, z, :] = data[b, indices[b, z, 0], :]
    data = rng.standard_normal((2, 3, 4))
    indices = np.array([[[2], [0], [1]], [[1], [1], [0]]])
    out = run(text, {"data": data, "indices": indices}, {"batch_dims": 1})["output"]
    np.testing.assert_array_equal(out, data[np.arange(2)[:, None], indices[..., 0]])
