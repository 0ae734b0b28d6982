"""Reading a golden suite back: verifying hashes and recomputing cases (`refinterp golden
verify`), indexing a folder of case folders as a suite (`refinterp golden index`), and
rendering a case as deterministic text (`refinterp golden show`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

import refinterp.api as api
from refinterp.golden.build import (Computed, case_folders, compute, kept_magnitudes, recover,
                                    relative_to_graph, sha256, write_suite_manifest)
from refinterp.golden.layouts import check_layouts
from refinterp.golden.schema import read_case_manifest, read_suite_manifest
from refinterp.golden.tolerance import Bound, within
from refinterp.io import (MAX_INPUT_SIZE, MAX_JSON_BYTES, encode_npy, flatten_packs,
                          group_packs, read_arrays, read_params)
from refinterp.numeric.representation import kind_of
from refinterp.core.diagnostics import Diagnostic, GoldenDiagnostic
from refinterp.core.files import read_chunks, read_text
from refinterp.core.files import MAX_SOURCE_BYTES


SUITE_REPORT = "<suite>"  # the id of a report about the suite itself, not one of its cases


@dataclass
class CaseReport:
    """What verifying one case found: `problems` is empty when the case is sound."""

    id: str
    path: str
    problems: list[str] = field(default_factory=list)


def load_case(folder: Path) -> dict[str, Any]:
    """case.json of a case folder, as data, its fields checked (golden.schema)."""
    return read_case_manifest(folder)


def case_arrays(folder: Path, name: str,
                max_input_size: int = MAX_INPUT_SIZE) -> dict[str, Any]:
    """The arrays of `<name>.npz` in a case folder, packs regrouped as lists ({} if absent)."""
    path = folder / f"{name}.npz"
    if not path.exists():
        return {}
    reader = read_params if name == "params" else read_arrays
    return group_packs(reader(path, f"the case's {name}.npz", max_input_size=max_input_size))


def file_sha256(path: Path, what: str, limit: int) -> str:
    """The sha256 of a regular file of at most `limit` bytes, read in pieces (a FIFO or a
    device is a FileDiagnostic, E0800, unread: core.files)."""
    digest = hashlib.sha256()
    for piece in read_chunks(path, what, limit):
        digest.update(piece)
    return digest.hexdigest()


def check_hashes(folder: Path, case: dict[str, Any],
                 max_input_size: int = MAX_INPUT_SIZE) -> list[str]:
    """Every file and array hash of a case against its files; what does not match. A file is
    hashed within `max_input_size` bytes."""
    problems = []
    for name, digest in case.get("files", {}).items():
        path = folder / name
        if not path.exists():
            problems.append(f"{name} is missing")
        elif file_sha256(path, name, max_input_size) != digest:
            problems.append(f"{name}: sha256 differs from case.json")
    for section in ("inputs", "outputs", "params", "updated"):
        npz = section
        entries = case.get(section, {})
        if not entries or not (folder / f"{npz}.npz").exists() or \
                any(p.startswith(f"{npz}.npz") for p in problems):
            continue
        stored = read_arrays(folder / f"{npz}.npz", f"{npz}.npz", max_input_size=max_input_size)
        for key, entry in entries.items():
            if key not in stored:
                problems.append(f"{npz}.npz has no array '{key}'")
            elif sha256(encode_npy(stored[key])) != entry["sha256"]:
                problems.append(f"{npz}.npz '{key}': sha256 differs from case.json")
    return problems


def recompute(folder: Path, case: dict[str, Any],
              max_input_size: int = MAX_INPUT_SIZE) -> Computed:
    """Run the case's model.sknd on its inputs (and params) under its profile."""
    program = api.load(folder / "model.sknd")
    params = case_arrays(folder, "params", max_input_size) or None
    return compute(program, case_arrays(folder, "inputs", max_input_size),
                   profile=case.get("profile", "spec"),
                   params=params)


def drift(folder: Path, case: dict[str, Any], computed: Computed,
          max_input_size: int = MAX_INPUT_SIZE) -> list[str]:
    """How a recomputation differs from the stored case (nothing when bit-identical)."""
    expected_error = case.get("error")
    if expected_error is not None:
        if computed.error is None:
            return [f"expected error {expected_error['code']}, but the case now runs"]
        if computed.error.code != expected_error["code"]:
            return [f"expected error {expected_error['code']}, now {computed.error.code}: "
                    f"{computed.error.message}"]
        return []
    if computed.error is not None:
        return [f"now fails with {computed.error.code}: {computed.error.message}"]
    problems = _section_drift("output", computed.outputs,
                              case_arrays(folder, "outputs", max_input_size),
                              case.get("outputs", {}))
    outputs = case.get("outputs", {})
    if outputs:  # one tolerance per case: its outputs share class, length and magnitude
        kept_magnitudes(computed, next(iter(outputs.values()))["tolerance"])
    problems += _section_drift("error magnitude", computed.magnitudes,
                               case_arrays(folder, "bounds", max_input_size), {})
    updated = relative_to_graph(api.load(folder / "model.sknd"), computed.updated)
    problems += _section_drift("updated variable", updated,
                               case_arrays(folder, "updated", max_input_size),
                               case.get("updated", {}))
    return problems


