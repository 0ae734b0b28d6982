"""--shrink: for an operator case a back end fails, the smallest case that still fails.

A greedy search with the case's attributes kept: each step tries, in order, halving one axis
of every input that has it (inputs sharing an extent at that axis are halved together, so that
shapes stay compatible), then simpler values (reals rounded to integers in [-4, 4], then all
ones); a candidate counts only if refinterp accepts it (its golden is recomputed) and the back
end still fails it. The search stops when no candidate is accepted or after MAX_TRIES
candidates. Halving first cuts every axis of one extent at once (in all inputs), then one axis
position. The smallest case is written as a case folder (docs/golden.md) and named: each
candidate is written to a new folder beside it (core.files.make_folder) and, if the back end
fails it, put in place of the previous smallest (replace_folder); otherwise removed. What was
found is printed with its case; the search's temporary folder is removed unless --keep.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

import refinterp.api as api
from refinterp.core.files import make_folder, remove_made_folder, replace_folder, write_bytes, \
    write_text
from refinterp.golden.model import operator_model
from refinterp.harness.suite import Case, load_suite
from refinterp.io import encode_npz, flatten_packs

MAX_TRIES = 60


def _candidates(inputs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Smaller shapes first, then simpler values."""
    arrays = {k: v for k, v in inputs.items() if not isinstance(v, list)}
    # every axis of one extent at once (matmul's k is axis 1 of A and axis 0 of B) ...
    for extent in sorted({n for a in arrays.values() for n in a.shape if n > 1}, reverse=True):
        yield {**inputs, **{k: _halved(v, extent) for k, v in arrays.items()}}
    # ... then one axis position of every input that has it
    for axis in range(max((a.ndim for a in arrays.values()), default=0)):
        extents = {a.shape[axis] for a in arrays.values() if a.ndim > axis}
        for extent in sorted(extents, reverse=True):
            if extent <= 1:
                continue
            smaller = {k: (np.take(v, range((extent + 1) // 2), axis=axis)
                           if v.ndim > axis and v.shape[axis] == extent else v)
                       for k, v in arrays.items()}
            yield {**inputs, **smaller}
    for simplify in (lambda a: np.clip(np.round(a), -4, 4), np.ones_like):
        simpler = {k: simplify(v) if v.dtype.kind == "f" else v for k, v in arrays.items()}
        if any(not np.array_equal(simpler[k], arrays[k], equal_nan=True) for k in arrays):
            yield {**inputs, **simpler}


def _halved(array: np.ndarray, extent: int) -> np.ndarray:
    """Every axis of `array` of that extent cut to its first half."""
    for axis, n in enumerate(array.shape):
        if n == extent:
            array = np.take(array, range((extent + 1) // 2), axis=axis)
    return array


def _size(inputs: dict[str, Any]) -> int:
    return sum(int(np.size(v)) for v in flatten_packs(inputs).values())


def _write(target: Path, case: Case, inputs: dict[str, Any], outputs: dict[str, Any]) -> Case:
    """A case folder for a candidate, the original manifest with new arrays: a new folder
    beside `target` (files.make_folder), to be put in place or removed by the caller."""
    folder = make_folder(target, "the shrunk case")
    try:
        manifest = copy.deepcopy(case.manifest)
        manifest["id"] = f"{case.id}~shrunk"
        model = operator_model(manifest["id"], case.operator, inputs, outputs, case.attributes,
                               tuple(manifest.get("generics", ())))
        write_text(folder / "model.sknd", model, "the shrunk case's model.sknd")
        for name in _module_files(case):  # a user's operator: its modules, as they were
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            write_bytes(folder / name, (case.folder / name).read_bytes(),
                        f"the shrunk case's {name}")
        write_bytes(folder / "inputs.npz", encode_npz(inputs), "the shrunk case's inputs.npz")
        write_bytes(folder / "outputs.npz", encode_npz(outputs),
                    "the shrunk case's outputs.npz")
        tolerance = next(iter(case.manifest["outputs"].values()))["tolerance"]
        manifest["inputs"] = {k: {"dtype": str(v.dtype), "shape": list(v.shape),
                                  "sha256": ""} for k, v in flatten_packs(inputs).items()}
        manifest["outputs"] = {k: {"dtype": str(v.dtype), "shape": list(v.shape), "sha256": "",
                                   "tolerance": tolerance}
                               for k, v in flatten_packs(outputs).items()}
        write_text(folder / "case.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                   "the shrunk case's case.json")
    except BaseException:
        remove_made_folder(folder)
        raise
    return Case(manifest["id"], folder, manifest)


def _module_files(case: Case) -> list[str]:
    """The SkriptND modules a case folder holds besides its model.sknd (a user's operator)."""
    return sorted(name for name in case.manifest.get("files", {})
                  if name.endswith((".sknd", ".nnef")) and name != "model.sknd")


def shrink(backend: Any, case: Case, options: Any, folder: Path) -> Case | None:
    """The smallest failing variant of an operator case (None if not shrinkable)."""
    from refinterp.harness.suite_run import check_case

    if case.operator is None or case.error is not None:
        return None
    quiet = type(options)(**{**options.__dict__, "explain": False, "probe_dir": None})
    # the operator as the case's own model imports it: a standard one, or a user's module
    # copied into the case folder (docs/golden.md "Operators of your own files")
    modules = _module_files(case)
    target = api.load(case.folder / "model.sknd") if modules else case.operator
    op = case.operator if modules else None
    best, best_inputs, tries = None, case.inputs, 0
    improved = True
    while improved and tries < MAX_TRIES:
        improved = False
        for candidate in _candidates(best_inputs):
            tries += 1
            if tries > MAX_TRIES:
                break
            if _size(candidate) > _size(best_inputs):
                continue
            try:
                outputs = api.evaluate(target, op=op, inputs=candidate,
                                       attributes=case.attributes,
                                       generics=tuple(case.manifest.get("generics", ())),
                                       profile=case.profile).outputs
            except api.Error:
                continue  # refinterp rejects it: not a valid smaller case
            smallest = folder / "smallest"
            trial = _write(smallest, case, candidate, outputs)
            try:
                if check_case(backend, trial, quiet).status == "fail":
                    replace_folder(trial.folder, smallest, "the shrunk case")
                    best = Case(trial.id, smallest, trial.manifest)
                    best_inputs, improved = candidate, True
                    break
            finally:
                remove_made_folder(trial.folder)  # the trial, unless it took the place
    return best


def shrink_failures(suite: str, spec: Any, options: Any, results: list[Any],
                    keep: bool = False) -> dict[str, str]:
    """What --shrink found for every failed operator case, by case id, to be printed with the
    case: the shapes and (small) values of the smallest case that still fails. Each search
    works in a new temporary folder, removed afterwards unless `keep` and a smaller case was
    found (then the text names its folder)."""
    cases = {c.id: c for c in load_suite(suite, options.max_input_size)}
    backend = spec.make()
    found = {}
    for result in results:
        case = cases.get(result.id)
        if result.status != "fail" or case is None or case.operator is None or \
                case.error is not None:
            continue
        folder = Path(tempfile.mkdtemp(prefix=f"refinterp-shrink-{case.name_for_path()}-"))
        smallest = None
        try:
            smallest = shrink(backend, case, options, folder)
            found[case.id] = _shrunk_text(smallest, keep)
        finally:
            if not keep or smallest is None:  # nothing to keep
                _remove(folder)
    return found


def _shrunk_text(smallest: Case | None, keep: bool) -> str:
    """The lines saying what a search found."""
    if smallest is None:
        return "shrink: no smaller case fails"
    inputs = flatten_packs(smallest.inputs)
    shapes = ", ".join(f"{k}: {v.dtype}{list(v.shape)}" for k, v in inputs.items())
    where = f"it is in {smallest.folder} (refinterp golden show {smallest.folder})" if keep \
        else "--keep keeps its folder"
    values = [api.values_text(v, prefix=f"  {k} = ") for k, v in inputs.items()]
    return "\n".join([f"shrink: the smallest failing case has inputs {shapes}; {where}",
                      *(text for text in values if text is not None)])


def _remove(folder: Path) -> None:
    """A search's temporary folder, made by `tempfile.mkdtemp` for this search alone (private
    to the user, a fresh name): removed with all it holds."""
    shutil.rmtree(folder, ignore_errors=True)
