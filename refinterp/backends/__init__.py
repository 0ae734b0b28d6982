"""Real frameworks as harness back ends (docs/backends.md).

Each module adapts one framework to the harness's Python protocol (docs/harness.md, "Python"):
`prepare(case) -> runner`, `runner.run(inputs) -> outputs`, `Unsupported` for a case the
framework cannot express: ONNX Runtime (`onnxruntime`, `onnx_*`), PyTorch (`torch`,
`torch_*`) and JAX (`jax`, `jax_*`), with `calls` what the eager ones share. The framework is
an optional extra (`pip install -e '.[onnx]'`, `'.[torch]'`, `'.[jax]'`); a back end module
imported without it raises `Unsupported` from `prepare`, never at import time, so
`refinterp check --backend onnxruntime` says what is missing.

May import: any ring of refinterp (this package is in the top ring, like `harness`).
"""
