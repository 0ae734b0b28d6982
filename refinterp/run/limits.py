"""The limits of a run (docs/limits.md): how much work and memory one run may take, so that
every input ends in a result or a diagnostic naming the limit and the option that raises it —
never a MemoryError, an overflow, or a run that does not end.

`Limits` holds one run's values (defaults below; the bytes of a tensor and the items of a pack
are limits of the representation, `refinterp.numeric.representation`, which every ring can
check), and checks them, once, when it is made: the caller (the command line, a user of
`refinterp.api`) makes one and it is passed down unchanged to the executor. The executor
checks them before it allocates or runs anything: the tensors an operator instance declares,
each @lower formula's iteration space, each loop iteration and nested invocation. `Work`
holds one run's budget of work and its deadline, charged before each piece of work is done;
`out_of_memory` is the diagnostic of a MemoryError (E1205).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from typing import Any, Callable

from refinterp.core.cache import IdentityCache
from refinterp.core.diagnostics import ArgumentDiagnostic, Diagnostic
from refinterp.core.source import Span
from refinterp.language.invocation import OperatorInstance, TensorType
from refinterp.lower.common import lowering_plan
from refinterp.lower.plan import Formula, allocation_shape
from refinterp.numeric.representation import (MAX_PACK_LENGTH, MAX_TENSOR_SIZE,
                                              check_pack_length, check_tensor_size,
                                              format_bytes, limit_note, tensor_bytes)
from refinterp.run.locate import declaration_span

# the limits (tensor size, pack length, sizes checked) each recent instance passed under
_CHECKED: IdentityCache[frozenset[tuple[int, int, bool]]] = IdentityCache(1 << 12)

MAX_ITERATIONS = 10_000  # iterations of one @compose loop (~2 s for a trivial body)
MAX_DEPTH = 256  # nesting of operator invocations
MAX_DEPTH_CAP = 10_000  # the deepest --max-depth accepted (each level holds Python frames)
# iterations of one @lower formula (~10 s on the vector engine); a contraction the vector
# engine runs counts a tenth per iteration (lower.engines.lower_cost; docs/limits.md)
MAX_LOWER_ITERATIONS = 10 ** 9
# the work of one run, in units of one @lower iteration (docs/limits.md: >= 100x the largest
# real run measured, a batch-1 AlexNet); an invocation or a loop step costs STEP_WORK units, about
# what it costs in time (~30 us against a few ns per vectorised iteration), so that the default
# also ends floods of invocations (at most 10^7 of them: minutes, not hours)
MAX_WORK = 10 ** 11
STEP_WORK = 10 ** 4
CLOCK_EVERY = 64  # charges between two reads of the clock when a run has a timeout
CLOCK_AMOUNT = 10 ** 5  # a charge this large (a millisecond of work or more) reads it at once


@dataclass(frozen=True)
class Limits:
    """The limits of one run, each named as the field that sets it (the command-line option
    is the same with dashes); a value out of range is E0901. The counts and sizes are positive
    ints. `max_memory` bounds the bytes of the vector engine's temporaries (None: the
    engine's default, 2 GiB); `timeout` the seconds a run may take from the moment it starts
    (None: no limit; else a positive finite number)."""

    max_iterations: int = MAX_ITERATIONS
    max_depth: int = MAX_DEPTH
    max_tensor_size: int = MAX_TENSOR_SIZE
    max_lower_iterations: int = MAX_LOWER_ITERATIONS
    max_pack_length: int = MAX_PACK_LENGTH
    max_work: int = MAX_WORK
    max_memory: int | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name == "timeout" or (value is None and item.name == "max_memory"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentDiagnostic(f"{_named(item.name)} must be an int of at least 1; "
                                         f"got {value!r}")
        timeout = self.timeout
        if timeout is not None and (isinstance(timeout, bool) or
                                    not isinstance(timeout, (int, float)) or
                                    not math.isfinite(timeout) or timeout <= 0):
            raise ArgumentDiagnostic(f"timeout (--timeout) must be a positive number of "
                                     f"seconds; got {timeout!r}")
        if self.max_depth > MAX_DEPTH_CAP:
            raise ArgumentDiagnostic(f"{_named('max_depth')} must be at most {MAX_DEPTH_CAP} "
                                     f"(each nesting level holds Python frames and memory); "
                                     f"got {self.max_depth}")

    def check_tensor(self, info: TensorType | tuple, what: str, span: Span | None = None
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
        each of their tensors. An instance that passed under the same limits is not checked
        again (what it declares is fixed)."""
        key = (self.max_tensor_size, self.max_pack_length, sizes)
        passed = _CHECKED.get(instance)
        if passed is not None and key in passed:
            return
        self._check_instance(instance, sizes)
        _CHECKED.put(instance, (passed or frozenset()) | {key})

    def _check_instance(self, instance: OperatorInstance, sizes: bool) -> None:
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

    def check_lowering(self, instance: OperatorInstance,
                       cost: Callable[[Formula], int] | None = None) -> None:
        """Before a @lower block runs: no formula costs more than `max_lower_iterations`
        (E1201), and an output with a counted extent, allocated at its bound, fits the
        tensor size limit (E1200). A formula costs its iteration count or, when that is above
        the limit, `cost(formula)`: what it costs on the engine that runs it
        (`refinterp.lower.engines.lower_cost`; docs/limits.md)."""
        plan = lowering_plan(instance)
        for formula in plan.formulas:
            if formula.counted is not None:
                info = instance.outputs[formula.output]
                assert isinstance(info, TensorType)
                shape = allocation_shape(plan, formula.output, info)
                self.check_tensor(TensorType(info.dtype, shape),
                                  f"'{formula.output}' of '{instance.definition.name}' at the "
                                  f"bound of its extent '{formula.counted.name}'",
                                  declaration_span(instance.definition, formula.output))
            count = formula.iterations()
            if count <= self.max_lower_iterations:
                continue
            counted = count if cost is None else cost(formula)
            if counted > self.max_lower_iterations:
                notes = [] if counted == count else \
                    [f"it counts {counted} as a contraction on the vector engine"]
                raise Diagnostic(f"the formula iterates {count} times, above the @lower "
                                 f"iteration limit of {self.max_lower_iterations}",
                                 formula.node.span,
                                 [*notes, limit_note("--max-lower-iterations")],
                                 code="E1201")


