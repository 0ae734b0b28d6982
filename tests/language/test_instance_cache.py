"""Instances are reused across runs of the same operator on the same shapes and attributes
(language.instance.instantiate_cached): never for an invocation that instantiates otherwise."""

from __future__ import annotations

import numpy as np

from refinterp import api
from refinterp.language import instance as instance_module
from refinterp.language.instance import Invocation, TensorType, invocation_key
from refinterp.language.invocation import EmptyPackType
from refinterp.numeric import rules


def test_keys_tell_apart_values_that_compare_equal() -> None:
    key = lambda **attributes: invocation_key(Invocation(attributes, {}))  # noqa: E731
    assert key(a=0.0) != key(a=-0.0)
    assert key(a=True) != key(a=1) != key(a=1.0)
    assert key(a=float("nan")) == key(a=float("nan"))
    assert key(a=[1, 2]) != key(a=(1, 2))
    real = TensorType("real", (2, 3))
    assert invocation_key(Invocation({}, {"x": real})) != \
        invocation_key(Invocation({}, {"x": TensorType("real", (3, 2))}))
    assert invocation_key(Invocation({}, {"x": real}, profile=rules.SPEC)) != \
        invocation_key(Invocation({}, {"x": real}, profile=rules.KHRONOS))


def test_an_empty_pack_that_knows_its_item_type_has_no_key() -> None:
    empty = EmptyPackType(TensorType("real", (2,)))
    assert invocation_key(Invocation({}, {"xs": empty})) is None
    assert invocation_key(Invocation({}, {"xs": ()})) is not None


def test_a_second_run_reuses_the_instances(monkeypatch) -> None:
    calls = []
    original = instance_module.instantiate

    def counting(definition, invocation):
        calls.append(definition.name)
        return original(definition, invocation)

    monkeypatch.setattr(instance_module, "instantiate", counting)
    x, y = np.arange(6.0).reshape(2, 3), np.full((2, 3), 0.5)
    for _ in range(3):
        z = api.evaluate("math.add", inputs={"x": x, "y": y}).outputs["z"]
        np.testing.assert_array_equal(z, x + y)
    made = len(calls)
    api.evaluate("math.add", inputs={"x": x, "y": y})
    assert len(calls) == made  # nothing instantiated again
    other = np.ones((3, 2))
    z = api.evaluate("math.add", inputs={"x": other, "y": other}).outputs["z"]
    np.testing.assert_array_equal(z, other + other)  # other shapes: a new instance
    assert len(calls) > made


GRAPH_WITH_A_VARIABLE = """import nn;
graph G {
    @input { x: real[2, 3]; }
    @output { y: real[2, 4]; }
    @variable { w: real[4, 3]; }
    @compose { y = nn.linear(x, w); }
}
"""


def test_a_second_run_reuses_the_check_of_the_parameter_names(monkeypatch, tmp_path) -> None:
    """The check without values that every params entry names a variable (`api._check`) is
    made once per program, graph and invocation; a misnamed entry is still refused on every
    run, and another input shape is checked again."""
    (tmp_path / "main.sknd").write_text(GRAPH_WITH_A_VARIABLE)
    program = api.load(tmp_path / "main.sknd")
    x, w = np.ones((2, 3)), np.arange(12.0).reshape(4, 3)
    calls = []
    original = api._check
    monkeypatch.setattr(api, "_check", lambda *a, **k: calls.append(1) or original(*a, **k))
    for _ in range(2):
        y = api.evaluate(program, op="G", inputs={"x": x}, params={"w": w}).outputs["y"]
        np.testing.assert_array_equal(y, x @ w.T)
    assert len(calls) == 1
    for _ in range(2):
        try:
            api.evaluate(program, op="G", inputs={"x": x}, params={"w": w, "v": w})
        except api.Diagnostic as diag:
            assert diag.code == "E0702" and "'v'" in diag.message
        else:
            raise AssertionError("a params entry naming no variable was accepted")
    assert len(calls) == 1
    graph_3 = GRAPH_WITH_A_VARIABLE.replace("[2, 3]", "[5, 3]").replace("[2, 4]", "[5, 4]")
    (tmp_path / "other.sknd").write_text(graph_3)
    other = api.load(tmp_path / "other.sknd")
    api.evaluate(other, op="G", inputs={"x": np.ones((5, 3))}, params={"w": w})
    assert len(calls) == 2


def test_a_standard_module_is_found_without_listing_the_library(monkeypatch, tmp_path) -> None:
    """`api.evaluate("math.add", …)` loads math.sknd by its path; the folder is listed only
    to explain a module that is not there. `.sknd` wins over `.nnef` as in the listing."""
    listed = []
    original = api.stdlib_module_files
    monkeypatch.setattr(api, "stdlib_module_files",
                        lambda *a, **k: listed.append(1) or original(*a, **k))
    x = np.arange(6.0).reshape(2, 3)
    out = api.evaluate("math.add", inputs={"x": x, "y": x}).outputs["z"]
    np.testing.assert_array_equal(out, x + x)
    assert listed == []
    (tmp_path / "m.nnef").write_text("operator f { @input { x: real[s..]; } "
                                     "@output { y: real[s..]; } "
                                     "@lower { y[i..] = x[i..], i < s; } }")
    (tmp_path / "m.sknd").write_text("operator f { @input { x: real[s..]; } "
                                     "@output { y: real[s..]; } "
                                     "@lower { y[i..] = -x[i..], i < s; } }")
    out = api.evaluate("m.f", inputs={"x": x}, stdlib=tmp_path).outputs["y"]
    np.testing.assert_array_equal(out, -x)
    try:
        api.load_module("nosuch", stdlib=tmp_path)
    except api.Diagnostic as diag:
        assert "no standard module 'nosuch'" in diag.message
    else:
        raise AssertionError("a missing module was found")
    assert listed == [1]
