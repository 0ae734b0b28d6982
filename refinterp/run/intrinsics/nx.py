"""Intrinsics of the `nx` module (refinterp/stdlib/nx.sknd): the primitives of the Nx backend
contract that SkriptND formulas cannot say — bitwise operations on ints, sort / argsort with
NaN last, Threefry-2x32, the FFT family and the linear-algebra factorisations.

Each docstring states the exact semantics; docs/nx.md lists the choices where the contract is
silent. Complex tensors are real tensors with a trailing axis of extent 2 (real, imaginary).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from refinterp.core.diagnostics import Diagnostic
from refinterp.language.instance import OperatorInstance
from refinterp.numeric import nx_types
from refinterp.run.intrinsics import intrinsic

# ----------------------------------------------------------------------------- helpers


def _fail(instance: OperatorInstance, message: str) -> Diagnostic:
    return Diagnostic(f"{instance.definition.name}: {message}", instance.definition.span)


def _complex(array: np.ndarray) -> np.ndarray:
    """A real array [..., 2] as a complex array [...]."""
    return array[..., 0] + 1j * array[..., 1]


def _pairs(array: np.ndarray) -> np.ndarray:
    """A complex array [...] as a real array [..., 2] (real, imaginary)."""
    return np.stack([array.real, array.imag], axis=-1).astype(np.float64)


def _integer_operands(instance: OperatorInstance, inputs: dict[str, Any]) -> tuple:
    a, b = np.asarray(inputs["a"]), np.asarray(inputs["b"])
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        raise _fail(instance, "bitwise operations need int or bool operands; got real")
    return a, b


# ----------------------------------------------------------------------------- bitwise


@intrinsic("nx.and_")
def and_(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Bitwise AND of ints (two's complement int64) or logical AND of bools; a real operand is
    a diagnostic. The contract: "Operate on the binary representation of integer and boolean
    dtypes. For booleans, these are equivalent to logical AND/OR/XOR." """
    a, b = _integer_operands(instance, inputs)
    return {"out": np.bitwise_and(a, b)}


