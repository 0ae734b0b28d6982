"""What generated kernel source may contain, for refinterp.lower.compiled's code generation:
which rule functions never raise (`total_binary`, `total_cast`, `total_builtin`), what a
source text may raise (`may_raise`), where an access finds its elements (`Layout`), and the
nesting Python compiles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from refinterp.numeric import rules

# Generated code raises in check lines and in calls of rule functions (`F_n(..)`, see
# `Generator.bound`) only: an index in an expression is in range where it is evaluated.
CALL = re.compile(r"\bF_\d+\(")
IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*")
TEMPORARY = re.compile(r"(t|v|o)\d*")  # computed by body lines: never loop-invariant
HOISTED = re.compile(r"\bH_\d+\b")
CONSTANT = re.compile(r"-?\d+|K\[\d+\]|True|False")
# Python compiles at most 20 statically nested blocks (the kernel's loops) and 200 nested
# brackets; a formula with more loops, or nested more deeply, runs on the reference.
MAX_LOOPS = 18
MAX_NESTING = 100


def may_raise(source: str) -> bool:
    """Evaluating the generated expression `source` may raise (a rule function's error)."""
    return CALL.search(source) is not None


def atomic(source: str) -> bool:
    """`source` stands as one operand wherever it is put: a name or number, or a name (or
    nothing) followed by one bracketed group that ends it (`(a + b)`, `F_1(x)`, `T_0[o]`)."""
    if IDENTIFIER.fullmatch(source) or source.isdigit():
        return True
    start = min((source.find(b) for b in "([" if b in source), default=-1)
    if start < 0 or not IDENTIFIER.fullmatch(source[:start] or "_"):
        return False
    depth = 0
    for position, char in enumerate(source[start:], start):
        depth += (char in "([") - (char in ")]")
        if depth == 0:
            return position == len(source) - 1
    return False


def total_binary(op: str, left: str, right: str) -> bool:
    """The function rules.binary_function gives for `op` on these kinds never raises: IEEE
    arithmetic on two reals (no error, see rules.real_divide), minimum, maximum and
    comparisons of one type, the logical operators. Int `+ - *` on int(±inf) kinds, int
    `/ \\ % **` (division by zero, negative powers) and converted mixed operands may raise."""
    op, a, b = rules.OP_ALIASES.get(op, op), rules.kind_type(left), rules.kind_type(right)
    if a != b:
        return False
    if op in rules.COMPARISON_OPS:
        return a in ("int", "real", "bool")
    if op in rules.MIN_MAX_OPS:
        return a in ("int", "real")
    if a == "real":
        return op in rules.ARITHMETIC_OPS
    return a == "bool" and op in rules.LOGICAL_OPS


def total_cast(target: str, kind: str) -> bool:
    """rules.cast_function(target, kind) never raises: to real (int(±inf) and ints beyond
    the float range give ±inf), to bool, and int of a bool; not int of a real (int(nan))."""
    source = rules.kind_type(kind)
    if source not in rules.CASTABLE:
        return False
    return target in ("real", "bool") or (target == "int" and source == "bool")


def total_builtin(name: str, kind: str) -> bool:
    """rules.builtin_function(name, kind) never raises: the real functions on a real (IEEE
    results outside their domain), abs and sign on an int or a real."""
    source = rules.kind_type(kind)
    if name in rules.REAL_BUILTINS:
        return source == "real"
    return name in rules.NUM_BUILTINS and source in ("int", "real")


def combine_intervals(op: str, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The interval of `x op y` for x in `a`, y in `b` (op `+ - *`)."""
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    products = [x * y for x in a for y in b]
    return min(products), max(products)


@dataclass(frozen=True)
class Layout:
    """Where an access finds its elements: the source of a flat list and its kind; per
    dimension the extent and the stride, each an int, or the source of a lookup by the item
    index when an item of a pack of tensors chosen at run time decides it; `least`, each
    dimension's smallest extent (what is provably in range); and what an index out of range
    says."""

    flat: str
    kind: str
    extents: tuple[int | str, ...]
    strides: tuple[int | str, ...]
    least: tuple[int, ...]
    message: str
