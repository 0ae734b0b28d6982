"""Input layouts of golden cases (docs/golden.md, "Input layouts (views)"; docs/nx.md).

A case may deliver an input as a flat buffer (a member of the case's `views.npz`) read through
a strided view (`refinterp.numeric.views`): its manifest entry `inputs[<key>]` then has
`"view": {"buffer", "shape", "strides", "offset", "mask"}`. The logical input stays in
`inputs.npz`, so a back end that ignores layouts is unaffected.

A table asks for layout variants with `layouts = true` (or a list of kinds): the builder then
writes, next to a value case `<name>`, one case `<name>@view-<kind>` per kind that applies to
at least one of its inputs, with the same logical inputs and outputs. The kinds:

- `contiguous`: C-contiguous strides, offset 0 (every non-empty input);
- `permuted`: the buffer holds the input with its axes reversed, the view transposes it back
  (inputs with two or more axes of extent > 1);
- `broadcast`: axes along which the input's values repeat get stride 0, the buffer holds one
  slice (inputs with such an axis of extent > 1);
- `flipped`: negative strides with an offset: the buffer holds the input reversed along every
  axis (inputs with an axis of extent > 1);
- `shrunk`: an offset: the buffer holds the input inside a border of one filler element per
  side of every axis (every non-empty input);
- `zero-size`: an empty buffer with non-C-contiguous strides (inputs with no elements);
- `padded`: a mask: the input's borders of zeros are virtual padding, the buffer holds the rest
  (inputs with a border of zeros: +0.0, 0 or false).

An input to which a kind does not apply has no view in that variant.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from refinterp.io import MAX_INPUT_SIZE, flatten_packs, group_packs, read_arrays
from refinterp.numeric import views as V
from refinterp.numeric.representation import kind_of

KINDS = ("contiguous", "permuted", "broadcast", "flipped", "shrunk", "zero-size", "padded")
SUFFIX = "@view-"
VIEWS_FILE = "views.npz"
VIEWS_FORMAT = "refinterp-views/1"
# What the border of a `shrunk` buffer holds: values a back end that reads it would show
FILLER = {"f": float("nan"), "i": 2 ** 62, "b": True}

Layout = tuple[np.ndarray, V.View]   # (the flat buffer, the view reading it)


def split_id(case_id: str) -> tuple[str, str]:
    """(`X`, kind) for the id of a layout variant `X@view-<kind>`; (`case_id`, "") otherwise."""
    base, found, kind = case_id.rpartition(SUFFIX)
    return (base, kind) if found else (case_id, "")


def _bits(array: np.ndarray) -> np.ndarray:
    """Values compared bit for bit (-0.0 is not 0.0, NaNs by payload)."""
    return array.view(f"<i{array.itemsize}") if array.dtype.kind == "f" else array


def _is_zero(array: np.ndarray) -> np.ndarray:
    """Where the padding value is: +0.0, 0 or false."""
    return _bits(array) == 0


def _constant_axes(array: np.ndarray) -> list[int]:
    """The axes of extent > 1 along which every slice equals the first, bit for bit."""
    bits = _bits(array)
    return [axis for axis, n in enumerate(array.shape)
            if n > 1 and bool((bits == bits.take([0], axis=axis)).all())]


def _zero_border(array: np.ndarray) -> list[tuple[int, int]]:
    """Per axis, how many leading and trailing slices are all zero, leaving at least one."""
    zero = _is_zero(array)
    border = []
    for axis, n in enumerate(array.shape):
        others = tuple(a for a in range(array.ndim) if a != axis)
        slices = zero.all(axis=others) if others else zero
        before = 0
        while before < n - 1 and slices[before]:
            before += 1
        after = 0
        while after < n - 1 - before and slices[n - 1 - after]:
            after += 1
        border.append((before, after))
    return border


def layout(array: np.ndarray, kind: str) -> Layout | None:
    """The buffer and view of kind `kind` that read back exactly `array`, or None when the kind
    does not apply to it (the module docstring lists when each applies)."""
    array = np.asarray(array)
    shape, size = array.shape, array.size
    if kind == "zero-size":
        if size:
            return None
        # column-major strides, counting an empty axis as 2: anything but C-contiguous
        strides = V.c_contiguous_strides([n or 2 for n in reversed(shape)])[::-1]
        return np.zeros(0, array.dtype), V.create(shape, strides, 0)
    if size == 0:
        return None
    if kind == "contiguous":
        return array.reshape(-1).copy(), V.create(shape)
    if kind == "permuted":
        if sum(n > 1 for n in shape) < 2:
            return None
        axes = tuple(reversed(range(array.ndim)))
        stored = np.ascontiguousarray(array.transpose(axes))
        return stored.reshape(-1), V.permute(V.create(stored.shape), axes)
    if kind == "broadcast":
        constant = _constant_axes(array)
        if not constant:
            return None
        one = array[tuple(slice(0, 1) if a in constant else slice(None)
                          for a in range(array.ndim))]
        return one.reshape(-1).copy(), V.expand(V.create(one.shape), shape)
    if kind == "flipped":
        if all(n <= 1 for n in shape):
            return None
        flags = [n > 1 for n in shape]
        stored = array[tuple(slice(None, None, -1) if f else slice(None) for f in flags)]
        return stored.reshape(-1).copy(), V.flip(V.create(shape), flags)
    if kind == "shrunk":
        if array.ndim == 0:
            buffer = np.array([FILLER[array.dtype.kind], array, FILLER[array.dtype.kind]],
                              dtype=array.dtype)
            return buffer, V.create((), (), 1)
        big = np.full([n + 2 for n in shape], FILLER[array.dtype.kind], dtype=array.dtype)
        big[tuple(slice(1, n + 1) for n in shape)] = array
        return big.reshape(-1), V.shrink(V.create(big.shape), [(1, n + 1) for n in shape])
    if kind == "padded":
        border = _zero_border(array) if array.ndim else []
        if not any(b or a for b, a in border):
            return None
        inner = array[tuple(slice(b, n - a) for (b, a), n in zip(border, shape))]
        return inner.reshape(-1).copy(), V.pad(V.create(inner.shape), border)
    raise ValueError(f"no layout kind '{kind}'; the kinds are {', '.join(KINDS)}")


def layouts_of(arrays: dict[str, Any], kind: str) -> dict[str, Layout]:
    """The layouts of kind `kind` of a case's inputs (packs flattened: `xs.0`), for the inputs
    it applies to; each is checked to read back its input exactly."""
    result = {}
    for key, array in flatten_packs(arrays).items():
        found = layout(array, kind)
        if found is not None:
            problem = mismatch(array, *found)
            if problem:
                raise AssertionError(f"layout {kind} of input '{key}': {problem}")
            result[key] = found
    return result


def mismatch(logical: np.ndarray, buffer: np.ndarray, view: V.View) -> str | None:
    """Why `view` of `buffer` does not read back `logical` bit for bit (None if it does)."""
    if buffer.ndim != 1 or buffer.dtype != logical.dtype:
        return f"the buffer is {buffer.dtype}{list(buffer.shape)}, not a 1-D {logical.dtype} " \
               f"array"
    if tuple(view.shape) != logical.shape:
        return f"the view's shape {list(view.shape)} is not the input's {list(logical.shape)}"
    try:
        read = V.materialize(buffer, view)
    except ValueError as error:
        return str(error)
    # (np.array, not np.ascontiguousarray, which makes a rank-0 input rank 1)
    if not np.array_equal(_bits(read), _bits(np.array(logical, order="C"))):
        return "the view does not read back the input of inputs.npz"
    return None


def manifest_entries(found: dict[str, Layout]) -> dict[str, dict[str, Any]]:
    """The `view` object of each input key: the buffer is the member of views.npz of the same
    name."""
    return {key: {"buffer": key, **view.as_json()} for key, (_, view) in found.items()}


def buffers(found: dict[str, Layout]) -> dict[str, np.ndarray]:
    """views.npz's arrays, keyed like the inputs (flattened)."""
    return {key: buffer for key, (buffer, _) in found.items()}


