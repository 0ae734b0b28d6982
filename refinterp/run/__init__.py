"""Ring 4, running operators and graphs: the executor of @compose and @update (`compose`; also
checks a composition on abstract tensors), the limits of a run (`limits`), variable values
(`params`), @quantize entries (`quantize`) and the Python intrinsics of body-less standard
operators (`intrinsics`).

May import: rings 0–3 (`core`, `numeric`, `syntax`, `language`, `lower`)."""
