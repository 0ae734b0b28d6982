"""Ring 1, numbers: THE numeric rules of SkriptND on scalars with the `spec` and `khronos`
profiles (`rules`), the same rules on whole arrays (`array_rules`), refinterp's array
representation (`representation`: real float64, int int64, bool; abstract tensors), the NNEF
binary tensor files (`tensorfile`), Nx's strided view model (`views`: a buffer read through
shape, strides, offset and mask; golden layout variants, docs/golden.md) and the error
magnitude of each elementary operation (`error_bounds`; docs/golden.md "Per-element error
bounds"), Nx's element types with typed evaluation's rounding and wrap-around (`nx_types`;
docs/nx.md "Typed evaluation") and symbolic extents (`symbolic`: shapes without values;
docs/semantics.md "Shapes without values").

May import: `refinterp.core`."""
