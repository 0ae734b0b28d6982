"""Spec §2.10: composing operators — first part of issue 6 (invocations, regions, branching)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from refinterp.compose import Executor, tensor_info
from refinterp.diagnostics import Diagnostic
from refinterp.instance import Invocation
from refinterp.modules import Loader

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
    invocation = Invocation(attributes or {}, {k: tensor_info(v) for k, v in inputs.items()})
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
