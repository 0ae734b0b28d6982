"""Checking without values through data-dependent extents (a fresh symbol bounded by the
declaration) and, where the model-zoo corpus of tools/model_zoo.py is on this machine, through
every converted architecture with a dynamic batch (docs/semantics.md "Shapes without values")."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.numeric import symbolic

NONZERO = """
import layout;
import math;
graph G {
    @input { x: real[n|100]; }
    @output { i: int[1, k|100]; c: int[1, m|100]; }
    @compose {
        i = layout.nonzero(x);
        j = layout.nonzero(x);
        c = math.add(i, 1);
    }
}
"""


def test_a_data_dependent_extent_is_a_fresh_bounded_symbol(tmp_path: Path) -> None:
    path = tmp_path / "nz.sknd"
    path.write_text(NONZERO)
    result = ri.shapes(path)
    assert result.checked
    count = result.outputs["i"].shape[1]
    assert symbolic.is_symbolic(count) and symbolic.interval(count) == (0, 100)
    # each invocation's count is its own symbol; c follows i's
    assert not symbolic.identical(result.tensors["j"].shape[1], count)
    assert symbolic.identical(result.outputs["c"].shape[1], count)
    run = ri.evaluate(path, inputs={"x": np.array([0.0, 2.0, 0.0, 5.0])})
    assert run.outputs["i"].shape == (1, 2)


CORPUS = Path("/tmp/zoo/w/models")
KHRONOS_STDLIB = Path("/tmp/khr/skriptnd-pyproject/skriptnd/stdlib")


@pytest.mark.skipif(not (CORPUS.is_dir() and KHRONOS_STDLIB.is_dir()),
                    reason="the model-zoo corpus (python tools/model_zoo.py --work /tmp/zoo/w) "
                           "and the Khronos stdlib are not on this machine")
@pytest.mark.parametrize("model", ["squeezenet", "alexnet", "densenet121"])
def test_converted_models_answer_with_a_dynamic_batch(tmp_path: Path, model: str) -> None:
    folder = tmp_path / model
    folder.mkdir()
    text = (CORPUS / model / "sknd" / "main.sknd").read_text()
    text, made = re.subn(r"(@input\s*\{\s*\w+: real\[)1,", r"\1b|64,", text, count=1)
    assert made == 1
    (folder / "main.sknd").write_text(text)
    result = ri.shapes(folder, profile="khronos", stdlib=KHRONOS_STDLIB)
    assert result.checked
    [output] = result.outputs.values()
    b = symbolic.symbol("b", 64)
    if model in ("squeezenet", "densenet121"):  # batch-polymorphic: the output follows b
        assert symbolic.identical(output.shape[0], b)
        assert any("b == 1" in what for what, _, _ in result.runtime_checks)
    else:  # the converter's fixed flatten: its volume is the check left to the run
        assert output.shape == (1, 1000)
        assert any(re.search(r"\d+ == \d+ \* b", why) for _, why, _ in result.runtime_checks)
    if model != "squeezenet":
        return
    # a run with values (b = 1, the model's own input and weights) binds every tensor with the
    # shape the check says, at b = 1
    for dat in (CORPUS / model / "sknd").glob("*.dat"):
        (folder / dat.name).symlink_to(dat)
    name = re.search(r"@input\s*\{\s*(\w+):", text).group(1)
    seen: dict[str, tuple] = {}
    ri.evaluate(folder, inputs={name: np.load(CORPUS / model / "input.npy")}, profile="khronos",
                stdlib=KHRONOS_STDLIB, hooks=ri.Hooks(observe=lambda tensor, value:
                                                      seen.__setitem__(tensor, value.shape)))
    assert set(seen) == set(result.tensors)
    for tensor, info in result.tensors.items():
        assert tuple(symbolic.evaluate(e, {"b": 1}) for e in info.shape) == seen[tensor], tensor


MODELS = sorted((Path(__file__).resolve().parents[2] / "golden" / "cases" / "models").glob(
    "*.sknd"))


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_every_golden_model_case_answers_without_inputs(path: Path) -> None:
    """`shapes` with no input: each model of the main suite is checked to its end, or to the
    point where a tensor's value decides (control_flow's tensor condition), never refused."""
    result = ri.shapes(path)
    assert result.checked or "depends on tensor values" in result.stopped
    assert result.outputs and all(info.shape is not None for info in result.outputs.values()
                                  if not isinstance(info, tuple))
