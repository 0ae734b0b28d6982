"""Ring 2, the static language: compile-time values (`values`), types and static checks
(`types`), the compile-time expression evaluator (`expr`), affine extents and the binding order
(`binding`), invocations and instances (`invocation`), binding an invocation's inputs
(`inputs`), operator instantiation (`instance`), the spec's static rules of a definition
(`checks`, `refinterp lint`), and module loading into programs (`modules`).
Everything here is known before a tensor value is computed.

May import: `refinterp.core`, `refinterp.numeric`, `refinterp.syntax`."""
