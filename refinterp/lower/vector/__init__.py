"""The vector engine: a @lower block with whole-array NumPy operations, which must compute the
function the reference defines (docs/performance.md, "The vector engine"). `space`: the
iteration space, its boxes and what a formula needs before it runs; `evaluation`: the value of
an expression over a box; `access`: tensor reads; `stores`: writes (view assignment,
reduction, contraction, scatter), with `taps` (tap-by-tap stores), `sums` (sums in another
order than the definition's, certified or summed again) and `products` (BLAS and einsum
contractions); `engine`: the entry point, each formula box by box, a refused one on the
compiled engine.

May import: rings 0–2 and refinterp.lower's `plan`, `common`, `reference` and `compiled`."""
