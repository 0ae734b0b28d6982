"""Compile-time values: null, scalars, packs, tensor descriptors; printing as literals and JSON.

Values are plain Python objects:
  int (unbounded) | float | bool | str | tuple (a pack) | NULL | rules.IntInfinity
  | TensorValue (a tensor seen at compile time: its shape, for `x.shape` / `x.rank`),
where `rules` is refinterp.numeric.rules.
`NULL` is the one null value; Python `None` never stands for null.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Union

from refinterp.numeric.symbolic import SymInt


class _Null:
    """The null value of optional types (spec §2.3); a singleton, printed `null`."""

    _instance: "_Null | None" = None

    def __new__(cls) -> "_Null":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NULL"

    def __reduce__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass(frozen=True)
class TensorValue:
    """A tensor as compile-time expressions see it: its element type name and shape."""

    dtype: str
    shape: tuple[int, ...]


Value = Union[int, float, bool, str, tuple, _Null, TensorValue, Any]


def format_literal(value: Value) -> str:
    """The value in SkriptND literal syntax: `3`, `0.5`, `true`, `"s"`, `[1, 2]`, `null`.

    Reals print as the shortest text that reads back as the same float, always with a `.` or an
    exponent (`1.0`, `1e-05`); infinities as `inf` / `-inf`; NaN as `nan`; null as `null`.
    """
    if value is NULL:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, SymInt)):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        from refinterp.syntax.printer import quote_string  # not needed by a run (start-up)

        return quote_string(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_literal(v) for v in value) + "]"
    if isinstance(value, TensorValue):
        return f"{value.dtype}[{', '.join(map(str, value.shape))}]"
    return str(value)  # IntInfinity prints as int(inf) / int(-inf)


def format_inserted(value: Value) -> str:
    """How a value reads inside a formatted string (`"{x}"`): strings raw, all else as literals."""
    return value if isinstance(value, str) else format_literal(value)


def to_json_data(value: Value) -> Any:
    """The value as JSON-ready Python data (null → None, packs → lists, ±int(inf) → ±inf)."""
    if value is NULL:
        return None
    if isinstance(value, tuple):
        return [to_json_data(v) for v in value]
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, TensorValue):
        return {"dtype": value.dtype, "shape": [to_json_data(e) for e in value.shape]}
    if isinstance(value, SymInt):  # a symbolic extent: its expression's text
        return str(value)
    sign = getattr(value, "sign", None)
    if sign is not None:  # rules.IntInfinity
        return math.inf if sign > 0 else -math.inf
    raise TypeError(f"no JSON form for {value!r}")


def to_json(value: Value) -> str:
    """One JSON value; infinities as `Infinity` / `-Infinity` (and NaN as `NaN`)."""
    import json

    return json.dumps(to_json_data(value))