# --------------------------------------------------------------------------- reading


def read_layouts(folder: Path, manifest: dict[str, Any],
                 max_input_size: int = MAX_INPUT_SIZE) -> dict[str, Layout]:
    """The (buffer, view) of every input of a case whose manifest gives a `view` (the manifest
    already checked by golden.schema); {} for a case without layouts. The buffers' file is
    read within `max_input_size` bytes (refinterp.io)."""
    entries = {key: entry["view"] for key, entry in manifest.get("inputs", {}).items()
               if isinstance(entry, dict) and "view" in entry}
    if not entries:
        return {}
    stored = read_arrays(folder / VIEWS_FILE, f"{VIEWS_FILE} of case {manifest.get('id')}",
                         keep_dtype=True, max_input_size=max_input_size)
    result = {}
    for key, entry in entries.items():
        if entry["buffer"] not in stored:
            raise ValueError(f"{VIEWS_FILE} has no buffer '{entry['buffer']}' (input '{key}')")
        result[key] = stored[entry["buffer"]], V.from_json(entry)
    return result


def check_layouts(folder: Path, manifest: dict[str, Any],
                  max_input_size: int = MAX_INPUT_SIZE) -> list[str]:
    """What is wrong with a case's input layouts: a missing buffer, a view reading outside
    it, or one that does not read back the logical input of inputs.npz bit for bit."""
    if not any(isinstance(e, dict) and "view" in e for e in manifest.get("inputs", {}).values()):
        return []
    if not (folder / VIEWS_FILE).exists():
        return [f"the inputs have views but {VIEWS_FILE} is missing"]
    try:
        found = read_layouts(folder, manifest, max_input_size)
    except (ValueError, OSError) as error:
        return [str(getattr(error, "message", error))]
    logical = read_arrays(folder / "inputs.npz", "inputs.npz", keep_dtype=True,
                          max_input_size=max_input_size)
    problems = []
    for key, (buffer, view) in sorted(found.items()):
        if key not in logical:
            problems.append(f"a view for input '{key}', which inputs.npz does not hold")
            continue
        problem = mismatch(logical[key], np.asarray(buffer), view)
        if problem:
            problems.append(f"input '{key}': {problem}")
    return problems


