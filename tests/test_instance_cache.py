"""Instances are reused across runs of the same operator on the same shapes and attributes
(language.instance.instantiate_cached): never for an invocation that instantiates otherwise."""

from __future__ import annotations

import numpy as np

from refinterp import api
from refinterp.language import instance as instance_module
from refinterp.language.instance import Invocation, TensorInfo, invocation_key
from refinterp.language.invocation import EmptyPackType
from refinterp.numeric import rules


def test_keys_tell_apart_values_that_compare_equal() -> None:
    key = lambda **attributes: invocation_key(Invocation(attributes, {}))  # noqa: E731
    assert key(a=0.0) != key(a=-0.0)
    assert key(a=True) != key(a=1) != key(a=1.0)
    assert key(a=float("nan")) == key(a=float("nan"))
    assert key(a=[1, 2]) != key(a=(1, 2))
    real = TensorInfo("real", (2, 3))
    assert invocation_key(Invocation({}, {"x": real})) != \
        invocation_key(Invocation({}, {"x": TensorInfo("real", (3, 2))}))
    assert invocation_key(Invocation({}, {"x": real}, profile=rules.SPEC)) != \
        invocation_key(Invocation({}, {"x": real}, profile=rules.KHRONOS))


def test_an_empty_pack_that_knows_its_item_type_has_no_key() -> None:
    empty = EmptyPackType(TensorInfo("real", (2,)))
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
