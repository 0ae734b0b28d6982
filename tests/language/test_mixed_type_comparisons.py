"""Comparisons of an int or bool tensor with a real one, as the Khronos unittest's `gt`, `le`,
`ge` and `ne` graphs write them (the comparison operators take two independent generic types):
under `--profile spec` an error (§2.4: "same type for both arguments"), under `--profile
khronos` C++ promotion — the int converted to real, a bool compared as 0 or 1
(docs/semantics.md, Numbers, "Mixed operand types"). Expected values are NumPy's."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.api import run_operator
from refinterp.core.diagnostics import Diagnostic

rng = np.random.default_rng(18)
INTS = rng.integers(-2, 3, (4, 10))
REALS = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0, 2.0], (4, 10))

# operator, x, y, attributes, NumPy comparison (on the promoted values)
CASES = [
    ("math.gt", INTS, rng.choice([-1.0, 0.5, 1.0], (4, 1)), {}, np.greater),
    ("math.le", REALS, rng.integers(-1, 2, 10), {}, np.less_equal),
    ("math.ge", INTS, rng.choice([-1.5, 0.0, 1.0, 2.0], 10), {"rhs_align": 1},
     np.greater_equal),
    ("math.ne", rng.choice([0.0, 1.0, 0.5], (4, 10)), rng.random(10) < 0.5, {"rhs_align": 1},
     np.not_equal),
]


@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("name, x, y, attributes, compare", CASES,
                         ids=[case[0] for case in CASES])
def test_mixed_comparisons_promote_under_khronos(name, x, y, attributes, compare, engine):
    got = run_operator(name, {"x": x, "y": y}, attributes, profile="khronos",
                       engine=engine)["z"]
    assert got.dtype == np.bool_
    assert np.array_equal(got, compare(x.astype(np.float64), y.astype(np.float64)))


@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("name, x, y, attributes, compare", CASES,
                         ids=[case[0] for case in CASES])
def test_mixed_comparisons_are_errors_under_spec(name, x, y, attributes, compare, engine):
    with pytest.raises(Diagnostic) as info:
        run_operator(name, {"x": x, "y": y}, attributes, profile="spec", engine=engine)
    assert info.value.code == "E0503" and "one type" in info.value.message