def _section_drift(what: str, computed: dict[str, Any], stored: dict[str, Any],
                   entries: dict[str, Any]) -> list[str]:
    now, before = flatten_packs(computed), flatten_packs(stored)
    if set(now) != set(before):
        return [f"{what}s are now {sorted(now)}, stored {sorted(before)}"]
    problems = []
    for key in sorted(before):
        if encode_npy(now[key]) == encode_npy(before[key]):
            continue
        if np.shape(now[key]) != np.shape(before[key]) or now[key].dtype != before[key].dtype:
            problems.append(f"{what} '{key}': now {now[key].dtype}{list(np.shape(now[key]))}, "
                            f"stored {before[key].dtype}{list(np.shape(before[key]))}")
            continue
        tolerance = entries.get(key, {}).get("tolerance", {}).get("float64", {})
        inside = within(now[key], before[key], Bound.from_json(tolerance)).all()
        problems.append(f"{what} '{key}': {_changed(now[key], before[key])} element(s) differ "
                        f"from the stored value ({'within' if inside else 'beyond'} its "
                        f"float64 tolerance)")
    return problems


def _changed(now: np.ndarray, before: np.ndarray) -> int:
    """How many elements differ bit for bit (NaN == NaN, -0.0 != 0.0)."""
    if now.dtype.kind == "f":
        return int(np.sum(now.view(np.int64) != before.view(np.int64)))
    return int(np.sum(now != before))


def verify_suite(suite: str | Path, *, recompute_cases: bool = True,
                 include: Callable[[str], bool] | None = None,
                 progress: Callable[[str], None] | None = None,
                 max_input_size: int = MAX_INPUT_SIZE) -> list[CaseReport]:
    """Check a suite: manifest.json against the case folders, every hash, and (unless
    `recompute_cases` is False) every case recomputed bit for bit. A case's file or array
    archive holding more than `max_input_size` bytes is a problem of the case (E0800)."""
    suite = Path(suite)
    if (suite / "case.json").exists():  # a single case folder (eval --save-case)
        return [_verify_case(suite, suite.name, None, recompute_cases,
                             max_input_size=max_input_size)]
    reports: list[CaseReport] = []
    manifest_path = suite / "manifest.json"
    if not manifest_path.exists():
        return _unindexed(suite, recompute_cases, max_input_size)
    try:
        listed = {entry["path"]: entry for entry in read_suite_manifest(suite)}
    except Diagnostic as error:
        return [CaseReport(SUITE_REPORT, str(suite), [f"{error.message} [{error.code}]"])]
    present = {folder.relative_to(suite).as_posix() for folder in case_folders(suite)}
    if not listed and not present:
        reports.append(CaseReport(SUITE_REPORT, str(suite), ["no cases: manifest.json lists "
                                                             "none and no case folder is "
                                                             "here"]))
    for path in sorted(present - set(listed)):
        reports.append(CaseReport(path, path, ["a case folder that manifest.json does not list"]))
    for path, entry in sorted(listed.items()):
        if include is not None and not include(entry["id"]):
            continue
        if progress is not None:
            progress(entry["id"])
        if path not in present:
            reports.append(CaseReport(entry["id"], path, ["listed in manifest.json but missing"]))
            continue
        reports.append(_verify_case(suite / path, entry["id"], entry["sha256"],
                                    recompute_cases, path, max_input_size))
    return reports


def _unindexed(suite: Path, recompute_cases: bool, max_input_size: int) -> list[CaseReport]:
    """A folder without manifest.json: a report saying so (`no cases` if it holds no case
    folder either), then each case folder in it checked alone."""
    found = case_folders(suite)
    problem = "no cases: no manifest.json and no case folder (one holding case.json)" \
        if not found else f"manifest.json is missing; index the {len(found)} case folder(s) " \
        f"with `refinterp golden index {suite}`"
    reports = [CaseReport(SUITE_REPORT, str(suite), [problem])]
    for folder in found:
        path = folder.relative_to(suite).as_posix()
        reports.append(_verify_case(folder, path, None, recompute_cases, path, max_input_size))
    return reports


