"""Ring 4, running operators and graphs: the executor of @compose and @update (`compose`, with
block scopes and scoped names in `scope`; it also checks a composition on abstract tensors,
`abstract`), where an error is reported (`locate`), the limits of a run (`limits`), what a run
tells its caller (`hooks`), variable values (`params`), @quantize entries (`quantize`), packs
of dynamic tensors (`jagged`), the executor carrying error magnitudes (`bounds`) and the
Python intrinsics of body-less standard operators (`intrinsics`).

May import: rings 0–3 (`core`, `numeric`, `syntax`, `language`, `lower`)."""
