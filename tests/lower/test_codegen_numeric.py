"""Generated code for the operations the numeric rules resolve per kind (rules.binary_function,
unary_function, cast_function, builtin_function): bit-identical to the reference, equal to
independent NumPy / Python expectations, with nan, ±inf, -0.0 and int64 extremes, erroring in
the same iteration with the same message, in both profiles."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction

import numpy as np
import pytest

from refinterp import api
from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import Invocation, TensorType, instantiate
from refinterp.lower import reference
from refinterp.lower.common import allocate_outputs
from refinterp.lower.compiled import engine as compiled, kernel, source
from refinterp.lower.plan import plan_lowering
from refinterp.numeric import rules
from refinterp.syntax import parse_module
from refinterp.core.source import SourceFile

INF, NAN = math.inf, math.nan
I64_MAX, I64_MIN = 2**63 - 1, -2**63
REALS = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -7.5, 1e308, -1e308, 5e-324,
                  INF, -INF, NAN, 1e20, 0.49999999999999994])
INTS = np.array([0, 1, -1, 2, -2, 3, -7, 7, 100, -100, I64_MAX, I64_MIN], dtype=np.int64)
PROFILES = ["spec", "khronos"]
TYPES = {np.dtype(np.float64): "real", np.dtype(np.int64): "int", np.dtype(np.bool_): "bool"}


def program(value: str, x: np.ndarray, y: np.ndarray | None, out: str):
    """`z[i, j] = value` over every pair of elements x[i], y[j] (or `z[i] = value`)."""
    if y is None:
        decl, formula, shape = f"x: {TYPES[x.dtype]}[n];", f"z[i] = {value}, i < n", "n"
    else:
        decl = f"x: {TYPES[x.dtype]}[n]; y: {TYPES[y.dtype]}[m];"
        formula, shape = f"z[i, j] = {value}, i < n, j < m", "n, m"
    return api.load_source(f"operator f {{ @input {{ {decl} }} @output {{ z: {out}[{shape}]; }} "
                           f"@lower {{ {formula}; }} }}")


def run(prog, inputs: dict, profile: str, generated: bool, refused: bool = False):
    """("ok", output) or ("error", message) on one path; with `generated`, codegen must take
    the formula (or, with `refused`, must leave it to the reference)."""
    taken: list[bool] = []

    def compile_formula(*args):
        run_kernel = original(*args) if generated else None
        taken.append(run_kernel is not None)
        return run_kernel
    original, compiled.compile_formula = compiled.compile_formula, compile_formula
    try:
        outcome = ("ok", api.evaluate(prog, inputs=inputs, engine="scalar",
                                      profile=profile).outputs["z"])
    except Diagnostic as diag:
        outcome = ("error", diag.message)
    finally:
        compiled.compile_formula = original
    assert all(taken) == (generated and not refused), f"generated: {taken}"
    return outcome


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit for bit (the sign of a zero included); any NaN equals any NaN (the sign of a
    NaN from nan + -nan is not even stable in CPython: its two C paths differ)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype != np.float64:
        return bool(np.array_equal(a, b))
    nan = np.isnan(a)
    return bool(np.array_equal(nan, np.isnan(b)) and
                np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64)))


def both_paths(value: str, x, y, out: str, profile: str, refused: bool = False):
    """The generated path's outcome, checked identical to the reference's."""
    prog = program(value, x, y, out)
    inputs = {"x": x} if y is None else {"x": x, "y": y}
    fast, slow = run(prog, inputs, profile, True, refused), run(prog, inputs, profile, False)
    assert fast[0] == slow[0], (fast, slow)
    assert fast[1] == slow[1] if fast[0] == "error" else same(fast[1], slow[1]), (fast, slow)
    return fast


def outer(function, x, y, dtype=np.float64) -> np.ndarray:
    return np.array([[function(a, b) for b in y.tolist()] for a in x.tolist()], dtype=dtype)


# ------------------------------------------------------------------------------------ reals


def _remainder(a: float, b: float, profile: str) -> float:
    with np.errstate(all="ignore"):  # NumPy's remainder is floored, fmod is C's
        return float((np.remainder if profile == "spec" else np.fmod)(a, b))


def _min_max(op: str, profile: str):
    pick = np.minimum if op == "<<" else np.maximum  # both NaN-propagating

    def expected(a: float, b: float) -> float:
        if a == b:  # equal operands (0.0 and -0.0) give the left one
            return a
        if profile == "spec":
            return float(pick(a, b))
        return (b if b < a else a) if op == "<<" else (b if a < b else a)  # std::min/max
    return expected


def _c_pow() -> ctypes._CFuncPtr:
    """The C library's pow (NumPy's power differs: its pow(-0.0, 0.5) is -0.0)."""
    name = ctypes.util.find_library("m") or ctypes.util.find_library("c")
    if name is None:
        pytest.skip("no C math library to compare with")
    function = ctypes.CDLL(name).pow
    function.restype, function.argtypes = ctypes.c_double, (ctypes.c_double, ctypes.c_double)
    return function


REAL_EXPECTED = {
    "/": lambda p: lambda a, b: float(np.divide(a, b)),
    "%": lambda p: lambda a, b: _remainder(a, b, p),
    "**": lambda p: _c_pow(),
    "\\": lambda p: lambda a, b: float(np.ceil(np.divide(a, b))),
    "<<": lambda p: _min_max("<<", p),
    ">>": lambda p: _min_max(">>", p),
    "+": lambda p: lambda a, b: a + b,
}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op", list(REAL_EXPECTED))
def test_real_binary_operators(op: str, profile: str) -> None:
    kind, z = both_paths(f"x[i] {op} y[j]", REALS, REALS, "real", profile)
    assert kind == "ok", z
    with np.errstate(all="ignore"):
        expected = outer(REAL_EXPECTED[op](profile), REALS, REALS)
    assert same(z, expected)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_real_comparisons(op: str, profile: str) -> None:
    kind, z = both_paths(f"x[i] {op} y[j]", REALS, REALS, "bool", profile)
    expected = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                "==": np.equal, "!=": np.not_equal}[op](REALS[:, None], REALS[None, :])
    assert kind == "ok" and same(z, expected)


def test_real_division_by_a_constant_is_inlined_and_ieee() -> None:
    """`x / 2.0` is Python's `/`; `x / 0.0` (a zero constant) still calls rules.real_divide."""
    for divisor in ("2.0", "0.0", "-0.0", "inf"):
        kind, z = both_paths(f"x[i] / {divisor}", REALS, None, "real", "spec")
        with np.errstate(all="ignore"):
            assert kind == "ok" and same(z, np.divide(REALS, float(divisor)))
        text = (f"operator f {{ @input {{ x: real[n]; }} @output {{ z: real[n]; }} "
                f"@lower {{ z[i] = x[i] / {divisor}, i < n; }} }}")
        instance, formula, arrays = _formula(text, {"x": REALS})
        source = kernel.Generator(instance, formula, arrays, rules.SPEC).generate()
        called = "G_" in source or "F_" in source  # a rule function (total or not) is called
        assert called == (float(divisor) == 0.0), source  # only for 0.0


