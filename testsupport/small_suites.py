"""Small golden suites for tests: a few case folders of a committed suite copied into a
temporary folder with their manifest entries, so that a test may damage or rewrite them
without touching the committed suite (golden/ is never modified by tests).

It uses the standard library only (no refinterp import): a case is copied byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Iterable


def copy_suite(source: Path, ids: Iterable[str], target: Path) -> Path:
    """A suite at `target` holding the cases `ids` of the suite at `source` (their folders
    copied, the manifest holding their entries as they are); returns `target`."""
    manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    wanted = set(ids)
    entries = [entry for entry in manifest["cases"] if entry["id"] in wanted]
    missing = wanted - {entry["id"] for entry in entries}
    if missing:
        raise KeyError(f"no case {sorted(missing)} in {source}")
    target.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        shutil.copytree(source / entry["path"], target / entry["path"])
    write_manifest(target, {**manifest, "cases": entries, "count": len(entries)})
    return target


def write_manifest(suite: Path, manifest: dict[str, Any]) -> None:
    """manifest.json of a suite, as the builder lays it out."""
    (suite / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                         encoding="utf-8")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rewrite_case(suite: Path, case_id: str, change: Any) -> None:
    """Apply `change(case_json_dict)` to a case's case.json and update the suite manifest's
    sha256 of it, so that the edit is consistent (only the edited content is wrong)."""
    manifest = json.loads((suite / "manifest.json").read_text(encoding="utf-8"))
    entry = next(e for e in manifest["cases"] if e["id"] == case_id)
    path = suite / entry["path"] / "case.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    entry["sha256"] = sha256(path)
    write_manifest(suite, manifest)


def rehash_file(suite: Path, case_id: str, name: str) -> None:
    """Record the current sha256 of a case's file `name` in its case.json (and the case.json
    in the suite manifest): a consistent case whose file was rewritten on purpose."""
    rewrite_case(suite, case_id, lambda data: data["files"].__setitem__(
        name, sha256(suite / case_path(suite, case_id) / name)))


def case_path(suite: Path, case_id: str) -> str:
    manifest = json.loads((suite / "manifest.json").read_text(encoding="utf-8"))
    return next(e["path"] for e in manifest["cases"] if e["id"] == case_id)
