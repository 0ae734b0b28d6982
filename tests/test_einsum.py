"""`refinterp einsum` and refinterp/einsum/__init__.py: einsum specs (NumPy and OCANNL notation) and
OCANNL accumulating assignments as SkriptND operators.

Sum-accumulations are checked against `np.einsum` over random specs and shapes; the other
accumulators against hand-written NumPy loops; OCANNL's own notation against values computed
by hand (and, for `b|i->o => o|b->i`, the values printed by OCANNL's test
einsum_trivia_exec.expected)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from refinterp import api
from refinterp import einsum as front
from refinterp.core.diagnostics import Diagnostic, render
from testsupport.ocannl_cases import cli


def run(spec: str, inputs: dict, **options) -> dict:
    """Build and run; options: names, result, accumulation, operation, attributes."""
    attributes = options.pop("attributes", None)
    einsum = front.build(spec, **options)
    return front.evaluate(einsum, inputs, attributes, engine="scalar").outputs


# ----------------------------------------------------------------------------- np.einsum


@st.composite
def numpy_specs(draw):
    """A random NumPy einsum spec with shapes: 1-3 operands of rank 0-3 over labels a-e
    (repeated labels in an operand make diagonals), an explicit or implicit output, and
    sometimes a leading '...' shared by every operand."""
    labels = "abcde"
    sizes = {label: draw(st.integers(1, 3)) for label in labels}
    count = draw(st.integers(1, 3))
    ellipsis = draw(st.booleans())
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2))) if ellipsis else ()
    operands = [draw(st.lists(st.sampled_from(labels), max_size=3)) for _ in range(count)]
    used = sorted({label for operand in operands for label in operand})
    explicit = draw(st.booleans())
    if explicit:
        output = draw(st.permutations(used))[:draw(st.integers(0, len(used)))]
        text = ",".join(("..." if ellipsis else "") + "".join(o) for o in operands) + "->" + \
            ("..." if ellipsis else "") + "".join(output)
    else:
        text = ",".join(("..." if ellipsis else "") + "".join(o) for o in operands)
    shapes = [batch + tuple(sizes[label] for label in operand) for operand in operands]
    return text, shapes


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(numpy_specs(), st.integers(0, 2**32 - 1))
def test_sum_accumulation_is_np_einsum(case, seed: int) -> None:
    text, shapes = case
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-2.0, 2.0, size=shape) for shape in shapes]
    names = [chr(ord("a") + k) for k in range(len(arrays))]
    found = run(text, dict(zip(names, arrays)))["out"]
    expected = np.einsum(text, *arrays)
    assert found.shape == expected.shape, text
    np.testing.assert_allclose(found, expected, rtol=1e-12, atol=1e-12, err_msg=text)


def test_numpy_implicit_output_is_the_labels_used_once_in_order() -> None:
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(run("ij,jk", {"a": a, "b": b})["out"], a @ b)
    np.testing.assert_array_equal(run("ba", {"a": a})["out"], a.T)  # 'ab' order: transposed


# ----------------------------------------------------------------------------- accumulators


A = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]])
B = np.array([[1.0, 2.0], [-3.0, 0.5], [4.0, -1.5]])


def matmul_like(accumulate, start, op=lambda x, y: x * y) -> np.ndarray:
    """out[i, k] = start, then out[i, k] = accumulate(out[i, k], op(A[i, j], B[j, k])) for j
    in order — a hand-written reference for `ij;jk=>ik`."""
    out = np.full((2, 2), start, dtype=np.float64) if np.ndim(start) == 0 else start.copy()
    for i in range(2):
        for k in range(2):
            for j in range(3):
                out[i, k] = accumulate(out[i, k], op(A[i, j], B[j, k]))
    return out


@pytest.mark.parametrize("assign, accumulate, start", [
    ("=:+", lambda c, v: c + v, 0.0),
    ("=:-", lambda c, v: c - v, 0.0),
    ("=:*", lambda c, v: c * v, 1.0),
    ("=:/", lambda c, v: c / v, 1.0),
    ("=:@^", lambda c, v: c if c > v or math.isnan(c) else v, -math.inf),
    ("=:^^", lambda c, v: c if c < v or math.isnan(c) else v, math.inf),
    ("=:@-", lambda c, v: c if c < v or math.isnan(c) else v, math.inf),
    ("=:?/", lambda c, v: v if c > 0.0 else 0.0, 1.0),
    ("=:?^", lambda c, v: v if 0.0 < c < 1.0 else 0.0, 0.5),
    ("=:||", lambda c, v: 1.0 if c != 0.0 or v != 0.0 else 0.0, 0.0),
    ("=:&&", lambda c, v: 1.0 if c != 0.0 and v != 0.0 else 0.0, 1.0),
    ("=:", lambda c, v: v, 0.0),
])
def test_clearing_accumulators_start_from_the_neutral_element(assign, accumulate, start) -> None:
    found = run("ij;jk=>ik", {"a": A, "b": B}, accumulation=assign)["out"]
    np.testing.assert_array_equal(found, matmul_like(accumulate, start))


def test_power_accumulation_and_operation() -> None:
    x = np.array([2.0, 3.0])
    found = run("i=>", {"a": x}, accumulation="=:**")["out"]  # ((1 ** 2) ** 3)
    assert found.shape == () and found == 1.0
    found = run("i;i=>i", {"a": x, "b": np.array([3.0, -1.0])}, operation="**")["out"]
    np.testing.assert_array_equal(found, [8.0, 1.0 / 3.0])


def test_non_clearing_accumulation_starts_from_the_old_value() -> None:
    old = np.array([[10.0, -1.0], [0.0, 2.0]])
    found = run("c =+ a * b ~logic:\"ij;jk=>ik\"", {"a": A, "b": B, "c_old": old})["c"]
    np.testing.assert_allclose(found, old + A @ B, rtol=1e-15)
    found = run("c =@^ a -?/ b ~logic:\"ij;jk=>ik\"", {"a": A, "b": B, "c_old": old})["c"]
    gate = lambda x, y: y if x > 0.0 else 0.0  # noqa: E731
    expected = matmul_like(lambda c, v: c if c > v or math.isnan(c) else v, old, gate)
    np.testing.assert_array_equal(found, expected)


def test_clearing_fills_cells_outside_the_projection_with_the_neutral_element() -> None:
    # OCANNL's own example: `lhs =:* rhs ~logic:"...|... => ...|...2"` fills the other cells
    # with ones; `=+` onto an old tensor keeps them
    x = np.arange(6.0).reshape(2, 3) + 1.0  # batch 2, output 3
    ranks = {"batch_rank": 1}  # a flat array does not say which axes are batch axes
    found = run("...|... => ...|...2", {"a": x}, accumulation="=:*", attributes=ranks)["out"]
    expected = np.ones((2, 3, 3))
    expected[:, :, 2] = x
    np.testing.assert_array_equal(found, expected)
    old = np.full((2, 3, 4), 7.0)
    found = run("...|... => ...|...2", {"a": x, "out_old": old}, accumulation="=+",
                attributes=ranks)["out"]
    expected = old.copy()
    expected[:, :, 2] += x
    np.testing.assert_array_equal(found, expected)


def test_plain_assignment_onto_every_cell_reads_no_old_value() -> None:
    einsum = front.build("c =: relu a")
    assert not einsum.reads_old() and "c_old" not in einsum.to_sknd()
    x = np.array([-1.0, 0.5, math.nan, -0.0])
    found = run("c =: relu a", {"a": x})["c"]
    assert list(found[:3]) == [0.0, 0.5, 0.0] and np.signbit(found[3])


# ----------------------------------------------------------------------------- OCANNL notation


def range_of_shape(batch: tuple, input_: tuple, output: tuple) -> np.ndarray:
    """OCANNL's `range_of_shape`: cell offsets, laid out batch, output, input."""
    shape = batch + output + input_
    return np.arange(float(np.prod(shape))).reshape(shape)