def _round_half_away(x: float) -> float:
    if not math.isfinite(x):
        return x
    whole = Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP,  # exact: halves away
                                context=Context(prec=400))
    return math.copysign(float(whole), x)


def _sign(x: float) -> float:
    return 1.0 if x > 0 else -1.0 if x < 0 else 0.0  # §4.2.1; sign(nan) = sign(-0.0) = 0.0


REAL_FUNCTIONS = {
    "floor": np.floor, "ceil": np.ceil, "round": np.vectorize(_round_half_away),
    "abs": np.abs, "sign": np.vectorize(_sign), "frac": lambda x: x - np.floor(x),
    "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin, "tanh": np.tanh,
    "acosh": np.arccosh, "atanh": np.arctanh, "erf": np.vectorize(math.erf),
}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", list(REAL_FUNCTIONS))
def test_real_builtins(name: str, profile: str) -> None:
    kind, z = both_paths(f"`{name}`(x[i])", REALS, None, "real", profile)
    assert kind == "ok", z
    with np.errstate(all="ignore"):
        expected = np.asarray(REAL_FUNCTIONS[name](REALS), dtype=np.float64)
    if name == "frac":
        finite = np.isfinite(REALS)
        # spec: nan for ±inf; x - floor(x) with an int floor, so frac(-0.0) is -0.0
        expected = np.where(finite, np.where(REALS == 0, REALS, expected), NAN) \
            if profile == "spec" else np.modf(REALS)[0]
    if name in ("sqrt", "exp", "log", "sin", "tanh", "acosh", "atanh", "erf"):
        # C's libm and NumPy's SIMD loops may differ in the last place: equal in value, and
        # bit for bit to Python's math where math has a value (nan / ±inf where it raises)
        assert np.allclose(z, expected, rtol=1e-15, atol=0, equal_nan=True)
        for x, got in zip(REALS.tolist(), z.tolist()):
            try:
                assert same(np.float64(got), np.float64(getattr(math, name)(x)))
            except (ValueError, OverflowError):
                assert math.isnan(got) or math.isinf(got)
    else:
        assert same(z, expected)


