"""The @lower formulas of the spec corpus (spec_tests/corpus) and random invocations of them,
shared by the tests that run every corpus formula on two engines."""

from __future__ import annotations

import random

import numpy as np

from refinterp.core.files import read_source
from refinterp.language.instance import Invocation, TensorType
from refinterp.syntax import parse_module

from testsupport.paths import REPO_ROOT


CORPUS = REPO_ROOT / "spec_tests" / "corpus"


LOWERED = [(path, d) for path in sorted(CORPUS.glob("*.sknd"))
           for d in parse_module(read_source(path)).module.definitions
           if d.block("lower") is not None]


def invocation(definition, seed: int) -> tuple[Invocation, dict]:
    """Random inputs of rank 1–3 (extents 1–3) and default-ish attributes."""
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    rank = rng.randint(1, 3)
    arrays: dict = {}
    for decl in definition.block("input").entries if definition.block("input") else ():
        if decl.type.optional and rng.random() < 0.5:
            continue
        shape = tuple(rng.randint(1, 3) for _ in range(rank))
        kind = decl.type.name if decl.type.name in ("int", "bool") else "real"

        def make():
            if kind == "real":
                return nrng.standard_normal(shape)
            return nrng.integers(0, 2, shape) if kind == "int" else nrng.random(shape) < 0.5
        arrays[decl.name] = [make(), make()] if decl.type.pack else make()
    attributes = {a.name: {"int": 1, "real": 0.5, "bool": True, "str": "NCX"}.get(a.type.name, 1)
                  for a in (definition.block("attrib").entries if definition.block("attrib")
                            else ()) if a.default is None and not a.type.optional}

    def info(value):
        if isinstance(value, list):
            return tuple(info(v) for v in value)
        return TensorType({"f": "real", "i": "int", "b": "bool"}[value.dtype.kind], value.shape)

    return Invocation(attributes, {k: info(v) for k, v in arrays.items()}), arrays
