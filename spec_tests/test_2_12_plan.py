"""Spec §2.12: planning @lower formulas (the analysis both engines share)."""

from __future__ import annotations

import pytest

from refinterp.language.instance import Invocation, TensorType, instantiate
from refinterp.lower.plan import LoweringDiagnostic, plan_lowering
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_module

from testsupport.spec_programs import MATMUL_Z

# §2.12's matmul with the optional initial value Z (shared with the engine tests).
MATMUL = MATMUL_Z


def plan(text: str, inputs: dict, attributes: dict | None = None):
    definition = parse_module(SourceFile("<t>", text)).module.definitions[0]
    return plan_lowering(instantiate(definition, Invocation(attributes or {}, inputs)))


def real(*shape: int) -> TensorType:
    return TensorType("real", shape)


def test_matmul_plan_loops_in_declaration_order() -> None:
    # §2.12: "C[i,j] += A[i,l] * B[l,j] basically describes a triple nested loop"; the indices
    # loop in the order they are declared (here i, l, j), outermost first.
    p = plan(MATMUL, {"A": real(2, 3), "B": real(3, 4)})
    init, update = p.formulas
    assert (init.output, init.op, update.op) == ("C", "=", "+=")
    assert [(r.name, r.bound) for r in update.indices] == [("i", 2), ("l", 3), ("j", 4)]
    assert update.iterations() == 24 and p.implicit_start == {}


def test_implicit_initialisation_with_the_neutral_element() -> None:
    # §2.12: "C is implicitly initialized to the null element of the += operator, 0".
    text = MATMUL.replace("     C[i,j] = Z[i,j] ?? 0.0, i < m, j < n;\n", "")
    assert plan(text, {"A": real(2, 3), "B": real(3, 4)}).implicit_start == {"C": 0}


def test_argmax_needs_its_initialisation() -> None:
    # §2.12 max_idx: `idx[] = 0; idx[] := i, i < n | x[i,] > x[idx[],];`; `:=` has no neutral
    # element, so the initialisation is required.
    max_idx = ("operator max_idx { @input { x: real[n]; } @output { idx: int[]; } "
               "@lower { idx[] = 0; idx[] := i, i < n | x[i,] > x[idx[],]; } }")
    p = plan(max_idx, {"x": real(5)})
    assert p.formulas[1].condition is not None and p.formulas[1].indices[0].bound == 5
    with pytest.raises(LoweringDiagnostic, match="needs an initialising"):
        plan(max_idx.replace("idx[] = 0; ", ""), {"x": real(5)})


def test_packed_bounds_and_pack_items() -> None:
    p = plan("operator f { @input { xs: real[s..]..(k); } @output { ys: real[s..]..(k); } "
             "@lower { ys[ki][i..] = xs[ki][i..], ki < k, i < s; } }",
             {"xs": (real(2, 3), real(2, 3))})
    formula, = p.formulas
    assert formula.item is not None and formula.indices[1].bound == (2, 3)
    assert formula.iterations() == 12


@pytest.mark.parametrize("lower, message", [
    ("A[i,j] = 0.0, i < m, j < k;", "must access an output"),
    ("C[i,j] = 0.0, i < m, j < n; C[i,j] = 1.0, i < m, j < n;", "at most an initialisation"),
    ("C[i,j] += 1.0, i < m, j < n; C[i,j] = 0.0, i < m, j < n;", "at most an initialisation"),
    ("C[i,j] = 0.0, i < m, i < n;", "bounded twice"),
    ("C[i,j] = 0.0, i < m - 5, j < n;", "non-negative"),
])
def test_invalid_lowerings(lower: str, message: str) -> None:
    text = ("operator f { @input { A: real[m,k]; } @output { C: real[m,n]; } @attrib { n: int; } "
            f"@lower {{ {lower} }} }}")
    with pytest.raises(LoweringDiagnostic, match=message):
        plan(text, {"A": real(2, 3)}, {"n": 4})
