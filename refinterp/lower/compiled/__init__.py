"""The compiled engine: a @lower formula as generated Python source, folded first where the
instance decides its rank-polymorphic parts (`fold`); code generation in `source` (what
generated code may contain), `expressions`, `accesses` and `kernel` (the formula); `engine`
(the entry point) compiles and runs the kernels and hands a formula it refuses to the
reference (refinterp.lower.reference).

May import: rings 0–2 and refinterp.lower's `plan`, `common` and `reference`."""
