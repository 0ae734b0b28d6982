"""Module `ocannl`: every primitive operation of OCANNL against a hand transliteration of
arrayjit's `Ops.interpret_unop` / `interpret_binop` / `interpret_ternop` (and Jane Street Base's
`Float.int_pow`, `Float.max`/`min`, `Float.( % )`), applied cell by cell in plain Python.

Special values are included everywhere: the interpret functions differ from the SkriptND
stdlib precisely on NaN, signed zeros and comparisons giving reals."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic

from .conftest import run

SPECIAL = [0.0, -0.0, 0.25, -0.25, 0.5, 1.0, -1.0, 2.0, 3.0, -3.0, 1e300, math.inf,
           -math.inf, math.nan]


def ocaml_max(a: float, b: float) -> float:  # Base: if x > y || is_nan x then x else y
    return a if a > b or math.isnan(a) else b


def ocaml_min(a: float, b: float) -> float:
    return a if a < b or math.isnan(a) else b


def base_int_pow(x: float, n: int) -> float:
    """Base.Float.int_pow, transliterated."""
    if n == 0:
        return 1.0
    accum = 1.0
    if n < 0:
        x, n = div(1.0, x), -n
    while n > 1:
        if n % 2 == 1:
            accum = x * accum
        x = x * x
        n //= 2
    return x * accum


def ieee(function):
    """A math-module function with C's results where Python raises (log 0, sqrt -1, ...)."""
    def safe(v: float) -> float:
        try:
            return function(v)
        except (ValueError, OverflowError):
            return float(getattr(np, function.__name__)(np.float64(v)))
    return safe


def div(a: float, b: float) -> float:
    return float(np.float64(a) / np.float64(b))


def pow_of(a: float, b: float) -> float:
    if math.isfinite(b) and b == math.trunc(b):
        return base_int_pow(a, int(b))
    return float(np.power(np.float64(a), np.float64(b)))


UNARY = {
    "id": lambda v: v,
    "relu": lambda v: v if v >= 0.0 else 0.0,
    "sat01": lambda v: 0.0 if v <= 0.0 else (1.0 if v >= 1.0 else v),
    "exp": lambda v: float(np.exp(np.float64(v))),
    "log": lambda v: float(np.log(np.float64(v))),
    "exp2": lambda v: float(np.power(2.0, np.float64(v))),
    "log2": lambda v: float(np.log(np.float64(v)) / np.log(2.0)),
    "sin": lambda v: float(np.sin(np.float64(v))),
    "cos": lambda v: float(np.cos(np.float64(v))),
    "sqrt": lambda v: float(np.sqrt(np.float64(v))),
    "recip": lambda v: div(1.0, v),
    "recip_sqrt": lambda v: div(1.0, float(np.sqrt(np.float64(v)))),
    "neg": lambda v: -v,
    "tanh": lambda v: math.tanh(v),
    "not": lambda v: 1.0 if v == 0.0 else 0.0,
}
BINARY = {
    "fst": lambda a, b: a, "snd": lambda a, b: b,
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
    "mul": lambda a, b: float(np.float64(a) * np.float64(b)), "div": div, "pow": pow_of,
    "relu_gate": lambda a, b: b if a > 0.0 else 0.0,
    "sat01_gate": lambda a, b: b if 0.0 < a < 1.0 else 0.0,
    "max": ocaml_max, "min": ocaml_min,
    "lt": lambda a, b: 1.0 if a < b else 0.0, "eq": lambda a, b: 1.0 if a == b else 0.0,
    "or_": lambda a, b: 1.0 if a != 0.0 or b != 0.0 else 0.0,
    "and_": lambda a, b: 1.0 if a != 0.0 and b != 0.0 else 0.0,
}
TERNARY = {
    "where": lambda a, b, c: b if a != 0.0 else c,
    "fma": lambda a, b, c: float(np.float64(a) * np.float64(b) + np.float64(c)),
}
TRANSCENDENTAL = {"exp", "log", "exp2", "log2", "sin", "cos", "tanh"}


def same(actual: np.ndarray, expected: np.ndarray, name: str, exact: bool) -> None:
    """Equal cell by cell, NaN where NaN, and the sign of every zero (the interpret functions
    are about exactly these details); transcendental functions within 1e-14 relative."""
    actual = np.asarray(actual, dtype=np.float64)
    assert actual.shape == expected.shape, name
    assert np.array_equal(np.isnan(actual), np.isnan(expected)), (name, actual, expected)
    if exact:
        assert np.array_equal(actual, expected, equal_nan=True), (name, actual, expected)
        zeros = expected == 0.0
        assert np.array_equal(np.signbit(actual[zeros]), np.signbit(expected[zeros])), name
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-14, atol=0.0, equal_nan=True)