def strided_inputs(inputs: dict[str, Any], found: dict[str, Layout]) -> dict[str, Any]:
    """The inputs a Python back end is given: each input with a layout as a real strided NumPy
    view of its buffer (`as_numpy_view`), or materialized when its view has a mask; the others
    as they are. Packs are lists, as in `Case.inputs`."""
    if not found:
        return inputs
    flat = dict(flatten_packs(inputs))
    for key, (buffer, view) in found.items():
        array = V.as_numpy_view(buffer, view)
        flat[key] = V.materialize(buffer, view) if array is None else array
    return group_packs(flat)


def views_document(manifest: dict[str, Any], found: dict[str, Layout],
                   buffers_path: Path | None) -> dict[str, Any]:
    """The JSON a command back end gets through `{views}` (docs/harness.md): the path of the
    buffers' npz (null without views) and, per input key with a view, its dtype, the name of
    its buffer in that npz, shape, strides, offset (elements) and mask."""
    inputs = {}
    for key, (buffer, view) in sorted(found.items()):
        name = manifest["inputs"][key]["view"]["buffer"]
        inputs[key] = {"dtype": kind_of(buffer), "buffer": name, **view.as_json()}
    return {"format": VIEWS_FORMAT,
            "buffers": str(buffers_path) if found and buffers_path else None,
            "inputs": inputs}
