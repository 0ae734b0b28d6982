"""Deterministic, diffable run traces (`refinterp eval --trace FILE`; docs/trace.md has the
format line by line).

A `Recorder` is hooked into `refinterp.api.evaluate` through the `trace` (every invocation's
call and return) and `observe` (every tensor a @compose/@update block binds) callbacks of its
`hooks` (`api.Hooks`). It gives every tensor it meets an id `T0`, `T1`, ... in the order it
first meets them (a call's inputs in declaration order, a return's outputs in declaration order,
a binding's value; a pack item by item), with its dtype, shape, a sha256 of its bytes and
summary statistics in a fixed format, and plans the tensors the run produced into pools with a
first-fit policy over their lifetimes. Nothing in the trace depends on addresses, time, paths
or dict orders of the machine: the same run gives the same bytes, so two traces diff line by
line.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "refinterp trace 1"
ALIGNMENT = 64  # bytes: every buffer offset (and size) is a multiple of it
POOLS = {"real": 0, "int": 1, "bool": 2}  # one pool per dtype; any other dtype: pool 3
OTHER_POOL = 3
BUFFER_PLANS = ("first-fit", "ocannl")  # the plans `--buffer-plan` chooses between
MERGE_BUFFER_POOL = 0  # OCANNL reserves pool 0 of every device for its merge buffer

__all__ = ["Recorder", "Placement", "content_hash", "statistics", "first_fit", "run_traced",
           "ocannl_buffer_locs", "sexp_of_buffer_loc", "ALIGNMENT", "POOLS", "FORMAT",
           "BUFFER_PLANS"]


# ------------------------------------------------------------------------------- tensors


def content_hash(array: Any) -> str:
    """sha256 (hex) of the ASCII header `<dtype>[<shape>]\\n` — NumPy's little-endian dtype code
    (`<f8`, `<i8`, `|b1`) and the extents comma-separated — followed by the elements in C order
    as little-endian bytes."""
    value = np.asarray(array)
    little = value.dtype.newbyteorder("<")
    header = f"{little.str}[{','.join(str(e) for e in value.shape)}]\n".encode("ascii")
    return hashlib.sha256(header + value.astype(little, copy=False).tobytes()).hexdigest()


def _real(value: float) -> str:
    """A float as Python's shortest round-tripping repr (`0.1`, `-0.0`, `1e-05`, `inf`, `nan`):
    the same digits on every machine."""
    return repr(float(value))


def statistics(array: Any) -> str:
    """`min=… max=… mean=…` (and `nan=K` for a real tensor) in a byte-stable format; `-` for
    an empty tensor (or one of only NaNs).

    Reals: min and max over the non-NaN elements (of equal zeros min is -0.0 if any zero is
    negative, max is 0.0 if any is positive); mean = math.fsum(elements) / count, each step
    correctly rounded, so independent of summation order (NaN if both infinities occur, an
    infinity if one does; if the sum overflows, math.fsum of the elements each divided by the
    count; a zero mean is 0.0, never -0.0). Ints: exact min and max, mean = sum / count
    correctly rounded. Bools: false/true, mean = the fraction of true elements."""
    flat = np.asarray(array).ravel()
    if flat.dtype.kind == "b":
        if flat.size == 0:
            return "min=- max=- mean=-"
        trues = int(np.count_nonzero(flat))
        return (f"min={'true' if trues == flat.size else 'false'} "
                f"max={'true' if trues else 'false'} mean={_real(trues / flat.size)}")
    if flat.dtype.kind in "iu":
        if flat.size == 0:
            return "min=- max=- mean=-"
        values = flat.tolist()  # Python ints: the sum is exact, int / int correctly rounded
        return f"min={min(values)} max={max(values)} mean={_real(sum(values) / len(values))}"
    reals = flat.astype(np.float64)
    nan = np.isnan(reals)
    reals = reals[~nan]
    count = f"nan={int(np.count_nonzero(nan))}"
    if reals.size == 0:
        return f"min=- max=- mean=- {count}"
    return (f"min={_real(_low(reals))} max={_real(_high(reals))} mean={_real(_mean(reals))} "
            f"{count}")


def _low(reals: np.ndarray) -> float:
    low = float(reals.min())
    if low == 0.0:  # which zero NumPy returns is not defined: choose by the elements
        low = -0.0 if np.signbit(reals[reals == 0.0]).any() else 0.0
    return low


def _high(reals: np.ndarray) -> float:
    high = float(reals.max())
    if high == 0.0:
        high = 0.0 if (~np.signbit(reals[reals == 0.0])).any() else -0.0
    return high


def _mean(reals: np.ndarray) -> float:
    """The mean of non-NaN reals, independent of summation order (see `statistics`)."""
    up, down = bool(np.isposinf(reals).any()), bool(np.isneginf(reals).any())
    if up or down:
        return math.nan if up and down else (math.inf if up else -math.inf)
    try:
        mean = math.fsum(reals.tolist()) / reals.size
    except OverflowError:
        mean = math.fsum((reals / reals.size).tolist())
    return mean if mean != 0.0 else 0.0  # the sign of a zero sum differs between Pythons


def _kind(array: np.ndarray) -> str:
    """The SkriptND type of an array as the trace prints it; another dtype by NumPy's name."""
    return {"f8": "real", "i8": "int", "b1": "bool"}.get(
        array.dtype.str[1:], array.dtype.name)