@intrinsic("nx.or_")
def or_(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Bitwise OR of ints (two's complement int64) or logical OR of bools (see and_)."""
    a, b = _integer_operands(instance, inputs)
    return {"out": np.bitwise_or(a, b)}


@intrinsic("nx.xor")
def xor(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Bitwise XOR of ints (two's complement int64) or logical XOR of bools (see and_)."""
    a, b = _integer_operands(instance, inputs)
    return {"out": np.bitwise_xor(a, b)}


# ----------------------------------------------------------------------------- sort


def sort_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The indices that sort `x` along `axis`: ascending (descending) values, NaN last in both
    directions, equal values (-0.0 and 0.0 included) in ascending index order (stable)."""
    lines = np.moveaxis(x, axis, -1)
    if lines.dtype.kind == "f":
        nan = np.isnan(lines)
        value = np.where(nan, 0.0, lines)
        value = np.where(value == 0.0, 0.0, value)  # -0.0 sorts as 0.0
    else:
        nan = np.zeros(lines.shape, dtype=bool)
        value = lines
    position = np.broadcast_to(np.arange(lines.shape[-1]), lines.shape)
    key = -value if descending else value
    if lines.dtype.kind != "f" and descending:
        key = ~value  # -v overflows for the smallest int64; ~v = -v - 1 keeps the order
    # np.lexsort sorts by the last key first: NaN flag, then value, then position
    order = np.lexsort((position, key, nan), axis=-1) if lines.size else \
        np.zeros(lines.shape, dtype=np.int64)
    return np.moveaxis(order, -1, axis).astype(np.int64)


@intrinsic("nx.sort")
def sort(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The values of `x` sorted along `axis`, ascending or `descending`. The contract: "NaN
    values are placed at the end regardless of sort direction." Equal values keep their input
    order (stable; -0.0 and 0.0 are equal)."""
    x = np.asarray(inputs["x"])
    axis, descending = instance.symbols["axis"], instance.symbols["descending"]
    order = sort_order(x, axis, descending)
    return {"out": np.take_along_axis(x, order, axis=axis)}


@intrinsic("nx.argsort")
def argsort(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The indices along `axis` that sort `x` as `nx.sort` does: NaN last in both directions,
    equal values in ascending index order (stable, in both directions)."""
    x = np.asarray(inputs["x"])
    return {"out": sort_order(x, instance.symbols["axis"], instance.symbols["descending"])}


# ----------------------------------------------------------------------------- threefry

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)


def _rotate_left(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key: tuple[np.ndarray, np.ndarray],
                 counter: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds (Salmon, Moraes, Dror, Shaw, SC'11; Random123's
    threefry2x32_20 and JAX's threefry_2x32) on uint32 arrays: the key schedule k0, k1,
    k0 ^ k1 ^ 0x1BD11BDA, a key injection before the first round and after every fourth
    (adding the injection count to the second word), rotations 13 15 26 6 / 17 29 16 24."""
    k0, k1 = key
    schedule = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = counter[0] + schedule[0]
    x1 = counter[1] + schedule[1]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = _rotate_left(x1, r) ^ x0
        x0 = x0 + schedule[(block + 1) % 3]
        x1 = x1 + schedule[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


@intrinsic("nx.threefry")
def threefry(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Threefry-2x32-20 of every (key, counter) pair: the last axis (extent 2) holds the two
    32-bit words. Words are int32 values; an int outside [-2^31, 2^31) is a diagnostic. The
    result words are int32 values (the uint32 bits read as two's complement)."""
    words = {}
    for name in ("key", "counter"):
        array = np.asarray(inputs[name], dtype=np.int64)
        if array.size and (array.min() < -2**31 or array.max() >= 2**31):
            raise _fail(instance, f"'{name}' holds a value outside the int32 range")
        words[name] = array.astype(np.int32).view(np.uint32)
    with np.errstate(over="ignore"):
        x0, x1 = threefry2x32((words["key"][..., 0], words["key"][..., 1]),
                              (words["counter"][..., 0], words["counter"][..., 1]))
    out = np.stack([x0, x1], axis=-1).view(np.int32).astype(np.int64)
    return {"out": out}


# ----------------------------------------------------------------------------- FFT


@intrinsic("nx.fft")
def fft(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The forward DFT along `axes` (unnormalised: X[k] = sum_j x[j] exp(-2 pi i j k / n)),
    NumPy's fftn. Complex values as [..., 2]; no axes: the input unchanged."""
    t = _complex(np.asarray(inputs["t"], dtype=np.float64))
    axes = list(instance.symbols["axes"])
    return {"out": _pairs(np.fft.fftn(t, axes=axes) if axes else t)}


@intrinsic("nx.ifft")
def ifft(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The inverse DFT along `axes`, normalised by 1/n per axis (NumPy's ifftn, "backward"),
    so ifft(fft(x)) = x. Complex values as [..., 2]."""
    t = _complex(np.asarray(inputs["t"], dtype=np.float64))
    axes = list(instance.symbols["axes"])
    return {"out": _pairs(np.fft.ifftn(t, axes=axes) if axes else t)}


@intrinsic("nx.rfft")
def rfft(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The DFT of a real input along `axes` (NumPy's rfftn): the last axis of `axes` keeps
    the n / 2 + 1 non-negative frequencies; unnormalised. Complex result as [..., 2]."""
    t = np.asarray(inputs["t"], dtype=np.float64)
    return {"out": _pairs(np.fft.rfftn(t, axes=list(instance.symbols["axes"])))}


@intrinsic("nx.irfft")
def irfft(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The inverse of rfft along `axes` (NumPy's irfftn, normalised by 1/n per axis): the
    output extent of the last transformed axis is 2 (m - 1) for m input values unless `s`
    gives the output extents; the input is cropped or zero-padded to them. The imaginary
    parts at frequency 0 (and n / 2 for even n) are ignored (pocketfft's c2r)."""
    t = _complex(np.asarray(inputs["t"], dtype=np.float64))
    axes = list(instance.symbols["axes"])
    sizes = instance.symbols.get("s")
    sizes = None if sizes is None or not isinstance(sizes, (tuple, list)) else list(sizes)
    return {"out": np.fft.irfftn(t, s=sizes, axes=axes).astype(np.float64)}


# ----------------------------------------------------------------------------- linear algebra


def _largest_positive(vectors: np.ndarray) -> np.ndarray:
    """Signs (+1 / -1, shape [..., k]) that make the entry of largest magnitude of each column
    of `vectors` [..., m, k] positive (the first such entry on ties; +1 for a zero column)."""
    if vectors.shape[-2] == 0:
        return np.ones(vectors.shape[:-2] + vectors.shape[-1:])
    index = np.argmax(np.abs(vectors), axis=-2)[..., None, :]
    pivot = np.take_along_axis(vectors, index, axis=-2)[..., 0, :]
    return np.where(pivot < 0, -1.0, 1.0)


@intrinsic("nx.cholesky")
def cholesky(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """The Cholesky factor of every matrix of `t`: L lower triangular with A = L L^T (only the
    lower triangle of A is read), or U = L^T when `upper`. A matrix that is not positive
    definite is a diagnostic."""
    t = np.asarray(inputs["t"], dtype=np.float64)
    lower = np.tril(t) + np.swapaxes(np.tril(t, -1), -1, -2)  # symmetric from the lower part
    try:
        factor = np.linalg.cholesky(lower)
    except np.linalg.LinAlgError:
        raise _fail(instance, "the matrix is not positive definite") from None
    if instance.symbols["upper"]:
        factor = np.swapaxes(factor, -1, -2)
    return {"out": np.ascontiguousarray(factor)}


@intrinsic("nx.qr")
def qr(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Q R of every matrix of `t` (m x n): Q with orthonormal columns, R upper triangular,
    A = Q R; `reduced`: Q is m x min(m, n) and R min(m, n) x n, else Q m x m and R m x n.
    Canonical signs: the diagonal of R is non-negative (row i of R and column i of Q are
    negated together); Q's columns beyond min(m, n) in the full form are not unique."""
    t = np.asarray(inputs["t"], dtype=np.float64)
    q, r = np.linalg.qr(t, mode="reduced" if instance.symbols["reduced"] else "complete")
    k = min(t.shape[-2], t.shape[-1])
    diagonal = np.diagonal(r, axis1=-2, axis2=-1)[..., :k]
    signs = np.where(diagonal < 0, -1.0, 1.0)
    full = np.ones(r.shape[:-2] + (r.shape[-2],))
    full[..., :k] = signs
    return {"q": q * full[..., None, :q.shape[-1]], "r": r * full[..., :, None]}


def _nan_where_non_finite(t: np.ndarray, decompose: Any,
                          read: np.ndarray | None = None) -> dict[str, Any]:
    """`decompose(t)` for a batch of matrices where any matrix holding a NaN or an infinity
    gives NaN in every output of its own (docs/nx.md, "Decompositions of non-finite
    matrices": XLA's behaviour; LAPACK does not converge on them). Such matrices are
    replaced by zeros for the computation, then their results set to NaN. `read`: the
    elements the decomposition reads (default all of `t`)."""
    read = t if read is None else read
    bad = ~np.isfinite(read).all(axis=(-2, -1)) if t.size else np.zeros(t.shape[:-2], bool)
    if not bad.any():
        return decompose(t)
    results = decompose(np.where(bad[..., None, None], 0.0, t))
    batch = bad.ndim
    return {name: np.where(bad.reshape(bad.shape + (1,) * (value.ndim - batch)), np.nan,
                           value) for name, value in results.items()}


@intrinsic("nx.svd")
def svd(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """U, S, V^H of every matrix of `t` (m x n) with A = U diag(S) V^H: S the min(m, n)
    singular values in descending order; thin (U m x k, V^H k x n) unless `full_matrices`.
    Canonical signs: the entry of largest magnitude of each of the first k columns of U is
    positive (the first on ties), row i of V^H flipped with column i of U."""
    full_matrices = bool(instance.symbols["full_matrices"])
    return _nan_where_non_finite(np.asarray(inputs["t"], dtype=np.float64),
                                 lambda t: _svd(t, full_matrices))


def _svd(t: np.ndarray, full_matrices: bool) -> dict[str, Any]:
    u, s, vh = np.linalg.svd(t, full_matrices=full_matrices)
    k = s.shape[-1]
    signs = _largest_positive(u[..., :, :k])
    u = u.copy()
    vh = vh.copy()
    u[..., :, :k] *= signs[..., None, :]
    vh[..., :k, :] *= signs[..., :, None]
    return {"u": u, "s": s.astype(np.float64), "vh": vh}


@intrinsic("nx.eig")
def eig(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Eigenvalues (and eigenvectors when `vectors`) of every square matrix of `t`, complex as
    [..., 2]: eigenvalues in ascending order of real part, then imaginary part; eigenvector
    columns of unit 2-norm, each scaled by a unit phase so that its entry of largest
    magnitude (the first on ties) is real and positive. Without vectors `v` has extent 0."""
    vectors = bool(instance.symbols["vectors"])
    return _nan_where_non_finite(np.asarray(inputs["t"], dtype=np.float64),
                                 lambda t: _eig(t, vectors))


def _eig(t: np.ndarray, vectors: bool) -> dict[str, Any]:
    w, v = np.linalg.eig(t)
    w = w.astype(np.complex128)
    v = v.astype(np.complex128)
    order = np.lexsort((w.imag, w.real), axis=-1) if w.size else \
        np.zeros(w.shape, dtype=np.int64)
    w = np.take_along_axis(w, order, axis=-1)
    v = np.take_along_axis(v, order[..., None, :], axis=-1)
    if v.shape[-2]:
        index = np.argmax(np.abs(v), axis=-2)[..., None, :]
        pivot = np.take_along_axis(v, index, axis=-2)
        v = v * (np.abs(pivot) / np.where(pivot == 0, 1.0, pivot))
    n = t.shape[-1] if vectors else 0
    return {"w": _pairs(w), "v": _pairs(v) if n else np.zeros(t.shape[:-2] + (0, 0, 2))}


@intrinsic("nx.eigh")
def eigh(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """Eigenvalues (ascending) and, when `vectors`, orthonormal eigenvectors (columns) of
    every symmetric matrix of `t`, read from its lower triangle. Canonical signs: the entry of
    largest magnitude of each eigenvector is positive (the first on ties). Without vectors
    `v` has extent 0."""
    vectors = bool(instance.symbols["vectors"])
    t = np.asarray(inputs["t"], dtype=np.float64)
    return _nan_where_non_finite(t, lambda t: _eigh(t, vectors), np.tril(t))


def _eigh(t: np.ndarray, vectors: bool) -> dict[str, Any]:
    w, v = np.linalg.eigh(t, UPLO="L")
    if not vectors:
        return {"w": w, "v": np.zeros(t.shape[:-2] + (0, 0))}
    return {"w": w, "v": v * _largest_positive(v)[..., None, :]}


@intrinsic("nx.triangular_solve")
def triangular_solve(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """x with A x = b (A^T x = b when `transpose`) for every matrix of `a` and right-hand
    sides `b` [..., n, k], by substitution in float64: only the `upper` (else lower)
    triangle of A is read, its diagonal taken as ones with `unit_diag`. A zero pivot gives
    IEEE inf / NaN (no diagnostic)."""
    symbols = instance.symbols
    a = np.asarray(inputs["a"], dtype=np.float64)
    b = np.asarray(inputs["b"], dtype=np.float64)
    n = a.shape[-1]
    matrix = np.triu(a) if symbols["upper"] else np.tril(a)
    if symbols["unit_diag"]:
        matrix = np.where(np.eye(n, dtype=bool), 1.0, matrix)
    if symbols["transpose"]:
        matrix = np.swapaxes(matrix, -1, -2)
    # after a transpose an upper triangle is lower: substitute forward for a lower matrix
    forward = symbols["upper"] == symbols["transpose"]
    x = np.zeros(np.broadcast_shapes(matrix.shape[:-2], b.shape[:-2]) + b.shape[-2:])
    rows = range(n) if forward else range(n - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in rows:
            done = slice(0, i) if forward else slice(i + 1, n)
            partial = np.einsum("...j,...jk->...k", matrix[..., i, done], x[..., done, :])
            x[..., i, :] = (b[..., i, :] - partial) / matrix[..., i, i][..., None]
    return {"x": x}


# ----------------------------------------------------------------------------- typed evaluation


@intrinsic("nx.as_type")
def as_type(instance: OperatorInstance, inputs: dict[str, Any]) -> dict[str, Any]:
    """x restricted to the Nx type `type` (refinterp.numeric.nx_types.to_type): an int
    wrapped to the width (or clamped with `saturate`), a real rounded to the format (nearest,
    ties to even); an int given a real type or the reverse is a diagnostic."""
    x = np.asarray(inputs["x"])
    name = instance.symbols["type"]
    kind = "real" if x.dtype.kind == "f" else "int"
    if nx_types.TYPES[name].kind != kind:
        raise _fail(instance, f"x is {kind}, and the type '{name}' is for "
                              f"{nx_types.TYPES[name].kind}s")
    return {"out": nx_types.to_type(x, name, saturate=bool(instance.symbols["saturate"]))}
