"""Shared helpers for the standard-library tests: every operator is run through refinterp and
compared with an independent NumPy implementation written in the test module."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from refinterp.api import run_operator


def run(name: str, inputs: dict[str, Any], attributes: dict[str, Any] | None = None,
        **options: Any) -> dict[str, Any]:
    """Run standard operator `name` (`module.operator`) and return its outputs by name."""
    return run_operator(name, inputs, attributes, **options)


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator, so failures reproduce."""
    return np.random.default_rng(1234)