def index_suite(suite: str | Path, max_input_size: int = MAX_INPUT_SIZE) -> dict[str, Any]:
    """Write (or refresh) the manifest.json of a folder of case folders (saved runs, copied
    cases), so that it verifies and is checked like a built suite; the manifest written.
    Every case's case.json and file and array hashes are checked first: a bad case, two cases
    with one id, or a folder without cases is a GoldenDiagnostic (E1102) and nothing is
    written; manifest.json is replaced atomically. Leftovers of an interrupted build are
    tidied first (build.recover)."""
    suite = Path(suite)
    if not suite.is_dir():
        raise GoldenDiagnostic(f"no suite folder '{suite}'", code="E0800")
    if (suite / "case.json").exists():
        raise GoldenDiagnostic(f"'{suite}' is a case folder; index the folder that holds it",
                               code="E1102")
    recover(suite)
    folders = case_folders(suite)
    if not folders:
        raise GoldenDiagnostic(f"no cases in '{suite}': no case folder (one holding case.json)",
                               code="E1102")
    bad: list[str] = []
    ids: dict[str, str] = {}
    for folder in folders:
        path = folder.relative_to(suite).as_posix()
        try:
            case = load_case(folder)
            problems = check_hashes(folder, case, max_input_size)
        except Diagnostic as error:
            problems = [f"{error.message} [{error.code}]"]
        except OSError as error:
            problems = [f"cannot be read: {error.strerror or error}"]
        if not problems and case["id"] in ids:
            problems = [f"its id '{case['id']}' is also the id of {ids[case['id']]}"]
        if problems:
            bad.append(f"{path}: {'; '.join(problems)}")
        else:
            ids[case["id"]] = path
    if bad:
        raise GoldenDiagnostic(f"case {bad[0]}; nothing indexed (re-save or rebuild the case, or "
                               f"remove its folder)", code="E1102",
                               notes=[f"also case {b}" for b in bad[1:]])
    return write_suite_manifest(suite)


def _verify_case(folder: Path, case_id: str, digest: str | None, recompute_cases: bool,
                 path: str = ".", max_input_size: int = MAX_INPUT_SIZE) -> CaseReport:
    """Check one case folder: case.json against `digest` (from the suite manifest, if any),
    every hash, then (with `recompute_cases`) its values recomputed."""
    report = CaseReport(case_id, path)
    try:
        if digest is not None and \
                file_sha256(folder / "case.json", "case.json", MAX_JSON_BYTES) != digest:
            report.problems.append("case.json: sha256 differs from manifest.json")
        case = load_case(folder)
        report.problems.extend(check_hashes(folder, case, max_input_size))
        if not report.problems:  # an input layout must read back its logical input
            report.problems.extend(check_layouts(folder, case, max_input_size))
        if recompute_cases and not report.problems:
            computed = recompute(folder, case, max_input_size)
            report.problems.extend(drift(folder, case, computed, max_input_size))
    except Diagnostic as error:
        report.problems.append(f"cannot be read or run: {error.message} [{error.code}]")
    except OSError as error:
        report.problems.append(f"cannot be read: {error.strerror or error}")
    return report


# --------------------------------------------------------------------------- show


def _format_array(array: np.ndarray) -> str:
    """Every element, in a fixed layout: reals as the shortest repr that reads back exactly."""
    array = np.asarray(array)
    if array.dtype.kind == "f":
        formatter = {"float_kind": lambda v: repr(float(v))}
    else:
        formatter = None
    return np.array2string(array, threshold=np.inf, max_line_width=100, separator=", ",
                           formatter=formatter)


def show_case(folder: str | Path) -> str:
    """A deterministic, diffable text rendering of a case: its manifest, its model, the
    modules copied beside it (a user's operator file and its imports) and every array in
    full."""
    folder = Path(folder)
    case = read_case_manifest(folder)  # a damaged case.json is a diagnostic, not a rendering
    modules = sorted(name for name in case.get("files", {})
                     if name.endswith((".sknd", ".nnef")) and name != "model.sknd")
    parts = []
    for name, limit in [("case.json", MAX_JSON_BYTES), ("model.sknd", MAX_SOURCE_BYTES),
                        *((module, MAX_SOURCE_BYTES) for module in modules)]:
        parts.append(f"== {name}")
        try:
            parts.append(read_text(folder / name, name, limit).rstrip())
        except Diagnostic as error:  # a regular UTF-8 file within the limit (core.files)
            parts.append(f"(cannot be read: {error.message})")
    for name in ("inputs", "views", "params", "outputs", "updated"):
        path = folder / f"{name}.npz"
        if not path.exists():
            continue
        for key, array in read_arrays(path, f"{name}.npz").items():
            parts.append(f"== {name}.npz {key}: {kind_of(array)}{list(array.shape)}")
            parts.append(_format_array(array))
    return "\n".join(parts) + "\n"
