"""The differential harness: any back end run on a golden suite, every mismatch explained
(docs/harness.md).

- `suite`: golden cases as the harness sees them; `backends`: the back-end protocol, the
  subprocess, Python and built-in back ends; `compare`: the verdict on outputs;
- `explain`: other profiles, higher precision, probes; `shrink`: the smallest failing case;
- `trust`: a case verified before it runs, and the back end's own copy of it;
- `suite_run`: a back end run on a suite: selecting, running (processes; Dask in
  `distributed`), expectations (`expect`); `report`: summary, coverage, skips, the text
  report, JSON, JUnit, merging; `html_report`: the HTML report, drawn by `pictures` (SVG)
  from each mismatch's `figures`; `pytest_plugin`: one pytest test per case;
- `processes` and `worker`: back-end processes (process groups, sweeps of what they leave)
  and Python back ends run in worker processes.

May import: everything below the top ring, `refinterp.api`, `refinterp.io`, `refinterp.golden`
and `refinterp.trace` (probes).
"""

from refinterp.harness.backends import (BackendFailure, BackendNameError, CommandBackend,
                                        RefinterpBackend, Unsupported, resolve)
from refinterp.harness.compare import Outcome, Override, compare
from refinterp.harness.suite_run import (BackendSpec, Options, Result, check_case, failed,
                                         ran, run_suite)
from refinterp.harness.expect import read_expectations, unused, write_expectations
from refinterp.harness.report import (STDOUT, coverage, load_results, print_report,
                                      print_summary, skip_reasons, summary, write_json,
                                      write_junit)
from refinterp.harness.html_report import write_html
from refinterp.harness.shrink import shrink_failures
from refinterp.harness.suite import Case, load_case, load_suite

__all__ = ["STDOUT", "BackendFailure", "BackendNameError", "BackendSpec", "Case",
           "CommandBackend", "Options", "Outcome", "Override", "RefinterpBackend", "Result",
           "Unsupported", "check_case", "compare", "coverage", "failed", "load_case", "load_results",
           "load_suite", "print_report", "print_summary", "ran", "read_expectations",
           "resolve", "run_suite", "shrink_failures", "skip_reasons", "summary", "unused",
           "write_expectations", "write_html", "write_json", "write_junit"]
