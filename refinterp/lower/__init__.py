"""Ring 3, @lower: the analysis of formulas shared by the engines (`plan`), the scalar engine
that defines @lower element by element (`scalar`, with its generated-code fast path `codegen`),
the vector engine that must equal it (`vector`), and the engines by name (`engines`).

May import: rings 0–2 (`core`, `numeric`, `syntax`, `language`)."""