class Work:
    """The work one run may do: its budget (`Limits.max_work`, in units of work: an operator
    invocation and a @compose loop step count STEP_WORK each, a @lower formula its iteration
    count) and its deadline (`timeout` seconds after it was made, `Limits.timeout` for a run;
    None: no deadline). The executor
    charges each kind of work in one place, before doing it (`charge`), so a run stops before
    it starts what its budget cannot pay for; the clock is read at the same points, every
    CLOCK_EVERY charges (and at every large one)."""

    def __init__(self, budget: int = MAX_WORK, timeout: float | None = None) -> None:
        self.budget = budget
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.spent = 0
        self._unclocked = 0  # charges since the clock was last read

    def remaining(self) -> float | None:
        """The seconds left before the deadline (at least a microsecond; None: no deadline),
        for a check that precedes the run and shares its time."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.monotonic(), 1e-6)

    def charge(self, amount: int, what: str, span: Span | None = None) -> None:
        """Pay for `amount` units of work about to be done (`what`: 'an invocation of
        nn.conv', 'a loop step', 'a formula of 1000 iterations'): E1203 if the budget cannot
        pay for it, E1204 if the run is past its deadline."""
        if self.spent + amount > self.budget:
            raise Diagnostic(f"the run exceeds its work budget of {self.budget} (invocations "
                             f"+ loop steps + @lower iterations)", span,
                             [f"{what} would take it to {self.spent + amount} "
                              f"({self.spent} spent before it)",
                              limit_note("--max-work")], code="E1203")
        self.spent += amount
        if self.deadline is not None:
            self._unclocked += 1
            if self._unclocked >= CLOCK_EVERY or amount >= CLOCK_AMOUNT:
                self._unclocked = 0
                if time.monotonic() > self.deadline:
                    raise Diagnostic(f"the run exceeds its time limit of {self.timeout:g} s",
                                     span, [f"stopped before {what}",
                                            limit_note("--timeout")], code="E1204")


MEMORY_NOTE = ("refinterp holds every tensor whole: --max-tensor-size (refinterp.api: "
               "max_tensor_size=) bounds one tensor and --max-memory (max_memory=) the vector "
               "engine's temporaries, but the process had less memory than they allow (ulimit "
               "-v, a container's limit): lower them, or give the process more; see "
               "docs/limits.md")


def out_of_memory(what: str, span: Span | None = None, notes: tuple[str, ...] = ()
                  ) -> Diagnostic:
    """E1205, the diagnostic of a MemoryError while `what` ('running nn.conv'): what was
    being allocated, when known, and the options that bound a run's memory."""
    return Diagnostic(f"out of memory while {what}", span, [*notes, MEMORY_NOTE],
                      code="E1205")


def declared_sizes(instance: OperatorInstance) -> tuple[str, ...]:
    """Notes naming the tensors an operator instance declares as outputs, with their bytes
    (what running it allocates), for an out-of-memory diagnostic."""
    notes = []
    for name, info in instance.outputs.items():
        items = info if isinstance(info, tuple) else (info,)
        shaped = [i for i in items if i.shape is not None and i.dtype in ("real", "int", "bool")
                  and all(isinstance(e, int) for e in i.shape)]
        if shaped and len(shaped) == len(items):
            size = sum(tensor_bytes(i.dtype, i.shape) for i in shaped)
            notes.append(f"its output '{name}' takes {format_bytes(size)}")
    return tuple(notes)


def _named(keyword: str) -> str:
    """A limit named both ways: `max_depth (--max-depth)`."""
    return f"{keyword} (--{keyword.replace('_', '-')})"