def test_documented_special_values_of_builtins() -> None:
    """The documented special values, through generated code (docs/semantics.md)."""
    x = np.array([-1.0, 0.0, 1000.0, INF, 1.0, -1.0])
    for function, expected in (("sqrt", [NAN, 0.0, math.sqrt(1000.0), INF, 1.0, NAN]),
                               ("log", [NAN, -INF, math.log(1000.0), INF, 0.0, NAN]),
                               ("exp", [math.exp(-1), 1.0, INF, INF, math.e, math.exp(-1)]),
                               ("atanh", [-INF, 0.0, NAN, NAN, INF, -INF]),
                               ("sin", [math.sin(-1), 0.0, math.sin(1000.0), NAN, math.sin(1),
                                        math.sin(-1)])):
        kind, z = both_paths(f"`{function}`(x[i])", x, None, "real", "spec")
        assert kind == "ok" and same(z, np.array(expected)), (function, z)


# ------------------------------------------------------------------------------------- ints


SMALL = np.array([0, 1, -1, 2, -2, 3, -7, 7, 100, -100], dtype=np.int64)
NONZERO = SMALL[SMALL != 0]


def _int_expected(op: str, profile: str):
    def quotient(a: int, b: int) -> int:  # exact, by fractions: independent of the rules
        q = Fraction(a, b)
        if op == "/":
            return math.floor(q) if profile == "spec" else math.trunc(q)
        if profile == "spec":
            return math.ceil(q)
        return math.ceil(abs(q)) * (1 if q >= 0 else -1)  # away from zero

    def expected(a: int, b: int) -> int:
        if op in ("/", "\\"):
            return quotient(a, b)
        if op == "%":
            return a - b * (math.floor(Fraction(a, b)) if profile == "spec"
                            else math.trunc(Fraction(a, b)))
        if op == "**":
            return a ** b
        return min(a, b) if op == "<<" else max(a, b)
    return expected


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op", ["/", "\\", "%", "<<", ">>"])
def test_int_binary_operators(op: str, profile: str) -> None:
    x = INTS[INTS != I64_MIN] if op in ("/", "\\") else INTS  # I64_MIN / -1 is 2**63
    kind, z = both_paths(f"x[i] {op} y[j]", x, NONZERO, "int", profile)
    assert kind == "ok", z
    assert same(z, outer(_int_expected(op, profile), x, NONZERO, np.int64))


@pytest.mark.parametrize("profile", PROFILES)
def test_int_power(profile: str) -> None:
    exponents = np.array([0, 1, 2, 3, 7], dtype=np.int64)
    kind, z = both_paths("x[i] ** y[j]", SMALL, exponents, "int", profile)
    assert kind == "ok" and same(z, outer(_int_expected("**", profile), SMALL, exponents,
                                          np.int64))


def _formula(text: str, inputs: dict) -> tuple:
    """The instance of the operator in `text` on `inputs`, its first formula, its arrays."""
    definition = parse_module(SourceFile("<t>", text)).module.definitions[0]
    infos = {k: TensorType(TYPES[v.dtype], v.shape) for k, v in inputs.items()}
    instance = instantiate(definition, Invocation({}, infos))
    plan = plan_lowering(instance)
    return instance, plan.formulas[0], {**inputs, **allocate_outputs(instance, plan)}