def test_permutation_across_axis_kinds_matches_ocannls_printout() -> None:
    # einsum_trivia_exec.expected: hey (batch 2, input 3, output 4) ++ "b|i->o => o|b->i"
    # has shape 4|2->3 and cells [o, i, b] = hey[b, o, i]: 0 and 12 at o=0, i=0; 3 and 15 at
    # o=1, i=0
    hey = range_of_shape((2,), (3,), (4,))
    found = run("b|i->o => o|b->i", {"a": hey})["out"]
    assert found.shape == (4, 3, 2)  # batch o, output i, input b
    assert list(found[0, 0]) == [0.0, 12.0] and list(found[1, 0]) == [3.0, 15.0]
    np.testing.assert_array_equal(found, np.transpose(hey, (1, 2, 0)))
    hey2 = range_of_shape((2, 3), (4, 5), (6, 7))  # a b | c d -> e f
    found = run("ab|cd->ef => cf|ae->db", {"a": hey2})["out"]
    np.testing.assert_array_equal(found, np.einsum("abefcd->cfdbae", hey2))


def test_row_variables_and_fixed_indices() -> None:
    # "...|i->1; ...|...->i => ...|i": a's output index 1, b's input row summed out
    a = range_of_shape((3,), (4,), (2,))
    b = range_of_shape((3,), (1,), (4,))
    found = run("...|i->1; ...|...->i => ...|i", {"a": a, "b": b})["out"]
    np.testing.assert_array_equal(found, a[:, 1, :] * b[:, :, 0])
    # a named row variable pairs batch axes with output axes; '...' in the output row reduces
    x = range_of_shape((2,), (), (5, 3, 4, 2))
    found = run("..v..|...ijk => ..v..kji", {"a": x}, attributes={"v_rank": 1})["out"]
    np.testing.assert_array_equal(found, np.einsum("vzijk->vkji", x))
    # slicing at a fixed batch index
    y = range_of_shape((4, 2), (), (3,))
    np.testing.assert_array_equal(run("2..v..|... => ..v..", {"a": y},
                                      attributes={"v_rank": 1})["out"],
                                  y[2].sum(axis=-1))


