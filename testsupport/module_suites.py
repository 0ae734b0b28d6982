"""The module suites (golden/<module>/, docs/golden.md "Module suites") built for the tests:
only their tables and the sha256 of the frozen manifest (`cases/manifest.sha256`; the manifest
pins the sha256 of every case's case.json, and so of every file) are committed; each test process builds a
suite once from the tables into a temporary folder, removed at exit."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from refinterp.golden import build_suite, read_tables
from testsupport.paths import REPO_ROOT

MODULE_SUITES = ("nx", "ocannl")


def tables(module: str) -> list[Path]:
    """The committed case tables of a module suite."""
    return sorted((REPO_ROOT / "golden" / module / "cases").glob("*.toml"))


def frozen_manifest_sha256(module: str) -> str:
    """The sha256 of the manifest.json the built suite must reproduce byte for byte."""
    line = (REPO_ROOT / "golden" / module / "cases" / "manifest.sha256").read_text()
    return line.split()[0]


@functools.cache
def module_suite(module: str) -> Path:
    """The suite of `module`, built from its tables (once per process) as the documented
    command builds it in place: the tables in the suite's `cases/` folder (each case records
    the command that rebuilds it, with the table's path relative to the suite)."""
    root = Path(tempfile.mkdtemp(prefix=f"refinterp-{module}-suite-"))
    atexit.register(shutil.rmtree, root, True)
    suite = root / module
    shutil.copytree(REPO_ROOT / "golden" / module / "cases", suite / "cases")
    build_suite(read_tables(sorted((suite / "cases").glob("*.toml"))), suite, jobs=2)
    return suite