def _generated_failure(text: str, inputs: dict, profile: str) -> tuple[str, dict]:
    """The message the generated kernel itself fails with (the engine then reruns the closure
    path for its diagnostic), and the reference's message and iteration."""
    instance, formula, arrays = _formula(text, inputs)
    run_kernel = compiled.compile_formula(instance, formula, arrays, rules.PROFILES[profile])
    assert run_kernel is not None
    with pytest.raises(Diagnostic) as generated:
        run_kernel()
    with pytest.raises(Diagnostic) as closure:
        reference.FormulaClosures(instance, formula, arrays, rules.PROFILES[profile]).run()
    return generated.value.message, {"closure": closure.value.message,
                                     "notes": closure.value.notes}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("value, message", [
    ("x[i] / y[i]", "integer division by zero (5 / 0)"),
    ("x[i] \\ y[i]", "integer division by zero (5 \\ 0)"),
    ("x[i] % y[i]", "integer modulo by zero (5 % 0)"),
    ("x[i] ** (y[i] - 1)", "0 ** -1 divides by zero"),
])
def test_int_errors_happen_in_the_same_iteration(value: str, message: str,
                                                 profile: str) -> None:
    text = (f"operator f {{ @input {{ x: int[4]; y: int[4]; }} @output {{ z: int[4]; }} "
            f"@lower {{ z[i] = {value}, i < 4; }} }}")
    x, y = np.array([7, 0, 5, 9]), np.array([2, 1, 0, 0])
    if "**" in value:
        x = np.array([2, 3, 0, 0])
    generated, closure = _generated_failure(text, {"x": x, "y": y}, profile)
    assert generated == closure["closure"] == message
    assert closure["notes"] == ["at i = 2"]


def test_int_power_with_a_negative_exponent_follows_the_profile() -> None:
    x, y = np.array([1, -1, 2], dtype=np.int64), np.array([-3], dtype=np.int64)
    assert both_paths("x[i] ** y[j]", x, y, "int", "khronos")[1].tolist() == [[1], [-1], [0]]
    kind, message = both_paths("x[i] ** y[j]", x, y, "int", "spec")
    assert kind == "error" and "has no integer value" in message


def test_int64_overflow_is_an_error_in_both_paths() -> None:
    x = np.array([I64_MAX, 1], dtype=np.int64)
    kind, message = both_paths("x[i] * y[j] >> 0", x, np.array([2], dtype=np.int64), "int",
                               "spec")
    assert kind == "error" and "does not fit in int64" in message


# ------------------------------------------------------------------------------------ casts


def test_int_of_reals_truncates_and_saturates_when_stored() -> None:
    """`int(x)` of ±inf is int(±inf), stored as the int64 extremes (reference.py `checked`): it
    generates now (it was refused as 'value type'); int(nan) and int(1e20) are errors."""
    x = np.array([0.0, -0.0, 2.5, -2.5, 0.49999999999999994, -7.9, INF, -INF, 9.2e18])
    kind, z = both_paths("int(x[i])", x, None, "int", "spec")
    expected = [0, 0, 2, -2, 0, -7, I64_MAX, I64_MIN, int(9.2e18)]
    assert kind == "ok" and z.tolist() == expected
    for bad, message in ((NAN, "int(nan) has no value"), (1e20, "does not fit in int64")):
        kind, got = both_paths("int(x[i])", np.array([1.0, bad]), None, "int", "khronos")
        assert kind == "error" and message in got


def test_int_of_real_clamped_by_min_max_is_a_plain_int() -> None:
    """`int(r) >> 0 << n` is never int(±inf) (rules: the kinds "int~+" / "int~-"), so it can
    index a tensor: image.nearest_resize generates code."""
    assert rules.binary_function(">>", rules.INT_OR_INF, "int").kind == "int~+"
    assert rules.binary_function("<<", "int~+", "int").kind == "int"
    kind, z = both_paths("int(x[i]) >> -3 << 3", REALS[~np.isnan(REALS)], None, "int", "spec")
    assert kind == "ok"
    assert z.tolist() == [max(-3, min(3, int(v) if math.isfinite(v) else int(math.copysign(
        10, v)))) for v in REALS[~np.isnan(REALS)].tolist()]
    log: list[str] = []
    api.evaluate("image.nearest_resize", inputs={"input": np.arange(16.0).reshape(1, 1, 4, 4)},
                 attributes={"axes": [2, 3], "size": [6, 6]}, engine="scalar",
                 hooks=api.Hooks(log=lambda instance, how: log.append(how)))
    assert log and all("generated code" in how and "reference" not in how for how in log), log


