"""Module `misc` (the Khronos converters' operators the spec lacks): mesh_grid against
NumPy's `meshgrid(..., indexing='ij')`."""

from __future__ import annotations

import numpy as np

from .conftest import run


def test_mesh_grid_two_vectors(rng):
    x, y = rng.standard_normal(5), rng.standard_normal(6)
    out = run("misc.mesh_grid", {"inputs": [x, y]})["outputs"]
    expected = np.meshgrid(x, y, indexing="ij")
    assert len(out) == 2 and all(np.array_equal(o, e) for o, e in zip(out, expected))


def test_mesh_grid_three_vectors_and_one(rng):
    xs = [rng.standard_normal(n) for n in (2, 3, 4)]
    out = run("misc.mesh_grid", {"inputs": xs})["outputs"]
    assert all(np.array_equal(o, e) for o, e in zip(out, np.meshgrid(*xs, indexing="ij")))
    single = run("misc.mesh_grid", {"inputs": xs[:1]})["outputs"]
    assert len(single) == 1 and np.array_equal(single[0], xs[0])
