"""Spec §2.5–2.9 and §2.13: instantiating operators with the spec's own examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import Invocation, TensorType, instantiate
from refinterp.language.modules import Loader
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_module
from refinterp.language.values import NULL

CORPUS = Path(__file__).resolve().parent / "corpus"


def op(text: str):
    return parse_module(SourceFile("<t>", text)).module.definitions[0]


def corpus_op(file: str, name: str):
    tree = Loader().load(CORPUS / file).main.tree
    return next(d for d in tree.definitions if d.name == name)


def real(*shape: int) -> TensorType:
    return TensorType("real", shape)


def run(definition, attributes=None, inputs=None, generics=()):
    return instantiate(definition, Invocation(attributes or {}, inputs or {}, generics))


def fails(definition, attributes=None, inputs=None, generics=()) -> Diagnostic:
    with pytest.raises(Diagnostic) as info:
        run(definition, attributes, inputs, generics)
    return info.value


# ----------------------------------------------------------------------------- §2.1 conv

CONV = ("4_4_1_linear_operators_02.sknd", "conv")


def test_conv_same_padding_by_default() -> None:
    # §4.4.1 conv: without `padding`, paddings = ((ix / stride) - 1) * stride + fd - ix, so the
    # output keeps the spatial size for stride 1: 8 -> 8 with a 3x3 filter.
    inst = run(corpus_op(*CONV), inputs={"input": real(1, 3, 8, 8), "filter": real(4, 3, 3, 3)})
    assert inst.outputs["output"] == TensorType("real", (1, 4, 8, 8), (None,) * 4)
    assert inst.symbols["d"] == 2 and inst.symbols["stride"] == (1, 1)  # uniform expansion


def test_conv_stride_and_explicit_padding() -> None:
    # (ix + paddings - fd) / stride + 1 = (9 + 0 - 3) / 2 + 1 = 4 with padding 0, stride 2.
    inst = run(corpus_op(*CONV), {"stride": 2, "padding": 0},
               {"input": real(2, 3, 9, 9), "filter": real(5, 3, 3, 3)})
    assert inst.outputs["output"].shape == (2, 5, 4, 4)


def test_conv_assertion_message_and_values() -> None:
    diag = fails(corpus_op(*CONV), {"stride": 0},
                 {"input": real(1, 3, 8, 8), "filter": real(4, 3, 3, 3)})
    assert diag.message == "'stride' must be positive"
    assert "stride = [0, 0]" in diag.notes


def test_conv_conflicting_channels() -> None:
    # The filter's rank disagrees with the input's: d + 2 = 4 from input, 3 items in filter.
    diag = fails(corpus_op(*CONV), inputs={"input": real(1, 3, 8, 8), "filter": real(4, 3, 3)})
    assert "input 'filter'" in diag.message


# ----------------------------------------------------------------------------- §4.1.2 reshape

def test_reshape_example() -> None:
    inst = run(corpus_op("4_1_2_data_view_operators_01.sknd", "reshape"),
               {"shape": (3, 2)}, {"input": real(6)})
    assert inst.outputs["output"].shape == (3, 2)


# ----------------------------------------------------------------------------- §2.6.1

SECTION_2_6_1 = """operator f {
    @attrib { r: int; a: optional int; b: int..(d) = 0; c: int = 2 * d + r; }
    @input { x: real[s..(r),z..(d),t..]; y: real[s..(r),z..(d)]; }
}"""


def test_binding_order_example_values() -> None:
    # y is bound first (d = 2 from z), then x; b takes its uniform default [0, 0]; c = 2 * d + r.
    inst = run(op(SECTION_2_6_1), {"r": 1}, {"x": real(2, 3, 4, 5), "y": real(2, 3, 4)})
    symbols = inst.symbols
    assert (symbols["s"], symbols["z"], symbols["t"], symbols["d"]) == ((2,), (3, 4), (5,), 2)
    assert symbols["b"] == (0, 0) and symbols["c"] == 5 and symbols["a"] is NULL


def test_conflicting_deduction_names_both_sources() -> None:
    diag = fails(op(SECTION_2_6_1), {"r": 1}, {"x": real(9, 3, 4, 5), "y": real(2, 3, 4)})
    assert "'s' is [2] from input 'y'" in diag.message and "input 'x'" in diag.message


# ----------------------------------------------------------------------------- §2.9

INTERLEAVE = """operator f {
    @attrib { a: int; b: int; c: int; }
    @using { r = a / b; }
    @assert {
        b > 0: "b must be positive", b;
        a % b == 0: "a must be divisible by b", a, b;
        r + c == 42: "some condition must be true for a/b and c";
    }
}"""


def test_interleaving_checks_b_before_dividing() -> None:
    # §2.9: the first two assertions are checked before r = a / b is evaluated.
    diag = fails(op(INTERLEAVE), {"a": 10, "b": 0, "c": 1})
    assert diag.message == "b must be positive" and diag.notes == ["b = 0"]
    diag = fails(op(INTERLEAVE), {"a": 10, "b": 3, "c": 1})
    assert diag.message == "a must be divisible by b"
    assert run(op(INTERLEAVE), {"a": 84, "b": 2, "c": 0}).symbols["r"] == 42
    assert fails(op(INTERLEAVE), {"a": 84, "b": 2, "c": 1}).message.startswith("some condition")


def test_null_assertion_is_skipped_and_packed_must_all_hold() -> None:
    definition = op("operator f { @attrib { p: optional int; q: int..; } "
                    "@assert { p > 0: 'p'; q > 0: 'q {q}'; } }")
    run(definition, {"q": (1, 2)})
    assert fails(definition, {"q": (1, 0)}).message == "q [1, 0]"


# ----------------------------------------------------------------------------- §2.5 attributes

def test_deferred_and_optional_valued_defaults() -> None:
    # §2.5: `a: int..(k) = [0:r]` with optional r: if r is missing, a must be given.
    definition = op("operator f { @attrib { r: optional int; a: int..(k) = [0:r]; } }")
    assert run(definition, {"r": 3}).symbols["a"] == (0, 1, 2)
    assert run(definition, {"r": 3}).symbols["k"] == 3  # the deferred value's length binds k
    assert "must be given" in fails(definition).message
    assert run(definition, {"a": (5,)}).symbols["k"] == 1


def test_uniform_value_for_a_packed_attribute() -> None:
    definition = op("operator f { @attrib { r: int; a: int..(r) = 0; } }")
    assert run(definition, {"r": 3}).symbols["a"] == (0, 0, 0)
    assert run(definition, {"r": 2, "a": 7}).symbols["a"] == (7, 7)
    assert "must have 2 items" in fails(definition, {"r": 2, "a": (1, 2, 3)}).message
    unknown = op("operator f { @attrib { a: int..(r) = 0; } }")
    assert "not known" in fails(unknown, {"a": 1}).message


def test_missing_and_unknown_attributes() -> None:
    definition = op("operator f { @attrib { n: int; } }")
    assert "must be given" in fails(definition).message
    assert "no attribute 'm'" in fails(definition, {"n": 1, "m": 2}).message
    assert "must be int; got real" in fails(definition, {"n": 1.5}).message


# ----------------------------------------------------------------------------- §2.6 inputs

AFFINE = """operator f {
    @attrib { n: int; }
    @input { x: real[m, k + 1, s..(2 * d), n / 2]; }
}"""


def test_affine_extents() -> None:
    inst = run(op(AFFINE), {"n": 8}, {"x": real(2, 5, 3, 3, 4)})
    assert (inst.symbols["m"], inst.symbols["k"], inst.symbols["s"], inst.symbols["d"]) == \
        (2, 4, (3, 3), 1)
    assert "does not fit 2 * d" in fails(op(AFFINE), {"n": 8}, {"x": real(2, 5, 3, 4)}).message
    assert "is 5, expected 4 (n / 2)" in \
        fails(op(AFFINE), {"n": 8}, {"x": real(2, 5, 3, 3, 5)}).message


def test_tensor_packs_shared_and_distinct_extents() -> None:
    # §2.6: `xs: real[z, s..(l), ..t]..(k)`: z and s shared, t one extent per item.
    definition = op("operator f { @input { xs: real[z, s..(l), ..t]..(k); } }")
    inst = run(definition, inputs={"xs": (real(2, 3, 4), real(2, 3, 5))})
    assert (inst.symbols["k"], inst.symbols["z"], inst.symbols["t"]) == (2, 2, (4, 5))
    assert "'z' is 2" in fails(definition, inputs={"xs": (real(2, 3, 4), real(7, 3, 4))}).message


def test_rank_capture_and_outputs() -> None:
    definition = op("operator f { @input { x: real^(r)[s..]; } "
                    "@output { y: real[r, s..]; z: real[s[0] > 1 ? 2]; } }")
    inst = run(definition, inputs={"x": real(1, 4)})
    assert inst.outputs["y"].shape == (2, 1, 4)
    assert inst.outputs["z"].shape == ()  # a null component is omitted


def test_optional_input_absent_gives_null_symbols() -> None:
    definition = op("operator f { @input { x: real[n]; bias: optional real[m]; } "
                    "@output { y: real[n]; } @assert { m == n: 'bias size'; } }")
    inst = run(definition, inputs={"x": real(3)})
    assert inst.symbols["m"] is NULL and inst.outputs["y"].shape == (3,)
    assert fails(definition, inputs={"x": real(3), "bias": real(2)}).message == "bias size"


def test_dynamic_output_agreement_symbol() -> None:
    # §2.6: `y: real[s|k,m]; z: real[s|k,m];` — s names a dynamic extent shared by outputs.
    inst = run(corpus_op("2_6_operator_inputs_and_outputs_11.sknd",
                         "example_dynamic_output_agreement"), {"k": 4}, {"x": real(2, 3)})
    assert inst.outputs["y"] == inst.outputs["z"] == TensorType("real", (None, 3), (4, None))


def test_dynamic_output_extents_carry_their_bound() -> None:
    definition = op("operator f { @attrib { k: int; } @input { x: real[n, m]; } "
                    "@output { y: real[~|k, m]; } }")
    inst = run(definition, {"k": 5}, {"x": real(3, 4)})
    assert inst.outputs["y"] == TensorType("real", (None, 4), (5, None))


# ----------------------------------------------------------------------------- §2.7 constants

def test_constants() -> None:
    definition = op("operator f { @attrib { n: int; } @constant { "
                    "I: real[n,n] = i == j ? 1.0 : 0.0, i < n, j < n; "
                    "c: real[n] = 0.5; l: int[2, 2] = [1, 2, 3, 4]; } }")
    inst = run(definition, {"n": 2})
    assert inst.constants["I"][1] == (1.0, 0.0, 0.0, 1.0)
    assert inst.constants["c"] == (TensorType("real", (2,), (None,)), 0.5)
    assert inst.constants["l"][1] == (1, 2, 3, 4)


# ----------------------------------------------------------------------------- §2.13 generics

GENERIC = "operator f { @dtype { T: num; U: type = real; } @input { x: T[n]; } " \
          "@output { y: T[n]; z: U[]; } }"


def test_generics_deduced_defaulted_and_explicit() -> None:
    inst = run(op(GENERIC), inputs={"x": TensorType("int", (3,))})
    assert inst.dtypes == {"T": "int", "U": "real"}
    assert inst.outputs["y"].dtype == "int" and inst.outputs["z"].dtype == "real"
    explicit = run(op(GENERIC), inputs={"x": real(3)}, generics=("real", "bool"))
    assert explicit.outputs["z"].dtype == "bool"
    assert "T is real from the explicit type argument but int" in fails(
        op(GENERIC), inputs={"x": TensorType("int", (3,))}, generics=("real",)).message
    assert "T: num cannot be bool" in fails(
        op(GENERIC), inputs={"x": TensorType("bool", (3,))}).message


def test_scatter_nd_binding_reuses_bound_pack_lengths() -> None:
    definition = corpus_op("4_1_6_data_indexing_operators_05.sknd", "scatter_nd")
    inst = run(definition, inputs={"data": real(4, 5, 6), "indices": TensorType("int", (3, 2)),
                                   "updates": real(3, 6)})
    assert inst.outputs["output"].shape == (4, 5, 6)
    assert (inst.symbols["d"], inst.symbols["z"], inst.symbols["t"]) == (2, (3,), (6,))


def test_constant_with_a_packed_index_bound() -> None:
    # §4.5.1 linear_upsample: `filter: real[fs..] = ... , i < fs;` with fs a pack: i runs over
    # every multi-index of fs (row-major) and is a pack of indices.
    definition = op("operator f { @attrib { fs: int..; } "
                    "@constant { c: int[fs..] = i * [10, 1] + .., i < fs; } }")
    inst = run(definition, {"fs": (2, 3)})
    assert inst.constants["c"][1] == (0, 1, 2, 10, 11, 12)


def test_graph_output_without_shape_is_left_to_the_composition() -> None:
    # §2.6: "the entire shape definition can be omitted ... output: real".
    definition = op("graph G { @input { x: real[s|10]; } @output { y: real; } }")
    inst = run(definition, inputs={"x": real(4)})
    assert inst.outputs["y"].shape is None
    assert "above its bound 10" in fails(definition, inputs={"x": real(11)}).message


def test_using_symbols_keep_their_static_optional_type() -> None:
    # §4.1.3 concat: `u = z := ..` is optional even when the inputs happen to be uniform, so
    # `u * n ?? (z + ..)` is well typed; both cases give the summed extent.
    definition = corpus_op("4_1_3_joining_and_splitting_operators_01.sknd", "concat")
    assert run(definition, {"axis": 1}, {"inputs": (real(2, 3),) * 3}).outputs["output"].shape \
        == (2, 9)
    assert run(definition, {"axis": 1}, {"inputs": (real(2, 3), real(2, 5))}) \
        .outputs["output"].shape == (2, 8)


def test_absent_optional_input_with_packed_extents() -> None:
    # §4.3 matmul: without C, its packed extents c and length dc are null packs/ints.
    definition = corpus_op("4_3_linear_algebra_operators_02.sknd", "matmul")
    inst = run(definition, inputs={"A": real(2, 3), "B": real(5, 3, 4)})
    assert inst.outputs["Z"].shape == (5, 2, 4) and inst.symbols["c"] is NULL


def test_using_length_hints_and_destructuring() -> None:
    # §2.9: `c..(n) = ...` hints (here: declares) the length; `[a,b..] = c` splits the head
    # from the tail; `[(e,f)..] = c` unzips.
    inst = run(corpus_op("2_9_using_helper_symbols_for_intermediate_expressions_02.sknd",
                         "example_using_pack_length_hint"))
    assert inst.symbols["n"] == 3
    definition = op("operator f { @attrib { c: int..; m: int; } @using { "
                    "[a, b..] = c; [(e, g)..] = c; h..(m) = c; } }")
    inst = run(definition, {"c": (1, 2, 3, 4), "m": 4})
    assert (inst.symbols["a"], inst.symbols["b"]) == (1, (2, 3, 4))
    assert (inst.symbols["e"], inst.symbols["g"]) == ((1, 3), (2, 4))
    assert "is 4, expected 3 (m)" in fails(definition, {"c": (1, 2, 3, 4), "m": 3}).message


def test_repeated_literal_extent_in_an_input_shape() -> None:
    # §4.1.3 stack: `inputs: T^(rank)[s..(axis ...), 1 ..(squeeze ? 1 : 0), t..]..(n)`: with
    # squeeze the axis dimension must be 1.
    definition = corpus_op("4_1_3_joining_and_splitting_operators_03.sknd", "stack")
    assert run(definition, {"axis": 1}, {"inputs": (real(2, 3),) * 4}) \
        .outputs["output"].shape == (2, 4, 3)
    assert run(definition, {"axis": 1, "squeeze": True}, {"inputs": (real(2, 1, 3),) * 4}) \
        .outputs["output"].shape == (2, 4, 3)
    assert "is [2], expected [1]" in fails(definition, {"axis": 1, "squeeze": True},
                                 {"inputs": (real(2, 2, 3),) * 4}).message


def test_inputs_with_defaults() -> None:
    # §2.6 "Inputs may have default values"; §4.4.5 lstm: `h0: real[b,n] = 0.0`.
    definition = corpus_op("4_4_5_recurrent_operators_04.sknd", "lstm")
    given = {"X": real(5, 2, 3), "W": real(16, 3), "R": real(16, 4), "B": real(16)}
    inst = run(definition, inputs=given)
    assert inst.outputs["hN"].shape == (2, 4) and inst.symbols["h0"].shape == (2, 4)
    assert inst.outputs["Y"] == TensorType("real", (None, 2, 4), (5, None, None))
    assert "'n' is 4 from input 'W'" in fails(definition, inputs={**given, "h0": real(2, 5)}) \
        .message
