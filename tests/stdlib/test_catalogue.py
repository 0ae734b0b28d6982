"""The standard library is complete: every operator of spec chapter 4, and those of
today's converters, exists in its bundled module — with a body, or as a registered intrinsic —
and the module's test file invokes it at least twice.

The catalogue below is written from the spec's chapter-4 headings (including the operators
whose bodies the extraction lost: only their headings survived) and the list of
additions; it is not read from the stdlib, so a deleted or misnamed operator fails here.
"""

from __future__ import annotations

import functools

from pathlib import Path

import pytest

from refinterp.core.files import read_source
from refinterp.run.intrinsics import lookup
from refinterp.language.modules import STDLIB_DIR
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_module

from .conftest import INVOKED

TESTS = Path(__file__).resolve().parent

TRIGONOMETRIC = [f"{arc}{name}{hyperbolic}" for arc in ("", "a") for name in ("sin", "cos", "tan")
                 for hyperbolic in ("", "h")]

CATALOGUE: dict[str, list[str]] = {
    # §4.1, and tensor / space_to_depth / depth_to_space of the Khronos converters
    "layout": ["constant", "uniform", "range", "shape", "cast", "reshape", "flatten",
               "unflatten", "squeeze", "unsqueeze", "concat", "split", "stack", "unstack",
               "tile", "broadcast", "slice", "pad", "transpose", "space_to_batch",
               "batch_to_space", "shuffle", "nonzero", "gather", "gather_nd", "scatter",
               "scatter_nd", "tensor", "space_to_depth", "depth_to_space"],
    # §4.2, and cumsum
    "math": ["iden", "neg", "rcp", "sqr", "sqrt", "rsqr", "rsqrt", "exp", "log", "log2",
             *TRIGONOMETRIC, "abs", "sign", "not", "floor", "ceil", "round",
             "add", "sub", "mul", "div", "mod", "pow", "min", "max", "lt", "gt", "le", "ge",
             "eq", "ne", "and", "or", "xor", "select",
             "sum_n", "prod_n", "min_n", "max_n", "argmin_n", "argmax_n", "any_n", "all_n",
             "axpb", "axpby", "clamp",
             "min_reduce", "max_reduce", "sum_reduce", "prod_reduce", "mean_reduce",
             "lp_reduce", "any_reduce", "all_reduce", "argmin", "argmin_nd", "argmax",
             "argmax_nd", "moments", "cumsum"],
    # §4.3
    "linalg": ["dot", "matvec", "matmul", "outer"],
    # §4.4, sigmoid (used by the LSTM, never defined), and the converters' activations
    "nn": ["linear", "conv", "deconv", "max_pool", "sum_pool", "avg_pool", "rms_pool",
           "lp_pool", "relu", "prelu", "thresholded_relu", "gelu", "sigmoid", "elu", "selu",
           "silu", "softplus", "erf", "batch_norm", "mean_variance_norm",
           "local_response_norm", "l1_norm", "l2_norm", "softmax", "lstm"],
    # §4.5, and grid_sample
    "image": ["nearest_downsample", "nearest_upsample", "area_downsample", "linear_upsample",
              "nearest_resize", "linear_resize", "cubic_resize", "resize", "rescale",
              "max_roi_pool", "avg_roi_pool", "grid_sample"],
    # §4.6
    "quant": ["zero_point_linear_quantize", "min_max_linear_quantize"],
    # §4.7
    "algo": ["top_k", "nonmax_suppress"],
    # the Khronos converters' misc module
    "misc": ["mesh_grid"],
}

CASES = [(module, name) for module, names in CATALOGUE.items() for name in names]


@functools.cache
def definitions(module: str) -> dict:
    path = STDLIB_DIR / f"{module}.sknd"
    tree = parse_module(read_source(path)).module
    return {d.name: d for d in tree.definitions}


@pytest.mark.parametrize("module, name", CASES, ids=[f"{m}.{n}" for m, n in CASES])
def test_operator_exists_with_a_body_or_an_intrinsic(module: str, name: str) -> None:
    definition = definitions(module).get(name)
    assert definition is not None, f"{module}.{name} is not defined in the bundled stdlib"
    has_body = any(definition.block(b) is not None for b in ("lower", "compose"))
    assert has_body or lookup(f"{module}.{name}") is not None, \
        f"{module}.{name} has neither a @lower/@compose body nor a registered intrinsic"


def rarely_run(ran: set[str]) -> list[str]:
    """The catalogue operators run fewer than twice in this session (counted by `conftest.run`)
    among the modules whose test files ran (`ran`: file names); conftest checks this when the
    session finishes, so the check does not depend on the order tests run in."""
    missing = []
    for module, names in CATALOGUE.items():
        files = sorted(TESTS.glob(f"test_{module}*.py"))
        assert files, f"module {module} has no tests/stdlib/test_{module}*.py"
        if any(path.name in ran for path in files):
            missing += [f"{module}.{name} ({INVOKED[f'{module}.{name}']}x)" for name in names
                        if INVOKED[f"{module}.{name}"] < 2]
    return missing


def test_every_catalogue_module_has_tests() -> None:
    for module in CATALOGUE:
        assert sorted(TESTS.glob(f"test_{module}*.py")), module
