"""Values of @variable tensors (spec §2.7, §2.11): where they come from and where updates go.

A variable is known by its scoped name (spec §2.10 "Labelling operator invocations"): the dotted
path of the module, the graph and the labels of the invocations leading to the operator that
declares it, then the variable's name — e.g. `main.AlexNet.kernel1`, or `main.G.conv1.filter` for
the variable `filter` of the invocation labelled `conv1` in graph `G` of module `main`.

Sources, first match wins:
  1. `--params PARAMS.npz` (or a folder of `.dat` files): keyed by the full scoped name or by the
     name relative to the graph (`filter`, `conv1.filter`);
  2. the model folder: `<scoped name>.dat` NNEF tensor files (full or graph-relative name);
  3. `--random-params`: a random value, reproducible from the seed and the scoped name.
A variable found nowhere, or found with another type or shape, is a diagnostic listing what is
expected. Values written by @update replace the stored ones for the rest of the run (`updated`);
the run's `state` (refinterp.api) is what `eval --write-params` saves, through refinterp.io (the
one writer of array files: this ring may not import it).

A `.dat` file of the model folder is read through `numeric.tensorfile.read_tensor`: only a
regular file (a FIFO or a device named like a variable is refused, E0800), its tensor within
the run's tensor size limit. It is read once per process while it is unchanged
(`read_tensor_cached`: the same file, size and modification time; docs/limits.md "Parameters
read once"), as are the `.dat` files of a `--params` folder (`refinterp.io.read_params`).
"""

from __future__ import annotations

import os
import stat
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path


import numpy as np

from refinterp.numeric.representation import MAX_TENSOR_SIZE, NUMPY_DTYPES as DTYPES, kind_of
from refinterp.core.diagnostics import ParameterDiagnostic
from refinterp.language.instance import TensorType, describe_type
from refinterp.core.source import Span
from refinterp.numeric.tensorfile import read_tensor


# The bytes of tensors `read_tensor_cached` keeps (the least recently used go first); a tensor
# larger than this is not kept. A batch-1 VGG-19's float64 weights are 1.1 GB.
MAX_CACHED_TENSOR_BYTES = 2 * 2**30
# per (absolute path, tensor size limit): (the file's identity when read, its tensor)
_tensor_files: OrderedDict[tuple[str, int], tuple[tuple[int, ...], np.ndarray]] = OrderedDict()
_tensor_bytes = [0]  # the bytes _tensor_files holds


def read_tensor_cached(path: str | Path, max_size: int = MAX_TENSOR_SIZE,
                       what: str = "the tensor file") -> np.ndarray:
    """`read_tensor(path, max_size, what)`, read from the file only when this process has not
    read the same file unchanged with the same limit before: a file is the same while its
    device, inode, size, modification and change times are (a rewritten or replaced file is
    read again). The tensor returned is read-only, shared by every run that reads the file;
    failures are not kept (each read of a bad file fails again)."""
    key = (os.path.abspath(path), max_size)
    before = _identity(path)
    entry = _tensor_files.get(key)
    if entry is not None and before is not None and entry[0] == before:
        _tensor_files.move_to_end(key)
        return entry[1]
    value = read_tensor(path, max_size, what)
    value.flags.writeable = False
    _forget(key)
    if before is not None and _identity(path) == before and \
            value.nbytes <= MAX_CACHED_TENSOR_BYTES:  # unchanged while it was read
        _tensor_files[key] = (before, value)
        _tensor_bytes[0] += value.nbytes
        while _tensor_bytes[0] > MAX_CACHED_TENSOR_BYTES:
            _forget(next(iter(_tensor_files)))
    return value


def clear_tensor_cache() -> None:
    """Forget every tensor `read_tensor_cached` keeps."""
    _tensor_files.clear()
    _tensor_bytes[0] = 0


