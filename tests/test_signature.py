"""Operator signatures (refinterp.signature): read from the bundled stdlib and small sources.

Expected strings are taken from the .sknd text (refinterp/stdlib/nn.sknd, algo.sknd, ...) as the
canonical printer spells it: spaces around binary operators, double-quoted strings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from refinterp.run import intrinsics
from refinterp.language.modules import STDLIB_DIR, Loader, LoadedModule
from refinterp.signature import (Assertion, OperatorSignature, Parameter, module_signatures,
                                 signature, stdlib_modules)

BUNDLED = ["algo", "image", "layout", "linalg", "math", "misc", "nn", "nx", "ocannl", "quant"]


def load(path: Path) -> LoadedModule:
    """The main module of a file loaded with the default loader."""
    return Loader().load(path).main


def stdlib_signature(module: str, name: str) -> OperatorSignature:
    """The signature of one operator of a bundled stdlib module."""
    loaded = load(STDLIB_DIR / f"{module}.sknd")
    definition = next(d for d in loaded.tree.definitions if d.name == name)
    return signature(definition, loaded)


@pytest.fixture(scope="module")
def conv() -> OperatorSignature:
    return stdlib_signature("nn", "conv")


# ----------------------------------------------------------------------------- nn.conv


def test_conv_names_kind_and_location(conv: OperatorSignature) -> None:
    assert (conv.module, conv.name, conv.qualified) == ("nn", "conv", "nn.conv")
    assert conv.kind == "lowered"
    assert conv.generics == ()
    path, line, col = conv.location.rsplit(":", 2)
    assert Path(path).name == "nn.sknd"
    assert (line, col) == ("27", "1")  # `operator conv {` is line 27 of nn.sknd


def test_conv_attributes(conv: OperatorSignature) -> None:
    assert conv.attributes == (
        Parameter("stride", "int..(d)", "1", False),
        Parameter("dilation", "int..(d)", "1", False),
        Parameter("padding", "optional int..(2 * d)", None, True),
        Parameter("padding_align", "str", '"UPPER"', False),
        Parameter("ceil_mode", "bool", "false", False),
        Parameter("groups", "int", "1", False),
        Parameter("data_format", "str", '"NCX"', False),
        Parameter("filter_format", "str", '"NCX"', False),
    )


def test_conv_inputs_and_outputs(conv: OperatorSignature) -> None:
    assert conv.inputs == (
        Parameter("input", "real[s..(d + 2)]", None, False),
        Parameter("filter", "real[fs..(d + 2)]", None, False),
        Parameter("bias", "optional real[bs]", None, True),
    )
    assert conv.outputs == (Parameter("output", "real[os..]", None, False),)


def test_conv_asserts(conv: OperatorSignature) -> None:
    assert len(conv.asserts) == 10
    assert conv.asserts[0] == Assertion(
        "padding_align in padding_aligns", "\"'padding_align' must be one of {padding_aligns}\"")
    assert Assertion("stride > 0", "\"'stride' must be positive\"") in conv.asserts
    assert conv.asserts[-1] == Assertion(
        "bs == n", '"bias-size must equal output-channels of filter"')


def test_conv_one_line(conv: OperatorSignature) -> None:
    line = conv.one_line()
    assert line.startswith("nn.conv{stride: int..(d) = 1, dilation: int..(d) = 1, "
                           "padding: optional int..(2 * d), ")
    assert line.endswith("}(input: real[s..(d + 2)], filter: real[fs..(d + 2)], "
                         "bias: optional real[bs]) -> (output: real[os..])")
    assert "\n" not in line


def test_conv_describe(conv: OperatorSignature) -> None:
    lines = conv.describe().splitlines()
    assert lines[0] == f"nn.conv (lowered) at {conv.location}"
    assert "  generics: none" in lines
    assert "    padding_align: str = \"UPPER\"" in lines
    assert "    bias: optional real[bs]" in lines
    assert "    stride > 0: \"'stride' must be positive\"" in lines
    sections = [line.strip() for line in lines if not line.startswith("    ")][1:]
    assert sections == ["generics: none", "attributes:", "inputs:", "outputs:", "asserts:"]


def test_describe_contains_every_assert_message(conv: OperatorSignature) -> None:
    text = conv.describe()
    for message in ("'stride' must be positive", "output-channels must be divisible by groups",
                    "input-channels must equal filter-channels * groups"):
        assert message in text


def test_conv_as_json_round_trips(conv: OperatorSignature) -> None:
    data = conv.as_json()
    assert json.loads(json.dumps(data)) == data
    assert data["qualified"] == "nn.conv"
    assert data["kind"] == "lowered"
    assert data["attributes"][2] == {"name": "padding", "type": "optional int..(2 * d)",
                                     "default": None, "optional": True}
    assert data["asserts"][3] == {"condition": "stride > 0",
                                  "message": "\"'stride' must be positive\""}
    assert data["location"] == conv.location


# ----------------------------------------------------------------------------- kinds


def test_composed_operator() -> None:
    softmax = stdlib_signature("nn", "softmax")
    assert softmax.kind == "composed"
    assert softmax.attributes == (Parameter("axes", "int..", "[1]", False),)
    assert softmax.one_line() == ("nn.softmax{axes: int.. = [1]}(input: real[s..(d)]) "
                                  "-> (output: real[s..])")


def test_intrinsic_operators() -> None:
    names = [n for n in intrinsics.registered() if n.split(".")[0] in BUNDLED]
    assert "algo.top_k" in names
    for qualified in names:
        module, name = qualified.rsplit(".", 1)
        assert stdlib_signature(module, name).kind == "intrinsic", qualified


def test_top_k_signature() -> None:
    top_k = stdlib_signature("algo", "top_k")
    assert [p.text() for p in top_k.attributes] == [
        "k: int", "axis: int = 0", "largest: bool = true", "sorted: bool = true"]
    assert top_k.inputs == (
        Parameter("input", "real^(rank)[s..(axis < 0 ? axis + rank : axis), m, t..]", None,
                  False),)
    assert [p.text() for p in top_k.outputs] == [
        "values: real[s.., k << m, t..]", "indices: int[s.., k << m, t..]"]


def test_generics_of_a_layout_operator() -> None:
    module = load(STDLIB_DIR / "layout.sknd")
    first = module_signatures(module)[0]
    assert first.generics == (Parameter("T", "type", None, False),)
    assert first.one_line().startswith(f"layout.{first.name}<T: type>{{shape: int..(d)")


GRAPH = """\
operator scale {
    @dtype {
        T: num = real;
    }
    @attrib {
        factor: T = 2;
    }
    @input {
        x: T[n];
    }
    @output {
        y: T[n];
    }
    @assert {
        n > 0;
    }
}

