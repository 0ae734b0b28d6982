"""Expectations: the failures and skips a back end is known to have (`--expect FILE`).

A file (TOML, or JSON with the same structure) holds a list `expect` of entries:

    [[expect]]
    id = "math\\.div/.*"     # a regular expression, matched against the whole case id
    status = "fail"          # "fail" (an expected failure) or "skip" (an expected skip)
    reason = "integer division truncates toward zero"
    phase = "compare"        # optional: prepare, run or compare

A failing case matched by a `fail` entry (of its phase, if given) is `xfail`; a passing case
matched by one is `xpass`, which fails the run unless `--allow-xpass`. A skip matched by a
`skip` entry is expected. An entry that matches no case is a warning. `--update-expect FILE`
writes the failures and skips of a run in this format.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from refinterp.core.diagnostics import GoldenDiagnostic
from refinterp.core.files import read_text, write_text
from refinterp.io import MAX_JSON_BYTES

PHASES = ("prepare", "run", "compare")


@dataclass(frozen=True)
class Expectation:
    pattern: str
    status: str
    reason: str
    phase: str | None = None

    def matches(self, case_id: str) -> bool:
        return re.fullmatch(self.pattern, case_id) is not None


def read_expectations(path: str | Path) -> list[Expectation]:
    """The entries of an expectations file; a wrong file is a diagnostic (E0901), one that
    cannot be read — no regular file (a FIFO, a device), above `io.MAX_JSON_BYTES`, not
    UTF-8 — is E0800 (core.files)."""
    path = Path(path)
    text = read_text(path, "the expectations", MAX_JSON_BYTES)
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (RecursionError, ValueError) as error:
        raise GoldenDiagnostic(f"cannot read the expectations '{path}': {error}",
                               code="E0901") from None
    if not isinstance(data, dict):  # a JSON array or value
        raise GoldenDiagnostic(f"the expectations '{path}' are no table of [[expect]] entries",
                               code="E0901")
    result = []
    for k, entry in enumerate(data.get("expect", [])):
        where = f"expectations '{path}', entry {k + 1}"
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise GoldenDiagnostic(f"{where}: an entry needs id = \"<regex>\"", code="E0901")
        status, phase = entry.get("status", "fail"), entry.get("phase")
        if status not in ("fail", "skip") or (phase is not None and phase not in PHASES):
            raise GoldenDiagnostic(f"{where}: status is fail or skip, phase one of "
                                   f"{', '.join(PHASES)}", code="E0901")
        try:
            re.compile(entry["id"])
        except re.error as error:
            raise GoldenDiagnostic(f"{where}: id is no regular expression: {error}",
                                   code="E0901") from None
        result.append(Expectation(entry["id"], status, str(entry.get("reason", "")), phase))
    return result


def find(expectations: list[Expectation], case_id: str, status: str,
         phase: str = "") -> Expectation | None:
    """The first entry of `status` matching the case (and its phase, if the entry has one)."""
    for entry in expectations:
        if entry.status == status and entry.matches(case_id) and \
                (entry.phase is None or not phase or entry.phase == phase):
            return entry
    return None


def unused(expectations: list[Expectation], case_ids: Iterable[str]) -> list[Expectation]:
    ids = list(case_ids)
    return [e for e in expectations if not any(e.matches(i) for i in ids)]


def write_expectations(path: str | Path, results: list[Any]) -> int:
    """Write the failures (incl. expected ones) and skips of a run, replacing the file
    atomically (core.files; E0801 if it cannot be written); the number of entries."""
    lines = ["# refinterp check --update-expect: the failures and skips of a run",
             "# (docs/harness.md, \"Expectations\")", ""]
    count = 0
    for result in sorted(results, key=lambda r: r.id):
        if result.status not in ("fail", "xfail", "skip"):
            continue
        status = "skip" if result.status == "skip" else "fail"
        reason = (result.reason or "") + (": " if result.reason else "") + \
            (result.explanation.splitlines() or [""])[0]
        lines += ["[[expect]]", f"id = {json.dumps(re.escape(result.id))}",
                  f"status = {json.dumps(status)}", f"reason = {json.dumps(reason.strip())}"]
        if result.phase:
            lines.append(f"phase = {json.dumps(result.phase)}")
        lines.append("")
        count += 1
    write_text(path, "\n".join(lines), "the expectations file")
    return count
