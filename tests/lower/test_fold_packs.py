"""Packs of tensors in the compiled engine's generated code: items read as `xs[k][..]` (k a
loop index, a compile-time int or a tensor value), whole packs `xs[..]`, pack outputs
`ys[k][..] = ..` and packed assignments `ys[..] = ..`, and index packs picked at run time
(`i[j]`). Each is bit-identical to the reference, errs in the same runs with
the same diagnostic, and matches an independent NumPy computation."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api
from refinterp.core.diagnostics import Diagnostic
from refinterp.lower.compiled import engine as compiled
from refinterp.lower.compiled.engine import compile_formula

RNG = np.random.default_rng(5)


def _normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _ints(*shape: int) -> np.ndarray:
    return RNG.integers(-3, 4, shape)  # ties, for argmin_n / argmax_n


def _mask(*shape: int) -> np.ndarray:
    return RNG.random(shape) < 0.5


def _argmax_nd(x: np.ndarray, axes: list[int], pick=np.argmax) -> list[np.ndarray]:
    """The position along `axes` of the first extreme (row-major over those axes), one output
    per axis, the reduced axes kept as 1."""
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, kept + axes)
    flat = moved.reshape(moved.shape[:len(kept)] + (-1,))
    where = np.unravel_index(pick(flat, axis=-1), [x.shape[a] for a in axes])
    shape = [1 if d in axes else x.shape[d] for d in range(x.ndim)]
    return [np.asarray(w).reshape(shape) for w in where]


# (operator, inputs, attributes, the outputs by NumPy, as a list of arrays)
CASES = [
    ("math.sum_n", {"xs": [_normal(3, 4) for _ in range(3)]}, {},
     lambda xs: [xs[0] + xs[1] + xs[2]]),
    ("math.sum_n", {"xs": [_ints(5) for _ in range(2)]}, {}, lambda xs: [xs[0] + xs[1]]),
    ("math.prod_n", {"xs": [_normal(2, 3, 2) for _ in range(3)]}, {},
     lambda xs: [xs[0] * xs[1] * xs[2]]),
    ("math.min_n", {"xs": [_normal(4, 3) for _ in range(3)]}, {},
     lambda xs: [np.minimum(np.minimum(xs[0], xs[1]), xs[2])]),
    ("math.max_n", {"xs": [_ints(4, 3) for _ in range(2)]}, {},
     lambda xs: [np.maximum(xs[0], xs[1])]),
    ("math.any_n", {"xs": [_mask(3, 5) for _ in range(3)]}, {},
     lambda xs: [xs[0] | xs[1] | xs[2]]),
    ("math.all_n", {"xs": [_mask(3, 5) for _ in range(2)]}, {}, lambda xs: [xs[0] & xs[1]]),
    ("math.argmin_n", {"xs": [_ints(4, 5) for _ in range(3)]}, {},
     lambda xs: [np.argmin(np.stack(xs), axis=0)]),
    ("math.argmax_n", {"xs": [_ints(6) for _ in range(4)]}, {},
     lambda xs: [np.argmax(np.stack(xs), axis=0)]),
    ("layout.stack", {"inputs": [_normal(2, 3) for _ in range(3)]}, {"axis": 1},
     lambda inputs: [np.stack(inputs, axis=1)]),
    ("layout.stack", {"inputs": [_normal(2, 1, 3) for _ in range(2)]},
     {"axis": 1, "squeeze": True}, lambda inputs: [np.concatenate(inputs, axis=1)]),
    ("layout.concat", {"inputs": [_normal(2, 3) for _ in range(2)]}, {"axis": 0},
     lambda inputs: [np.concatenate(inputs, axis=0)]),
    # items of different shapes: per-item extents and strides, a bound depending on ni
    ("layout.concat", {"inputs": [_normal(2, 1, 3), _normal(2, 4, 3), _normal(2, 2, 3)]},
     {"axis": 1}, lambda inputs: [np.concatenate(inputs, axis=1)]),
    ("layout.split", {"input": _normal(6, 4)}, {"axis": 0, "count": 3},
     lambda input: np.split(input, 3, axis=0)),
    ("layout.split", {"input": _normal(3, 7)}, {"axis": 1, "sizes": [2, 0, 5]},
     lambda input: np.split(input, [2, 2], axis=1)),
    ("layout.unstack", {"input": _normal(2, 3, 4)}, {"axis": 1},
     lambda input: [input[:, k, :] for k in range(3)]),
    ("layout.unstack", {"input": _ints(3, 2)}, {"axis": 0, "squeeze": False},
     lambda input: [input[k:k + 1] for k in range(3)]),
    ("misc.mesh_grid", {"inputs": [_normal(3), _normal(4), _normal(2)]}, {},
     lambda inputs: np.meshgrid(*inputs, indexing="ij")),
    ("math.argmax_nd", {"input": _ints(4, 5) * 1.0}, {"axes": [1]},
     lambda input: _argmax_nd(input, [1])),
    ("math.argmax_nd", {"input": _ints(3, 4, 5) * 1.0}, {"axes": [0, 2]},
     lambda input: _argmax_nd(input, [0, 2])),
    ("math.argmin_nd", {"input": _ints(3, 4) * 1.0}, {},
     lambda input: _argmax_nd(input, [0, 1], np.argmin)),
    ("math.argmin_nd", {"input": _ints(3, 4, 2) * 1.0}, {"axes": [1], "squeeze": True},
     lambda input: [a.reshape(3, 2) for a in _argmax_nd(input, [1], np.argmin)]),
]


def _evaluate(name, inputs, attributes, compile_formula, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(compiled, "compile_formula", compile_formula)
        return api.evaluate(name, inputs=inputs, attributes=attributes,
                            engine="scalar").outputs


def _recording(compiled: list[bool]):
    def record(*args):
        run_kernel = compile_formula(*args)
        compiled.append(run_kernel is not None)
        return run_kernel
    return record


def _items(value) -> list[np.ndarray]:
    return value if isinstance(value, list) else [value]


@pytest.mark.parametrize("name, inputs, attributes, expected", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_pack_formulas_are_generated_bit_identical(name, inputs, attributes, expected,
                                                   monkeypatch):
    compiled: list[bool] = []
    fast = _evaluate(name, inputs, attributes, _recording(compiled), monkeypatch)
    assert compiled and all(compiled), f"{name}: codegen refused a formula ({compiled})"
    slow = _evaluate(name, inputs, attributes, lambda *args: None, monkeypatch)
    (output,) = fast
    fast_items, slow_items = _items(fast[output]), _items(slow[output])
    reference = expected(*inputs.values())
    assert len(fast_items) == len(slow_items) == len(reference)
    for got, walked, numpy in zip(fast_items, slow_items, reference):
        assert got.dtype == walked.dtype and got.shape == walked.shape
        assert np.array_equal(got, walked)
        assert got.shape == numpy.shape and np.array_equal(got, numpy)


def _outcome(program, inputs, compile_formula, monkeypatch):
    try:
        return "ok", _evaluate(program, inputs, {}, compile_formula, monkeypatch)
    except Diagnostic as diag:
        return "error", (diag.code, diag.message, tuple(diag.notes))


def _kernel_outcomes(compiled: list):
    """A compile_formula that records, per formula, whether its generated kernel raised."""
    def record(*args):
        run_kernel = compile_formula(*args)
        if run_kernel is None:
            compiled.append(None)
            return None

        def run() -> None:
            try:
                run_kernel()
            except Diagnostic:
                compiled.append("error")
                raise
            compiled.append("ok")
        return run
    return record


PACK_ITEM = """operator f {
    @input { xs: real[n]..(2); ks: int[n]; }
    @output { y: real[n]; }
    @lower { y[i] = xs[ks[i]][i] * 2.0, i < n; }
}"""

ITEM_OUTPUT = """operator f {
    @input { x: real[n]; ks: int[n]; }
    @output { ys: real[n]..(2); }
    @lower { ys[ks[i]][i] = x[i], i < n; }
}"""

ORDER = """operator f {
    @input { x: int[3, 3]; a: int[3]; b: int[3]; }
    @output { y: int[3]; }
    @lower { y[i] = x[a[i] / b[i], |i + 1|], i < 3; }
}"""

REMAP = """operator f {
    @input { x: real[3]; h: int[]; }
    @output { y: real[3]; }
    @lower { y[i] = x[|i + 1 <> 0 : h[]|], i < 3; }
}"""


@pytest.mark.parametrize("source, inputs, fails", [
    (PACK_ITEM, {"xs": [np.arange(3.0), -np.arange(3.0)], "ks": np.array([1, 0, 1])}, False),
    (PACK_ITEM, {"xs": [np.arange(3.0), -np.arange(3.0)], "ks": np.array([1, 2, 0])}, "E0501"),
    (PACK_ITEM, {"xs": [np.arange(3.0), -np.arange(3.0)], "ks": np.array([0, -1, 0])}, "E0501"),
    (ITEM_OUTPUT, {"x": np.arange(3.0), "ks": np.array([1, 0, 1])}, False),
    (ITEM_OUTPUT, {"x": np.arange(3.0), "ks": np.array([1, 0, 2])}, "E0501"),
    (REMAP, {"x": np.arange(3.0), "h": np.array(2)}, False),
    (REMAP, {"x": np.arange(3.0), "h": np.array(3)}, "E0501"),  # remapped out of range
    # the first index fails where the second one's guard would skip: the failure comes first
    (ORDER, {"x": np.ones((3, 3), int), "a": np.array([1, 2, 1]), "b": np.array([1, 1, 0])},
     "E0503"),
])
def test_errors_come_in_the_same_runs_on_both_paths(source, inputs, fails, monkeypatch):
    """A pack item index out of range (or a remapped index, or an index computed before a
    guarded one) fails in the generated kernel itself, and the run reports the reference's
    diagnostic; without an error, the results agree."""
    program = api.load_source(source)
    kernels: list = []
    fast = _outcome(program, inputs, _kernel_outcomes(kernels), monkeypatch)
    slow = _outcome(program, inputs, lambda *args: None, monkeypatch)
    assert kernels == ["error" if fails else "ok"]
    assert fast[0] == slow[0] == ("error" if fails else "ok")
    if fails:
        assert fast[1] == slow[1] and fast[1][0] == fails
    else:
        for name in fast[1]:
            for got, walked in zip(_items(fast[1][name]), _items(slow[1][name])):
                assert np.array_equal(got, walked)


def test_items_of_different_shapes_use_their_own_extents(monkeypatch):
    """A pack whose items differ in shape is read with per-item extents and strides: the guard
    `|i + 1|` skips exactly where each item ends."""
    program = api.load_source("""operator f {
    @input { xs: real[..n]..(2); }
    @output { y: real[2, 3]; }
    @lower { y[k, i] = xs[k][|i + 1|], k < 2, i < 3; }
}""")
    inputs = {"xs": [np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])]}
    compiled: list[bool] = []
    fast = _evaluate(program, inputs, {}, _recording(compiled), monkeypatch)
    slow = _evaluate(program, inputs, {}, lambda *args: None, monkeypatch)
    assert compiled == [True]
    assert np.array_equal(fast["y"], slow["y"])
    assert fast["y"].tolist() == [[2.0, 3.0, 0.0], [5.0, 0.0, 0.0]]


def test_an_index_past_a_smaller_item_is_an_error(monkeypatch):
    program = api.load_source("""operator f {
    @input { xs: real[..n]..(2); }
    @output { y: real[2, 3]; }
    @lower { y[k, i] = xs[k][i], k < 2, i < 3; }
}""")
    inputs = {"xs": [np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])]}
    kernels: list = []
    fast = _outcome(program, inputs, _kernel_outcomes(kernels), monkeypatch)
    slow = _outcome(program, inputs, lambda *args: None, monkeypatch)
    assert kernels == ["error"]
    assert fast == slow and fast[1][0] == "E0501" and "k = 1, i = 2" in fast[1][2][0]


def test_a_packed_update_stays_on_the_tree_walk(monkeypatch):
    program = api.load_source("""operator f {
    @input { x: real[n]; }
    @output { ys: real[n]..(2); }
    @lower { ys[i] += x[i], i < n; }
}""")
    compiled: list[bool] = []
    out = _evaluate(program, {"x": np.arange(3.0)}, {}, _recording(compiled), monkeypatch)
    assert compiled == [False]
    assert all(np.array_equal(y, np.arange(3.0)) for y in out["ys"])
