"""JAX translations of `nx.matmul`, the FFT family and the linear-algebra factorisations.

Complex tensors are real arrays [..., 2] in nx (real, imaginary): `lax.complex` builds the
complex128 array and the result is split back with `jnp.real` / `jnp.imag`.

The factorisations whose results are not unique (the signs of QR and SVD factors, the order
and phases of eigenpairs) are brought to the contract's canonical form (docs/nx.md, "Choices
where the contract is silent") after JAX computes them: the contract leaves them free, so any
back end's result is compared modulo that freedom. The rule is applied to JAX's own values
(which entry has the largest magnitude is decided by JAX's numbers). Without that step the
raw LAPACK signs differ (tests/backends/test_backend_jax.py pins one such case by hand).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from jax import lax

from refinterp.backends.jax_common import Call, translation

# --------------------------------------------------------------------------- matmul


@translation("nx.matmul", "out")
def matmul(c: Call) -> Any:
    """No attributes: `jnp.matmul(a, b, precision=HIGHEST)` (batched on the last two
    axes, batch axes broadcast)."""
    return jnp.matmul(c["a"], c["b"], precision=lax.Precision.HIGHEST)


# --------------------------------------------------------------------------- FFT


def _complex(t: Any) -> Any:
    """A real array [..., 2] as complex128 [...]."""
    return lax.complex(t[..., 0], t[..., 1])


def _pairs(z: Any) -> Any:
    """A complex array [...] as a real array [..., 2]."""
    return jnp.stack([jnp.real(z), jnp.imag(z)], axis=-1)


@translation("nx.fft", "out")
def fft(c: Call) -> Any:
    """axes -> `axes` of `jnp.fft.fftn(t, axes=axes)` (norm "backward": unnormalised)."""
    return _pairs(jnp.fft.fftn(_complex(c["t"]), axes=c.ints("axes")))


@translation("nx.ifft", "out")
def ifft(c: Call) -> Any:
    """axes -> `axes` of `jnp.fft.ifftn(t, axes=axes)` (1/n per axis)."""
    return _pairs(jnp.fft.ifftn(_complex(c["t"]), axes=c.ints("axes")))


@translation("nx.rfft", "out")
def rfft(c: Call) -> Any:
    """axes -> `axes` of `jnp.fft.rfftn(t, axes=axes)` (the last axis of `axes` halved)."""
    return _pairs(jnp.fft.rfftn(c["t"], axes=c.ints("axes")))


@translation("nx.irfft", "out")
def irfft(c: Call) -> Any:
    """axes -> `axes`, s -> `s` (None when absent) of `jnp.fft.irfftn(t, s, axes)`."""
    sizes = c.attr("s")
    sizes = None if sizes is None else c.ints("s")
    return jnp.fft.irfftn(_complex(c["t"]), s=sizes, axes=c.ints("axes"))


# --------------------------------------------------------------------------- factorisations


def _swap(x: Any) -> Any:
    return jnp.swapaxes(x, -1, -2)


@translation("nx.cholesky", "out")
def cholesky(c: Call) -> Any:
    """upper -> the transpose of the lower factor; `lax.linalg.cholesky(t,
    symmetrize_input=False)` (reads the lower triangle, as LAPACK potrf 'L'; the default
    True would use (A + Aᵀ) / 2, see docs/backends.md)."""
    factor = lax.linalg.cholesky(c["t"], symmetrize_input=False)
    return _swap(factor) if c.attr("upper", False) else factor


def _largest_positive(vectors: Any) -> Any:
    """Signs [..., k] making the entry of largest magnitude (the first on ties) of each
    column of `vectors` [..., m, k] positive; +1 for a column of m = 0 rows."""
    if vectors.shape[-2] == 0:
        return jnp.ones(vectors.shape[:-2] + vectors.shape[-1:], vectors.dtype)
    index = jnp.argmax(jnp.abs(vectors), axis=-2)[..., None, :]
    pivot = jnp.take_along_axis(vectors, index, axis=-2)[..., 0, :]
    return jnp.where(pivot < 0, -1.0, 1.0)


@translation("nx.qr", "q", "r")
def qr(c: Call) -> Any:
    """reduced -> `mode` 'reduced' / 'complete' of `jnp.linalg.qr(t, mode)`; then the
    canonical signs: row i of R and column i of Q negated where R[i, i] < 0."""
    t = c["t"]
    q, r = jnp.linalg.qr(t, mode="reduced" if c.attr("reduced", True) else "complete")
    k = min(t.shape[-2], t.shape[-1])
    diagonal = jnp.diagonal(r, axis1=-2, axis2=-1)[..., :k]
    signs = jnp.where(diagonal < 0, -1.0, 1.0)
    full = jnp.ones(r.shape[:-2] + (r.shape[-2],), r.dtype).at[..., :k].set(signs)
    return q * full[..., None, :q.shape[-1]], r * full[..., :, None]


@translation("nx.svd", "u", "s", "vh")
def svd(c: Call) -> Any:
    """full_matrices -> `full_matrices` of `jnp.linalg.svd(t, full_matrices)`; then the
    canonical signs: the largest-magnitude entry of each of the first k columns of U
    positive, the row of Vᴴ flipped with it."""
    u, s, vh = jnp.linalg.svd(c["t"], full_matrices=bool(c.attr("full_matrices", False)))
    k = s.shape[-1]
    signs = _largest_positive(u[..., :, :k])
    u = u.at[..., :, :k].multiply(signs[..., None, :])
    vh = vh.at[..., :k, :].multiply(signs[..., :, None])
    return u, s, vh


@translation("nx.eig", "w", "v")
def eig(c: Call) -> Any:
    """vectors -> `compute_right_eigenvectors` of `lax.linalg.eig(t,
    compute_left_eigenvectors=False)` (CPU only in JAX); then the canonical form:
    eigenvalues ascending by real, then imaginary part (`jnp.lexsort`), eigenvector columns
    (unit 2-norm from LAPACK geev) multiplied by the unit phase that makes their entry of
    largest magnitude (the first on ties) real and positive. Without vectors `v` has extent
    0."""
    t = c["t"]
    vectors = bool(c.attr("vectors", True))
    result = lax.linalg.eig(t, compute_left_eigenvectors=False,
                            compute_right_eigenvectors=vectors)
    w = result[0]
    order = jnp.lexsort((jnp.imag(w), jnp.real(w)), axis=-1)
    w = jnp.take_along_axis(w, order, axis=-1)
    if not vectors:
        return _pairs(w), jnp.zeros(t.shape[:-2] + (0, 0, 2), jnp.float64)
    v = jnp.take_along_axis(result[1], order[..., None, :], axis=-1)
    index = jnp.argmax(jnp.abs(v), axis=-2)[..., None, :]
    pivot = jnp.take_along_axis(v, index, axis=-2)
    v = v * (jnp.abs(pivot) / jnp.where(pivot == 0, 1.0, pivot))
    return _pairs(w), _pairs(v)


@translation("nx.eigh", "w", "v")
def eigh(c: Call) -> Any:
    """vectors -> whether `v` is returned; `lax.linalg.eigh(t, lower=True,
    symmetrize_input=False)` (reads the lower triangle; the default would symmetrise),
    eigenvalues ascending; then the canonical signs (largest-magnitude entry of each
    eigenvector positive). Without vectors `v` has extent 0."""
    t = c["t"]
    v, w = lax.linalg.eigh(t, lower=True, symmetrize_input=False)
    if not c.attr("vectors", True):
        return w, jnp.zeros(t.shape[:-2] + (0, 0), jnp.float64)
    return w, v * _largest_positive(v)[..., None, :]


@translation("nx.triangular_solve", "x")
def triangular_solve(c: Call) -> Any:
    """upper -> `lower = not upper`, transpose -> `transpose_a`, unit_diag ->
    `unit_diagonal` of `lax.linalg.triangular_solve(a, b, left_side=True)` (solves
    op(A) x = b; reads only the named triangle)."""
    return lax.linalg.triangular_solve(
        c["a"], c["b"], left_side=True, lower=not c.attr("upper", False),
        transpose_a=bool(c.attr("transpose", False)),
        unit_diagonal=bool(c.attr("unit_diag", False)))
