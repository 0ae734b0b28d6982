"""Ring 1, numbers: THE numeric rules of SkriptND on scalars with the `spec` and `khronos`
profiles (`rules`), the same rules on whole arrays (`array_rules`), refinterp's array
representation (`representation`: real float64, int int64, bool; abstract tensors) and the NNEF
binary tensor files (`tensorfile`).

May import: `refinterp.core`."""
