"""The compiled engine's generated source equals the reference exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import Invocation, TensorType, instantiate
from refinterp.lower.common import allocate_outputs
from refinterp.lower.compiled import kernel
from refinterp.lower.compiled.engine import compile_formula, run_compiled
from refinterp.lower.plan import plan_lowering
from refinterp.lower.reference import run_reference
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_module
from testsupport.corpus_formulas import LOWERED, invocation


def outcome(definition, seed: int, generated: bool):
    inv, arrays = invocation(definition, seed)
    try:
        instance = instantiate(definition, inv)
        copies = {k: [a.copy() for a in v] if isinstance(v, list) else v.copy()
                  for k, v in arrays.items()}
        return "ok", (run_compiled if generated else run_reference)(instance, copies)
    except Diagnostic as diag:
        return "error", diag.message


@pytest.mark.parametrize("path, definition", LOWERED,
                         ids=[f"{p.stem}:{d.name}" for p, d in LOWERED])
def test_generated_code_equals_the_reference(path: Path, definition) -> None:
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
    instance = instantiate(definition, Invocation({}, {"A": TensorType("real", (2, 3)),
                                                       "B": TensorType("real", (3, 4))}))
    plan = plan_lowering(instance)
    arrays = {"A": np.ones((2, 3)), "B": np.ones((3, 4)), **allocate_outputs(instance, plan)}
    runner = compile_formula(instance, plan.formulas[0], arrays,
                             instance.environment().profile)
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
    instance = instantiate(definition, Invocation({}, {"x": TensorType("real", (2, 3))}))
    for generated in (True, False):
        out = (run_compiled if generated else run_reference)(instance, {"x": x})
        assert np.array_equal(out["y"], 2 * x)
        assert np.array_equal(out["z"], x.sum(axis=1) ** 2)


def test_a_guard_in_an_untaken_branch_does_not_skip() -> None:
    """`c ? a : x[|k + 1|]` with c true: the guarded access is never evaluated, so nothing is
    skipped; and `&&` evaluates both operands (a division by zero on its right is an error
    even when the left is false), as on the reference. Found by the vector engine's
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
    infos = {"m": TensorType("bool", (1, 1)), "n": TensorType("int", (2,))}
    instance = instantiate(definition, Invocation({}, infos))
    inputs = {"m": np.array([[True]]), "n": np.array([1, 0])}
    messages = []
    for generated in (True, False):
        with pytest.raises(Diagnostic) as caught:
            (run_compiled if generated else run_reference)(instance, inputs)
        messages.append(caught.value.message)
    assert messages[0] == messages[1] and "zero" in messages[0]
    inputs["n"] = np.array([1, 2])
    for generated in (True, False):
        out = (run_compiled if generated else run_reference)(instance, inputs)
        assert out["y"].tolist() == [True] and out["z"].tolist() == [False, False]


def test_multiplying_by_int_of_an_infinite_real_is_an_error() -> None:
    """int(inf) is the int(+inf) sentinel (docs/semantics.md), on which '*' is an error: the
    generated kernel calls the rule for int(±inf) operands (rules.binary_function) rather than
    multiplying as Python ints (which raised a TypeError, found by the vector equality suite),
    and both engines report it; finite values truncate toward zero."""
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
# (generated code calls the functions rules.binary_function etc. resolve per kind;
# special values and NumPy expectations in tests/lower/test_codegen_numeric.py)


@pytest.mark.parametrize("path, definition", LOWERED,
                         ids=[f"{p.stem}:{d.name}" for p, d in LOWERED])
def test_generated_code_equals_the_reference_under_khronos(path: Path, definition) -> None:
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
                run = run_compiled if generated else run_reference
                results.append(("ok", run(instance, copies, rules.KHRONOS)))
            except Diagnostic as diag:
                results.append(("error", diag.message))
        fast, slow = results
        assert fast[0] == slow[0], (fast, slow)
        if fast[0] == "ok":
            for name, value in fast[1].items():
                np.testing.assert_array_equal(np.asarray(value), np.asarray(slow[1][name]))
        else:
            assert fast[1] == slow[1]


# ------------------------------------------------------------------------ evaluation order