def test_reduce_everything_to_one_number() -> None:
    x = range_of_shape((2,), (3,), (4,))
    found = run("...|...->... => 0", {"a": x},
                attributes={"batch_rank": 1, "input_rank": 1})["out"]
    assert found.shape == (1,) and found[0] == x.sum()


def test_multichar_mode_and_placeholders() -> None:
    found = run("row, col; col, k2 => row, k2", {"a": A, "b": B})["out"]
    np.testing.assert_allclose(found, A @ B, rtol=1e-15)
    # '_' is an axis of its own, summed when it is not in the result
    np.testing.assert_array_equal(run("i_ => i", {"a": A})["out"], A.sum(axis=1))


def test_logic_shorthands() -> None:
    # '@': output axes of rhs2 match input axes of rhs1; with plain matrices every row
    # variable holds one axis except the batch row
    found = run("c =:+ a * b ~logic:\"@\"", {"a": A, "b": B},
                attributes={"b_rank": 0, "o_rank": 1})["c"]
    np.testing.assert_allclose(found, A @ B, rtol=1e-15)
    found = run("c =: id a ~logic:\"T\"", {"a": A}, attributes={"b_rank": 0, "o_rank": 1})["c"]
    np.testing.assert_array_equal(found, A.T)
    found = run("c =: a -?^ b ~logic:\".\"", {"a": A, "b": A * 2.0})["c"]
    np.testing.assert_array_equal(found, np.where((A > 0.0) & (A < 1.0), A * 2.0, 0.0))


