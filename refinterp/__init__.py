"""refinterp: the reference interpreter and reference-semantics oracle for SkriptND (NNEF 2.0).

The package is layered in rings; a module imports only from its own ring and the rings below:

    0 core       source spans, diagnostics and their codes, caches, safe file access
    1 syntax     text → AST (lexer, parser, printer, serial form)
    1 numeric    numeric rules, arrays, tensor files, views, error magnitudes
    2 language   values, types, expressions, binding, instantiation, module loading
    3 lower      @lower: the plan, the reference engine (the definition), the engines that
                 must equal it
    4 run        @compose/@update executor, limits, parameters, quantization, intrinsics
    5 (top)      api (the public Python API), io (data files), signature (discovery), trace,
                 einsum, cli; golden, harness and backends on top of api and io

tests/test_layering.py enforces rings 0-4; docs/architecture.md is the map (packages, data
flow, where each spec section is implemented)."""

__version__ = "0.1.0"
