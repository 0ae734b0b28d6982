"""refinterp: the reference interpreter and reference-semantics oracle for SkriptND (NNEF 2.0).

The package is layered in rings; a module imports only from its own ring and the rings below:

    0 core       source spans, diagnostics and their codes
    1 syntax     text → AST (lexer, parser, printer)        1 numeric  numeric rules, arrays, tensor files
    2 language   values, types, expressions, binding, instantiation, module loading
    3 lower      @lower: plan, scalar engine (the definition), vector engine
    4 run        @compose/@update executor, parameters, quantization, intrinsics
    5 (top)      api (the public Python API), io (data files), signature (discovery), cli

tests/test_layering.py enforces it; docs/architecture.md draws the data flow."""

__version__ = "0.1.0"
