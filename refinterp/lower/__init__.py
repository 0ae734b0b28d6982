"""Ring 3, @lower: the analysis of formulas shared by the engines, with their common vocabulary
(`plan`), the scalar engine that defines @lower element by element (`scalar`, with its
generated-code fast path `codegen`), the vector engine that must equal it (`vector`, which runs
each formula box by box: `vector_space` the iteration space and its boxes, `vector_eval` the
expression evaluator, `vector_access` tensor reads, `vector_store` writes), and the engines by
name (`engines`).

May import: rings 0–2 (`core`, `numeric`, `syntax`, `language`)."""
