"""Spec §2.10: composing operators (invocations, regions, branching)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.language.invocation import tensor_type
from refinterp.run.compose import Executor
from refinterp.run.limits import Limits
from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import Invocation
from refinterp.language.modules import Loader

rng = np.random.default_rng(3)

OPS = """
operator mul {
  @input { x: real[n]; y: real[n]; }
  @output { z: real[n]; }
  @lower { z[i] = x[i] * y[i], i < n; }
}
operator add {
  @input { x: real[n]; y: real[n]; }
  @output { z: real[n]; }
  @lower { z[i] = x[i] + y[i], i < n; }
}
operator scale {
  @attrib { k: real = 1.0; }
  @input { x: real[n]; }
  @output { z: real[n]; }
  @lower { z[i] = x[i] * k, i < n; }
}
operator split2 {
  @input { x: real[n]; }
  @output { a: real[n]; b: real[n]; }
  @lower { a[i] = x[i], i < n; b[i] = -x[i], i < n; }
}
operator sum_all {
  @input { xs: real[n]..(k); }
  @output { y: real[n]; }
  @lower { y[i] += xs[j][i], j < k, i < n; }
}
operator positive {
  @input { x: real[]; }
  @output { c: bool[]; }
  @lower { c[] = x[] > 0.0; }
}
"""

MUL_ADD = """
operator mul_add {
  @input {
    x: real[n];
    a: real[n];
    b: real[n];
  }
  @output {
    y: real[n];
  }
  @compose {
    z = mul(x, a);
    y = add(z, b);
  }
}
"""


def run(tmp_path: Path, text: str, name: str, inputs: dict, attributes: dict | None = None):
    path = tmp_path / "main.sknd"
    path.write_text(OPS + text)
    program = Loader().load(path)
    definition = next(d for d in program.main.tree.definitions if d.name == name)
    invocation = Invocation(attributes or {}, {k: tensor_type(v) for k, v in inputs.items()})
    return Executor(program).run(definition, program.main, invocation, inputs)


def test_mul_add(tmp_path: Path) -> None:
    # §2.10's first example: y = x * a + b through two invocations.
    x, a, b = (rng.standard_normal(4) for _ in range(3))
    np.testing.assert_array_equal(run(tmp_path, MUL_ADD, "mul_add",
                                      {"x": x, "a": a, "b": b})["y"], x * a + b)


def test_attributes_packs_scalars_and_several_results(tmp_path: Path) -> None:
    text = """operator f {
      @input { x: real[n]; }
      @output { y: real[n]; s: real[n]; }
      @compose {
        p, m = split2(x);
        t = scale{k=2.0}(p);
        y = add(t, m);
        s = sum_all([x, p, m, t]);
      }
    }"""
    x = rng.standard_normal(3)
    out = run(tmp_path, text, "f", {"x": x})
    np.testing.assert_array_equal(out["y"], 2.0 * x + -x)
    np.testing.assert_allclose(out["s"], x + x - x + 2.0 * x, rtol=1e-12)


def test_block_form_branching_and_compile_time_choice(tmp_path: Path) -> None:
    # §2.10.1: `if {...} then {...} else {...}` with a dynamic (tensor) condition, and a
    # compile-time condition on an attribute.
    text = """operator g {
      @attrib { double: bool = false; }
      @input { v: real[]; x: real[n]; }
      @output { y: real[n]; w: real[n]; }
      @compose {
        y = if { c = positive(v); yield c; } then { r = add(x, x); yield r; }
            else { r = mul(x, x); yield r; };
        w = if double then scale{k=2.0}(x) else x;
      }
    }"""
    x = rng.standard_normal(3)
    positive = run(tmp_path, text, "g", {"v": np.array(1.0), "x": x}, {"double": True})
    np.testing.assert_array_equal(positive["y"], x + x)
    np.testing.assert_array_equal(positive["w"], 2.0 * x)
    negative = run(tmp_path, text, "g", {"v": np.array(-1.0), "x": x})
    np.testing.assert_array_equal(negative["y"], x * x)
    np.testing.assert_array_equal(negative["w"], x)


def test_errors_carry_the_invocation_stack(tmp_path: Path) -> None:
    text = """operator h {
      @input { x: real[n]; y: real[m]; }
      @output { z: real[n]; }
      @compose { z = add(x, y); }
    }"""
    with pytest.raises(Diagnostic) as info:
        run(tmp_path, text, "h", {"x": np.zeros(2), "y": np.zeros(3)})
    assert "'n' is 2 from input 'x'" in info.value.message
    assert [frame.operator for frame in info.value.stack] == ["add"]
    assert "while invoking add" in str(info.value)


def test_declared_output_shape_is_checked(tmp_path: Path) -> None:
    text = """operator bad {
      @input { x: real[n]; }
      @output { y: real[n, n]; }
      @compose { y = add(x, x); }
    }"""
    with pytest.raises(Diagnostic, match="composed as real\\[2\\] but declared real\\[2, 2\\]"):
        run(tmp_path, text, "bad", {"x": np.zeros(2)})


LOOPS = """
operator matmul {
  @input { A: real[m,k]; B: real[k,n]; }
  @output { C: real[m,n]; }
  @lower { C[i,j] += A[i,l] * B[l,j], i < m, j < n, l < k; }
}
operator add_to_all {
  @input { xs: real[n]..(k); z: real[n]; }
  @output { ys: real[n]..(k); }
  @compose { ys = for x : xs do add(x, z); }
}
operator add_all {
  @input { xs: real[n]..(k); }
  @output { y: real[n]; }
  @compose { y = with sum: real[n] = 0.0 for x : xs do add(sum, x); }
}
operator add_all_unrolled {
  @input { xs: real[n]..(k); }
  @output { y: real[n]; }
  @compose { y = with sum: real[n] = 0.0 for x : xs unroll add(sum, x); }
}
operator matpow {
  @input { A: real[n,n]; p: int[]; }
  @output { B: real[n,n]; }
  @constant { I: real[n,n] = i == j ? 1.0 : 0.0, i < n, j < n; }
  @compose { B = with X = I do..(p) matmul(X, A); }
}
operator halve {
  @input { x: real[]; }
  @output { y: real[]; big: bool[]; }
  @lower { y[] = x[] * 0.5; big[] = x[] * 0.5 > 1.0; }
}
operator halve_while_big {
  @input { x0: real[]; }
  @output { z: real[]; }
  @compose { z, ~ = with x = x0, big = true while big do halve(x); }
}
operator count_up {
  @input { k: int[]; }
  @output { total: int[]; }
  @compose { total = with s = 0 do..(i -> k) iadd(s, i); }
}
operator iadd {
  @input { a: int[]; b: int[]; }
  @output { c: int[]; }
  @lower { c[] = a[] + b[]; }
}
"""


def test_scanning_loop_add_to_all(tmp_path: Path) -> None:
    xs, z = [rng.standard_normal(3) for _ in range(4)], rng.standard_normal(3)
    ys = run(tmp_path, LOOPS, "add_to_all", {"xs": xs, "z": z})["ys"]
    for x, y in zip(xs, ys):
        np.testing.assert_array_equal(y, x + z)


@pytest.mark.parametrize("name", ["add_all", "add_all_unrolled"])
def test_folding_loop_add_all(tmp_path: Path, name: str) -> None:
    xs = [rng.standard_normal(3) for _ in range(4)]
    expected = ((np.zeros(3) + xs[0]) + xs[1] + xs[2]) + xs[3]  # the same summation order
    np.testing.assert_array_equal(run(tmp_path, LOOPS, name, {"xs": xs})["y"], expected)


@pytest.mark.parametrize("power", [0, 1, 3])
def test_matpow_with_a_dynamic_count(tmp_path: Path, power: int) -> None:
    a = rng.standard_normal((3, 3))
    out = run(tmp_path, LOOPS, "matpow", {"A": a, "p": np.array(power)})["B"]
    np.testing.assert_allclose(out, np.linalg.matrix_power(a, power), rtol=1e-12)


def test_while_loop_with_a_carried_condition(tmp_path: Path) -> None:
    # §2.10.1: `z, ~ = with x = x0, cond = true while cond do op(x, y);`
    out = run(tmp_path, LOOPS, "halve_while_big", {"x0": np.array(10.0)})["z"]
    # 10 → 5 → 2.5 → 1.25 → 0.625: the body runs while the carried `big` (result > 1) holds.
    assert float(out) == 0.625


def test_loop_index_and_count(tmp_path: Path) -> None:
    # `sum = with s = 0 do..(i -> k) add(s, i);` sums 0 + 1 + ... + (k - 1).
    out = run(tmp_path, LOOPS, "count_up", {"k": np.array(5)})["total"]
    assert int(out) == 10


def test_iteration_limit_is_a_diagnostic(tmp_path: Path) -> None:
    path = tmp_path / "main.sknd"
    path.write_text(OPS + LOOPS)
    program = Loader().load(path)
    definition = next(d for d in program.main.tree.definitions if d.name == "count_up")
    inputs = {"k": np.array(50)}
    invocation = Invocation({}, {"k": tensor_type(inputs["k"])})
    with pytest.raises(Diagnostic, match="ran 10 iterations"):
        Executor(program, limits=Limits(max_iterations=10)).run(definition, program.main,
                                                                invocation, inputs)