@dataclass
class _Tensor:
    """What the trace says of one tensor."""

    index: int
    kind: str
    shape: tuple[int, ...]
    nbytes: int
    sha256: str
    stats: str
    origin: str  # "input x", "in #3 filter", "out #3 y" or "bind c"
    first: int  # the step it was first met
    last: int  # the last step that used it

    @property
    def produced(self) -> bool:
        """Whether an invocation returned it first (only those are planned into pools)."""
        return self.origin.startswith("out ")

    def line(self) -> str:
        return (f"T{self.index} {self.kind}[{','.join(str(e) for e in self.shape)}] "
                f"bytes={self.nbytes} sha256={self.sha256} {self.stats} "
                f"live={self.first}..{self.last} from={self.origin}")


# ------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Placement:
    """Where the plan puts one tensor: its pool, byte offset and aligned size."""

    index: int
    pool: int
    offset: int
    size: int


def aligned(nbytes: int) -> int:
    """`nbytes` rounded up to a multiple of ALIGNMENT."""
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


def first_fit(buffers: list[tuple[int, int, int, int, int]]) -> list[Placement]:
    """Plan buffers `(index, pool, size, first, last)` — size a multiple of ALIGNMENT, lifetime
    the steps first..last inclusive — in the order of (first, index): each goes at the lowest
    offset of its pool where it overlaps no buffer placed before it whose lifetime overlaps
    its own. A buffer of size 0 goes at offset 0 and occupies nothing."""
    placed: list[Placement] = []
    active: dict[int, list[tuple[int, Placement]]] = {}  # pool -> (last, placement) still live
    for index, pool, size, first, last in sorted(buffers, key=lambda b: (b[3], b[0])):
        live = [(end, p) for end, p in active.get(pool, []) if end >= first]
        offset = 0
        if size:
            blocks = sorted((p for _, p in live if p.size), key=lambda p: (p.offset, p.index))
            for other in blocks:  # the first gap, from the bottom, that is large enough
                if offset + size <= other.offset:
                    break
                offset = max(offset, other.offset + other.size)
        placement = Placement(index, pool, offset, size)
        active[pool] = live + [(last, placement)]
        placed.append(placement)
    return placed


def _live_peak(buffers: list[tuple[int, int, int, int, int]]) -> int:
    """The most bytes live at one step (the lower bound of any plan's peak)."""
    change: dict[int, int] = {}  # step -> bytes becoming live (negative: freed) at it
    for _, _, size, first, last in buffers:
        change[first] = change.get(first, 0) + size
        change[last + 1] = change.get(last + 1, 0) - size
    live = peak = 0
    for step in sorted(change):
        live += change[step]
        peak = max(peak, live)
    return peak


def ocannl_buffer_locs(count: int) -> list[tuple[int, int, int]]:
    """OCANNL's phase-1 buffer plan (Ir.Backend_intf, `buffer_loc`) for tensor nodes 0..count-1
    in iteration order: `(node, pool_id, offset)`, one pool per node from pool 1 (pool 0 is the
    merge buffer's), every offset 0."""
    return [(node, MERGE_BUFFER_POOL + 1 + node, 0) for node in range(count)]


def sexp_of_buffer_loc(pool_id: int, offset: int) -> str:
    """A `buffer_loc` record as ppx_sexp_conv spells it: `((pool_id 1) (offset 0))`."""
    return f"((pool_id {pool_id}) (offset {offset}))"


def _ocannl_plan_lines(count: int) -> list[str]:
    """The `ctx_buffers` map (tensor node -> buffer_loc) as one s-expression, a node a line."""
    pairs = [f"(T{node} {sexp_of_buffer_loc(pool, offset)})"
             for node, pool, offset in ocannl_buffer_locs(count)]
    if not pairs:
        return ["()"]
    lines = ["(" + pairs[0]] + [" " + pair for pair in pairs[1:]]
    lines[-1] += ")"
    return lines


