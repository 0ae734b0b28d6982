"""Ring 3, @lower: the formulas' plans and vocabulary (`plan`), what every engine shares
(`common`), and the engines that run them: `reference` (the definition, element by element),
`compiled` (generated Python source, the reference where it refuses), `vector` (whole-array
NumPy, the compiled engine where it refuses), chosen by name in `engines`; `bounds` runs the
reference on values carrying their error magnitudes.

May import: rings 0–2 (`core`, `numeric`, `syntax`, `language`)."""
