"""Typed evaluation of the `nx` module (docs/nx.md "Typed evaluation"): the rounding to
float16 / bfloat16 / float32 and the wrap-around / saturation of ints against independent code
written here (NumPy's own float16 / float32 conversions, exact fractions for bfloat16, Python's
modular arithmetic), the typed golden cases of golden/nx recomputed independently from their
inputs, `nx.as_type`, `api.evaluate(nx_types=...)`, `eval --nx-type` and the table's `types`."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as api
from refinterp.cli import main
from refinterp.core.diagnostics import Diagnostic
from refinterp.golden import read_tables
from refinterp.numeric.nx_types import TYPES, round_real, saturate_int, to_type, wrap_int
from testsupport.module_suites import module_suite

NAN, INF = math.nan, math.inf


def same(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal element by element, NaN where NaN, with the same sign of zero."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    both_nan = np.isnan(actual) & np.isnan(expected)
    equal = (actual == expected) & (np.signbit(actual) == np.signbit(expected))
    assert (both_nan | equal).all(), (actual[~(both_nan | equal)], expected[~(both_nan | equal)])


def nearest_bf16(x: float) -> float:
    """bfloat16 round-to-nearest-even of a float64, in exact rational arithmetic: the two
    neighbours on the grid of x's binade (bfloat16's subnormal grid below 2^-126)."""
    if math.isnan(x) or math.isinf(x) or x == 0.0:
        return x
    exponent = max(math.frexp(abs(x))[1] - 1, -126)
    quantum = Fraction(2) ** (exponent - 7)
    value = Fraction(abs(x))
    low = (value // quantum) * quantum
    high = low + quantum
    if value - low < high - value or (value - low == high - value and (low / quantum) % 2 == 0):
        result = low
    else:
        result = high
    largest = (2 - Fraction(1, 2 ** 7)) * Fraction(2) ** 127
    magnitude = math.inf if result > largest else float(result)
    return math.copysign(magnitude, x)


def samples(seed: int = 0, size: int = 4000) -> np.ndarray:
    """Reals of every magnitude float64 has, and the edge values of the formats."""
    rng = np.random.default_rng(seed)
    spread = rng.standard_normal(size) * 10.0 ** rng.integers(-45, 40, size)
    edges = [NAN, INF, -INF, 0.0, -0.0, 65504.0, 65519.99, 65520.0, 2.0 ** -24, 2.0 ** -25,
             3 * 2.0 ** -26, 2.0 ** -133, 2.0 ** -134, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8,
             1 + 2.0 ** -8 + 2.0 ** -52, 3.3895313892515355e38, 3.4e38, 5e-324, -1e308]
    return np.concatenate([spread, edges])


# --------------------------------------------------------------------------- the restriction


@pytest.mark.parametrize("name, dtype", [("f16", np.float16), ("f32", np.float32)])
def test_float16_and_float32_rounding_is_numpys_correctly_rounded_conversion(name, dtype):
    x = samples()
    with np.errstate(over="ignore"):
        same(round_real(x, TYPES[name]), x.astype(dtype).astype(np.float64))


def test_bfloat16_rounding_is_nearest_even_with_subnormals_and_overflow():
    x = samples(1, 1500)
    same(round_real(x, TYPES["bf16"]), [nearest_bf16(float(v)) for v in x])
    # hand values: ties to even, the largest finite value, its overflow, the subnormals
    hand = {1 + 2.0 ** -8: 1.0, 1 + 3 * 2.0 ** -8: 1 + 2.0 ** -6, 1 + 2.0 ** -8 + 2.0 ** -52:
            1 + 2.0 ** -7, 3.3895313892515355e38: 3.3895313892515355e38, 3.4028235e38: INF,
            2.0 ** -133: 2.0 ** -133, 2.0 ** -134: 0.0, 1.5 * 2.0 ** -133: 2.0 ** -132}
    same(round_real(np.array(list(hand)), TYPES["bf16"]), list(hand.values()))


def test_bfloat16_rounding_agrees_with_ml_dtypes_on_float32_values():
    """ml_dtypes converts float64 through float32 (a double rounding), so only float32 values
    compare: for them the two agree."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with np.errstate(over="ignore"):
        x = samples(2).astype(np.float32).astype(np.float64)
        same(round_real(x, TYPES["bf16"]), x.astype(ml_dtypes.bfloat16).astype(np.float64))