def test_ternary_operation() -> None:
    m = np.array([1.0, 0.0, math.nan])
    found = run("r =: where(m, x, y)", {"m": m, "x": np.ones(3), "y": np.zeros(3)})["r"]
    np.testing.assert_array_equal(found, [1.0, 0.0, 1.0])  # NaN is nonzero


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("spec, column, message", [
    ("ij,jk->il", 9, "not given by any operand"),
    ("ij;jk=>ik=>i", 10, "second '=>'"),
    ("i j|k|l => i", 6, "second '|'"),
    ("ij,j$->i", 5, "unexpected '$'"),
    ("ab;b=>2*a", 7, "convolution axes are not supported in the result"),
    ("..v|i => i", 1, "row variable is written"),
    ("ij->ii", 6, "appears twice in the result"),
])
def test_malformed_specs_are_diagnostics_with_a_caret(spec, column, message) -> None:
    with pytest.raises(Diagnostic) as raised:
        front.build(spec).to_sknd()
    error = raised.value
    assert message in error.message and error.code == "E0100"
    assert error.span.col == column, render(error)
    caret_line = render(error).splitlines()[2]
    assert caret_line.index("^") - caret_line.index("|") - 2 == column - 1


def test_one_liner_errors() -> None:
    with pytest.raises(Diagnostic, match="unknown primitive operation 'rleu'") as raised:
        front.build("c =: rleu a")
    assert raised.value.span.col == 6
    with pytest.raises(Diagnostic, match="takes 2 operand"):
        front.build("c =:+ mul a")
    with pytest.raises(Diagnostic, match="unknown accumulation"):
        front.build("ij->i", accumulation="=:%")
    with pytest.raises(Diagnostic, match="must differ"):
        front.build("c =+ c_old * b").to_sknd()
    with pytest.raises(Diagnostic, match="uses for itself"):
        front.build("ij->ji", names=["n_i"]).to_sknd()


# ----------------------------------------------------------------------------- command line


def test_emitted_operator_parses_and_runs(tmp_path: Path) -> None:
    status, text, _ = cli("einsum", 'c =:+ a * b ~logic:"ij;jk=>ik"', "--emit")
    assert status == 0 and text.startswith("# ij;jk=>ik: c =:+ mul(a, b)")
    path = tmp_path / "mm.sknd"
    path.write_text(text)
    run_ = api.evaluate(path, inputs={"a": A, "b": B})
    np.testing.assert_allclose(run_.outputs["c"], A @ B, rtol=1e-15)
    status, _, _ = cli("eval", str(path), "--random", "a=real[2,3]", "--random", "b=real[3,5]")
    assert status == 0


def test_running_writes_inputs_and_outputs(tmp_path: Path) -> None:
    outputs, inputs = tmp_path / "o.npz", tmp_path / "i.npz"
    status, text, _ = cli("einsum", "bij,bjk->bik", "--random", "a=real[2,3,4]", "--random",
                          "b=real[2,4,5]", "--seed", "3", "-o", str(outputs),
                          "--save-inputs", str(inputs))
    assert status == 0 and "out" in text
    given_, found = np.load(inputs), np.load(outputs)
    np.testing.assert_allclose(found["out"], given_["a"] @ given_["b"], rtol=1e-13)
    status, _, _ = cli("einsum", "ij->ji", "--names", "x", "--result", "y", "--accum", "=:",
                       "--operation", "neg", "--inputs", str(inputs).replace("i.npz", "x.npz"))
    assert status == 1  # the file does not exist: a diagnostic


def test_command_line_misuse_exits_2_and_spec_errors_exit_1() -> None:
    assert cli("einsum", "ij,jk->ik")[0] == 2  # neither inputs nor --emit
    assert cli("einsum", "ij->ji", "--emit", "-o", "x.npz")[0] == 2
    status, _, err = cli("einsum", "ij,jk->il", "--emit")
    assert status == 1 and "^" in err and "E0100" in err