# ------------------------------------------------------------------------------- the recorder


class Recorder:
    """Records a run through `api.evaluate(..., hooks=api.Hooks(observe=recorder.observe,
    trace=recorder.invocation))`; `fail(error)` records an error that stopped it; `text()` is
    the trace. A step is one line of the events section: a call, a return, a binding, or (after
    an error) the failure of an invocation that was running."""

    def __init__(self, profile: str = "spec", engine: str = "auto",
                 buffer_plan: str = "first-fit") -> None:
        if buffer_plan not in BUFFER_PLANS:
            raise ValueError(f"buffer_plan: one of {BUFFER_PLANS}; got {buffer_plan!r}")
        self.profile, self.engine, self.buffer_plan = profile, engine, buffer_plan
        self.events: list[str] = []
        self.tensors: list[_Tensor] = []
        self.bound: dict[str, Any] = {}  # probe name -> ids of its last binding
        self.status = "ok"
        self._known: dict[int, tuple[Any, int]] = {}  # id(object) -> (weak reference, index)
        self._open: list[tuple[int, list[int]]] = []  # running calls: number, input tensors
        self._calls = 0
        self._operator = "-"

    # -- the callbacks

    def invocation(self, event: str, operator: str, scoped: tuple[str, ...] | None,
                   tensors: dict[str, Any]) -> None:
        """The `trace` callback of `api.evaluate`."""
        step = len(self.events)
        indent = "  " * len(self._open)
        if event == "call":
            number = self._calls
            self._calls += 1
            if number == 0:
                self._operator = operator
            used: list[int] = []
            parts = [f"{name}={self._refer(value, step, f'in #{number} {name}', used)}"
                     for name, value in tensors.items()]
            if number == 0:  # the run's own inputs
                for index in used:
                    tensor = self.tensors[index]
                    if tensor.origin.startswith("in #0 "):
                        tensor.origin = "input " + tensor.origin[len("in #0 "):]
            self._open.append((number, used))
            self._event(f"{indent}call #{number} {operator} "
                        f"{'.'.join(scoped) if scoped else '-'}", parts)
            return
        number, used = self._open.pop()
        indent = "  " * len(self._open)
        for index in used:  # an invocation holds its inputs until it returns
            self._use(index, step)
        parts = [f"{name}={self._refer(value, step, f'out #{number} {name}')}"
                 for name, value in tensors.items()]
        self._event(f"{indent}return #{number}", parts)

    def observe(self, name: str, value: Any) -> None:
        """The `observe` callback of `api.evaluate`."""
        step = len(self.events)
        refs: list[int] = []
        text = self._refer(value, step, f"bind {name}", refs)
        self.bound.pop(name, None)  # probe order: the last binding of a name
        self.bound[name] = refs if isinstance(value, list) else (refs[0] if refs else None)
        self._event(f"{'  ' * len(self._open)}bind {name}", [text])

    def fail(self, error: BaseException) -> None:
        """Record the error that stopped the run: a `fail` step for every invocation still
        running, innermost first (each holding its inputs to that step), and the status."""
        while self._open:
            number, used = self._open.pop()
            step = len(self.events)
            for index in used:
                self._use(index, step)
            self._event(f"{'  ' * len(self._open)}fail #{number}", [])
        code = getattr(error, "code", None)
        message = getattr(error, "message", None) or str(error)
        what = f"{code}" if code else f"internal {type(error).__name__}"
        self.status = f"error {what}: {message}".replace("\\", "\\\\").replace("\n", "\\n")

    # -- ids

    def _refer(self, value: Any, step: int, origin: str, used: list[int] | None = None) -> str:
        """`T3`, `[T4,T5]` for a pack, `null`: the ids of a value met at `step` (new tensors
        get the next ids)."""
        if isinstance(value, list):
            return "[" + ",".join(self._refer(v, step, f"{origin}.{i}", used)
                                  for i, v in enumerate(value)) + "]"
        if value is None or not isinstance(value, (np.ndarray, np.generic)):
            return "null"
        index = self._index(value)
        if index is None:
            index = self._add(value, step, origin)
        else:
            self._use(index, step)
        if used is not None:
            used.append(index)
        return f"T{index}"

    def _index(self, value: Any) -> int | None:
        entry = self._known.get(id(value))
        if entry is None:
            return None
        ref, index = entry
        alive = ref() if isinstance(ref, weakref.ref) else ref
        return index if alive is value else None  # else: a new object at a freed address

    def _add(self, value: Any, step: int, origin: str) -> int:
        array = np.asarray(value)
        index = len(self.tensors)
        self.tensors.append(_Tensor(index, _kind(array), tuple(array.shape), int(array.nbytes),
                                    content_hash(array), statistics(array), origin, step, step))
        try:  # a weak reference: the trace keeps no tensor alive
            ref: Any = weakref.ref(value)
        except TypeError:  # a NumPy scalar: small, kept
            ref = value
        self._known[id(value)] = (ref, index)
        return index

    def _use(self, index: int, step: int) -> None:
        tensor = self.tensors[index]
        tensor.last = max(tensor.last, step)

    def _event(self, head: str, parts: list[str]) -> None:
        self.events.append(" ".join([f"{len(self.events)} {head}", *parts]))

    # -- results

    def names(self) -> dict[str, str]:
        """The trace id of every probe name (`conv1`, a pack's items `xs.0`, ...): the tensor
        of its last binding, in run order (the harness's `--probe` names)."""
        found: dict[str, str] = {}
        for name, refs in self.bound.items():
            if isinstance(refs, list):
                found.update({f"{name}.{i}": f"T{r}" for i, r in enumerate(refs)})
            elif refs is not None:
                found[name] = f"T{refs}"
        return found

    def plan(self) -> list[Placement]:
        """The buffer plan of the tensors invocations produced (`first_fit`)."""
        return first_fit(self._buffers())

    def _buffers(self) -> list[tuple[int, int, int, int, int]]:
        return [(t.index, POOLS.get(t.kind, OTHER_POOL), aligned(t.nbytes), t.first, t.last)
                for t in self.tensors if t.produced]

    def text(self) -> str:
        """The trace (docs/trace.md)."""
        lines = [FORMAT, f"run {self._operator} profile={self.profile} engine={self.engine}",
                 f"status {self.status}", f"events {len(self.events)}", *self.events,
                 f"tensors {len(self.tensors)}", *(t.line() for t in self.tensors)]
        if self.buffer_plan == "ocannl":
            lines += [f"buffers {len(self.tensors)} ocannl phase-1 "
                      f"merge_buffer_pool={MERGE_BUFFER_POOL}",
                      *_ocannl_plan_lines(len(self.tensors))]
            return "\n".join(lines) + "\n"
        buffers = self._buffers()
        placements = first_fit(buffers)
        lines.append(f"buffers {len(placements)} first-fit align={ALIGNMENT}")
        lifetime = {b[0]: (b[3], b[4]) for b in buffers}
        lines += [f"T{p.index} pool={p.pool} offset={p.offset} size={p.size} "
                  f"live={lifetime[p.index][0]}..{lifetime[p.index][1]}" for p in placements]
        total = 0
        for pool in sorted({p.pool for p in placements}):
            mine = [p for p in placements if p.pool == pool]
            peak = max(p.offset + p.size for p in mine)
            total += peak
            live = _live_peak([b for b in buffers if b[1] == pool])
            lines.append(f"pool {pool} tensors={len(mine)} peak={peak} live={live}")
        lines.append(f"peak {total}")
        return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------- running


