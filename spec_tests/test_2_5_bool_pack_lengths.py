"""Spec §2.6 (and §2.6.1, §2.9): a pack length given by a bool, and null extents in shapes.

§2.6: "In case the length specifier is a bool expression of known identifiers, such as
attributes, the presence or absence of the item s is conditioned on the truth value of the
expression d, and the deduced type of the item s is optional int."
§2.6: "A shape component may as well be an optional expression (depending on an attribute for
example). In case the expression evaluates to null, the component is omitted from the shape
specification."
§2.6 (outputs): "Expressions in the output shape may be optional. If an expression evaluates to
null (potentially due to null propagation), the corresponding dimensions are omitted from the
output shape."
§2.9: "Symbols declared in the @using block are not visible in the @attrib and @input blocks."
(profile `spec`; the Khronos stdlib's `c..(ncx)` with `ncx` from @using runs under `khronos`).

Expected values come from these sentences, or from NumPy code written here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from refinterp import api
from refinterp.core.diagnostics import BindingDiagnostic, Diagnostic
from refinterp.core.source import SourceFile
from refinterp.language.binding import definition_order
from refinterp.language.instance import (Invocation, TensorType, fixed_input_types,
                                         instantiate)
from refinterp.language.types import Type
from refinterp.language.values import NULL
from refinterp.numeric.rules import KHRONOS, SPEC
from refinterp.syntax import parse_module


def op(text: str):
    return parse_module(SourceFile("<t>", text)).module.definitions[0]


def run(definition, attributes=None, inputs=None, profile=SPEC):
    return instantiate(definition, Invocation(attributes or {}, inputs or {}, profile=profile))


def fails(definition, attributes=None, inputs=None, profile=SPEC) -> Diagnostic:
    with pytest.raises(Diagnostic) as info:
        run(definition, attributes, inputs, profile)
    return info.value


def real(*shape: int) -> TensorType:
    return TensorType("real", shape)


OPTIONAL_INT = Type("int", optional=True)

CHANNELS = op("operator f { @attrib { channels: bool = false; } "
              "@input { x: real[n, c..(channels)]; } @output { y: real[c, n]; } }")


def test_a_bool_length_makes_an_item_present_or_absent() -> None:
    # `x: real[n, c..(channels)]`: with channels false the item c is absent, so x has rank 1
    # and c is null; the output `real[c, n]` omits the null component (rank 1).
    inst = run(CHANNELS, inputs={"x": real(3)})
    assert inst.symbols["c"] is NULL and inst.types["c"] == OPTIONAL_INT
    assert inst.outputs["y"].shape == (3,)
    # with channels true the item is one extent: c = 2, an optional int; y is [c, n]
    inst = run(CHANNELS, {"channels": True}, {"x": real(3, 2)})
    assert inst.symbols["c"] == 2 and inst.types["c"] == OPTIONAL_INT
    assert inst.outputs["y"].shape == (2, 3)


def test_the_rank_follows_the_condition() -> None:
    # absent, the item covers no dimension: a rank-2 tensor does not fit real[n]
    assert fails(CHANNELS, inputs={"x": real(3, 2)}).code == "E0306"
    # present, it covers exactly one: rank 1 and rank 3 do not fit real[n, c]
    assert fails(CHANNELS, {"channels": True}, {"x": real(3)}).code == "E0306"
    assert fails(CHANNELS, {"channels": True}, {"x": real(3, 2, 2)}).code == "E0306"


LAYOUT = op("operator f { @attrib { ncx: bool; } "
            "@input { x: real[b, c..(ncx), s..(d), c..(!ncx)]; } "
            "@output { y: real[b, s.., c]; z: real[b, c..(ncx), s.., c..(!ncx)]; } }")


@pytest.mark.parametrize("ncx, shape, spatial", [(True, (2, 3, 4, 5), (4, 5)),
                                                 (False, (2, 4, 5, 3), (4, 5))])
def test_complementary_conditions_bind_one_symbol(ncx: bool, shape: tuple, spatial: tuple) -> None:
    # `c` occurs twice; exactly one occurrence is present and binds it; s takes the rest.
    inst = run(LAYOUT, {"ncx": ncx}, {"x": real(*shape)})
    assert inst.symbols["c"] == 3 and inst.symbols["s"] == spatial and inst.symbols["d"] == 2
    assert inst.outputs["y"].shape == (2, 4, 5, 3)
    assert inst.outputs["z"].shape == shape  # the same conditions in an output


def test_two_present_occurrences_must_agree() -> None:
    # "Using the same identifier for multiple shape components prescribes agreement" (§2.6).
    both = op("operator f { @attrib { on: bool; } @input { x: real[c..(on), s, c..(on)]; } "
              "@output { y: real[s]; } }")
    assert run(both, {"on": True}, {"x": real(2, 7, 2)}).symbols["c"] == 2
    diag = fails(both, {"on": True}, {"x": real(2, 7, 3)})
    assert diag.code == "E0306"
    assert "'c' is 2 from input 'x' (dimension 0) but 3 from input 'x' (dimension 2)" in \
        diag.message
    assert run(both, {"on": False}, {"x": real(7)}).symbols["c"] is NULL


def test_an_absent_item_leaves_its_symbol_to_other_inputs() -> None:
    # c is null only if no occurrence binds it: here y's plain extent does.
    two = op("operator f { @attrib { on: bool; } @input { x: real[c..(on), n]; y: real[c]; } "
             "@output { z: real[c, n]; } }")
    inst = run(two, {"on": False}, {"x": real(4), "y": real(5)})
    assert inst.symbols["c"] == 5 and inst.outputs["z"].shape == (5, 4)
    assert fails(two, {"on": True}, {"x": real(3, 4), "y": real(5)}).code == "E0306"


def test_outputs_omit_absent_items_and_null_extents() -> None:
    # An output item whose bool length is false is absent; a null extent is omitted; a
    # dynamic extent `~|s` may be conditional too (the LSTM's `~|s..(?steps), s..(!?steps)`).
    definition = op("operator f { @input { x: real[s, n]; steps: optional int[n]; } "
                    "@output { y: real[~|s..(?steps), s..(!?steps), n]; "
                    "z: real[1 ..(?steps), n, (?steps ? s)]; } }")
    static = run(definition, inputs={"x": real(3, 2)})
    assert static.outputs["y"] == TensorType("real", (3, 2))
    assert static.outputs["z"].shape == (2,)  # `1 ..(false)` absent, `?steps ? s` null
    dynamic = run(definition, inputs={"x": real(3, 2), "steps": TensorType("int", (2,))})
    assert dynamic.outputs["y"] == TensorType("real", (None, 2), (3, None))
    assert dynamic.outputs["z"].shape == (1, 2, 3)


def test_bool_lengths_are_not_flexible_in_the_binding_order() -> None:
    # §2.6.1: "Binding is unambiguous if there is at most 1 packed item in its shape, whose
    # length is an affine expression of an identifier not yet bound": `c..(ncx)`, `c..(!ncx)`
    # have known lengths, so `s..` is the only flexible item.
    known = op("operator f { @attrib { ncx: bool; } "
               "@input { x: real[b, c..(ncx), s.., c..(!ncx)]; } }")
    assert [d.name for d in definition_order(known)] == ["x"]
    # "optional attributes cannot be used for disambiguation": (decision) nor as conditions
    # beside another flexible item
    optional = op("operator f { @attrib { ncx: optional bool; } "
                  "@input { x: real[b, c..(ncx), s.., c..(!ncx)]; } }")
    with pytest.raises(BindingDiagnostic, match="cannot be bound unambiguously"):
        definition_order(optional)
    # alone, such a length is known at invocation: a null condition omits the item
    alone = op("operator f { @attrib { on: optional bool; } @input { x: real[n, c..(on)]; } "
               "@output { y: real[n, c]; } }")
    assert run(alone, inputs={"x": real(3)}).outputs["y"].shape == (3,)
    assert run(alone, {"on": True}, {"x": real(3, 2)}).outputs["y"].shape == (3, 2)


def test_a_bool_length_may_wait_for_another_input() -> None:
    # `n > 2` uses n, which y binds: y is bound first, then x's length is known.
    later = op("operator f { @input { x: real[m, c..(n > 2)]; y: real[n]; } "
               "@output { z: real[m, c]; } }")
    assert [d.name for d in definition_order(later)] == ["y", "x"]
    assert run(later, inputs={"x": real(4, 6), "y": real(3)}).outputs["z"].shape == (4, 6)
    assert run(later, inputs={"x": real(4), "y": real(2)}).outputs["z"].shape == (4,)


def test_a_length_nothing_defines_is_an_invalid_definition() -> None:
    definition = op("operator f { @input { x: real[c..(!flag)]; } }")
    with pytest.raises(BindingDiagnostic) as info:
        definition_order(definition)
    assert info.value.code == "E0300"
    assert "the length !flag of a packed extent of input 'x' uses flag" in info.value.message
    assert info.value.span.col == definition.block("input").entries[0].type.shape[0] \
        .pack.length.span.col


@pytest.mark.parametrize("attribute, value, text, code", [
    ("r: real;", 1.0, "is of type real", "E0300"),  # the definition's fault
    ("r: int..;", (1, 0), "is of type int..", "E0300"),
    ("r: int;", -1, "is -1, not a non-negative int", "E0306"),  # no input fits
])
def test_a_length_that_is_no_int_or_bool_is_a_diagnostic(attribute: str, value: object,
                                                         text: str, code: str) -> None:
    definition = op(f"operator f {{ @attrib {{ {attribute} }} @input {{ x: real[c..(r)]; }} }}")
    diag = fails(definition, {"r": value}, {"x": real(2)})
    assert diag.code == code and text in diag.message


def test_an_assertion_guarding_a_negative_length_is_reported() -> None:
    # (decision) a negative length has no meaning; the failing assertion that can be evaluated
    # already is reported instead, as it guards the length expression (§2.9 checks assertions
    # before the helper expressions they guard).
    definition = op("operator f { @attrib { axis: int; } "
                    "@input { x: real^(rank)[s..(axis < 0 ? axis + rank : axis), t..]; } "
                    "@assert { axis >= -rank && axis < rank: \"axis out of range\", x.rank; } }")
    diag = fails(definition, {"axis": -3}, {"x": real(2, 3)})
    assert diag.code == "E0307" and diag.message == "axis out of range"
    assert diag.notes == ["x.rank = 2"]
    # a length that is merely too long is a shape mismatch, reported as such
    assert fails(definition, {"axis": 3}, {"x": real(2, 3)}).code == "E0306"
    # without such an assertion the binding failure stands
    plain = op("operator f { @attrib { axis: int; } "
               "@input { x: real^(rank)[s..(axis < 0 ? axis + rank : axis), t..]; } }")
    assert fails(plain, {"axis": -3}, {"x": real(2, 3)}).code == "E0306"


USING = """operator f {
    @attrib { layout: str = 'NCX'; }
    @input { x: real[b, c..(ncx), s.., c..(!ncx)]; }
    @output { y: real[b, c, s..]; }
    @assert { layout == 'NCX' || layout == 'NXC': "bad layout", layout; }
    @using { ncx = layout == 'NCX'; }
}"""


def test_using_symbols_in_input_shapes_follow_the_profile() -> None:
    definition = op(USING)
    # spec §2.9: not visible in @input, so the length uses a name nothing defines before it
    with pytest.raises(BindingDiagnostic) as info:
        definition_order(definition, SPEC)
    assert "uses ncx" in info.value.message
    assert any("@using symbol" in note and "§2.9" in note for note in info.value.notes)
    # khronos: a @using symbol computed from attributes alone is known before the inputs
    assert [d.name for d in definition_order(definition, KHRONOS)] == ["x"]
    inst = run(definition, {"layout": "NXC"}, {"x": real(2, 5, 6, 3)}, KHRONOS)
    assert inst.symbols["c"] == 3 and inst.outputs["y"].shape == (2, 3, 5, 6)
    # its assertions are checked before it (§2.9), so before the input is bound
    assert fails(definition, {"layout": "NHWC"}, {"x": real(2, 5)}, KHRONOS).code == "E0307"


def test_using_symbols_from_input_shapes_are_not_known_for_inputs() -> None:
    definition = op("operator f { @input { x: real[n]; y: real[c..(big)]; } "
                    "@using { big = n > 2; } }")
    with pytest.raises(BindingDiagnostic, match="uses big"):
        definition_order(definition, KHRONOS)


def test_fixed_input_types_follow_the_conditions() -> None:
    # a graph input whose shape literals and attributes decide: `3 ..(wide)` is absent or one
    definition = op("operator g { @attrib { wide: bool = false; } "
                    "@input { x: real[4, 3 ..(wide)]; } }")
    assert fixed_input_types(definition, {})["x"] == TensorType("real", (4,))
    assert fixed_input_types(definition, {"wide": True})["x"] == TensorType("real", (4, 3))


TYPED = """import layout;
operator f {
    @attrib { on: bool = false; }
    @input { x: real[n, m]; }
    @output { y: real[n, m]; }
    @compose {
        t: real[n, m ..(on), m ..(!on)] = layout.reshape{axis=0, rank=1, shape=[n]}(x);
        u: real[n * m, 1 ..(on)] = layout.reshape{axis=0, rank=2, shape=[n * m]}(x);
        y = t;
    }
}"""


def test_typed_results_follow_the_conditions() -> None:
    # `t: real[n, m ..(on), m ..(!on)]` is real[n, m] either way; `u`'s `1 ..(on)` is absent
    # when on is false (u is real[n * m]) and one extent when on is true (a mismatch).
    program = api.load_source(TYPED)
    x = np.arange(6.0).reshape(2, 3)
    assert api.shapes(program, inputs={"x": x}).outputs["y"].shape == (2, 3)
    np.testing.assert_array_equal(api.evaluate(program, inputs={"x": x}).outputs["y"], x)
    with pytest.raises(Diagnostic, match=r"'u' is declared with shape \[6, 1\]"):
        api.shapes(program, inputs={"x": x}, attributes={"on": True})


TO_LAST = """operator to_last {
    @attrib { ncx: bool = true; }
    @input { x: real[b, c..(ncx), s, c..(!ncx)]; }
    @output { y: real[b, s, c]; }
    @lower { y[i, k, j] = x[i, j ..(ncx), k, j ..(!ncx)], i < b, j < c, k < s; }
}"""


@pytest.mark.parametrize("engine", ["scalar", "vector"])
@pytest.mark.parametrize("ncx", [True, False])
def test_conditional_items_in_a_lowering(engine: str, ncx: bool) -> None:
    # channels first (NCX) is moved last; channels last is copied
    x = np.random.default_rng(1).standard_normal((2, 3, 4))
    program = api.load_source(TO_LAST)
    y = api.evaluate(program, inputs={"x": x}, attributes={"ncx": ncx},
                     engine=engine).outputs["y"]
    np.testing.assert_array_equal(y, np.transpose(x, (0, 2, 1)) if ncx else x)


# ----------------------------------------------------------------------------- Khronos layout

KHRONOS_STDLIB = os.environ.get("KHRONOS_STDLIB")
needs_khronos = pytest.mark.skipif(
    not KHRONOS_STDLIB or not (Path(KHRONOS_STDLIB) / "layout.sknd").is_file(),
    reason="set KHRONOS_STDLIB to the Khronos stdlib folder")


def space_to_depth(x: np.ndarray, block: tuple[int, int], channels_first: bool,
                   blocks_first: bool) -> np.ndarray:
    """ONNX SpaceToDepth (blocks first: DCR) / TF space_to_depth, element by element: output
    channel (py * bw + px) * C + c (blocks first) or c * bh * bw + py * bw + px reads input
    position (y * bh + py, x * bw + px)."""
    if not channels_first:
        x = np.moveaxis(x, -1, 1)
    n, c, h, w = x.shape
    bh, bw = block
    out = np.zeros((n, c * bh * bw, h // bh, w // bw))
    for b in range(n):
        for ch in range(c):
            for py in range(bh):
                for px in range(bw):
                    k = (py * bw + px) * c + ch if blocks_first else (ch * bh + py) * bw + px
                    out[b, k] = x[b, ch, py::bh, px::bw]
    return out if channels_first else np.moveaxis(out, 1, -1)


def space_to_batch(x: np.ndarray, block: tuple[int, int], channels_first: bool,
                   blocks_first: bool) -> np.ndarray:
    """TF space_to_batch_nd without padding: output batch (py * bw + px) * N + b (blocks
    first) or b * bh * bw + py * bw + px reads input (b, y * bh + py, x * bw + px)."""
    if not channels_first:
        x = np.moveaxis(x, -1, 1)
    n, c, h, w = x.shape
    bh, bw = block
    out = np.zeros((n * bh * bw, c, h // bh, w // bw))
    for b in range(n):
        for py in range(bh):
            for px in range(bw):
                k = (py * bw + px) * n + b if blocks_first else (b * bh + py) * bw + px
                out[k] = x[b, :, py::bh, px::bw]
    return out if channels_first else np.moveaxis(out, 1, -1)


CASES = [(True, True), (True, False), (False, True), (False, False)]


@needs_khronos
@pytest.mark.parametrize("channels_first, blocks_first", CASES)
@pytest.mark.parametrize("engine", ["scalar", "vector"])
def test_khronos_space_and_depth_and_batch(channels_first: bool, blocks_first: bool,
                                           engine: str) -> None:
    rng = np.random.default_rng(7)
    block = (2, 3)
    fmt = "NCX" if channels_first else "NXC"
    x = rng.standard_normal((2, 5, 4, 6) if channels_first else (2, 4, 6, 5))
    attributes = {"block_size": block, "blocks_first": blocks_first, "data_format": fmt}

    def khronos(name: str, value: np.ndarray) -> np.ndarray:
        return api.run_operator(f"layout.{name}", {"input": value}, attributes,
                                profile="khronos", engine=engine,
                                stdlib=KHRONOS_STDLIB)["output"]

    # depth_to_space and batch_to_space invert space_to_depth and space_to_batch (ONNX
    # DepthToSpace, TF batch_to_space_nd) in the same mode
    args = (block, channels_first, blocks_first)
    depth = space_to_depth(x, *args)
    np.testing.assert_array_equal(khronos("space_to_depth", x), depth)
    np.testing.assert_array_equal(khronos("depth_to_space", depth), x)
    batch = space_to_batch(x, *args)
    np.testing.assert_array_equal(khronos("space_to_batch", x), batch)
    np.testing.assert_array_equal(khronos("batch_to_space", batch), x)
