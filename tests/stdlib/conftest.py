"""Shared helpers for the standard-library tests: every operator is run through refinterp and
compared with an independent NumPy implementation written in the test module.

`run` also proves the two engines equal on every stdlib test case: it runs the
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

_DESELECTED: list[pytest.Item] = []


def pytest_deselected(items: list[pytest.Item]) -> None:
    _DESELECTED.extend(items)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """When every selected test has run: each operator of the catalogue (test_catalogue.py) of
    a module whose tests ran was run at least twice. Skipped when tests were deselected (`-k`)
    or in an xdist worker, which see only part of the session; a shortfall fails the session."""
    if _DESELECTED or hasattr(session.config, "workerinput") or exitstatus not in (0, 1):
        return
    from tests.stdlib.test_catalogue import rarely_run

    missing = rarely_run({item.path.name for item in session.items})
    if missing:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = "stdlib operators run fewer than twice: " + ", ".join(missing)
        if reporter is not None:
            reporter.write_line(message, red=True)
        session.exitstatus = 1


def run(name: str, inputs: dict[str, Any], attributes: dict[str, Any] | None = None,
        **options: Any) -> dict[str, Any]:
    """Run standard operator `name` (`module.operator`) and return its outputs by name.

    Without an explicit `engine=` option, the operator runs on both engines and they must
    agree; the scalar engine's outputs are returned (its diagnostic is raised). Every call is
    counted in `INVOKED` (checked when the session finishes, see `pytest_sessionfinish`)."""
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
