"""The stdlib's distinctness assertions (`axes != ..`, transpose's `perm != ..`) compare the
axes after normalising negative values: an axis written once positive and once negative is a
duplicate (E0307), and valid negative axes still run and match the positive spelling."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp import api

R4 = np.arange(16.0).reshape(1, 1, 4, 4)
R3 = np.arange(24.0).reshape(2, 3, 4)
B3 = (np.arange(24).reshape(2, 3, 4) % 3) == 0
K2 = {"size": [2, 2]}

# operator, input, fixed attributes, attribute name, duplicated, negative valid, positive valid
CASES = [
    ("image.nearest_downsample", R4, {"factor": [2, 2]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("image.nearest_upsample", R4, {"factor": [2, 2]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("image.area_downsample", R4, {"factor": [2, 2]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("image.linear_upsample", R4, {"factor": [2, 2]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("image.nearest_resize", R4, {"size": [2, 3]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("image.linear_resize", R4, {"size": [2, 3]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("image.cubic_resize", R4, {"size": [2, 3]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("image.resize", R4, {"size": [2, 3]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("image.rescale", R4, {"factor": [0.5, 2.0]}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("layout.squeeze", np.arange(2.0).reshape(2, 1, 1), {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("layout.unsqueeze", np.arange(6.0).reshape(2, 3), {}, "axes", [0, -4], [-4, -1], [0, 3]),
    ("layout.tile", np.arange(6.0).reshape(2, 3), {"repeats": [2, 3]}, "axes", [1, -1],
     [-2, -1], [0, 1]),
    ("layout.broadcast", np.arange(1.0).reshape(1, 1), {"shape": [2, 3]}, "axes", [1, -1],
     [-2, -1], [0, 1]),
    ("layout.slice", np.arange(16.0).reshape(4, 4), {"begin": [1, 0], "end": [3, 3]}, "axes",
     [1, -1], [-2, -1], [0, 1]),
    ("layout.pad", np.arange(6.0).reshape(2, 3), {"padding": [1, 0, 0, 2]}, "axes", [1, -1],
     [-2, -1], [0, 1]),
    ("layout.transpose", R3, {}, "perm", [0, 1, -2], [-1, 0, -2], [2, 0, 1]),
    ("math.min_reduce", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.max_reduce", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.sum_reduce", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.prod_reduce", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.mean_reduce", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.lp_reduce", R3, {"p": 2.0}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.any_reduce", B3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.all_reduce", B3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.argmin_nd", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.argmax_nd", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("math.moments", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("nn.max_pool", R4, K2, "axes", [3, -1], [-2, -1], [2, 3]),
    ("nn.sum_pool", R4, K2, "axes", [3, -1], [-2, -1], [2, 3]),
    ("nn.avg_pool", R4, K2, "axes", [3, -1], [-2, -1], [2, 3]),
    ("nn.rms_pool", R4, K2, "axes", [3, -1], [-2, -1], [2, 3]),
    ("nn.lp_pool", R4, {"size": [2, 2], "p": 2.0}, "axes", [3, -1], [-2, -1], [2, 3]),
    ("nn.mean_variance_norm", np.arange(24.0).reshape(1, 2, 3, 4), {}, "axes", [2, -2],
     [-2, -1], [2, 3]),
    ("nn.local_response_norm", np.arange(36.0).reshape(1, 4, 3, 3), {"size": [3, 1]}, "axes",
     [1, -3], [-3, -1], [1, 3]),
    ("nn.l1_norm", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("nn.l2_norm", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
    ("nn.softmax", R3, {}, "axes", [1, -2], [-2, -1], [1, 2]),
]

IDS = [case[0] for case in CASES]

# nx (the Nx backend contract, docs/nx.md) takes axes already normalised by the Nx frontend:
# non-negative, so a duplicate is two equal values. Operator, input name, input, attributes
# with a duplicated axis.
C3 = np.arange(48.0).reshape(2, 3, 4, 2)  # complex as a trailing axis of 2
NX_CASES = [
    ("nx.reduce_sum", "x", R3, {"axes": [1, 1]}),
    ("nx.reduce_prod", "x", R3, {"axes": [0, 0]}),
    ("nx.reduce_max", "x", R3, {"axes": [2, 2]}),
    ("nx.reduce_min", "x", R3, {"axes": [1, 1]}),
    ("nx.permute", "t", R3, {"axes": [0, 1, 1]}),
    ("nx.fft", "t", C3, {"axes": [1, 1]}),
    ("nx.ifft", "t", C3, {"axes": [2, 2]}),
    ("nx.rfft", "t", R3, {"axes": [1, 1]}),
    ("nx.irfft", "t", C3, {"axes": [1, 1]}),
]

def _evaluate(op: str, array: np.ndarray, attributes: dict) -> dict:
    return api.evaluate(op, inputs={"input": array}, attributes=attributes).outputs


@pytest.mark.parametrize("op, array, fixed, name, duplicated, negative, positive", [
    pytest.param(*case, id=case[0]) for case in CASES])
def test_duplicate_after_normalisation_fails(op, array, fixed, name, duplicated, negative,
                                             positive):
    with pytest.raises(api.Error) as info:
        _evaluate(op, array, {**fixed, name: duplicated})
    assert info.value.code == "E0307"
    assert "distinct" in str(info.value)


@pytest.mark.parametrize("op, array, fixed, name, duplicated, negative, positive", CASES, ids=IDS)
def test_negative_axes_match_positive(op, array, fixed, name, duplicated, negative, positive):
    got = _evaluate(op, array, {**fixed, name: negative})
    want = _evaluate(op, array, {**fixed, name: positive})
    assert got.keys() == want.keys()
    for key in want:
        g, w = got[key], want[key]
        if isinstance(w, (list, tuple)):
            assert len(g) == len(w)
            for gi, wi in zip(g, w):
                np.testing.assert_array_equal(np.asarray(gi), np.asarray(wi))
        else:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("op, name, array, attributes", NX_CASES,
                         ids=[case[0] for case in NX_CASES])
def test_nx_duplicate_axes_fail(op, name, array, attributes):
    with pytest.raises(api.Error) as info:
        api.evaluate(op, inputs={name: array}, attributes=attributes)
    assert info.value.code == "E0307"
    assert "distinct" in str(info.value)


def test_catalogue_covered():
    """Every distinctness assertion of the stdlib has a case here."""
    import re
    from pathlib import Path

    root = Path(api.__file__).parent / "stdlib"
    found = set()
    for path in root.glob("*.sknd"):
        module, op = path.stem, None
        for line in path.read_text().splitlines():
            match = re.match(r"operator (\w+)", line)
            if match:
                op = match.group(1)
            if re.search(r"!= \.\. ?:", line):
                found.add(f"{module}.{op}")
    assert found == set(IDS) | {case[0] for case in NX_CASES}
