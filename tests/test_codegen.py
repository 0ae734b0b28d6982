"""The generated-source fast path of the scalar engine equals its closure path exactly."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import Invocation, TensorInfo, instantiate
from refinterp.lower import codegen
from refinterp.lower.plan import plan_lowering
from refinterp.lower.scalar import allocate_outputs, run_lowering
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_module

CORPUS = Path(__file__).resolve().parent.parent / "spec_tests" / "corpus"
LOWERED = [(path, d) for path in sorted(CORPUS.glob("*.sknd"))
           for d in parse_module(SourceFile.read(path)).module.definitions
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
        return TensorInfo({"f": "real", "i": "int", "b": "bool"}[value.dtype.kind], value.shape)

    return Invocation(attributes, {k: info(v) for k, v in arrays.items()}), arrays


def outcome(definition, seed: int, generated: bool):
    inv, arrays = invocation(definition, seed)
    try:
        instance = instantiate(definition, inv)
        copies = {k: [a.copy() for a in v] if isinstance(v, list) else v.copy()
                  for k, v in arrays.items()}
        return "ok", run_lowering(instance, copies, generated=generated)
    except Diagnostic as diag:
        return "error", diag.message


@pytest.mark.parametrize("path, definition", LOWERED,
                         ids=[f"{p.stem}:{d.name}" for p, d in LOWERED])
def test_generated_path_equals_closure_path(path: Path, definition) -> None:
    for seed in range(3):
        fast, slow = outcome(definition, seed, True), outcome(definition, seed, False)
        assert fast[0] == slow[0], (fast, slow)
        if fast[0] == "ok":
            for name, value in fast[1].items():
                np.testing.assert_array_equal(np.asarray(value), np.asarray(slow[1][name]))


def test_matmul_and_conv_shapes_take_the_generated_path() -> None:
    text = ("operator mm { @input { A: real[m,k]; B: real[k,n]; } @output { C: real[m,n]; } "
            "@lower { C[i,j] += A[i,l] * B[l,j], i < m, j < n, l < k; } }")
    definition = parse_module(SourceFile("<t>", text)).module.definitions[0]
    instance = instantiate(definition, Invocation({}, {"A": TensorInfo("real", (2, 3)),
                                                       "B": TensorInfo("real", (3, 4))}))
    plan = plan_lowering(instance)
    arrays = {"A": np.ones((2, 3)), "B": np.ones((3, 4)), **allocate_outputs(instance, plan)}
    runner = codegen.compile_formula(instance, plan.formulas[0], arrays, instance.environment()
                                     .profile, lambda node, message, frame: Diagnostic(message))
    assert runner is not None
    runner()
    np.testing.assert_array_equal(arrays["C"], np.full((2, 4), 3.0))


def test_index_names_do_not_clash_with_generated_variables() -> None:
    """Indices named like the kernel's own variables (`o` offset, `v` value, `K`, `P`, `t1`)."""
    source = SourceFile("<test>", """operator clash {
  @input { x: real[a, b]; }
  @output { y: real[a, b]; z: real[a]; }
  @lower {
    y[o, v] = x[o, v] * 2.0, o < a, v < b;
    z[K] += x[K, t1] * x[K, P], K < a, t1 < b, P < b;
  }
}""")
    definition = parse_module(source).module.definitions[0]
    x = np.arange(6.0).reshape(2, 3)
    instance = instantiate(definition, Invocation({}, {"x": TensorInfo("real", (2, 3))}))
    for generated in (True, False):
        out = run_lowering(instance, {"x": x}, generated=generated)
        assert np.array_equal(out["y"], 2 * x)
        assert np.array_equal(out["z"], x.sum(axis=1) ** 2)


def test_a_guard_in_an_untaken_branch_does_not_skip() -> None:
    """`c ? a : x[|k + 1|]` with c true: the guarded access is never evaluated, so nothing is
    skipped; and `&&` evaluates both operands (a division by zero on its right is an error
    even when the left is false), as on the closure path. Found by the vector engine's
    equality suite."""
    source = SourceFile("<test>", """operator f {
  @input { m: bool[1, 1]; n: int[2]; }
  @output { y: bool[1]; z: bool[2]; }
  @lower {
    y[i] = m[0, 0] ? m[0, 0] : m[0, |k + 1|], i < 1, k < 2;
    z[j] = n[j] > 5 && 10 / n[j] > 1, j < 2;
  }
}""")
    definition = parse_module(source).module.definitions[0]
    infos = {"m": TensorInfo("bool", (1, 1)), "n": TensorInfo("int", (2,))}
    instance = instantiate(definition, Invocation({}, infos))
    inputs = {"m": np.array([[True]]), "n": np.array([1, 0])}
    messages = []
    for generated in (True, False):
        with pytest.raises(Diagnostic) as caught:
            run_lowering(instance, inputs, generated=generated)
        messages.append(caught.value.message)
    assert messages[0] == messages[1] and "zero" in messages[0]
    inputs["n"] = np.array([1, 2])
    for generated in (True, False):
        out = run_lowering(instance, inputs, generated=generated)
        assert out["y"].tolist() == [True] and out["z"].tolist() == [False, False]


def test_int_of_an_infinite_real_takes_the_closure_path() -> None:
    """int(inf) is the int(+inf) sentinel (docs/semantics.md), on which '*' is an error: the
    generated kernel must not multiply it as a Python int (it raised a TypeError, found by the
    vector equality suite)."""
    from refinterp import api

    program = api.load_source("""operator f {
    @input { x: real[2]; }
    @output { y: int[2]; }
    @lower { y[i] *= int(x[i]), i < 2; }
}""")
    for engine in ("scalar", "vector"):
        with pytest.raises(Diagnostic) as caught:
            api.evaluate(program, inputs={"x": np.array([2.0, np.inf])}, engine=engine)
        assert caught.value.code == "E0503" and "int(inf)" in caught.value.message
        finite = api.evaluate(program, inputs={"x": np.array([2.5, -3.5])}, engine=engine)
        assert finite.outputs["y"].tolist() == [2, -3]  # truncation toward zero, times 1


# ------------------------------------------------------------- operations by the numeric rules
# (issue 25 A: generated code calls the functions rules.binary_function etc. resolve per kind;
# special values and NumPy expectations in tests/test_codegen_numeric.py)


@pytest.mark.parametrize("path, definition", LOWERED,
                         ids=[f"{p.stem}:{d.name}" for p, d in LOWERED])
def test_generated_path_equals_closure_path_under_khronos(path: Path, definition) -> None:
    """The corpus again under the khronos profile (C division and modulo, fmod, std::min/max,
    mixed int and real promoted), where other specialized functions are resolved."""
    from refinterp.numeric import rules

    for seed in range(2):
        inv, arrays = invocation(definition, seed)
        results = []
        for generated in (True, False):
            try:
                instance = instantiate(definition, inv)
                copies = {k: [a.copy() for a in v] if isinstance(v, list) else v.copy()
                          for k, v in arrays.items()}
                results.append(("ok", run_lowering(instance, copies, rules.KHRONOS,
                                                   generated=generated)))
            except Diagnostic as diag:
                results.append(("error", diag.message))
        fast, slow = results
        assert fast[0] == slow[0], (fast, slow)
        if fast[0] == "ok":
            for name, value in fast[1].items():
                np.testing.assert_array_equal(np.asarray(value), np.asarray(slow[1][name]))
        else:
            assert fast[1] == slow[1]
