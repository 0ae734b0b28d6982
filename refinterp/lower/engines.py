"""The engines that run @lower blocks, by name (`refinterp eval --engine NAME`).

Every engine is a function `(instance, inputs, profile) -> outputs` with the contract of
`refinterp.lower.scalar.run_lowering`: the scalar engine is the definition, every other engine
must compute the same function (see docs/architecture.md).
"""

from __future__ import annotations

from typing import Any, Callable

from .. import semantics
from ..instance import OperatorInstance
from .scalar import run_lowering

Engine = Callable[[OperatorInstance, dict[str, Any], semantics.Profile], dict[str, Any]]


def scalar_engine(instance: OperatorInstance, inputs: dict[str, Any],
                  profile: semantics.Profile) -> dict[str, Any]:
    """The definition: element by element in pure Python."""
    return run_lowering(instance, inputs, profile)


ENGINES: dict[str, Engine] = {"scalar": scalar_engine}
DEFAULT_ENGINE = "scalar"