def apply(function, *arrays: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        flat = [function(*(float(a.ravel()[k]) for a in arrays))
                for k in range(arrays[0].size)]
    return np.array(flat, dtype=np.float64).reshape(arrays[0].shape)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_on_special_values_and_random(name: str, rng: np.random.Generator) -> None:
    for x in (np.array(SPECIAL), rng.uniform(-3.0, 3.0, size=(3, 4))):
        with np.errstate(all="ignore"):
            found = run(f"ocannl.{name}", {"x": x})["r"]
        same(found, apply(UNARY[name], x), name, name not in TRANSCENDENTAL)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_on_every_pair_of_special_values(name: str, rng: np.random.Generator) -> None:
    pairs = [(a, b) for a in SPECIAL for b in SPECIAL]
    x = np.array([a for a, _ in pairs])
    y = np.array([b for _, b in pairs])
    found = run(f"ocannl.{name}", {"x": x, "y": y})["r"]
    same(found, apply(BINARY[name], x, y), name, True)
    x, y = rng.uniform(-3.0, 3.0, size=(2, 5)), rng.uniform(-3.0, 3.0, size=(2, 5))
    same(run(f"ocannl.{name}", {"x": x, "y": y})["r"], apply(BINARY[name], x, y), name, True)


@pytest.mark.parametrize("name", sorted(TERNARY))
def test_ternary_on_special_values(name: str, rng: np.random.Generator) -> None:
    triples = [(a, b, c) for a in SPECIAL for b in (1.5, -0.0, math.nan) for c in (2.0, math.inf)]
    x, y, z = (np.array([t[k] for t in triples]) for k in range(3))
    same(run(f"ocannl.{name}", {"x": x, "y": y, "z": z})["r"], apply(TERNARY[name], x, y, z),
         name, True)
    x, y, z = (rng.uniform(-2.0, 2.0, size=(4,)) for _ in range(3))
    same(run(f"ocannl.{name}", {"x": x, "y": y, "z": z})["r"], apply(TERNARY[name], x, y, z),
         name, True)


def test_pow_uses_base_int_pow_for_integer_exponents() -> None:
    # x ** 3 by repeated squaring is (x * x) * x; the C pow of 1.134 and 3 rounds once and
    # differs in the last bit for this base
    base = 1.134
    by_squaring = (base * base) * base
    assert by_squaring != math.pow(base, 3.0)  # the case is worth pinning
    found = run("ocannl.pow", {"x": np.array([base, 2.0, 2.0, math.nan, 0.0, 4.0]),
                               "y": np.array([3.0, 10.0, -2.0, 0.0, -1.0, 0.5])})["r"]
    assert found[0] == by_squaring
    assert list(found[1:]) == [1024.0, 0.25, 1.0, math.inf, 2.0]  # nan ** 0 is 1 (int_pow)


def test_mod_is_base_float_mod() -> None:
    x = np.array([7.5, -7.5, -0.0, 6.0, math.inf, 1.0, -4.0])
    y = np.array([2.0, 2.0, 3.0, 3.0, 2.0, 0.0, math.inf])
    found = run("ocannl.mod_", {"x": x, "y": y})["r"]
    # fmod, plus the modulus where negative: -7.5 -> -1.5 + 2; -4 % inf = -4 + inf
    expected = np.array([1.5, 0.5, -0.0, 0.0, math.nan, math.nan, math.inf])
    same(found, expected, "mod_", True)
    same(run("ocannl.mod_", {"x": np.array([[5.0, -5.0]]), "y": np.array([[3.0, 3.0]])})["r"],
         np.array([[2.0, 1.0]]), "mod_", True)


def test_mod_by_a_negative_modulus_is_an_error_as_in_ocaml() -> None:
    with pytest.raises(Diagnostic, match="must not be negative"):
        run("ocannl.mod_", {"x": np.array([1.0]), "y": np.array([-2.0])})


def test_relu_and_max_differ_from_the_stdlib_on_nan_and_signed_zero() -> None:
    x = np.array([math.nan, -0.0])
    assert np.array_equal(run("ocannl.relu", {"x": x})["r"], [0.0, -0.0])
    assert np.signbit(run("ocannl.relu", {"x": x})["r"][1])
    found = run("ocannl.max", {"x": np.array([1.0, math.nan, 0.0]),
                               "y": np.array([math.nan, 1.0, -0.0])})["r"]
    # Base's max propagates NaN from either side (nn/math max follow the profile); equal
    # operands give the second
    assert math.isnan(found[0]) and math.isnan(found[1]) and np.signbit(found[2])


def test_module_formulas_are_the_front_ends() -> None:
    """The module's @lower formulas are refinterp.einsum's OPERATIONS (one source of truth for
    the front end and the module)."""
    from refinterp.einsum import OPERATIONS
    from refinterp.language.modules import STDLIB_DIR

    text = (Path(STDLIB_DIR) / "ocannl.sknd").read_text()
    bodies = {}
    for block in text.split("\noperator ")[1:]:
        body = re.search(r"r\[i\.\.\] = (.*?),\n", block)
        if body:
            bodies[block.split()[0]] = body.group(1)
    assert set(bodies) == set(OPERATIONS) - {"pow", "mod_"}
    arguments = {1: ["x[i..]"], 2: ["x[i..]", "y[i..]"], 3: ["x[i..]", "y[i..]", "z[i..]"]}
    for name, body in bodies.items():
        formula = OPERATIONS[name].formula(*arguments[OPERATIONS[name].arity])
        assert body in (formula, formula[1:-1]), name


def test_every_operation_has_a_reference_here() -> None:
    from refinterp.einsum import OPERATIONS

    assert set(OPERATIONS) == set(UNARY) | set(BINARY) | {"mod_"} | set(TERNARY)
