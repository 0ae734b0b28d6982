"""Symbolic extents (refinterp.numeric.symbolic): every form, interval and decided comparison
is checked against plain Python integer arithmetic at every value the symbols may take."""

from __future__ import annotations

import itertools
import operator
import random

import pytest

from refinterp.numeric import symbolic as S

BOUNDS = {"b": 6, "h": 9}


def values():
    """Every assignment of the symbols within their bounds (1..bound)."""
    for b, h in itertools.product(range(1, BOUNDS["b"] + 1), range(1, BOUNDS["h"] + 1)):
        yield {"b": b, "h": h}


def floor_div(a: int, c: int) -> int:
    return a // c


def ceil_div(a: int, c: int) -> int:
    return -(-a // c)


# (symbolic operation, the same on Python ints)
OPERATIONS = [
    (S.add, operator.add), (lambda a, c: S.add(a, S.scale(c, -1)), operator.sub),
    (S.multiply, operator.mul), (S.minimum, min), (S.maximum, max),
]
DIVISIONS = [("/", floor_div), ("\\", ceil_div), ("%", operator.mod)]


def random_expression(rng: random.Random, depth: int):
    """A random expression as (symbolic value, function of the symbols' values)."""
    if depth == 0 or rng.random() < 0.3:
        choice = rng.random()
        if choice < 0.4:
            name = rng.choice(list(BOUNDS))
            return S.symbol(name, BOUNDS[name]), lambda v, n=name: v[n]
        k = rng.randint(-3, 7)
        return k, lambda v, k=k: k
    if rng.random() < 0.3:  # a division by a positive constant
        a, fa = random_expression(rng, depth - 1)
        c = rng.randint(1, 4)
        op, plain = rng.choice(DIVISIONS)
        return S.divide(op, a, c), lambda v: plain(fa(v), c)
    (sym, plain) = rng.choice(OPERATIONS)
    (a, fa), (c, fc) = random_expression(rng, depth - 1), random_expression(rng, depth - 1)
    return sym(a, c), lambda v: plain(fa(v), fc(v))


@pytest.mark.parametrize("seed", range(40))
def test_forms_intervals_and_decisions_hold_at_every_value(seed: int) -> None:
    rng = random.Random(seed)
    left, f_left = random_expression(rng, 3)
    right, f_right = random_expression(rng, 3)
    points = list(values())
    for point in points:
        assert S.evaluate(left, point) == f_left(point), (S.describe(left), point)
    low, high = S.interval(left)
    for point in points:
        value = f_left(point)
        assert (low is None or low <= value) and (high is None or value <= high)
    for op, plain in [("<", operator.lt), ("<=", operator.le), (">", operator.gt),
                      (">=", operator.ge), ("==", operator.eq), ("!=", operator.ne)]:
        try:
            decided = S.compare(op, left, right)
        except S.Undecided:
            continue
        assert all(plain(f_left(p), f_right(p)) == decided for p in points), \
            (S.describe(left), op, S.describe(right))


def test_canonical_forms_make_equal_expressions_identical() -> None:
    b, h = S.symbol("b", 64), S.symbol("h", 224)
    assert S.identical(b * 3 + h - b, h + 2 * b)
    assert S.identical((2 * b + 4) // 2, b + 2)
    assert S.identical(S.divide("/", 144 * b, 144 * b), 1)
    assert not S.identical(b, h) and not S.identical(b, 1)
    assert S.describe((h - 1) // 2 + 1) == "(h - 1) / 2 + 1"
    assert S.minimum(b, 70) is b or S.identical(S.minimum(b, 70), b)  # b <= 64 < 70


def test_an_open_comparison_is_undecided_and_kleene_logic_decides_what_it_can() -> None:
    b = S.symbol("b", 64)
    with pytest.raises(S.Undecided):
        S.compare("==", b, 1)
    open_ = S.compare_open("==", b, 1)
    assert isinstance(open_, S.Open)
    assert S.kleene("||", open_, True) is True and S.kleene("&&", open_, False) is False
    assert isinstance(S.kleene("||", open_, False), S.Open)
    with pytest.raises(S.Undecided):
        bool(open_)
    assert S.agree((b, 3), (b, 3)) is True and S.agree((b, 3), (b, 4)) is False
    assert S.agree((b, 3), (1, 3)) is None


def test_a_run_s_dynamic_extents_are_identical_only_as_the_same_symbol() -> None:
    s1, s2 = S.Extent(3, "s1"), S.Extent(3, "s2")
    assert s1 == s2 and s1 + 1 == 4 and type(s1 + 1) is int
    assert not S.identical(s1, s2) and S.identical(s1, S.Extent(3, "s1"))
    assert not S.identical(s1, 3) and S.identical(3, 3) and not S.identical(1, 1.0)