@pytest.mark.parametrize("profile", PROFILES)
def test_casts_between_kinds(profile: str) -> None:
    bools = np.array([True, False])
    for value, x, out, expected in (
            ("real(x[i])", INTS, "real", [float(v) for v in INTS.tolist()]),
            ("real(x[i])", bools, "real", [1.0, 0.0]),
            ("bool(x[i])", REALS, "bool", [v != 0 for v in REALS.tolist()]),
            ("bool(x[i])", INTS, "bool", [v != 0 for v in INTS.tolist()]),
            ("int(x[i])", bools, "int", [1, 0]),
            ("real(x[i])", REALS, "real", REALS.tolist())):
        kind, z = both_paths(value, x, None, out, profile)
        assert kind == "ok" and same(z, np.array(expected, dtype=z.dtype)), (value, z)


# ------------------------------------------------------------------------ updates and mixes


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("op", ["<=", ">="])
def test_min_max_updates(op: str, profile: str) -> None:
    """`z[i] >= x[i, j]` (max_reduce, max_pool) from its implicit start: NaN propagates under
    spec; under khronos std::max keeps the current value when the new one is NaN."""
    rows = [[1.0, NAN, 3.0], [-0.0, 0.0, -1.0], [-INF, -INF, -INF], [2.0, 5.0, NAN]]
    x = np.array(rows)
    prog = api.load_source(
        f"operator f {{ @input {{ x: real[n, m]; }} @output {{ z: real[n]; }} "
        f"@lower {{ z[i] {op} x[i, j], i < n, j < m; }} }}")
    fast = run(prog, {"x": x}, profile, True)
    slow = run(prog, {"x": x}, profile, False)
    assert fast[0] == slow[0] == "ok" and same(fast[1], slow[1])
    start = INF if op == "<=" else -INF
    expected = []
    for row in rows:
        if profile == "spec" and any(math.isnan(v) for v in row):
            expected.append(NAN)
            continue
        current = start
        for v in row:  # std::min / std::max: a NaN never replaces the current value
            current = v if (v < current if op == "<=" else current < v) else current
        expected.append(current)
    assert same(fast[1], np.array(expected)), (fast[1], expected)


def test_int_max_update_of_int_of_real_saturates() -> None:
    x = np.array([[1.5, INF], [-INF, -2.5]])
    prog = api.load_source("operator f { @input { x: real[n, m]; } @output { z: int[n]; } "
                           "@lower { z[i] >= int(x[i, j]), i < n, j < m; } }")
    fast, slow = run(prog, {"x": x}, "spec", True), run(prog, {"x": x}, "spec", False)
    assert fast[0] == slow[0] == "ok" and fast[1].tolist() == slow[1].tolist() == [I64_MAX, -2]


@pytest.mark.parametrize("value, out", [("x[i] > y[j]", "bool"), ("x[i] != y[j]", "bool"),
                                        ("x[i] + y[j]", "real"), ("x[i] >> y[j]", "real")])
def test_mixed_int_and_real_promote_under_khronos_only(value: str, out: str) -> None:
    """khronos converts the int to real (C++); spec reports the mix, in both paths."""
    x, y = np.array([1, -3, 2**53 + 1], dtype=np.int64), np.array([1.0, -3.5, 2.0**53, NAN])
    kind, z = both_paths(value, x, y, out, "khronos")
    xf = x.astype(np.float64)[:, None]
    with np.errstate(all="ignore"):
        expected = {"x[i] > y[j]": xf > y, "x[i] != y[j]": xf != y, "x[i] + y[j]": xf + y,
                    "x[i] >> y[j]": np.where(xf < y, y, xf)}[value]
    assert kind == "ok" and same(z, np.broadcast_to(expected, z.shape))
    kind, message = both_paths(value, x, y, out, "spec", refused=True)  # an error anyway
    assert kind == "error" and "int" in message and "real" in message