def test_rank_attributes_are_named_in_the_emitted_text() -> None:
    status, text, _ = cli("einsum", "@", "--emit")
    assert status == 0 and "b_rank: int;" in text and "k_rank: int;" in text


# ----------------------------------------------------------------------------- golden models

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "ocannl" / "cases"
# the model cases of golden/ocannl/cases/ocannl.toml: file, one-liner, input shapes, ranks
MODELS = [
    ("matmul_clear", 'c =:+ a * b ~logic:"ij;jk=>ik"', {"a": (3, 4), "b": (4, 2)}, None),
    ("matmul_onto", 'c =+ a * b ~logic:"ij;jk=>ik"', {"a": (3, 4), "b": (4, 2),
                                                       "c_old": (3, 2)}, None),
    ("max_relu_gate_clear", 'c =:@^ a -?/ b ~logic:"ij;jk=>ik"', {"a": (3, 4), "b": (4, 2)},
     None),
    ("min_onto", 'c =^^ a + b ~logic:"ij;jk=>ik"', {"a": (3, 4), "b": (4, 2), "c_old": (3, 2)},
     None),
    ("div_clear", 'c =:/ a * b ~logic:"ij;jk=>ik"', {"a": (2, 3), "b": (3, 2)}, None),
    ("sub_onto_reduce_input", 'c =- a ~logic:"b|i->o => b|o"', {"a": (2, 3, 4),
                                                                 "c_old": (2, 3)}, None),
    ("mul_clear_fixed_index", 'c =:* a ~logic:"b|o => b|o2"', {"a": (2, 3)}, None),
    ("add_onto_fixed_index", 'c =+ a ~logic:"b|o => b|o2"', {"a": (2, 3), "c_old": (2, 3, 4)},
     None),
    ("and_clear", 'c =:&& a <> b ~logic:"ij;ij=>i"', {"a": (3, 4), "b": (3, 4)}, None),
    ("assign_where", 'c =: where(m, x, y)', {"m": (2, 3), "x": (2, 3), "y": (2, 3)}, None),
    ("compose_at", 'c =:+ a * b ~logic:"@"', {"a": (2, 3, 4), "b": (2, 4, 5)},
     {"b_rank": 1, "o_rank": 1}),
    ("permute_kinds", 'c =: a ~logic:"ab|cd->ef => cf|ae->db"', {"a": (2, 3, 2, 2, 3, 2)}, None),
    ("numpy_batched_matmul", 'c =:+ a * b ~logic:"bij,bjk->bik"', {"a": (2, 3, 4),
                                                                    "b": (2, 4, 2)}, None),
    ("numpy_broadcast_ellipsis", "...i,...i->...", {"a": (3, 1, 4), "b": (1, 5, 4)}, None),
]


@pytest.mark.parametrize("name, line, shapes, attributes", MODELS, ids=[m[0] for m in MODELS])
def test_golden_model_files_are_the_front_ends_output(name, line, shapes, attributes) -> None:
    path = GOLDEN / "ocannl" / f"{name}.sknd"
    assert path.read_text() == front.model_text(front.build(line), shapes, attributes)
    assert f'model = "ocannl/{name}.sknd"' in (GOLDEN / "ocannl.toml").read_text()


def test_golden_model_of_an_accumulation_onto_an_old_value() -> None:
    rng = np.random.default_rng(5)
    a, b, old = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    found = api.evaluate(GOLDEN / "ocannl" / "min_onto.sknd",
                         inputs={"a": a, "b": b, "c_old": old}).outputs["c"]
    expected = old.copy()
    for i in range(3):
        for k in range(2):
            for j in range(4):
                value = a[i, j] + b[j, k]
                expected[i, k] = expected[i, k] if expected[i, k] < value else value
    np.testing.assert_array_equal(found, expected)


def test_the_docs_python_examples_run() -> None:
    """docs/ocannl.md's ```python blocks run (they check themselves with assert)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "ocannl.md").read_text()
    blocks = [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/ocannl.md", "exec"), {"__name__": "docs_ocannl"})