def kernel_outcome(text: str, inputs: dict[str, np.ndarray]) -> tuple[str, object]:
    """Each formula of the one operator in `text` run by its generated kernel alone (no rerun
    on the reference after an error): ("ok", outputs) or ("error", (code, notes))."""
    from refinterp.lower.common import lowering_arrays

    definition = parse_module(SourceFile("<t>", text)).module.definitions[0]
    kinds = {"f": "real", "i": "int", "b": "bool"}
    infos = {k: TensorType(kinds[v.dtype.kind], v.shape) for k, v in inputs.items()}
    instance = instantiate(definition, Invocation({}, infos))
    plan = plan_lowering(instance)
    outputs = allocate_outputs(instance, plan)
    arrays = lowering_arrays(instance, {k: v.copy() for k, v in inputs.items()}, outputs)
    profile = instance.environment().profile
    try:
        for formula in plan.formulas:
            runner = compile_formula(instance, formula, arrays, profile)
            assert runner is not None, "not generated"
            runner()
    except Diagnostic as diag:
        return "error", (diag.code, list(diag.notes))
    return "ok", outputs


def tree_walk_outcome(text: str, inputs: dict[str, np.ndarray]) -> tuple[str, object]:
    definition = parse_module(SourceFile("<t>", text)).module.definitions[0]
    kinds = {"f": "real", "i": "int", "b": "bool"}
    infos = {k: TensorType(kinds[v.dtype.kind], v.shape) for k, v in inputs.items()}
    instance = instantiate(definition, Invocation({}, infos))
    try:
        return "ok", run_reference(instance, {k: v.copy() for k, v in inputs.items()})
    except Diagnostic as diag:
        return "error", (diag.code, list(diag.notes))


ORDER = [  # (value of y[i], the code of the error, the iteration it fails in; None: no error)
    # reported: the guard of a right operand skipped the iteration where the left one fails
    ("a[i] / b[i] + c[|i + 1|]", "E0503", "i = 2"),
    ("a[i] / b[i] + c[i + 1]", "E0503", "i = 2"),         # a range check on the right
    ("c[|i + 1|] + a[i] / b[i]", None, None),             # the guard on the left skips first
    ("(a[i] / b[i]) * 2 - c[|i + 1|] * c[i]", "E0503", "i = 2"),
    ("a[i] % b[i] > c[|i + 1|] ? 1 : 0", "E0503", "i = 2"),
    ("c[|i <> 0 : a[i] / b[i]|]", "E0503", "i = 2"),  # a bound is computed, used or not
    ("c[|i + 1 <> a[i] / b[i] : 0|]", "E0503", "i = 2"),
    ("d[b[i] / b[i], |i + 1|]", "E0503", "i = 2"),        # an index left of a guarded one
    ("[a[i] / b[i], c[|i + 1|]][0]", "E0503", "i = 2"),   # the items of a pack picked from
    ("int(real(a[i]) / real(b[i])) + c[|i + 1|]", None, None),  # int(inf) + .. never runs
    ("int(real(a[i]) / real(b[i])) * 1 + c[|i + 1|]", "E0503", "i = 2"),  # but its '*' does
    ("(b[i] == 0 ? c[i + 1] : c[i]) + a[i]", "E0501", "i = 2"),  # a check in a branch taken
]


@pytest.mark.parametrize("value, code, where", ORDER, ids=[v for v, _, _ in ORDER])
def test_an_operand_that_may_fail_fails_before_a_later_guard_or_check(value, code, where):
    """The reference computes operands left to right: an operand that fails (a division by
    zero) fails before a guard of a later operand skips the iteration or its range check
    fails. The generated kernel itself (not the reference's rerun after an error) must fail
    in the same iteration with the same kind of error, or succeed with the same values."""
    text = ("operator f { @input { a: int[3]; b: int[3]; c: int[3]; d: int[3, 3]; } "
            f"@output {{ y: int[3]; }} @lower {{ y[i] = {value}, i < 3; }} }}")
    inputs = {"a": np.array([4, 5, 6]), "b": np.array([1, 2, 0]), "c": np.array([7, 8, 9]),
              "d": np.arange(9).reshape(3, 3)}
    fast, slow = kernel_outcome(text, inputs), tree_walk_outcome(text, inputs)
    if code is None:
        assert fast[0] == slow[0] == "ok", (fast, slow)
        np.testing.assert_array_equal(fast[1]["y"], slow[1]["y"])
    else:
        assert fast == slow == ("error", (code, [f"at {where}"])), (fast, slow)