def test_bool_compared_with_numbers_under_khronos() -> None:
    x, y = np.array([True, False]), np.array([1.0, 0.0, 0.5, NAN])
    kind, z = both_paths("x[i] == y[j]", x, y, "bool", "khronos")
    assert kind == "ok" and z.tolist() == [[True, False, False, False],
                                           [False, True, False, False]]
    kind, z = both_paths("x[i] < y[j]", x, np.array([0, 1, 2], dtype=np.int64), "bool",
                         "khronos")
    assert kind == "ok" and z.tolist() == [[False, False, True], [False, True, True]]


# ------------------------------------------------------------------------------ the rules


@pytest.mark.parametrize("profile", [rules.SPEC, rules.KHRONOS], ids=PROFILES)
def test_specialized_rules_are_what_the_generic_entry_points_compute(profile) -> None:
    """`binary(op, a, b)` calls `binary_function(op, kind(a), kind(b))`; its kind is that of
    the result (None exactly when it fails), for every operand pair."""
    values = [0, 3, -2, 0.0, -0.0, 2.5, NAN, INF, True, False, "s", rules.INT_POS_INF,
              rules.INT_NEG_INF]
    operators = rules.COMPARISON_OPS + rules.LOGICAL_OPS + rules.ARITHMETIC_OPS + \
        rules.MIN_MAX_OPS
    for op in operators:
        for a in values:
            for b in values:
                rule = rules.binary_function(op, rules._dispatch_kind(a),
                                             rules._dispatch_kind(b), profile)
                try:
                    result = rules.binary(op, a, b, profile)
                except rules.NumericError:
                    assert rule.kind is None or rules.kind_type(rule.kind) == "int" or \
                        op in ("/", "\\", "%", "**"), (op, a, b)
                    continue
                assert rule.kind is not None, (op, a, b)
                got = {rules.INT_POS_INF: "int~+", rules.INT_NEG_INF: "int~-"}.get(
                    result, rules._dispatch_kind(result)) if result.__hash__ else "?"
                assert rules.select_kind(got, rule.kind) == rule.kind, (op, a, b, result)


# ------------------------------------------------------------ functions that never raise
# codegen hoists a loop-invariant value out of inner loops only where it cannot raise; these
# are its claims about the rule functions (bound as `G_n`), checked on the special values

KINDS = ("int", "real", "bool", rules.INT_OR_INF)
SPECIAL = {"int": [0, 1, -1, 7, -7, I64_MAX, I64_MIN, 3**200],
           "real": REALS.tolist() + [-NAN],
           "bool": [False, True]}
SPECIAL[rules.INT_OR_INF] = SPECIAL["int"] + [rules.INT_POS_INF, rules.INT_NEG_INF]


@pytest.mark.parametrize("profile", PROFILES)
def test_what_codegen_calls_total_never_raises(profile: str) -> None:
    checked = 0
    for left in KINDS:
        for right in KINDS:
            for op in rules.ARITHMETIC_OPS + rules.COMPARISON_OPS + rules.LOGICAL_OPS + \
                    rules.MIN_MAX_OPS:
                if not source.total_binary(op, left, right):
                    continue
                function = rules.binary_function(op, left, right, rules.PROFILES[profile])
                assert function.kind is not None, (op, left, right)
                for a in SPECIAL[left]:
                    for b in SPECIAL[right]:
                        function.function(a, b)  # no exception
                checked += 1
        for target in ("int", "real", "bool"):
            if source.total_cast(target, left):
                for a in SPECIAL[left]:
                    rules.cast_function(target, left, rules.PROFILES[profile]).function(a)
                checked += 1
        for name in rules.BUILTINS:
            if source.total_builtin(name, left):
                for a in SPECIAL[left]:
                    rules.builtin_function(name, left, rules.PROFILES[profile]).function(a)
                checked += 1
    assert checked > 40
    # and some that may raise are not claimed
    assert not source.total_binary("/", "int", "int")
    assert not source.total_binary("+", rules.INT_OR_INF, "int")
    assert not source.total_binary("+", "int", "real")  # converted (khronos) or an error
    assert not source.total_cast("int", "real")  # int(nan)
    assert not source.total_builtin("sqrt", "int")