graph G {
    @input {
        input: real[4];
    }
    @output {
        output: real[4];
    }
    @compose {
        output = scale{factor=3.0}(input);
    }
}
"""


def test_declared_operator_and_graph(tmp_path: Path) -> None:
    path = tmp_path / "main.sknd"
    path.write_text(GRAPH)
    scale, graph = module_signatures(load(path))
    assert (scale.qualified, scale.kind) == ("main.scale", "declared")
    assert scale.generics == (Parameter("T", "num", "real", False),)
    assert scale.asserts == (Assertion("n > 0", None),)
    assert scale.one_line() == "main.scale<T: num = real>{factor: T = 2}(x: T[n]) -> (y: T[n])"
    assert "    n > 0" in scale.describe().splitlines()
    assert scale.location == f"{path}:1:1"
    assert (graph.qualified, graph.kind) == ("main.G", "graph")
    assert graph.one_line() == "main.G(input: real[4]) -> (output: real[4])"
    assert graph.location == f"{path}:19:1"
    lines = graph.describe().splitlines()
    assert lines[0] == f"main.G (graph) at {path}:19:1"
    assert "  attributes: none" in lines and "  asserts: none" in lines


def test_empty_definition_says_none(tmp_path: Path) -> None:
    path = tmp_path / "main.sknd"
    path.write_text("graph G { }\n")
    (graph,) = module_signatures(load(path))
    assert graph.one_line() == "main.G() -> ()"
    assert graph.describe().splitlines()[1:] == [
        "  generics: none", "  attributes: none", "  inputs: none", "  outputs: none",
        "  asserts: none"]


# ----------------------------------------------------------------------------- whole stdlib


@pytest.mark.parametrize("name", BUNDLED)
def test_every_stdlib_operator_has_a_signature(name: str) -> None:
    module = load(STDLIB_DIR / f"{name}.sknd")
    signatures = module_signatures(module)
    assert [s.name for s in signatures] == [d.name for d in module.tree.definitions]
    for sig in signatures:
        assert sig.module == name
        assert sig.kind in ("lowered", "composed", "intrinsic")
        line = sig.one_line()
        assert line.startswith(sig.qualified)
        for parameter in sig.parameters():
            assert f"{parameter.name}: {parameter.type}" in line, (sig.qualified, parameter)
        data = sig.as_json()
        assert json.loads(json.dumps(data)) == data


def test_stdlib_modules_lists_the_bundled_modules() -> None:
    assert stdlib_modules() == BUNDLED
    assert stdlib_modules(STDLIB_DIR) == BUNDLED


def test_stdlib_modules_of_a_nested_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    for relative in ("a/b.sknd", "a/c.nnef", "d.sknd", "d.nnef", "notes.txt"):
        (tmp_path / relative).write_text("")
    assert stdlib_modules(tmp_path) == ["a.b", "a.c", "d"]
    assert stdlib_modules(str(tmp_path)) == ["a.b", "a.c", "d"]
