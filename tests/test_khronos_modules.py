"""The Khronos SkriptND modules themselves (docs/stdlib.md "Running the Khronos modules
themselves"): every fixed-shape graph of the Khronos `test/unittest.sknd` runs with `--stdlib`
pointing at the Khronos `stdlib` folder and `--profile khronos`, except the graphs whose random
inputs are invalid, each named below with the reason.

The Khronos files are not part of refinterp (nor copied into it): set KHRONOS_STDLIB to the
`stdlib` folder of a KhronosGroup/NNEF-Tools checkout (branch v2.0,
`skriptnd-pyproject/skriptnd/stdlib`; its sibling `test/unittest.sknd` holds the graphs);
without it the test skips. It takes a few minutes (the unittest's convolutions are 10^10
multiply-adds)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KHRONOS = os.environ.get("KHRONOS_STDLIB")

# graph -> (the E-code it must stop with, why the random input is at fault)
INPUT_FAULTS = {
    "mod_int": ("E0503", "random ints include a zero divisor: `x % 0` has no value (§2.4)"),
    **{f"gather_nd_{k}": ("E0501", "random int indices in [0, 10) address a data tensor of "
                                   "extent 2: out of range") for k in range(1, 6)},
    **{f"scatter_nd_{k}": ("E0501", "random int indices in [0, 10) exceed the output extent")
       for k in (1, 2)},
}


def khronos_folder() -> Path:
    """The Khronos `skriptnd` folder (holding stdlib/ and test/unittest.sknd), or skip."""
    if not KHRONOS:
        pytest.skip("KHRONOS_STDLIB is not set (the Khronos skriptnd/stdlib folder)")
    folder = Path(KHRONOS).parent
    if not Path(KHRONOS).is_dir() or not (folder / "test" / "unittest.sknd").is_file():
        pytest.skip(f"KHRONOS_STDLIB={KHRONOS} is not a folder beside test/unittest.sknd")
    return folder


@pytest.fixture(scope="module")
def results() -> dict:
    folder = khronos_folder()
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from run_graphs import outcomes
    finally:
        sys.path.remove(str(ROOT / "tools"))
    return {o.graph: o for o in outcomes(folder / "test" / "unittest.sknd",
                                         stdlib=Path(KHRONOS), profile="khronos",
                                         timeout=120)}


def test_every_fixed_shape_graph_runs_unless_its_random_input_is_invalid(results):
    failed = {name: f"{o.kind}: {o.message}" for name, o in results.items()
              if o.kind not in ("ok", "open shape") and name not in INPUT_FAULTS}
    assert failed == {}
    assert sum(o.kind == "ok" for o in results.values()) >= 190


@pytest.mark.parametrize("graph", sorted(INPUT_FAULTS))
def test_the_remaining_failures_are_the_inputs_fault(results, graph):
    code, _why = INPUT_FAULTS[graph]
    outcome = results[graph]
    assert (outcome.kind, outcome.code) == ("diagnostic", code), outcome.message
