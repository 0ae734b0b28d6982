"""The limits of a run (docs/limits.md): how much work and memory one run may take, so that
every input ends in a result or a diagnostic naming the limit and the option that raises it —
never a MemoryError, an overflow, or a run that does not end.

`Limits` holds one run's values (defaults below; the bytes of a tensor and the items of a pack
are limits of the representation, `refinterp.numeric.representation`, which every ring can
check). The executor checks them before it allocates or runs anything: the tensors an operator
instance declares, each @lower formula's iteration space, each loop iteration and nested
invocation.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from refinterp.core.diagnostics import ArgumentDiagnostic, Diagnostic
from refinterp.core.source import Span
from refinterp.language.invocation import OperatorInstance, TensorInfo
from refinterp.lower.plan import allocation_shape, lowering_plan
from refinterp.numeric.representation import (MAX_PACK_LENGTH, MAX_TENSOR_SIZE,
                                              check_pack_length, check_tensor_size, limit_note)
from refinterp.run.locate import declaration_span

MAX_ITERATIONS = 10_000  # iterations of one @compose loop (~2 s for a trivial body)
MAX_DEPTH = 256  # nesting of operator invocations
MAX_DEPTH_CAP = 10_000  # the deepest --max-depth accepted (each level holds Python frames)
MAX_LOWER_ITERATIONS = 10 ** 9  # iterations of one @lower formula (~10 s on the vector engine)


@dataclass(frozen=True)
class Limits:
    """The limits of one run; each is a positive int (else E0901), named as the API keyword
    that sets it (the command-line option is the same with dashes)."""

    max_iterations: int = MAX_ITERATIONS
    max_depth: int = MAX_DEPTH
    max_tensor_size: int = MAX_TENSOR_SIZE
    max_lower_iterations: int = MAX_LOWER_ITERATIONS
    max_pack_length: int = MAX_PACK_LENGTH

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentDiagnostic(f"{_named(item.name)} must be an int of at least 1; "
                                         f"got {value!r}")
        if self.max_depth > MAX_DEPTH_CAP:
            raise ArgumentDiagnostic(f"{_named('max_depth')} must be at most {MAX_DEPTH_CAP} "
                                     f"(each nesting level holds Python frames and memory); "
                                     f"got {self.max_depth}")

    def check_tensor(self, info: TensorInfo | tuple, what: str, span: Span | None = None
                     ) -> None:
        """A tensor (or pack) of this type may be made: its length and each item's bytes."""
        if isinstance(info, tuple):
            check_pack_length(len(info), self.max_pack_length, what, span)
            for index, item in enumerate(info):
                self.check_tensor(item, f"{what} item {index}", span)
        elif info.shape is not None and info.dtype in ("real", "int", "bool"):
            check_tensor_size(info.dtype, info.shape, self.max_tensor_size, what, span)

    def check_instance(self, instance: OperatorInstance, sizes: bool = True) -> None:
        """Before anything of an operator instance is made: the packs it declares (outputs,
        constants, variables, inputs taking their defaults) and, with `sizes`, the bytes of
        each of their tensors."""
        declared: dict[str, Any] = {**instance.outputs, **instance.variables,
                                    **{n: i for n, (i, _) in instance.constants.items()},
                                    **{n: i for n, (i, _) in instance.defaults.items()}}
        for name, info in declared.items():
            span = declaration_span(instance.definition, name)
            what = f"'{name}' of '{instance.definition.name}'"
            if sizes:
                self.check_tensor(info, what, span)
            elif isinstance(info, tuple):
                check_pack_length(len(info), self.max_pack_length, what, span)

    def check_lowering(self, instance: OperatorInstance) -> None:
        """Before a @lower block runs: no formula iterates more than `max_lower_iterations`
        times (E1201), and an output with a counted extent, allocated at its bound, fits the
        tensor size limit (E1200)."""
        plan = lowering_plan(instance)
        for formula in plan.formulas:
            if formula.counted is not None:
                info = instance.outputs[formula.output]
                assert isinstance(info, TensorInfo)
                shape = allocation_shape(plan, formula.output, info)
                self.check_tensor(TensorInfo(info.dtype, shape),
                                  f"'{formula.output}' of '{instance.definition.name}' at the "
                                  f"bound of its extent '{formula.counted.name}'",
                                  declaration_span(instance.definition, formula.output))
            count = formula.iterations()
            if count > self.max_lower_iterations:
                raise Diagnostic(f"the formula iterates {count} times, above the @lower "
                                 f"iteration limit of {self.max_lower_iterations}",
                                 formula.node.span, [limit_note("--max-lower-iterations")],
                                 code="E1201")


def _named(keyword: str) -> str:
    """A limit named both ways: `max_depth (--max-depth)`."""
    return f"{keyword} (--{keyword.replace('_', '-')})"
