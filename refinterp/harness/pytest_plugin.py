"""A pytest plugin: one test per golden case, so that a suite runs under pytest-xdist and any
CI's test reporting (docs/harness.md, "pytest").

    pytest --refinterp-suite golden --refinterp-backend-cmd 'tool {model} {inputs} {outputs}'
    pytest --refinterp-suite golden --refinterp-backend refinterp:vector -n 4

It is registered under the `pytest11` entry point and does nothing unless `--refinterp-suite`
is given; then the suite's cases are the tests (nothing else is collected). Test ids are the
case ids; a skip is a pytest skip, an expected failure (`--refinterp-expect FILE`) an xfail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("refinterp", "refinterp golden suites")
    group.addoption("--refinterp-suite", metavar="DIR", help="run the cases of a golden suite")
    group.addoption("--refinterp-backend-cmd", metavar="COMMAND",
                    help="the back end: a command with {model} {dir} {inputs} {params} "
                         "{outputs} {probes} {views}")
    group.addoption("--refinterp-backend", metavar="NAME",
                    help="the back end by name (refinterp:vector, module:attribute, ...)")
    group.addoption("--refinterp-profile", default=None, help="the profile a command follows")
    group.addoption("--refinterp-timeout", type=float, default=60.0, help="seconds per case")
    group.addoption("--refinterp-expect", metavar="FILE", help="expected failures and skips")
    group.addoption("--refinterp-dtype", default="kind", help="dtype policy: exact|kind|values")


def pytest_configure(config: Any) -> None:
    suite = config.getoption("--refinterp-suite", default=None)
    if suite:
        if not config.getoption("--refinterp-backend-cmd") and \
                not config.getoption("--refinterp-backend"):
            raise pytest.UsageError("--refinterp-suite needs --refinterp-backend-cmd or "
                                    "--refinterp-backend")
        manifest = Path(suite) / "manifest.json"
        if not manifest.exists():
            raise pytest.UsageError(f"--refinterp-suite: no {manifest}")
        config.args[:] = [str(manifest)]  # the suite's cases are the tests


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    suite = parent.config.getoption("--refinterp-suite", default=None)
    if suite and file_path == (Path(suite) / "manifest.json").resolve():
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class SuiteFile(pytest.File):
    def collect(self) -> Any:
        from refinterp.harness.backends import resolve
        from refinterp.harness.suite_run import BackendSpec, applicable, select
        from refinterp.harness.suite import load_suite

        config = self.config
        spec = BackendSpec(config.getoption("--refinterp-backend"),
                           config.getoption("--refinterp-backend-cmd"),
                           config.getoption("--refinterp-timeout"),
                           config.getoption("--refinterp-profile"))
        profile = spec.profile or (getattr(resolve(spec.name), "profile", "spec")
                                   if spec.name else "spec")
        for case in select(applicable(load_suite(self.path.parent), profile)):
            yield CaseItem.from_parent(self, name=case.id, spec=spec, case=case)


class CaseFailure(Exception):
    """A case the back end failed: its explanation is the test's failure report."""


class CaseItem(pytest.Item):
    def __init__(self, *, spec: Any, case: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec, self.case = spec, case

    def runtest(self) -> None:
        from refinterp.harness.compare import Override
        from refinterp.harness.expect import read_expectations
        from refinterp.harness.suite_run import Options, apply_expectations, run_one

        config = self.config
        options = Options(policy=config.getoption("--refinterp-dtype"), override=Override(),
                          timeout=config.getoption("--refinterp-timeout"))
        result = run_one(self.spec, self.case, options)
        expect = config.getoption("--refinterp-expect")
        if expect:
            apply_expectations([result], read_expectations(expect))
        if result.status == "skip":
            pytest.skip(result.explanation or "unsupported")
        if result.status == "xfail":
            pytest.xfail(result.expected or "expected failure")
        if result.status == "xpass":
            raise CaseFailure(f"unexpected pass (expected to fail: {result.expected})")
        if result.status == "fail":
            raise CaseFailure(f"[{result.reason}] {result.explanation}")
        if result.status == "broken":  # the suite's or the harness's problem: never a pass
            raise CaseFailure(f"[broken case] {result.explanation}")

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, 0, f"golden case {self.name}"
