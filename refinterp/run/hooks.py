"""What a run tells its caller while it runs (docs/api.md "Observing a run"): `Hooks`, the
callbacks of one run, made once by the caller (`refinterp.api.evaluate(hooks=...)`, the
command line's `eval`) and passed down unchanged to the executor and the engine. Every hook
is optional: None (the default) means nothing is told, and the run does no work for it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from refinterp.language.invocation import OperatorInstance

# (operator instance, how an engine ran it): which engine ran each @lower operator
Log = Callable[[OperatorInstance, str], None]
# (operators running, outermost first; seconds since the run started)
Progress = Callable[[list[str], float], None]
# (scoped name relative to the graph, value): every tensor a @compose or @update block binds
Observe = Callable[[str, Any], None]
# (event "call" or "return", qualified operator, scoped name or None, tensors by name)
Trace = Callable[[str, str, "tuple[str, ...] | None", dict[str, Any]], None]


@dataclass(frozen=True)
class Hooks:
    """The callbacks of one run, each told one kind of event (None: not told).

    `log(instance, how)`: which engine ran each @lower operator (`eval --verbose`).
    `progress(running, seconds)`: called every `progress_interval` seconds while the run
    lasts, from a background thread. `observe(name, value)`: every tensor a @compose or
    @update block binds, in run order (the harness's probes). `trace(event, operator, scoped,
    tensors)`: every invocation, the root included, when it is called and when it returns
    (refinterp.trace)."""

    log: Log | None = None
    progress: Progress | None = None
    progress_interval: float = 5.0
    observe: Observe | None = None
    trace: Trace | None = None
