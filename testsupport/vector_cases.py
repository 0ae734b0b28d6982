"""Operators written on the fly and run on two engines: the vector engine must compute what the
compiled engine (equal to the reference) computes, or fail with the same diagnostic."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from refinterp.api import run_operator
from refinterp.core.diagnostics import Diagnostic
from refinterp.lower import engines

from testsupport.vector_strategies import Example


_TEMPORARY = tempfile.TemporaryDirectory(prefix="refinterp_vector_")  # removed at exit


FOLDER = Path(_TEMPORARY.name)


def write(text: str) -> Path:
    path = FOLDER / f"f_{hashlib.sha1(text.encode()).hexdigest()[:16]}.sknd"
    path.write_text(text)
    return path


def run_both(example: Example, profile: str = "spec", max_memory: int | None = None):
    """Outputs (or the diagnostic message) of the scalar and the vector engine; and how the
    vector engine ran each operator."""
    path = write(example.text)
    used: list[str] = []
    vector = engines.make_engine(
        "vector", max_memory=max_memory or 2 ** 31, log=lambda inst, how: used.append(how))
    results = []
    for engine in ("compiled", vector):
        try:
            results.append(run_operator("f", example.inputs, file=path, engine=engine,
                                        profile=profile))
        except Diagnostic as diag:
            results.append(diag.message)
    return results[0], results[1], used


def check_equal(example: Example, profile: str = "spec", max_memory: int | None = None
                ) -> list[str]:
    scalar, vector, used = run_both(example, profile, max_memory)
    if isinstance(scalar, str) or isinstance(vector, str):
        assert scalar == vector, f"{example.text}\nscalar: {scalar}\nvector: {vector}"
        return used
    for name in scalar:
        found = engines.difference(scalar[name], vector[name], name)
        assert found is None, f"{example.text}\ninputs: {example.inputs}\n{found}"
    return used


def vectorised(text: str, inputs: dict, **options) -> dict:
    """Run on both engines, check equality, and check the vector engine did not fall back."""
    used = check_equal(Example(text, inputs), **options)
    assert used and all(how == "vector" for how in used), used
    return run_operator("f", inputs, file=write(text), engine="vector")


def op(inputs: str, output: str, *formulas: str) -> str:
    body = "\n        ".join(formulas)
    return (f"operator f {{\n    @input {{ {inputs} }}\n    @output {{ {output} }}\n"
            f"    @lower {{\n        {body}\n    }}\n}}\n")
