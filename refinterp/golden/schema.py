"""Reading the manifests of a golden suite as untrusted input: every field `verify`, `show`
and the harness use is checked for its type before use (docs/golden.md lists the fields), so
that a damaged or hand-edited manifest is a diagnostic naming the file and the field, never an
internal error."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from refinterp.core.diagnostics import GoldenDiagnostic
from refinterp.core.files import is_temporary
from refinterp.io import read_json
from refinterp.numeric.views import ViewError, from_json

ARRAY_SECTIONS = ("inputs", "params", "outputs", "updated")


class ManifestError(GoldenDiagnostic):
    """A manifest whose fields are not what docs/golden.md says (E0800)."""

    default_code = "E0800"


def _fail(path: Path, field: str, expected: str) -> ManifestError:
    return ManifestError(f"'{path}': {field} must be {expected}")


def _dict(data: Any, path: Path, field: str) -> dict:
    if not isinstance(data, dict):
        raise _fail(path, field, "an object")
    return data


def _string(data: Any, path: Path, field: str) -> str:
    if not isinstance(data, str):
        raise _fail(path, field, "a string")
    return data


def _number(data: Any, path: Path, field: str) -> float:
    if isinstance(data, bool) or not isinstance(data, (int, float)) or \
            not math.isfinite(float(data) if abs(data) < 2.0 ** 1023 else math.inf):
        raise _fail(path, field, "a finite number")  # tolerances are computed in floats
    return data


def read_case_manifest(folder: Path) -> dict[str, Any]:
    """case.json of a case folder, checked (ManifestError / FileDiagnostic otherwise)."""
    path = folder / "case.json"
    data = _dict(read_json(path, "case.json"), path, "case.json")
    _string(data.get("id"), path, "'id'")
    for name, digest in _dict(data.get("files", {}), path, "'files'").items():
        _string(digest, path, f"files['{name}']")
        if not _inside(name):
            raise _fail(path, f"files['{name}']", "a file name inside the case folder")
    for section in ARRAY_SECTIONS:
        for key, entry in _dict(data.get(section, {}), path, f"'{section}'").items():
            where = f"{section}['{key}']"
            entry = _dict(entry, path, where)
            _string(entry.get("sha256"), path, f"{where}.sha256")
            if section == "inputs" and "view" in entry:
                _view(entry, path, where)
            if section == "outputs":
                tolerance = _dict(entry.get("tolerance"), path, f"{where}.tolerance")
                for dtype in ("float64", "float32"):
                    bound = _dict(tolerance.get(dtype), path, f"{where}.tolerance.{dtype}")
                    for name in ("ulp", "rtol", "atol"):
                        _number(bound.get(name, 0), path, f"{where}.tolerance.{dtype}.{name}")
                _number(tolerance.get("reduction_length", 1), path,
                        f"{where}.tolerance.reduction_length")
    if "error" in data:
        error = _dict(data["error"], path, "'error'")
        _string(error.get("code"), path, "error.code")
        _string(error.get("message", ""), path, "error.message")
    for name in ("profile", "operator", "graph", "layout"):
        if data.get(name) is not None:
            _string(data[name], path, f"'{name}'")
    _dict(data.get("attributes", {}), path, "'attributes'")
    return data


def _view(entry: dict, path: Path, where: str) -> None:
    """An input's `view` (docs/golden.md, "Input layouts (views)"): a buffer name (a member of
    views.npz) and a well-formed strided view whose shape is the input's."""
    view = _dict(entry["view"], path, f"{where}.view")
    buffer = _string(view.get("buffer"), path, f"{where}.view.buffer")
    if not buffer or "/" in buffer or "\\" in buffer:
        raise _fail(path, f"{where}.view.buffer", "the name of a member of views.npz")
    for name in ("shape", "strides", "offset", "mask"):
        if name not in view:
            raise _fail(path, f"{where}.view.{name}", "present (null for no mask)")
    if isinstance(view["offset"], bool) or not isinstance(view["offset"], int):
        raise _fail(path, f"{where}.view.offset", "an integer (elements)")
    try:
        parsed = from_json(view)
    except ViewError as error:
        raise _fail(path, f"{where}.view", f"a strided view ({error})") from None
    if "shape" in entry and list(parsed.shape) != entry["shape"]:
        raise _fail(path, f"{where}.view.shape", f"the input's shape {entry['shape']}")


def read_suite_manifest(suite: Path) -> list[dict[str, str]]:
    """The `cases` entries of a suite's manifest.json, checked: each has a string id, a
    relative path inside the suite and a sha256."""
    path = suite / "manifest.json"
    data = _dict(read_json(path, "manifest.json"), path, "manifest.json")
    cases = data.get("cases", [])
    if not isinstance(cases, list):
        raise _fail(path, "'cases'", "an array")
    for k, entry in enumerate(cases):
        entry = _dict(entry, path, f"cases[{k}]")
        for name in ("id", "path", "sha256"):
            _string(entry.get(name), path, f"cases[{k}].{name}")
        if not _inside(entry["path"]):
            raise _fail(path, f"cases[{k}].path", "a relative path inside the suite")
    return cases


def _inside(relative: str) -> bool:
    """A relative, `/`-separated path that stays inside its folder, of names refinterp writes:
    no `.` or `..`, no hidden or temporary name (a leading dot: core.files.is_temporary)."""
    parts = relative.split("/")
    return bool(relative) and all(part and not is_temporary(part) for part in parts) \
        and "\\" not in relative and ":" not in relative and "\0" not in relative
