"""ONNX Runtime as a harness back end (docs/backends.md, "ONNX Runtime").

For an operator case, the translation registered for `case.operator` (the tables of
`onnx_math`, `onnx_nn`, `onnx_layout`, `onnx_image`) builds an ONNX graph of one node or a
small subgraph with `onnx.helper`; it is run by ONNX Runtime on the CPU with every graph
optimisation off. Each translation documents its attribute mapping next to it and raises
`Unsupported` for an attribute value without an ONNX equivalent, never a guess.

Dtypes: SkriptND `real` runs as float64 when ONNX Runtime has float64 kernels for every node
of the graph, else the whole graph is rebuilt in float32 (the harness then judges the values
with the float32 tolerance of the case, docs/golden.md "Tolerances"); `int` is int64, `bool`
bool. `Runner.dtype` says which one ran.

Error cases: a graph ONNX Runtime rejects (when loading or running) is the rejection the case
needs (a pass); a graph it accepts is reported as unsupported, with the note that ONNX Runtime
accepted an invocation SkriptND forbids (the harness would otherwise count it
`accepted-invalid` for a check ONNX simply does not make). A translation that cannot express
the case is unsupported as for any case.

Model cases (whole SkriptND graphs) are unsupported: this back end translates operators.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from refinterp.backends.onnx_graph import TRANSLATIONS, GraphBuilder, unsupported
from refinterp.harness.backends import Unsupported

Translation = Callable[[GraphBuilder], None]

def table() -> dict[str, Translation]:
    """Stdlib operator name -> translation: `onnx_graph.TRANSLATIONS`, which importing the
    translation modules fills."""
    from refinterp.backends import onnx_image, onnx_layout, onnx_math, onnx_nn  # noqa: F401
    return TRANSLATIONS


def _modules() -> tuple[Any, Any]:
    try:
        import onnx
        import onnxruntime
    except ImportError:
        raise Unsupported("onnxruntime is not installed: pip install -e '.[onnx]'") from None
    return onnx, onnxruntime


class _Rejected(Exception):
    """ONNX Runtime refused the graph or its inputs (the rejection an error case needs)."""


def _session(ort: Any, model: Any) -> Any:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4  # no warnings on stderr
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def _missing_kernel(error: Exception) -> bool:
    """Whether ONNX Runtime refused the graph for a dtype it has no kernel (or ONNX no type
    constraint) for, rather than for its values or attributes."""
    text = str(error)
    return ("NOT_IMPLEMENTED" in text or "Could not find an implementation" in text
            or ("Type 'tensor(" in text and "is invalid" in text)
            or "does not support double" in text)


class Runner:
    """One prepared case: the ONNX model run by ONNX Runtime in `prepare` (so that a float64
    kernel missing at run time still falls back to float32), its outputs or its error kept
    for `run`; `dtype` is the real dtype it ran in."""

    def __init__(self, builder: GraphBuilder, values: list[Any] | None,
                 error: Exception | None) -> None:
        self.builder, self.values, self.error = builder, values, error
        self.dtype = builder.real.name
        self.model = None  # the onnx ModelProto, for inspection

    def run(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The outputs by name (the case's inputs were fed when the graph was built)."""
        case = self.builder.case
        if self.error is not None:
            if case.error is not None:
                raise _Rejected(f"ONNX Runtime rejected it when running: {self.error}")
            raise self.error
        if case.error is not None:
            raise Unsupported("onnxruntime: ONNX Runtime accepts this invocation, which "
                              f"SkriptND rejects (refinterp: {case.error['code']}); ONNX "
                              f"makes no such check")
        return {key: np.asarray(value)
                for (key, _), value in zip(self.builder.outputs, self.values or [])}


class OnnxRuntimeBackend:
    """The ONNX Runtime back end (`refinterp check SUITE --backend onnxruntime`)."""

    name = "onnxruntime"
    profile = "spec"
    requires = ("onnx", "onnxruntime")  # the modules it needs (harness.backends.resolve)

    def prepare(self, case: Any) -> Runner:
        """Translate the case to ONNX and create its session (float64, else float32)."""
        onnx, ort = _modules()
        if case.operator is None:
            raise Unsupported("onnxruntime: model cases are not translated (operators only)")
        translate = table().get(case.operator)
        if translate is None:
            raise unsupported(f"no ONNX translation of {case.operator}")
        error_case = case.error is not None
        last: Exception | None = None
        for real in (np.float64, np.float32):
            try:
                builder = GraphBuilder(case, real)
                translate(builder)
                model = builder.model()
            except Unsupported:
                raise
            except Exception as error:  # noqa: BLE001 - the translation could not build it
                if error_case:
                    raise unsupported(f"the translation cannot build this invalid case "
                                      f"({type(error).__name__}: {error})") from None
                raise
            try:
                session = _session(ort, model)
            except Exception as error:  # noqa: BLE001
                last = error
                if _missing_kernel(error) and real is np.float64:
                    continue  # no float64 kernel: the whole graph in float32
                if _missing_kernel(error) and not error_case:
                    raise unsupported(f"ONNX Runtime has no CPU kernel for this graph's types "
                                      f"({str(error).splitlines()[0][:200]})") from None
                if error_case:
                    raise _Rejected(f"ONNX Runtime rejected the graph: {error}") from None
                raise
            try:
                values = session.run([o.name for o in session.get_outputs()], builder.feeds)
            except Exception as error:  # noqa: BLE001 - ORT raises its own exception types
                last = error
                if _missing_kernel(error) and real is np.float64:
                    continue
                if _missing_kernel(error) and not error_case:
                    raise unsupported(f"ONNX Runtime has no CPU kernel for this graph's types "
                                      f"({str(error).splitlines()[0][:200]})") from None
                runner = Runner(builder, None, error)
            else:
                runner = Runner(builder, values, None)
            runner.model = model
            return runner
        assert last is not None
        raise last


# accepted back-end spec of earlier releases (refinterp.backends.onnxruntime:Backend)
Backend = OnnxRuntimeBackend
