"""Golden fixtures: frozen, hash-verified cases of what SkriptND operators and models must
compute, readable from any language (docs/golden.md).

- `table`: case tables (TOML) -> `CaseSpec`s; `tolerance`: tolerance classes and the rule;
- `model`: the `model.sknd` graph of an operator case;
- `build`: computing cases and writing case folders and the suite manifest;
- `verify`: checking hashes, recomputing, rendering a case as text;
- `layouts`: layout variants, inputs delivered as strided views of a buffer;
- `magnitudes`: the per-element error magnitudes of a case's outputs (bounds.npz).
- `generate`: suites generated from an operator's signature (`golden generate`).

May import: everything below the top ring (and `refinterp.api`, `refinterp.io`).
"""

from refinterp.golden.build import (BuildError, build_suite, per_operator, read_tables, select,
                                    save_operator_case, write_model_case, write_suite_manifest)
from refinterp.golden.generate_table import generate_suite
from refinterp.golden.table import CaseSpec, TableError, read_table
from refinterp.golden.tolerance import CLASSES, Bound, bounds, ulp_distance, within
from refinterp.golden.verify import (SUITE_REPORT, CaseReport, index_suite, show_case,
                                     verify_suite)

__all__ = ["BuildError", "Bound", "CLASSES", "CaseReport", "CaseSpec", "SUITE_REPORT",
           "TableError", "bounds", "build_suite", "generate_suite", "index_suite",
           "per_operator", "read_table",
           "read_tables", "save_operator_case", "select", "show_case", "ulp_distance",
           "verify_suite", "within", "write_model_case", "write_suite_manifest"]