def _identity(path: str | Path) -> tuple[int, ...] | None:
    """What tells a regular file's content changed; None for anything else (not kept)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def _forget(key: tuple[str, int]) -> None:
    entry = _tensor_files.pop(key, None)
    if entry is not None:
        _tensor_bytes[0] -= entry[1].nbytes


def random_value(name: str, info: TensorType, seed: int) -> np.ndarray:
    """A reproducible random value for variable `name`: real N(0, 1) scaled by 1/sqrt of the
    volume of all but the first dimension (so deep graphs stay finite), int in [0, 10), bool
    with probability 1/2. The generator is seeded by (seed, crc32 of the name), so a variable's
    value does not depend on which other variables exist."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    shape = tuple(info.shape or ())
    if info.dtype == "real":
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        return rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))
    if info.dtype == "int":
        return rng.integers(0, 10, shape, dtype=np.int64)
    return rng.random(shape) < 0.5


@dataclass
class ParameterStore:
    """Looks up and records variable values by scoped name."""

    graph: str = ""                       # the scoped name of the graph, e.g. "main.G"
    arrays: dict[str, np.ndarray] = field(default_factory=dict)   # --params
    folder: Path | None = None            # the model folder with <scoped name>.dat files
    random: bool = False
    seed: int = 0
    max_tensor_size: int = MAX_TENSOR_SIZE  # of a .dat file's tensor (the run's limit)
    loaded: dict[str, np.ndarray] = field(default_factory=dict)   # current values
    read: dict[str, np.ndarray] = field(default_factory=dict)     # as first read (before @update)
    updated: dict[str, np.ndarray] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def candidates(self, scoped: str) -> list[str]:
        """The keys a variable may be stored under: its full scoped name, then relative to the
        graph."""
        names = [scoped]
        prefix = self.graph + "."
        if self.graph and scoped.startswith(prefix):
            names.append(scoped[len(prefix):])
        return names

    def load(self, scoped: str, info: TensorType, span: Span | None = None) -> np.ndarray:
        """The current value of variable `scoped`, checked against its declared type/shape."""
        if scoped in self.loaded:
            return self.loaded[scoped]
        value, origin = self._find(scoped, info)
        if value is None:
            raise ParameterDiagnostic(
                f"no value for variable '{scoped}' ({describe_type(info)})", span,
                [f"expected: {' or '.join(repr(n) for n in self.candidates(scoped))} in "
                 f"--params, or the file {scoped}.dat in "
                 f"{self.folder if self.folder else 'the model folder'}",
                 "or pass --random-params to use random values"])
        self._check(scoped, info, value, origin, span)
        value = value.astype(DTYPES[info.dtype], copy=False)  # no copy of a float64/int64/bool
        self.loaded[scoped] = value
        self.read[scoped] = value
        return value

    def _find(self, scoped: str, info: TensorType) -> tuple[np.ndarray | None, str]:
        given = [name for name in self.candidates(scoped) if name in self.arrays]
        if given:  # the full name wins; a second entry for the same variable counts as used
            self.used.update(given)
            return self.arrays[given[0]], f"--params entry '{given[0]}'"
        if self.folder is not None:
            for name in self.candidates(scoped):
                path = self.folder / f"{name}.dat"
                if os.path.exists(path):  # a FIFO or a device too: read_tensor refuses it
                    return read_tensor_cached(path, self.max_tensor_size), f"'{path}'"
        if self.random:
            return random_value(scoped, info, self.seed), "random"
        return None, ""

    @staticmethod
    def _check(scoped: str, info: TensorType, value: np.ndarray, origin: str,
               span: Span | None) -> None:
        kind = kind_of(value)
        shape = tuple(value.shape)
        declared = tuple(info.shape or ())
        shape_ok = len(shape) == len(declared) and all(
            d is None or d == s for d, s in zip(declared, shape))
        if kind != info.dtype or not shape_ok:
            raise ParameterDiagnostic(
                f"variable '{scoped}' is declared {describe_type(info)} but {origin} holds "
                f"{kind}{list(shape)}", span, code="E0701")

    def update(self, scoped: str, value: np.ndarray) -> None:
        """Record the value @update assigned to variable `scoped`."""
        self.loaded[scoped] = value
        self.updated[scoped] = value

    def unused(self) -> list[str]:
        """--params entries no variable asked for (likely misspelt names)."""
        return sorted(set(self.arrays) - self.used)
