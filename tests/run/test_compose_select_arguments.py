"""@compose tensor expressions (spec §2.10, §2.10.1): compile-time choices `c ? a : b` between
tensors and packs of tensors, and indexing a pack of tensors with a compile-time index, are one
rule (`run.compose.Executor.tensor`) wherever a tensor expression stands: a component's
right-hand side, an operator argument, a loop's `for` header. A condition computed from
tensors is no compile-time choice: a diagnostic (E0607). Expected values are NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api
from refinterp.core.diagnostics import Diagnostic

SOURCE = """
operator add {
    @input { x: real[n]; y: real[n]; }
    @output { z: real[n]; }
    @lower { z[i] = x[i] + y[i], i < n; }
}
operator copy_all {
    @input { xs: real[n]..(k); }
    @output { ys: real[n]..(k); }
    @lower { ys[j][i] = xs[j][i], j < k, i < n; }
}
operator running_sums {
    @attrib { reverse: bool = false; }
    @input { xs: real[n]..(k); }
    @output { ys: real[n]..(k); total: real[n]; first: real[n]; }
    @compose {
        ~, sums = with acc: real[n] = 0.0 for x : (reverse ? xs[::-1] : xs) do {
            next = add(acc, x);
            yield next, next;
        };
        ys = copy_all(reverse ? sums[::-1] : sums);
        total = add(reverse ? sums[-1] : sums[k - 1], xs[0]);
        first = reverse ? ys[0] : xs[0];
    }
}
operator picks {
    @input { xs: real[n]..(k); }
    @output { a: real[n]..(2); b: real[n]..(2); }
    @compose {
        a = copy_all(xs[[2, 0]]);
        b = copy_all(xs[[false, true, true]]);
    }
}
operator tensor_condition {
    @input { a: real[n]; b: real[n]; c: bool[]; }
    @output { y: real[n]; }
    @compose { y = add(c ? a : b, a); }
}
operator index_out_of_range {
    @input { a: real[n]; b: real[n]; }
    @output { y: real[n]; }
    @compose { xs = [a, b]; y = add(xs[5], a); }
}
operator index_a_tensor {
    @input { a: real[n]; }
    @output { y: real[n]; }
    @compose { y = add(a[0], a); }
}
"""

PROGRAM = api.load_source(SOURCE)
XS = [np.random.default_rng(11).standard_normal(4) for _ in range(3)]


@pytest.mark.parametrize("reverse", [False, True])
def test_a_compile_time_select_of_packs_in_a_for_header_and_as_arguments(reverse) -> None:
    """Khronos `math.cumsum{reverse=true}` form: `(reverse ? xs[::-1] : xs)` scanned by `for`,
    `reverse ? sums[::-1] : sums` and `reverse ? sums[-1] : sums[k - 1]` as arguments."""
    out = api.evaluate(PROGRAM, op="running_sums", inputs={"xs": XS},
                       attributes={"reverse": reverse}).outputs
    stacked = np.stack(XS)
    sums = np.flip(np.cumsum(np.flip(stacked, 0), 0), 0) if reverse else np.cumsum(stacked, 0)
    assert len(out["ys"]) == 3
    for got, want in zip(out["ys"], sums):
        assert np.allclose(got, want, rtol=1e-15, atol=0)
    assert np.allclose(out["total"], stacked.sum(0) + XS[0], rtol=1e-15, atol=0)
    assert np.allclose(out["first"], sums[0] if reverse else XS[0], rtol=1e-15, atol=0)


@pytest.mark.parametrize("reverse", [False, True])
def test_checking_without_values_follows_the_same_rule(reverse) -> None:
    shapes = api.shapes(PROGRAM, op="running_sums", inputs={"xs": XS},
                        attributes={"reverse": reverse})
    assert shapes is not None


def test_pack_and_mask_indices_select_tensors_of_a_pack() -> None:
    # §2.4 Indexing: an int.. index takes the items it names, a bool.. mask the true ones.
    out = api.evaluate(PROGRAM, op="picks", inputs={"xs": XS}).outputs
    assert [a.tolist() for a in out["a"]] == [XS[2].tolist(), XS[0].tolist()]
    assert [b.tolist() for b in out["b"]] == [XS[1].tolist(), XS[2].tolist()]


def test_a_tensor_condition_is_no_compile_time_choice() -> None:
    a = np.array([1.0, 2.0])
    with pytest.raises(Diagnostic) as info:
        api.evaluate(PROGRAM, op="tensor_condition",
                     inputs={"a": a, "b": a, "c": np.array(True)})
    error = info.value
    assert error.code == "E0607" and "compile-time" in error.message
    assert error.span.line == SOURCE.splitlines().index(
        "    @compose { y = add(c ? a : b, a); }") + 1


def test_indexing_errors_of_a_pack_of_tensors() -> None:
    a = np.array([1.0, 2.0])
    with pytest.raises(Diagnostic) as info:
        api.evaluate(PROGRAM, op="index_out_of_range", inputs={"a": a, "b": a})
    assert info.value.code == "E0402" and "out of range" in info.value.message
    with pytest.raises(Diagnostic) as info:
        api.evaluate(PROGRAM, op="index_a_tensor", inputs={"a": a})
    assert info.value.code == "E0600" and "only a pack of tensors" in info.value.message