def test_the_reported_division_and_guard_fail_alike_through_the_api() -> None:
    from refinterp import api

    program = api.load_source("""operator f {
    @input { a: int[n]; b: int[n]; c: int[n]; }
    @output { y: int[n]; }
    @lower { y[i] = a[i] / b[i] + c[|i + 1|], i < n; }
}""")
    inputs = {"a": np.array([4, 5, 6]), "b": np.array([1, 2, 0]), "c": np.array([7, 8, 9])}
    for engine in ("scalar", "vector"):
        with pytest.raises(Diagnostic) as caught:
            api.evaluate(program, inputs=inputs, engine=engine)
        assert "division by zero" in caught.value.message and caught.value.notes == ["at i = 2"]
    inputs["b"] = np.array([1, 2, 3])
    out = api.evaluate(program, inputs=inputs, engine="scalar").outputs["y"]
    assert out.tolist() == [4 + 8, 2 + 9, 0]


# ------------------------------------------------------------------ loop-invariant values


def generated_source(text: str, inputs: dict[str, np.ndarray], formula: int = 0) -> str:
    """The kernel source of formula number `formula` of the operator in `text`."""
    definition = parse_module(SourceFile("<t>", text)).module.definitions[0]
    kinds = {"f": "real", "i": "int", "b": "bool"}
    infos = {k: TensorType(kinds[v.dtype.kind], v.shape) for k, v in inputs.items()}
    instance = instantiate(definition, Invocation({}, infos))
    plan = plan_lowering(instance)
    arrays = {**inputs, **allocate_outputs(instance, plan)}
    return kernel.Generator(instance, plan.formulas[formula], arrays,
                             instance.environment().profile).generate()


def loop_body(source: str, variable: str) -> list[str]:
    """The lines of `source` inside the loop over `variable` (more indented than its `for`)."""
    lines = source.splitlines()
    start = next(n for n, line in enumerate(lines) if line.lstrip().startswith(f"for {variable}"))
    indent = len(lines[start]) - len(lines[start].lstrip())
    return [line for line in lines[start + 1:]
            if len(line) - len(line.lstrip()) > indent]


def test_loop_invariant_values_that_cannot_fail_are_hoisted() -> None:
    """`sqrt(x[i]) * 2.0` (a local) and `exp(w[i])` depend on i only and cannot raise: they
    are computed once per i, outside the loop over j; the same values as the reference."""
    text = ("operator f { @input { x: real[n]; w: real[n]; } @output { y: real[n, 4]; } "
            "@lower { r = `sqrt`(x[i]) * 2.0, y[i, j] = r + `exp`(w[i]) * real(j), "
            "i < n, j < 4; } }")
    inputs = {"x": np.array([4.0, -1.0, np.inf]), "w": np.array([0.5, np.nan, -2.0])}
    inner = "\n".join(loop_body(generated_source(text, inputs), "I_j"))
    assert "L_r =" not in inner and inner.count("G_") == 1, inner  # real(j) only
    fast, slow = kernel_outcome(text, inputs), tree_walk_outcome(text, inputs)
    assert fast[0] == slow[0] == "ok"
    np.testing.assert_array_equal(fast[1]["y"], slow[1]["y"])


def test_loop_invariant_values_that_may_fail_stay_in_the_inner_loop() -> None:
    """`10 / x[i]` depends on i only but may fail: it stays where the reference computes it, so
    the error comes in the same iteration (j = 0 of i = 1), and not at all where the loop over
    j is empty (the reference never computes it there)."""
    text = ("operator f { @input { x: int[3]; } @output { y: int[3, M]; } "
            "@lower { r = 10 / x[i], y[i, j] = r + j, i < 3, j < M; } }")
    inputs = {"x": np.array([5, 0, 2])}
    source = generated_source(text.replace("M", "2"), inputs)
    assert any("L_r =" in line for line in loop_body(source, "I_j")), source
    fast = kernel_outcome(text.replace("M", "2"), inputs)
    slow = tree_walk_outcome(text.replace("M", "2"), inputs)
    assert fast == slow == ("error", ("E0503", ["at i = 1, j = 0"])), (fast, slow)
    fast = kernel_outcome(text.replace("M", "0"), inputs)
    slow = tree_walk_outcome(text.replace("M", "0"), inputs)
    assert fast[0] == slow[0] == "ok"


