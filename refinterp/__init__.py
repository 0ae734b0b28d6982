"""refinterp: the reference interpreter and reference-semantics oracle for SkriptND (NNEF 2.0).

The package is layered in rings; a module imports only from its own ring and the rings below:

    0 core       source spans, diagnostics and their codes, caches, safe file access
    1 syntax     text → AST (lexer, parser, printer, serial form)
    1 numeric    numeric rules, arrays, tensor files, views, error magnitudes
    2 language   values, types, expressions, binding, instantiation, module loading
    3 lower      @lower: the plan, the reference engine (the definition), the engines that
                 must equal it
    4 run        @compose/@update executor, limits, parameters, quantization, intrinsics
    5 io         data files (.npz, .npy, NNEF tensor files); signature: operator discovery
    6 api        the public Python API
    7 golden     fixtures; trace: run traces; einsum: einsum specs as operators
    8 harness    back ends run on golden suites, verdicts, explanations
    9 backends   ONNX Runtime, PyTorch, JAX as back ends; cli: the command line
   10 __main__   `python -m refinterp`

A module may also import its own package, never another package of its ring. This face holds
only the version and imports nothing, so any module may read it. tests/test_layering.py
enforces the rings; docs/architecture.md is the map (packages, data
flow, where each spec section is implemented)."""

__version__ = "0.1.0"
