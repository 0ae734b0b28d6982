"""Spec §2.4 Expressions and §2.4.1 Null propagation: every expression form, hand-derived values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refinterp.core.diagnostics import Diagnostic
from refinterp.numeric.rules import INT_NEG_INF, INT_POS_INF
from refinterp.language.types import Type
from refinterp.language.values import TensorValue

from testsupport.exprtools import NULL, ev, ev_error, optional

INTS = Type("int", packed=True)


# ----------------------------------------------------------------------------- literals

def test_literals() -> None:
    # §2.4: "Integer literals consist of digits only"; reals contain '.' or an exponent;
    # `inf` is a real constant, `pi` the value of π.
    assert ev("123") == 123 and type(ev("123")) is int
    assert ev("1e-5") == 1e-5 and ev("1.23") == 1.23
    assert ev("inf") == math.inf and ev("pi") == math.pi
    assert ev("true") is True and ev("false") is False


def test_adjacent_strings_are_one_string() -> None:
    # §2.4: "writing multiple strings in quotes right after each other ... a single long string"
    assert ev("'abc' \"def\"") == "abcdef"


# ----------------------------------------------------------------------------- lists

def test_list_expansion_and_concatenation() -> None:
    # §2.4 Lists: [a, b.., c]; [b.., d..] concatenates.
    assert ev("[a, b.., c]", a=1, b=(2, 3), c=4) == (1, 2, 3, 4)
    assert ev("[b.., d..]", b=(1,), d=(2, 3)) == (1, 2, 3)


def test_repetition_with_int_and_bool_length() -> None:
    # §2.4: [a..(5)] == [a,a,a,a,a]; a bool length includes the item once or not at all.
    assert ev("[a..(5)]", a=7) == (7,) * 5
    assert ev("[1 ..(3)]") == (1, 1, 1)
    assert ev("[1, 2 ..(c)]", c=True) == (1, 2)
    assert ev("[1, 2 ..(c)]", c=False) == (1,)
    assert ev("[1 ..(0)]") == ()


def test_negative_repetition_is_an_error() -> None:
    assert "must not be negative" in ev_error("[1 ..(n)]", n=-1).message


def test_ranges() -> None:
    # §2.4 Ranges: begin inclusive, end exclusive, stride 1 by default, may be negative.
    assert ev("[2:5]") == (2, 3, 4)
    assert ev("[0:10:3]") == (0, 3, 6, 9)
    assert ev("[5:0:-2]") == (5, 3, 1)
    assert ev("[3:3]") == () and ev("[5:2]") == ()
    assert ev("[0, 2:n, b..]", n=4, b=(9,)) == (0, 2, 3, 9)
    assert "stride must not be 0" in ev_error("[0:3:0]").message


def test_zip() -> None:
    # §2.4 Zip: [(a,b)..] interleaves: a0, b0, a1, b1, ...
    assert ev("[(a,b)..]", a=(1, 2), b=(10, 20)) == (1, 10, 2, 20)
    assert ev("[(a,b,c)..]", a=(1,), b=(2,), c=(3,)) == (1, 2, 3)
    assert "equal lengths" in ev_error("[(a,b)..]", a=(1,), b=(1, 2)).message


# ----------------------------------------------------------------------------- indexing

def test_index_by_int_negative_from_the_end() -> None:
    # §2.4 Indexing: "-1 is the last item".
    assert ev("a[0]", a=(5, 6, 7)) == 5 and ev("a[-1]", a=(5, 6, 7)) == 7
    assert "out of range" in ev_error("a[3]", a=(5, 6, 7)).message


def test_index_by_int_pack_and_mask() -> None:
    assert ev("a[[2, 0, -1]]", a=(5, 6, 7)) == (7, 5, 7)
    assert ev("a[[true, false, true]]", a=(5, 6, 7)) == (5, 7)
    assert "mask" in ev_error("a[[true]]", a=(5, 6, 7)).message


def test_slices_follow_the_omitted_bound_rule() -> None:
    a = (0, 1, 2, 3, 4)
    # §2.4: a[::-1] reverses; omitted start/end with a negative step run from r-1 down to the
    # item before the first; explicit -1 is the last item.
    assert ev("a[::-1]", a=a) == (4, 3, 2, 1, 0)
    assert ev("a[1:3]", a=a) == (1, 2)
    assert ev("a[:2]", a=a) == (0, 1) and ev("a[3:]", a=a) == (3, 4)
    assert ev("a[0::2]", a=a) == (0, 2, 4) and ev("a[1::2]", a=a) == (1, 3)
    assert ev("a[3:-1:-1]", a=a) == ()  # -1 means the last item, not "before the first"
    assert ev("a[3::-1]", a=a) == (3, 2, 1, 0)
    assert "step must not be 0" in ev_error("a[::0]", a=a).message


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-5, 5), max_size=6),
       st.one_of(st.none(), st.integers(-8, 8)), st.one_of(st.none(), st.integers(-8, 8)),
       st.one_of(st.none(), st.integers(-3, 3).filter(bool)))
def test_slicing_equals_python_slicing(items, start, stop, step) -> None:
    # Under the spec's conventions (omitted bounds by step direction, negative bounds from the
    # end) a slice is Python's slice; out-of-range bounds are clipped (docs/semantics.md).
    text = "a[" + ("" if start is None else str(start)) + ":" + \
        ("" if stop is None else str(stop)) + ("" if step is None else f":{step}") + "]"
    assert ev(text, a=tuple(items), types={"a": INTS}) == tuple(items)[start:stop:step]


def test_string_indexing_and_slicing() -> None:
    # §2.4: strings index to a substring of one or more characters.
    assert ev("s[1]", s="hello") == "e"
    assert ev("s[1:3]", s="hello") == "el"
    assert ev("s[[0, 4]]", s="hello") == "ho"
    assert ev("s[::-1]", s="abc") == "cba"


def test_substitution() -> None:
    # §2.4 Substitution: a[i] <- b replaces the items at i; the length stays.
    assert ev("a[1] <- 9", a=(1, 2, 3)) == (1, 9, 3)
    assert ev("a[[0, 2]] <- [7, 8]", a=(1, 2, 3)) == (7, 2, 8)
    assert ev("a[-1] <- 0", a=(1, 2, 3)) == (1, 2, 0)
    assert "2 indices but 1 new values" in ev_error("a[[0, 1]] <- [5]", a=(1, 2, 3)).message


# ----------------------------------------------------------------------------- operators

def test_arithmetic_and_pack_broadcasting() -> None:
    # §2.4: packs operate element-wise; a single value broadcasts; lengths must agree.
    assert ev("a + 1", a=(1, 2)) == (2, 3)
    assert ev("a * b", a=(1, 2), b=(3, 4)) == (3, 8)
    assert ev("-a", a=(1, -2)) == (-1, 2)
    assert "different lengths" in ev_error("a + b", a=(1, 2), b=(1,)).message


def test_integer_division_family_spec_profile() -> None:
    # §2.4: `/` rounds downwards, `\` rounds upwards, `%` is modulo (consistent with `/`).
    assert ev("7 / 2") == 3 and ev("-7 / 2") == -4
    assert ev("7 \\ 2") == 4 and ev("-7 \\ 2") == -3
    assert ev("-7 % 2") == 1 and ev("7 % -2") == -1
    assert "zero" in ev_error("1 / 0").message
    assert "zero" in ev_error("1 % 0").message


def test_integer_division_family_khronos_profile() -> None:
    assert ev("-7 / 2", profile="khronos") == -3
    assert ev("-7 % 2", profile="khronos") == -1
    assert ev("7 \\ 2", profile="khronos") == 4 and ev("-7 \\ 2", profile="khronos") == -4


def test_power_and_min_max_both_spellings() -> None:
    assert ev("2 ** 10") == 1024 and ev("2.0 ** 0.5") == math.sqrt(2.0)
    assert ev("3 << 5") == 3 and ev("3 >> 5") == 5
    assert ev("3 <? 5") == 3 and ev("3 >? 5") == 5
    assert ev("a << 2", a=(1, 3)) == (1, 2)


def test_logical_operators() -> None:
    # §2.4: && || ^ (xor) => (implication).
    table = [(False, False), (False, True), (True, False), (True, True)]
    for a, b in table:
        assert ev("a && b", a=a, b=b) is (a and b)
        assert ev("a || b", a=a, b=b) is (a or b)
        assert ev("a ^ b", a=a, b=b) is (a != b)
        assert ev("a => b", a=a, b=b) is ((not a) or b)


def test_comparisons_on_all_types() -> None:
    assert ev("1 < 2") is True and ev("2.5 >= 2.5") is True
    assert ev("'abc' < 'abd'") is True and ev("'a' == 'a'") is True
    assert ev("false < true") is True and ev("true != true") is False
    assert ev("a == 2", a=(1, 2)) == (False, True)


def test_select() -> None:
    # §2.4 Select: c ? a : b; without else the result is null when c fails; a pack condition
    # selects item by item; with a single condition the branches may differ in length.
    assert ev("c ? 1 : 2", c=True) == 1 and ev("c ? 1 : 2", c=False) == 2
    assert ev("c ? 1", c=False) is NULL and ev("c ? 1", c=True) == 1
    assert ev("a > 1 ? a : 0", a=(1, 2, 3)) == (0, 2, 3)
    assert ev("c ? [1, 2] : [3]", c=False) == (3,)


def test_select_evaluates_only_the_taken_branch() -> None:
    # Decision (docs/semantics.md): needed by §2.4's own `?x ? x : 0`.
    assert ev("c ? 1 : 1 / 0", c=True) == 1


def test_implication_evaluates_its_consequence_only_where_the_guard_holds() -> None:
    # §2.4: "logical operators &&, ||, ^ (xor) and => (implication) for arguments of type bool"
    # (L424); the spec's own reshape asserts `input_volume != 0 => input_volume % shape_volume
    # == 0` (L1914), which an empty input (0 % 0) makes undefined unless a false guard leaves
    # the consequence unevaluated. Decision (docs/semantics.md, "=>").
    assert ev("v != 0 => v % w == 0", v=0, w=0) is True
    assert ev("a => 1 / 0 == 1", a=(False, False)) == (True, True)
    assert ev("a => 1 / 0 == 1", a=NULL, types={"a": optional("bool")}) is NULL
    assert ev_error("a => 1 / 0 == 1", a=(False, True)).code == "E0402"
    assert ev("v != 0 => v % w == 0", v=6, w=4) is False


def test_is_and_in() -> None:
    assert ev("s is -1", s=(-1, 2)) == (True, False)
    assert ev("2 is 2") is True
    assert ev("2 in a", a=(1, 2)) is True and ev("5 in a", a=(1, 2)) is False
    assert ev("[1, 5] in a", a=(1, 2)) == (True, False)


def test_coalescing_and_null_test_are_never_null() -> None:
    types = {"x": optional("int")}
    assert ev("x ?? 3", x=NULL, types=types) == 3 and ev("x ?? 3", x=4, types=types) == 4
    assert ev("?x", x=NULL, types=types) is False and ev("?x", x=4, types=types) is True
    assert ev("p ?? [0, 0]", p=NULL, types={"p": optional("int", True)}) == (0, 0)


def test_promotion() -> None:
    types = {"x": optional("int"), "c": Type("bool")}
    assert ev("?x ? x : 0", x=NULL, types=types) == 0
    assert ev("?x ? x : 0", x=5, types=types) == 5
    assert ev("?x && c ? x : 0", x=5, c=False, types=types) == 0


# ----------------------------------------------------------------------------- folds

@pytest.mark.parametrize("text, value, expected", [
    ("x + ..", (1, 2, 3), 6), ("x * ..", (2, 3), 6), ("x + ..", (), 0), ("x * ..", (), 1),
    ("x && ..", (True, False), False), ("x && ..", (), True), ("x || ..", (), False),
    ("x < ..", (1, 2, 3), True), ("x < ..", (1, 1), False), ("x <= ..", (1, 1), True),
    ("x > ..", (3, 1), True), ("x >= ..", (3, 3, 1), True), ("x < ..", (), True),
    ("x == ..", (2, 2), True), ("x == ..", (2, 3), False), ("x == ..", (), True),
    ("x != ..", (1, 2, 1), False), ("x != ..", (1, 2, 3), True), ("x != ..", (), True),
    ("x := ..", (4, 4), 4), ("x := ..", (4, 5), NULL), ("x := ..", (), NULL),
    ("x << ..", (3, 1, 2), 1), ("x >> ..", (3, 1, 2), 3), ("x << ..", (), NULL),
    ("x <? ..", (3, 1), 1), ("x >? ..", (3, 1), 3),
])
def test_folds(text: str, value: tuple, expected) -> None:
    # §2.4 Folding, with the empty-pack values the spec gives (sum 0, product 1, conjunction
    # true, disjunction false, sorted, unique; min/max/uniform of an empty pack null).
    types = {"x": Type("bool" if "&" in text or "|" in text else "int", packed=True)}
    assert ev(text, x=value, types=types) == expected if expected is not NULL else \
        ev(text, x=value, types=types) is NULL


def test_real_sum_of_empty_pack_is_real_zero() -> None:
    result = ev("x + ..", x=(), types={"x": Type("real", packed=True)})
    assert result == 0.0 and type(result) is float


@pytest.mark.parametrize("text, value, expected", [
    ("x + ...", (1, 2, 3), (1, 3, 6)), ("x * ...", (1, 2, 3), (1, 2, 6)),
    ("x && ...", (True, False, True), (True, False, False)),
    ("x || ...", (False, True, False), (False, True, True)),
    ("x << ...", (3, 1, 2), (3, 1, 1)), ("x >> ...", (1, 3, 2), (1, 3, 3)),
    ("x <? ...", (3, 1), (3, 1)), ("x + ...", (), ()),
])
def test_cumulative_folds(text: str, value: tuple, expected: tuple) -> None:
    types = {"x": Type("bool" if "&" in text or "|" in text else "int", packed=True)}
    assert ev(text, x=value, types=types) == expected


def test_folds_with_an_initial_value() -> None:
    # §2.4: "a fold expression naturally combines with the same binary operator ... an initial
    # value to the fold, as in x + .. + 42".
    assert ev("x + .. + 42", x=(1, 2)) == 45
    assert ev("b * .. * c", b=(2, 3), c=5) == 30
    # Decision: the initial value makes an empty min/max fold non-null.
    assert ev("[1:1] << .. << 7") == 7 and ev("[1:4] << .. << 7") == 1


# ----------------------------------------------------------------------------- casts, built-ins

def test_casts() -> None:
    # §2.4 Casting between int, real and bool; int(real) truncates toward zero.
    assert ev("int(2.7)") == 2 and ev("int(-2.7)") == -2
    assert ev("real(3)") == 3.0 and type(ev("real(3)")) is float
    assert ev("bool(0)") is False and ev("int(true)") == 1
    assert ev("int(inf)") is INT_POS_INF and ev("int(-inf)") is INT_NEG_INF


@pytest.mark.parametrize("name", ["abs", "sign", "sqrt", "exp", "log", "sin", "cos", "tan",
                                  "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
                                  "acosh", "atanh", "round", "floor", "ceil", "frac", "erf"])
def test_builtins_both_spellings(name: str) -> None:
    x = 0.5 if name != "acosh" else 1.5
    simple = {"abs": 0.5, "sign": 1.0, "round": 1.0, "floor": 0.0, "ceil": 1.0, "frac": 0.5}
    expected = simple[name] if name in simple else getattr(math, name)(x)
    assert ev(f"`{name}`({x})") == expected
    assert ev(f"{name}({x})") == expected


def test_builtins_on_ints_and_packs() -> None:
    assert ev("abs(-3)") == 3 and ev("sign(-3)") == -1
    assert ev("`round`(-2.5)") == -3.0 and ev("`round`(2.5)") == 3.0  # half away from zero
    assert ev("sqrt(a)", a=(4.0, 9.0)) == (2.0, 3.0)  # decision: element-wise on packs


# ----------------------------------------------------------------------------- formatting, members

def test_string_formatting() -> None:
    # §2.4: "a = {a + 2}" with a = 40 is "a = 42".
    assert ev('"a = {a + 2}"', a=40) == "a = 42"
    assert ev('"\\{literal\\}"') == "{literal}"
    assert ev('"{r} {b} {p} {s}"', r=0.5, b=True, p=(1, 2), s="txt") == "0.5 true [1, 2] txt"


def test_shape_rank_size() -> None:
    # §2.4 Implicitly defined identifiers: x.shape, x.rank for tensors, xs.size for packs.
    t = TensorValue("real", (2, 3))
    assert ev("t.shape", t=t) == (2, 3) and ev("t.rank", t=t) == 2
    assert ev("xs.size", xs=(1, 2, 3)) == 3


# ----------------------------------------------------------------------------- null propagation

def test_null_propagation_2_4_1() -> None:
    # §2.4.1: unary, binary, select, list, fold, index over null give null.
    o = {"n": optional("int"), "p": optional("int", True)}
    assert ev("n + 1", n=NULL, types=o) is NULL
    assert ev("-n", n=NULL, types=o) is NULL
    assert ev("[1, n]", n=NULL, types=o) is NULL
    assert ev("p + ..", p=NULL, types=o) is NULL
    assert ev("p[0]", p=NULL, types=o) is NULL
    assert ev("n > 0 ? 1 : 2", n=NULL, types=o) is NULL
    assert ev('"v={n}"', n=NULL, types=o) is NULL
    assert ev("[0:n]", n=NULL, types=o) is NULL


# ----------------------------------------------------------------------------- fold laws

packs = st.lists(st.integers(-50, 50), max_size=6).map(tuple)


@settings(max_examples=200, deadline=None)
@given(packs, packs)
def test_fold_laws(a: tuple, b: tuple) -> None:
    t = {"a": INTS, "b": INTS}
    # Sum and product of a concatenation; min of a concatenation (plain Python model).
    assert ev("[a.., b..] + ..", a=a, b=b, types=t) == sum(a) + sum(b)
    assert ev("[a.., b..] * ..", a=a, b=b, types=t) == math.prod(a) * math.prod(b)
    both = a + b
    assert ev("[a.., b..] << ..", a=a, b=b, types=t) == (min(both) if both else NULL)
    # The last item of a cumulative fold equals the fold.
    if a:
        assert ev("(a + ...)[-1]", a=a, types=t) == sum(a)
        assert ev("(a >> ...)[-1]", a=a, types=t) == max(a)
    # `x := ..` is non-null exactly for non-empty uniform packs.
    uniform = ev("a := ..", a=a, types=t)
    assert (uniform is not NULL) == (len(a) > 0 and len(set(a)) == 1)
    # Broadcasting a single value equals the item-by-item model.
    assert ev("a * 3 - b[0]", a=a, b=b or (0,), types=t) == tuple(x * 3 - (b or (0,))[0]
                                                                 for x in a)


def test_generic_casts_and_defaults() -> None:
    # §2.4 Casting: "declared generic type names can also be used for casting, such as T(x)";
    # `I()` is the default value of whatever type I is bound to.
    from refinterp.language.expr import Environment, evaluate
    from refinterp.core.source import SourceFile
    from refinterp.syntax import parse_expression

    env = Environment(dtypes={"T": "num"}, dtype_bindings={"T": "real"})
    assert evaluate(parse_expression(SourceFile("<t>", "T()")), env) == 0.0
    result = evaluate(parse_expression(SourceFile("<t>", "T(3)")), env)
    assert result == 3.0 and type(result) is float
    env.dtype_bindings["T"] = "int"
    assert evaluate(parse_expression(SourceFile("<t>", "T(2.9)")), env) == 2


def test_pack_length_limit() -> None:
    assert "exceeds the limit" in ev_error("[1 ..(n)]", n=10**11).message
    assert "exceeds the limit" in ev_error("[0:n]", n=10**11).message


# ----------------------------------------------------------------------------- select: packs

SELECT_PACKS = ("§2.4 Select operator: \"One or more arguments may also be packs, in which case "
                "the result is a pack. If the condition is a pack, the branching is taken "
                "element-wise ... When the conditions is not a pack, the other two arguments "
                "need not be of the same length.\"")


def select_type(text: str, **symbols: Type) -> Type:
    from refinterp.core.source import SourceFile
    from refinterp.language.types import TypeScope, check_expr
    from refinterp.syntax import parse_expression

    node = parse_expression(SourceFile("<t>", text))
    return check_expr(node, TypeScope(dict(symbols)))[id(node)]


def test_select_with_a_single_condition_and_one_pack_branch_is_a_pack() -> None:
    # SELECT_PACKS. Decision (docs/semantics.md "Select"): the taken single value is repeated
    # to the length of the pack branch, as a single operand pairs with every item of a pack.
    reals = Type("real", packed=True)
    assert select_type("c ? 0.5 * s - 0.5 : 0.0", c=Type("bool"), s=reals) == reals
    assert select_type("c ? 0 : [1, 2]", c=Type("bool")) == INTS
    assert select_type("c ? [1, 2]", c=Type("bool")) == Type("int", packed=True, optional=True)
    assert select_type("c ? 1 : 2", c=Type("bool")) == Type("int")
    scale = (2.0, 0.5, 4.0)
    # both choices: the pack branch as it is, or the single value once per item
    assert ev("c ? 0.5 * s - 0.5 : 0.0", c=True, s=scale) == (0.5, -0.25, 1.5)
    assert ev("c ? 0.5 * s - 0.5 : 0.0", c=False, s=scale) == (0.0, 0.0, 0.0)
    assert ev("c ? 7 : [1, 2]", c=True) == (7, 7) and ev("c ? 7 : [1, 2]", c=False) == (1, 2)
    assert ev("c ? 7 : []", c=True) == ()
    # the result is a pack wherever it is used: folded, indexed, combined with another pack
    assert ev("(c ? 2 : [1, 2, 3]) + ..", c=True) == 6
    assert ev("(c ? [1, 2, 3] : 2)[2]", c=False) == 2
    assert ev("s * (c ? 0.5 * s : 1.0)", c=False, s=scale) == scale
    # an else-chain: each link follows the rule
    assert ev("c ? 7 : d ? [1, 2] : 5", c=True, d=False) == (7, 7)
    assert ev("c ? 7 : d ? [1, 2] : 5", c=False, d=False) == (5, 5)
    assert ev("c ? [9] : d ? 1 : 2", c=False, d=True) == (1,)
    # a single taken value that is null gives null (§2.4.1)
    assert ev("c ? x : [1]", c=True, x=NULL, types={"x": optional("int")}) is NULL


def test_select_needs_the_length_of_its_untaken_pack_branch() -> None:
    # SELECT_PACKS. Decision: the pack branch is evaluated for its length even when the
    # single value is taken, so its errors are the select's; a null pack branch has no length.
    error = ev_error("c ? 1 : 6 / xs", c=True, xs=(1, 0))
    assert error.code == "E0402" and "division by zero" in error.message
    assert any("repeated to the length of this pack branch" in n for n in error.notes)
    error = ev_error("?s ? s : 0", types={"s": optional("int", packed=True)}, s=NULL)
    assert error.code == "E0402" and "no length" in error.message
    assert (error.span.col, error.span.end_col) == (6, 7)  # at the pack branch `s`
    assert ev("?s ? s : 0", types={"s": optional("int", packed=True)}, s=(4, 5)) == (4, 5)
    # a single-valued untaken branch is still never evaluated (§2.4's own `?x ? x : 0`)
    assert ev("?x ? x : 0", types={"x": optional("int")}, x=NULL) == 0
    assert ev("c ? [1, 2] : 1 / 0", c=True) == (1, 2)


def test_select_between_pack_and_single_in_a_resize_using() -> None:
    # SELECT_PACKS, in @using as an image resize writes it: with a single condition and a
    # pack `scale`, `offset` is a pack whichever branch is taken. Nearest resize of one axis
    # against NumPy (ONNX half-pixel coordinates, rounding half down; asymmetric: x * scale).
    from refinterp import api

    program = api.load_source("""