def run_traced(target: Any, trace: str | Path, **options: Any) -> Any:
    """`api.evaluate(target, **options)`, writing the run's trace to file `trace` — also when
    the run fails: then the trace says so and keeps everything recorded up to the error, which
    is raised after the file is written. The recorder takes the `observe` and `trace` hooks
    (the others of `hooks=` are kept). `buffer_plan` is `first-fit` or `ocannl` (OCANNL's
    phase-1 `buffer_loc` per tensor node). Returns the `Run`."""
    from dataclasses import replace

    from refinterp import api

    engine = options.get("engine", api.DEFAULT_ENGINE)
    recorder = Recorder(options.get("profile", "spec"),
                        engine if isinstance(engine, str) else "custom",
                        options.pop("buffer_plan", "first-fit"))
    hooks = replace(options.pop("hooks", api.Hooks()), observe=recorder.observe,
                    trace=recorder.invocation)
    try:
        run = api.evaluate(target, hooks=hooks, **options)
    except BaseException as error:
        recorder.fail(error)
        _write(trace, recorder, error)
        raise
    _write(trace, recorder, None)
    return run


def _write(trace: str | Path, recorder: Recorder, error: BaseException | None) -> None:
    """The trace file, replaced atomically (core.files): a FileDiagnostic (E0801) if it
    cannot be written, noting the run's own error if the run failed too."""
    from refinterp.core.diagnostics import Diagnostic, FileDiagnostic
    from refinterp.core.files import write_text

    try:
        write_text(trace, recorder.text(), "the trace")
    except FileDiagnostic as failure:
        if isinstance(error, Diagnostic):
            failure.notes.append(f"the run failed too: {error.message} [{error.code}]")
        raise failure from None
