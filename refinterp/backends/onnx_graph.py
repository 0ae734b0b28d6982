"""Building the ONNX graph of one golden case (for refinterp.backends.onnxruntime).

A translation (refinterp.backends.onnx_*.py) receives a `GraphBuilder` holding the case's
inputs (as graph inputs with their static shapes) and attributes, adds nodes with `node`,
constants with `const`, and names the results with `output`. The builder knows the real dtype
of the attempt (float64 first, float32 when ONNX Runtime lacks a float64 kernel).

Only `onnx.helper` / `onnx.numpy_helper` are used; onnx is imported by the caller first
(`refinterp.backends.onnxruntime` raises `Unsupported` when it is missing).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from refinterp.harness.backends import Unsupported

OPSET = 21  # Resize with `axes`, GridSample modes, Gelu (20), int4 quantisation (21)


# stdlib operator -> its translation, filled by the onnx_* modules through `translation`
TRANSLATIONS: dict[str, Callable[["GraphBuilder"], None]] = {}


def translation(*names: str) -> Callable:
    """Decorator: register the function as the ONNX translation of the operators `names`."""
    def register(function: Callable[["GraphBuilder"], None]) -> Callable:
        for name in names:
            TRANSLATIONS[name] = function
        return function
    return register


def unsupported(why: str) -> Unsupported:
    """The exception a translation raises for a case it cannot express faithfully."""
    return Unsupported(f"onnxruntime: {why}")


class GraphBuilder:
    """The nodes, initializers and value infos of one case's ONNX graph."""

    def __init__(self, case: Any, real: Any) -> None:
        self.case = case
        self.real = np.dtype(real)  # float64 or float32: the dtype of every real tensor
        self.attributes: dict[str, Any] = dict(case.attributes)
        self.generics: list[str] = list(case.manifest.get("generics", []))
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.graph_inputs: list[Any] = []
        self.graph_outputs: list[Any] = []
        self.feeds: dict[str, np.ndarray] = {}  # graph input name -> array fed to ORT
        self.outputs: list[tuple[str, str]] = []  # (refinterp output key, onnx tensor name)
        self._count = 0
        self._inputs: dict[str, Any] = {}
        for name, value in case.inputs.items():
            if isinstance(value, list):
                self._inputs[name] = [self._add_input(f"{name}.{k}", v)
                                      for k, v in enumerate(value)]
            else:
                self._inputs[name] = self._add_input(name, value)
        self.arrays: dict[str, Any] = dict(case.inputs)

    # ------------------------------------------------------------------ inputs and dtypes

    def onnx_type(self, dtype: Any) -> int:
        """The TensorProto element type of a NumPy dtype (reals in the attempt's dtype)."""
        from onnx import helper
        kind = np.dtype(dtype).kind
        if kind == "f":
            return helper.np_dtype_to_tensor_dtype(self.real)
        return helper.np_dtype_to_tensor_dtype(np.dtype(np.int64 if kind in "iu" else bool))

    def _add_input(self, name: str, array: np.ndarray) -> str:
        from onnx import helper
        array = np.asarray(array)
        if array.dtype.kind == "f":
            array = array.astype(self.real)
        elif array.dtype.kind in "iu":
            array = array.astype(np.int64)
        self.feeds[name] = array
        self.graph_inputs.append(helper.make_tensor_value_info(
            name, self.onnx_type(array.dtype), list(array.shape)))
        return name

    def has(self, name: str) -> bool:
        """Whether the case gives input `name` (optional inputs may be absent)."""
        return name in self._inputs

    def input(self, name: str) -> Any:
        """The ONNX name of input `name` (a list of names for a pack)."""
        if name not in self._inputs:
            raise unsupported(f"input '{name}' is missing")
        return self._inputs[name]

    def shape(self, name: str) -> tuple[int, ...]:
        """The static shape of input `name` (its first item for a pack)."""
        value = self.arrays[name]
        return tuple(np.shape(value[0] if isinstance(value, list) else value))

    def kind(self, name: str) -> str:
        """'real', 'int' or 'bool': the dtype kind of input `name`."""
        value = self.arrays[name]
        value = np.asarray(value[0] if isinstance(value, list) else value)
        return {"f": "real", "b": "bool"}.get(value.dtype.kind, "int")

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attributes.get(name, default)

    # ------------------------------------------------------------------ nodes

    def fresh(self, stem: str = "t") -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def node(self, op: str, inputs: Sequence[str], outputs: int = 1, **attributes: Any) -> Any:
        """Add node `op`; its output name (a list of names when `outputs` > 1). An input ''
        is an omitted optional input."""
        from onnx import helper
        names = [self.fresh(op.lower()) for _ in range(outputs)]
        attributes = {k: v for k, v in attributes.items() if v is not None}
        self.nodes.append(helper.make_node(op, list(inputs), names, **attributes))
        return names if outputs > 1 else names[0]

    def const(self, value: Any, kind: str = "real") -> str:
        """An initializer holding `value` as real (the attempt's dtype), int (int64) or bool."""
        from onnx import numpy_helper
        dtype = {"real": self.real, "int": np.int64, "bool": bool}[kind]
        name = self.fresh("c")
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, values: Sequence[int]) -> str:
        """A 1-D int64 initializer (shapes, axes, pads, sizes)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1), "int")

    def output(self, key: str, tensor: str) -> None:
        """Name `tensor` as the case's output `key` (flattened: `outputs.0` for a pack)."""
        self.outputs.append((key, tensor))

    # ------------------------------------------------------------------ model

    def model(self) -> Any:
        """The onnx ModelProto of the graph built so far."""
        from onnx import helper
        from onnx import ValueInfoProto
        outs = []
        for key, tensor in self.outputs:
            dtype = self.case.manifest.get("outputs", {}).get(key, {}).get("dtype")
            out = self.fresh("out")
            self.nodes.append(helper.make_node("Identity", [tensor], [out]))
            elem = {"real": helper.np_dtype_to_tensor_dtype(self.real),
                    "int": helper.np_dtype_to_tensor_dtype(np.dtype(np.int64)),
                    "bool": helper.np_dtype_to_tensor_dtype(np.dtype(bool))}.get(dtype)
            # an error case has no outputs in its manifest: an untyped output, which ONNX
            # Runtime types by inference
            outs.append(helper.make_tensor_value_info(out, elem, None) if elem is not None
                        else ValueInfoProto(name=out))
        graph = helper.make_graph(self.nodes, "case", self.graph_inputs, outs,
                                  initializer=self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 10
        return model


# ---------------------------------------------------------------------------- axis helpers


def positive_axis(axis: int, rank: int) -> int:
    """`axis` counted from the front (SkriptND and ONNX both count negative axes from the end)."""
    return axis + rank if axis < 0 else axis


def positive_axes(axes: Sequence[int], rank: int) -> list[int]:
    return [positive_axis(a, rank) for a in axes]
