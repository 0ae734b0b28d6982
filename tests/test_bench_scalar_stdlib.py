"""tools/bench_scalar_stdlib.py: a quick run (tiny instances, one repetition, about 2 s) completes,
covers every public lowered stdlib operator, and every equivalence check with a one-line formula
says "equal". Nothing about time is asserted."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import pytest

import refinterp.api as api

TOOL = Path(__file__).resolve().parent.parent / "tools" / "bench_scalar_stdlib.py"


def lowered_public_operators() -> set[str]:
    """Every public lowered stdlib operator, read from the API (not from the tool)."""
    return {s.qualified for module in api.stdlib_modules() for s in api.operators(module)
            if s.kind == "lowered" and not s.name.startswith("_")}


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("bench_scalar_stdlib", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def quick_run(tool) -> tuple[int, str, dict[str, str]]:
    """(exit status, stdout, table row by operator) of a run on tiny instances."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = tool.main(["--scale", "0.05", "--repeat", "1"])
    text = out.getvalue()
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("---")) + 1
    end = lines.index("", start)
    rows = {line.split()[0]: line for line in lines[start:end]}
    assert len(rows) == end - start, "an operator is listed twice"
    return status, text, rows


def test_the_quick_run_covers_every_lowered_public_stdlib_operator(quick_run):
    _, text, rows = quick_run
    expected = lowered_public_operators()
    assert len(expected) > 100
    assert set(rows) == expected
    assert f"{len(expected)} operators: " in text
    assert "iterations/s over " in text and "median" in text and "minimum" in text


def test_every_operator_runs_on_its_instance(quick_run):
    _, _, rows = quick_run
    failed = {name: row for name, row in rows.items() if "FAILED" in row}
    assert not failed
    for row in rows.values():
        # ... iterations seconds it/s [1-line-seconds ratio check]
        tokens = row.split()
        iterations = tokens[-6] if row.endswith(("equal", "DIFFERENT")) else tokens[-3]
        assert iterations.isdigit() and int(iterations) > 0, row


def test_every_equivalence_check_says_equal(tool, quick_run):
    status, text, rows = quick_run
    assert set(tool.ONE_LINE) <= lowered_public_operators()
    # the one-liners of the brief: matmul, linear, conv, pooling, reductions, element-wise
    # add/mul/relu/exp, and the lowered parts of nn.softmax
    assert {"linalg.matmul", "nn.linear", "nn.conv", "nn.max_pool", "nn.sum_pool",
            "math.sum_reduce", "math.max_reduce", "math.add", "math.sub", "math.mul",
            "math.div", "math.exp", "nn.relu"} <= set(tool.ONE_LINE)
    for name in tool.ONE_LINE:
        assert rows[name].endswith(" equal"), rows[name]
    assert not any("DIFFERENT" in row for row in rows.values())
    assert f"checks: {len(tool.ONE_LINE)} equal, 0 DIFFERENT, 0 not made" in text
    assert sum(row.endswith(" equal") for row in rows.values()) == len(tool.ONE_LINE)
    assert status == 0


def test_every_lowered_operator_agrees_on_both_engines_at_a_small_size(tool) -> None:
    """Every public lowered stdlib operator, on the benchmark's instance at a tiny scale: the
    scalar engine (the definition, with partial evaluation and generated code) and the vector
    engine give the same outputs (ints and bools identical, reals within the engines'
    tolerance) or the same diagnostic."""
    import zlib

    import numpy as np

    from refinterp.core.diagnostics import Diagnostic
    from refinterp.lower.engines import difference

    signatures = {s.qualified: s for module in api.stdlib_modules()
                  for s in api.operators(module)}
    checked = 0
    for name in sorted(lowered_public_operators()):
        chosen = tool.CASES.get(name) or tool.default_case(signatures[name], name)
        assert chosen is not None, name
        d = tool.sizer(0.05)
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        inputs, attributes = chosen.inputs(d, rng), chosen.attributes(d)
        results = []
        for engine in ("scalar", "vector"):
            try:
                results.append(api.evaluate(name, inputs=inputs, attributes=attributes,
                                            generics=chosen.generics, engine=engine).outputs)
            except Diagnostic as error:
                results.append(error.message)
        scalar, vector = results
        if isinstance(scalar, str) or isinstance(vector, str):
            assert scalar == vector, name
            continue
        assert scalar.keys() == vector.keys(), name
        for output in scalar:
            pairs = zip(scalar[output], vector[output]) if isinstance(scalar[output], list) \
                else [(scalar[output], vector[output])]
            for a, b in pairs:
                assert difference(a, b, output) is None, (name, difference(a, b, output))
        checked += 1
    assert checked == len(lowered_public_operators())
