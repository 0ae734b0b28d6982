"""The table of the JAX back end (refinterp.backends.jax): translations register here.

A translation takes a `Call` (the case's attributes, generics and input arrays, already JAX
arrays) and returns the operator's outputs as JAX arrays (a tuple for several outputs), in
the order of the names given to `translation(...)`. It raises `Unsupported` for an attribute
value JAX cannot express; it never approximates one. Imported only once jax is importable and
64-bit types are enabled (from `JaxBackend.prepare`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax.numpy as jnp

from refinterp.backends import calls
from refinterp.harness.backends import Unsupported

DTYPES = {"real": jnp.float64, "int": jnp.int64, "bool": jnp.bool_}
# the JAX dtype of each Nx type of a typed case (case.json's `types`, docs/nx.md "Typed
# evaluation")
NX_DTYPES = {"s8": jnp.int8, "s16": jnp.int16, "s32": jnp.int32, "s64": jnp.int64,
             "u8": jnp.uint8, "u16": jnp.uint16, "u32": jnp.uint32, "f16": jnp.float16,
             "bf16": jnp.bfloat16, "f32": jnp.float32, "f64": jnp.float64}


@dataclass
class Call(calls.Call):
    """An invocation whose absent int pack attributes read as empty (nx's packs); `types`
    the Nx types of a typed case's inputs and outputs by name (its inputs arrive in them)."""

    types: dict[str, str] = field(default_factory=dict)

    def dtype(self, output: str, default: Any) -> Any:
        """The JAX dtype of `output`: its Nx type's in a typed case, else `default`."""
        return NX_DTYPES[self.types[output]] if output in self.types else default

    def ints(self, name: str, default: Any = ()) -> list[int]:
        return super().ints(name, list(default))


Translation = calls.Translation
TABLE = calls.Translations()
translation = TABLE.register


def unsupported(what: str) -> Unsupported:
    """The exception for an attribute value JAX cannot express."""
    return Unsupported(f"jax cannot express {what}")


def is_int(x: Any) -> bool:
    """Whether `x` has an integer dtype (the contract's integer rules apply)."""
    return bool(jnp.issubdtype(x.dtype, jnp.integer))


def pairs(flat: list[int]) -> list[tuple[int, int]]:
    """A flat pack [first_0, second_0, first_1, ...] as pairs (nx's `(int * int) array`)."""
    return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]
