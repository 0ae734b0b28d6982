"""Checking a golden case before the harness trusts it, and the back end's own copy of it
(docs/harness.md, "Trusting the suite").

Before a case runs, `verified` checks it where it lies in the suite: its case.json against the
sha256 the suite's manifest.json states, every file and array hash case.json states
(golden.verify.check_hashes), every input layout (golden.layouts.check_layouts, after
checking that each view can be materialised within the size limit), and that every file the
harness reads is one case.json lists; then it reads the case's arrays, so that the verdict
is reached with what was verified. A case that fails any of this is `BrokenCase`: reported
`broken`, never a verdict on the back end.

`backend_copy` gives the back end a fresh temporary folder holding a copy of the case's files
(each hashed again while copied), so that `{dir}`, `{model}`, `{inputs}`, ... never point into
the suite: whatever the back end writes there is gone with the folder, after the case. The
folder's name holds the pid of the process that made it, so that when a -j worker dies in
the middle of a case, the harness removes what it left (`remove_copies`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from refinterp.core.diagnostics import Diagnostic
from refinterp.core.files import read_chunks
from refinterp.golden.layouts import VIEWS_FILE, check_layouts
from refinterp.golden.schema import read_case_manifest
from refinterp.golden.verify import check_hashes, file_sha256
from refinterp.harness.suite import Case
from refinterp.io import MAX_JSON_BYTES
from refinterp.numeric.views import from_json

MODEL = "model.sknd"
COPY_PREFIX = "refinterp-case-"  # + the pid of the process that made the copy + "-"
READ = (MODEL, "inputs.npz", "params.npz", "outputs.npz", VIEWS_FILE)  # what the harness reads
ADDRESS_BYTES = 8  # materialising a view computes one int64 address per element


class BrokenCase(Exception):
    """A case the harness cannot read, verify or prepare: the text says why."""


def verified(case: Case) -> Case:
    """`case` read again from its folder and checked (the module docstring), its arrays read;
    BrokenCase if it cannot be read or does not verify."""
    if case.broken is not None:
        raise BrokenCase(case.broken)
    try:
        return _verified(case)
    except BrokenCase:
        raise
    except Diagnostic as error:
        raise BrokenCase(f"{error.message} [{error.code}]") from None
    except OSError as error:
        raise BrokenCase(f"cannot be read: {error.strerror or error}") from None
    except (ValueError, MemoryError) as error:
        raise BrokenCase(f"cannot be read: {type(error).__name__}: {error}") from None


def _verified(case: Case) -> Case:
    folder, limit = case.folder, case.max_input_size
    if case.digest is not None and \
            file_sha256(folder / "case.json", "case.json", MAX_JSON_BYTES) != case.digest:
        raise BrokenCase("case.json: sha256 differs from the suite's manifest.json")
    manifest = read_case_manifest(folder)
    if manifest["id"] != case.id:
        raise BrokenCase(f"case.json names the case '{manifest['id']}', the suite's "
                         f"manifest.json '{case.id}'")
    problems = _unlisted(folder, manifest) or check_hashes(folder, manifest, limit)
    if not problems:
        problems = _view_sizes(manifest, limit) or check_layouts(folder, manifest, limit)
    if problems:
        raise BrokenCase("; ".join(problems))
    fresh = Case(case.id, folder, manifest, limit, case.digest)
    for arrays in ("inputs", "params", "expected", "layouts"):
        getattr(fresh, arrays)  # read now: the verdict uses what was just verified
    return fresh


def _unlisted(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """The files the harness would read that case.json's `files` does not list (their hash
    unknown): model.sknd must be listed; the others if present."""
    files = manifest.get("files", {})
    return [f"{name} is not listed in case.json's files (its sha256 is unknown)"
            for name in READ if name not in files
            and (name == MODEL or os.path.lexists(folder / name))]


def _view_sizes(manifest: dict[str, Any], limit: int) -> list[str]:
    """The input views that cannot be materialised within `limit` bytes (the addresses of
    their elements alone would take more)."""
    problems = []
    for key, entry in manifest.get("inputs", {}).items():
        if "view" not in entry:
            continue
        count = from_json(entry["view"]).numel
        if count * ADDRESS_BYTES > limit:
            problems.append(f"the view of input '{key}' has {count} elements: materialising "
                            f"it needs {count * ADDRESS_BYTES} bytes, above the limit of "
                            f"{limit} (--max-input-size)")
    return problems


@contextmanager
def backend_copy(case: Case) -> Iterator[Case]:
    """The case as the back end gets it: a copy of case.json and of every file it lists in a
    fresh temporary folder (named as the case's own folder, inside a new folder of the
    system's temporary folder), removed afterwards. Each file is hashed as it is copied
    (BrokenCase if it changed since `verified`)."""
    top = Path(tempfile.mkdtemp(prefix=f"{COPY_PREFIX}{os.getpid()}-"))
    try:
        folder = top / case.folder.resolve().name
        folder.mkdir()
        files = {"case.json": case.digest, **case.manifest.get("files", {})}
        for name, digest in files.items():
            _copy(case.folder / name, folder / name, digest, case.max_input_size)
        yield Case(case.id, folder, case.manifest, case.max_input_size, case.digest)
    finally:
        remove(top)


def _copy(source: Path, target: Path, digest: str | None, limit: int) -> None:
    """Copy a regular file within `limit` bytes (core.files.read_chunks), checking its
    sha256 against `digest` (if any) on the way."""
    hasher = hashlib.sha256()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)  # a listed file may be in a folder
        with open(target, "xb") as out:
            for piece in read_chunks(source, source.name, max(limit, MAX_JSON_BYTES)):
                hasher.update(piece)
                out.write(piece)
    except Diagnostic as error:
        raise BrokenCase(f"{error.message} [{error.code}]") from None
    except OSError as error:
        raise BrokenCase(f"cannot copy {source.name} for the back end: "
                         f"{error.strerror or error}") from None
    if digest is not None and hasher.hexdigest() != digest:
        raise BrokenCase(f"{source.name} changed after it was verified")


def remove_copies(pid: int) -> None:
    """Remove the case copies process `pid` made and left: a -j worker that died (or was
    killed) while checking a case."""
    for folder in Path(tempfile.gettempdir()).glob(f"{COPY_PREFIX}{pid}-*"):
        remove(folder)


def remove(folder: Path) -> None:
    """Remove a folder a back end had, even one it made unreadable inside (its folders are
    made accessible again first; a link is removed, never followed)."""
    _accessible(str(folder))
    for root, folders, _ in os.walk(folder):
        for name in folders:
            _accessible(os.path.join(root, name))
    shutil.rmtree(folder, ignore_errors=True)


def _accessible(path: str) -> None:
    if not os.path.islink(path):
        try:
            os.chmod(path, stat.S_IRWXU)
        except OSError:
            pass