operator resize_rows {
    @attrib { size: int..(k); symmetric: bool = true; }
    @input { x: real[n, m]; }
    @output { y: real[size[0], m]; }
    @using {
        scale = real([n ..(k)]) / real(size);
        offset = symmetric ? 0.5 * scale - 0.5 : 0.0;
    }
    @lower {
        r = real(i) * scale[0] + offset[0],
        y[i, j] = x[int(`ceil`(r - 0.5)) <? n - 1, j], i < size[0], j < m;
    }
}""")
    x = rng_values((5, 3))
    for symmetric in (True, False):
        for size in (8, 3):
            got = api.evaluate(program, op="resize_rows", inputs={"x": x},
                               attributes={"size": [size], "symmetric": symmetric}).outputs["y"]
            coords = np.arange(size) * 5 / size
            if symmetric:
                coords = coords + 0.5 * 5 / size - 0.5
            rows = np.clip(np.ceil(coords - 0.5).astype(int), 0, 4)
            assert np.array_equal(got, x[rows]), (symmetric, size)


def rng_values(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(5).standard_normal(shape)


def test_select_between_pack_and_single_in_a_formula_is_refused() -> None:
    # SELECT_PACKS. Decision: @lower formulas have no static types, so no engine can know,
    # when a single branch is taken at run time, that the other is a pack: such a select is
    # refused (E0500) for every engine; a compile-time one follows the @using rule.
    from refinterp import api

    program = api.load_source("""
operator mixed {
    @attrib { flag: bool = false; }
    @input { x: real[n]; }
    @output { y: real[n]; }
    @lower { y[i] = (flag ? [x[i], x[i]] : 1.0) + .., i < n; }
}
operator compile_time {
    @attrib { flag: bool = false; }
    @input { x: real[n]; }
    @output { y: real[n]; }
    @lower { y[i] = x[i] + (flag ? [1.0, 2.0] : 3.0)[1], i < n; }
}""")
    x = np.array([1.0, 2.0])
    for engine in ("scalar", "vector"):
        with pytest.raises(Diagnostic) as info:
            api.evaluate(program, op="mixed", inputs={"x": x}, engine=engine)
        assert info.value.code == "E0500" and "pack and a single value" in info.value.message
        for flag, add in ((False, 3.0), (True, 2.0)):
            got = api.evaluate(program, op="compile_time", inputs={"x": x},
                               attributes={"flag": flag}, engine=engine).outputs["y"]
            assert np.array_equal(got, x + add)
