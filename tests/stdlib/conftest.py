"""Shared helpers for the standard-library tests: every operator is run through refinterp and
compared with an independent NumPy implementation written in the test module.

`run` also proves the two engines equal on every stdlib test case (issue 8): it runs the
operator on the scalar engine (the definition) and on the vector engine, asserts that they
agree — identical ints and bools, reals within `refinterp.lower.engines.difference`'s tolerance,
or the same diagnostic — and returns the scalar engine's outputs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from refinterp.api import run_operator
from refinterp.core.diagnostics import Diagnostic
from refinterp.lower.engines import difference


INVOKED: Counter[str] = Counter()  # qualified operator name -> calls of `run` in this session

LAST = "test_catalogue.py::test_every_operator_is_invoked_at_least_twice"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The invocation count is checked after every other test has run."""
    items.sort(key=lambda item: item.nodeid.endswith(LAST))


def run(name: str, inputs: dict[str, Any], attributes: dict[str, Any] | None = None,
        **options: Any) -> dict[str, Any]:
    """Run standard operator `name` (`module.operator`) and return its outputs by name.

    Without an explicit `engine=` option, the operator runs on both engines and they must
    agree; the scalar engine's outputs are returned (its diagnostic is raised). Every call is
    counted in `INVOKED` (see test_catalogue.py)."""
    INVOKED[name] += 1
    if "engine" in options:
        return run_operator(name, inputs, attributes, **options)
    try:
        expected = run_operator(name, inputs, attributes, engine="scalar", **options)
    except Diagnostic as scalar_error:
        with pytest.raises(Diagnostic) as vector_error:
            run_operator(name, inputs, attributes, engine="vector", **options)
        assert vector_error.value.message == scalar_error.message, \
            f"{name}: the engines report different diagnostics"
        raise
    actual = run_operator(name, inputs, attributes, engine="vector", **options)
    assert set(actual) == set(expected)
    for output in expected:
        found = difference(expected[output], actual[output], output)
        assert found is None, f"{name}: the vector engine differs from the scalar engine: {found}"
    return expected


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator, so failures reproduce."""
    return np.random.default_rng(1234)