def test_ints_wrap_and_saturate_as_modular_arithmetic_says():
    values = [0, 1, -1, 127, 128, -128, -129, 255, 256, 65535, 65536, 2 ** 31, -2 ** 31 - 1,
              2 ** 32 + 5, 2 ** 62, -2 ** 63]
    for name, t in TYPES.items():
        if t.kind != "int":
            continue
        low = -2 ** (t.bits - 1) if t.signed else 0
        wrapped = [(v - low) % 2 ** t.bits + low for v in values]
        clamped = [min(max(v, low), low + 2 ** t.bits - 1) for v in values]
        assert wrap_int(np.array(values), t).tolist() == wrapped, name
        assert saturate_int(np.array(values), t).tolist() == clamped, name


def test_a_type_of_the_other_kind_is_a_diagnostic():
    with pytest.raises(Diagnostic, match="cannot have the Nx type 'f16'") as error:
        to_type(np.array([1, 2]), "f16")
    assert error.value.code == "E0901"
    with pytest.raises(Diagnostic, match="unknown Nx type 'f8'"):
        to_type(np.array([1.0]), "f8")
    assert to_type(np.array([True]), "s8").dtype == np.bool_  # bools have no width


def test_as_type_is_the_restriction_and_checks_its_type():
    out = api.run_operator("nx.as_type", {"x": np.array([127, 128, -129])}, {"type": "s8"})
    assert out["out"].tolist() == [127, -128, 127]
    out = api.run_operator("nx.as_type", {"x": np.array([300, -300])},
                           {"type": "u8", "saturate": True})
    assert out["out"].tolist() == [255, 0]
    with pytest.raises(Diagnostic, match="is for ints") as error:
        api.run_operator("nx.as_type", {"x": np.array([1.0])}, {"type": "s8"})
    assert error.value.code == "E0300"


# --------------------------------------------------------------------------- evaluation


def test_evaluate_with_nx_types_wraps_rounds_and_saturates():
    run = api.evaluate("nx.add", inputs={"a": [100, 200], "b": [100, 100]}, nx_types={"": "s8"})
    assert run.outputs["out"].tolist() == [-56, 44]  # 200 enters as -56
    run = api.evaluate("nx.cast", inputs={"x": [300.0, -1.5, 2049.0]}, generics=("int",),
                       nx_types={"x": "f16", "out": "u8"})
    assert run.outputs["out"].tolist() == [255, 0, 255]  # real -> int saturates
    run = api.evaluate("nx.mul", inputs={"a": [2.0 ** -12, 2.0 ** -12], "b": [2.0 ** -13, 3.0 *
                                                                                2.0 ** -13]},
                       nx_types={"": "f16"})
    same(run.outputs["out"], [0.0, 2.0 ** -23])  # 2^-25 ties to 0; 1.5 * 2^-24 to 2^-23
    with pytest.raises(Diagnostic, match="runs an nx operator"):
        api.evaluate("nn.relu", inputs={"x": [1.0]}, nx_types={"": "f16"})
    with pytest.raises(Diagnostic, match="name q, which is no input or output"):
        api.evaluate("nx.add", inputs={"a": [1.0], "b": [1.0]}, nx_types={"q": "f16"})


def test_eval_nx_type_option(capsys):
    status = main(["eval", "--op", "nx.sub", "--input", "a=[0, 1]", "--input", "b=[1, 1]",
                   "--nx-type", "u8", "--json"])
    assert status == 0
    assert '"max": 255' in capsys.readouterr().out
    assert main(["eval", "--op", "nx.add", "--input", "a=[1.0]", "--input", "b=[1.0]",
                 "--nx-type", "a=f7"]) == 1
    assert "unknown Nx type 'f7'" in capsys.readouterr().err
    assert main(["eval", "--op", "nn.relu", "--input", "x=[1.0]", "--nx-type", "f16"]) == 2
    assert "runs an nx operator" in capsys.readouterr().err


# --------------------------------------------------------------------------- golden cases


def test_a_table_checks_its_types(tmp_path: Path):
    def table(entry: str, module: str = "nx") -> Path:
        path = tmp_path / "t.toml"
        path.write_text(f'module = "{module}"\n[classes]\nadd = "arithmetic"\n'
                        f'[[case]]\nop = "add"\nname = "x"\n'
                        f'inputs = {{ a = "real[2]", b = "real[2]" }}\n{entry}\n')
        return path
    assert read_tables([table('types = "f16"')])[0].types == {"": "f16"}
    for entry, module, message in [('types = "f8"', "nx", "'f8' is none of"),
                                    ('types = { a = "s8" }', "nx", "real input 'a' cannot"),
                                    ('types = "f16"', "math", "cases of the nx module")]:
        with pytest.raises(Diagnostic, match=message) as error:
            read_tables([table(entry, module)])
        assert error.value.code == "E1100"