def test_a_read_of_the_output_is_not_hoisted() -> None:
    """`y[i, 0]` depends on i only, but the loop over j writes it (at j = 0): every iteration
    reads its current value, as on the reference."""
    text = ("operator f { @input { x: real[3]; } @output { y: real[3, 3]; } "
            "@lower { y[i, j] = y[i, 0] + x[i], i < 3, j < 3; } }")
    inputs = {"x": np.array([1.0, 2.0, 3.0])}
    fast, slow = kernel_outcome(text, inputs), tree_walk_outcome(text, inputs)
    assert fast[0] == slow[0] == "ok"
    np.testing.assert_array_equal(fast[1]["y"], slow[1]["y"])
    assert fast[1]["y"].tolist() == [[1.0, 2.0, 2.0], [2.0, 4.0, 4.0], [3.0, 6.0, 6.0]]


def test_an_input_larger_than_the_iterations_is_read_in_place() -> None:
    """An input with more elements than the formula has iterations (gather_nd's `data`) is read
    through a memoryview instead of being copied to a list: the same Python values (-0.0, nan,
    int64 extremes, bools), errors included."""
    text = ("operator f { @input { x: real[8]; n: int[8]; b: bool[8]; k: int[2]; } "
            "@output { y: real[2]; z: int[2]; c: bool[2]; } "
            "@lower { y[i] = -x[k[i]], i < 2; z[i] = n[k[i]] / 1, i < 2; "
            "c[i] = !b[k[i]], i < 2; } }")
    inputs = {"x": np.array([0.0, -0.0, np.nan, np.inf, 1.5, -2.5, 1e-310, 3.0]),
              "n": np.array([0, 1, -1, 2**63 - 1, -2**63, 5, 6, 7]),
              "b": np.array([True, False] * 4), "k": np.array([1, 4])}
    for k, expected in (([1, 4], (0.0, -1.5, 1, -2**63, True, False)),
                        ([2, 3], (np.nan, -np.inf, -1, 2**63 - 1, False, True))):
        inputs["k"] = np.array(k)
        fast, slow = kernel_outcome(text, inputs), tree_walk_outcome(text, inputs)
        assert fast[0] == slow[0] == "ok"
        for name in ("y", "z", "c"):
            a, b = np.asarray(fast[1][name]), np.asarray(slow[1][name])
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
        assert np.array_equal(fast[1]["y"], expected[:2], equal_nan=True)
        assert fast[1]["z"].tolist() == list(expected[2:4])
        assert fast[1]["c"].tolist() == list(expected[4:])
    inputs["k"] = np.array([0, 8])
    fast, slow = kernel_outcome(text, inputs), tree_walk_outcome(text, inputs)
    assert fast == slow == ("error", ("E0501", ["at i = 1"])), (fast, slow)


def test_a_reduction_keeps_its_output_element_in_a_local() -> None:
    """matmul: C[i, j] does not depend on the innermost index, so the innermost loop adds
    into a local, read before it and written back after it (one indexed load and store per
    cell instead of per iteration)."""
    source = generated_source(
        "operator mm { @input { A: real[m,k]; B: real[k,n]; } @output { C: real[m,n]; } "
        "@lower { C[i,j] += A[i,l] * B[l,j], i < m, j < n, l < k; } }",
        {"A": np.ones((2, 3)), "B": np.ones((3, 4))})
    lines = [line.strip() for line in source.splitlines()]
    loop = lines.index("for I_l in range(3):")
    assert lines[loop - 1].startswith("A = T_") and lines[loop + 1].startswith("A = A + (")
    assert lines[loop + 2].endswith("= A")


def test_an_output_read_by_its_own_value_is_not_kept_in_a_local() -> None:
    """`z[i] += z[0] * x[j]`: z[0] changes while i = 0 is summed, so every iteration must read
    and write the output itself; the result is the plain loop's."""
    text = ("operator f { @input { x: real[n]; } @output { z: real[n]; } "
            "@lower { z[i] = 1.0, i < n; z[i] += z[0] * x[j], i < n, j < n; } }")
    definition = parse_module(SourceFile("<t>", text)).module.definitions[0]
    x = np.array([0.5, -2.0, 3.0])
    outputs = run_compiled(instantiate(definition, Invocation(
        {}, {"x": TensorType("real", (3,))})), {"x": x})
    z = [1.0, 1.0, 1.0]
    for i in range(3):
        for j in range(3):
            z[i] += z[0] * float(x[j])
    np.testing.assert_array_equal(outputs["z"], np.array(z))
    assert "A = " not in generated_source(text, {"x": x}, formula=1)
