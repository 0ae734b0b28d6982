"""Helpers for the expression spec tests: evaluate text with symbol values."""

from __future__ import annotations

import pytest

from refinterp.numeric import rules
from refinterp.core.diagnostics import Diagnostic
from refinterp.language.expr import Environment, evaluate
from refinterp.core.source import SourceFile
from refinterp.syntax import parse_expression
from refinterp.language.types import Type
from refinterp.language.values import NULL


def env_of(profile: str = "spec", types: dict | None = None, **values) -> Environment:
    env = Environment(profile=rules.PROFILES[profile])
    env.values.update(values)
    env.types.update(types or {})
    return env


def ev(text: str, profile: str = "spec", types: dict | None = None, **values):
    """The value of `text` with the given symbol values (Python values; NULL for null)."""
    return evaluate(parse_expression(SourceFile("<test>", text)),
                    env_of(profile, types, **values))


def ev_error(text: str, profile: str = "spec", types: dict | None = None,
             **values) -> Diagnostic:
    with pytest.raises(Diagnostic) as info:
        ev(text, profile, types, **values)
    return info.value


def optional(base: str, packed: bool = False) -> Type:
    return Type(base, packed=packed, optional=True)


__all__ = ["NULL", "ev", "ev_error", "env_of", "optional", "Type"]