def typed_cases() -> dict[str, tuple[dict, dict, dict]]:
    """Every typed case of golden/nx: (types, inputs, outputs) by case id."""
    suite = module_suite("nx")
    found = {}
    for entry in json.loads((suite / "manifest.json").read_text())["cases"]:
        folder = suite / entry["path"]
        case = json.loads((folder / "case.json").read_text())
        if "types" in case and (folder / "outputs.npz").exists():
            found[case["id"]] = (case["types"], dict(np.load(folder / "inputs.npz")),
                                 dict(np.load(folder / "outputs.npz")))
    return found


def wrap(values: np.ndarray, name: str) -> list[int]:
    t = TYPES[name]
    low = -2 ** (t.bits - 1) if t.signed else 0
    return [(int(v) - low) % 2 ** t.bits + low for v in np.ravel(values)]


def bf16(values: np.ndarray) -> np.ndarray:
    return np.array([nearest_bf16(float(v)) for v in np.ravel(values)]).reshape(np.shape(values))


def test_typed_golden_cases_recomputed_independently():
    """The inputs of every typed case are values of their types; the outputs of the
    arithmetic ones equal Python's modular arithmetic on exact ints, NumPy's float16 arithmetic
    (computed in float32 and rounded once: correctly rounded for + - * /), and exactly rounded
    bfloat16 sums and products."""
    cases = typed_cases()
    assert len(cases) >= 70
    for case_id, (types, inputs, _) in cases.items():
        for name, value in inputs.items():
            if name in types:
                same(to_type(value, types[name]), value) if value.dtype.kind == "f" else \
                    np.testing.assert_array_equal(wrap(value, types[name]), np.ravel(value))
    ints = {"nx.add/s8_wraps": np.add, "nx.add/u8_wraps": np.add, "nx.add/s32_random": np.add,
            "nx.sub/s8_wraps": np.subtract, "nx.sub/u8_below_zero": np.subtract,
            "nx.mul/s16_wraps": np.multiply, "nx.mul/u32_wraps": np.multiply}
    for case_id, function in ints.items():
        types, inputs, outputs = cases[case_id]
        exact = function(inputs["a"].astype(object), inputs["b"].astype(object))
        assert outputs["out"].ravel().tolist() == wrap(exact, types["out"]), case_id
    for case_id, unary in {"nx.neg/s8_minimum": lambda x: -x, "nx.neg/u8_wraps": lambda x: -x,
                           "nx.abs/s8_minimum": abs}.items():
        types, inputs, outputs = cases[case_id]
        assert outputs["out"].tolist() == wrap([unary(int(v)) for v in inputs["x"]], "s8"
                                               if "s8" in case_id else "u8"), case_id
    types, inputs, outputs = cases["nx.reduce_sum/s8_wraps"]
    assert outputs["out"].ravel().tolist() == wrap(inputs["x"].sum(axis=1), "s8")
    types, inputs, outputs = cases["nx.scan_sum/u8_wraps"]
    assert outputs["out"].tolist() == wrap(np.cumsum(inputs["x"]), "u8")
    types, inputs, outputs = cases["nx.cast/f32_to_s8_saturates"]
    assert outputs["out"].tolist() == np.clip(np.trunc(inputs["x"]), -128, 127).tolist()
    for case_id, function in {"nx.add/f16_random": np.add, "nx.sub/f16_random": np.subtract,
                              "nx.mul/f16_random": np.multiply, "nx.div/f16_random": np.divide,
                              "nx.mul/f16_subnormals": np.multiply,
                              "nx.add/f16_ties_and_overflow": np.add}.items():
        types, inputs, outputs = cases[case_id]
        with np.errstate(over="ignore"):
            half = function(inputs["a"].astype(np.float16), inputs["b"].astype(np.float16))
        same(outputs["out"], half)
    for case_id, function in {"nx.add/bf16_random": lambda a, b: a + b,
                              "nx.mul/bf16_random": lambda a, b: a * b,
                              "nx.mul/bf16_subnormals": lambda a, b: a * b}.items():
        types, inputs, outputs = cases[case_id]
        exact = [float(function(Fraction(float(a)), Fraction(float(b))))
                 for a, b in zip(inputs["a"].ravel(), inputs["b"].ravel())]
        same(outputs["out"], bf16(np.array(exact)).reshape(outputs["out"].shape))
    types, inputs, outputs = cases["nx.add/f32_random"]
    same(outputs["out"], inputs["a"].astype(np.float32) + inputs["b"].astype(np.float32))
