"""Building golden cases: compute each case, write its folder, index the suite.

A case folder (docs/golden.md, "The fixture format") holds `model.sknd`, `inputs.npz`,
`outputs.npz` (not for an error case), `params.npz` and `updated.npz` (graphs with variables)
and `case.json`, the manifest; a layout variant `<name>@view-<kind>` also holds `views.npz`,
the buffers its inputs' strided views read (golden.layouts). The suite folder holds one folder
per case, `<operator>/<name>/` (a model case: `model.<name>/`), and `manifest.json`.

How a value is computed: the case runs on the vector engine, counting the iterations of its
@lower formulas; up to SCALAR_LIMIT iterations it runs again on the compiled engine (the
definition, bit for bit the reference), the two must agree within the engines' documented
tolerance, and the compiled result is the golden one. Above the limit the vector result is.
Every profile other than the case's own is tried too; where it gives another result (or an error where the case has none,
or the reverse), the suite gets a variant case `<name>@<profile>`.

Everything written is canonical: arrays by `refinterp.io.encode_npz` (fixed bytes), JSON with
sorted keys and a fixed layout, so that building twice gives identical bytes, in any order and
with any number of worker processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np

import refinterp
import refinterp.api as api
from refinterp.core.diagnostics import FileDiagnostic, GoldenDiagnostic
from refinterp.core.files import (inside, is_temporary, make_folder, output_folder, read_bytes,
                                  recover_folders, remove_made_folder, replace_folder,
                                  safe_component, write_bytes, write_text)
from refinterp.golden import layouts
from refinterp.golden.model import operator_model
from refinterp.golden.table import CaseSpec, json_values, read_table, table_span
from refinterp.golden.tolerance import STORED_DTYPES, Bound, allowed_errors, bounds
from refinterp.io import encode_npy, encode_npz, flatten_packs
from refinterp.language.modules import STDLIB_DIR
from refinterp.language.values import NULL
from refinterp.lower.engines import difference, iterations
from refinterp.numeric.nx_types import resolve_types, saturates
from refinterp.numeric.representation import kind_of

FORMAT = "refinterp-golden/1"
SUITE_FORMAT = "refinterp-golden-suite/1"
SUITE_VERSION = 1
SCALAR_LIMIT = 200_000
MAX_CASE_JSON = 64 * 2**20  # bytes: the largest case.json read back when indexing a suite
MODELS = "models"           # the folder of the whole-model cases in a suite


class BuildError(GoldenDiagnostic):
    """A case could not be built as its table says (E1101; the message names the case)."""

    default_code = "E1101"


# the error magnitudes of a case's real outputs (docs/golden.md "Per-element error bounds"),
# found only where the compiled engine runs too (up to SCALAR_LIMIT iterations): the analysis
# runs the definition element by element
BOUNDS_FILE = "bounds.npz"


def canonical_json(data: Any) -> str:
    """JSON text with sorted keys, two-space indentation, ASCII only, no NaN, one final
    newline: the only way refinterp writes a manifest."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def versions() -> dict[str, str]:
    """The provenance recorded in every manifest."""
    return {"suite": str(SUITE_VERSION), "refinterp": refinterp.__version__,
            "numpy": np.__version__, "python": platform.python_version()}


# --------------------------------------------------------------------------- computing


@dataclass
class Computed:
    """What one run of a case gave: outputs, or the diagnostic it raised."""

    outputs: dict[str, Any] | None = None
    error: api.Error | None = None
    engine: str = ""
    length: int = 1      # the reduction length used by the tolerance (iterations per element)
    updated: dict[str, Any] = field(default_factory=dict)  # variables @update assigned
    # error magnitudes of the real outputs that have an analysis (flattened keys; NaN where an
    # element has none) and the rule that gave each output's (golden.magnitudes)
    magnitudes: dict[str, Any] = field(default_factory=dict)
    bound_rules: dict[str, str] = field(default_factory=dict)


def _size(value: Any) -> int:
    if isinstance(value, list):
        return sum(int(np.size(v)) for v in value)
    return int(np.size(value))


# case.json's `engine` of a case computed by the definition (the reference, or the compiled
# engine, equal to it bit for bit): the golden format's word for it since its first version,
# kept so that committed suites stay valid (docs/golden.md, the `engine` field)
EXACT = "scalar"


def compute(target: Any, arrays: dict[str, Any], *, op: str | None = None,
            attributes: dict[str, Any] | None = None, generics: tuple[str, ...] = (),
            profile: str = "spec", params: dict[str, Any] | None = None) -> Computed:
    """Run a case on the vector engine (counting iterations), then on the compiled engine (bit
    for bit the reference, the definition) when small enough, and check that both agree."""
    counted: list[int] = []

    def count(instance: Any, how: str) -> None:
        counted.append(iterations(instance))

    def run(engine: str, log: Callable | None = None) -> api.Run:
        return api.evaluate(target, op=op, inputs=arrays, attributes=attributes,
                            generics=generics, profile=profile, engine=engine, params=params,
                            hooks=api.Hooks(log=log))
    try:
        fast = run("vector", count)
    except api.Error as error:
        try:
            run("compiled")
        except api.Error as exact_error:
            if exact_error.code != error.code:
                raise BuildError(f"the engines fail differently: {error.code} (vector) vs "
                                 f"{exact_error.code} (compiled)") from None
            return Computed(error=exact_error, engine=EXACT)
        raise BuildError(f"the vector engine fails ({error.code}) where the compiled engine "
                         f"does not") from None
    total = sum(counted)
    produced = max(1, sum(_size(v) for v in fast.outputs.values()))
    if total == 0:  # no @lower ran (an intrinsic): as many terms as input elements per output
        total = sum(_size(v) for v in arrays.values())
    length = max(1, -(-total // produced))
    if total > SCALAR_LIMIT:  # too large for the definition, and for its error analysis
        return Computed(fast.outputs, None, "vector", length, dict(fast.updated))
    magnitudes, rules = _error_magnitudes(target, arrays, op=op, attributes=attributes,
                                          generics=generics, profile=profile, params=params)
    try:
        exact = run("compiled")
    except api.Error as error:
        raise BuildError(f"the compiled engine fails ({error.code}: {error.message}) where the "
                         f"vector engine does not") from None
    for name, value in exact.outputs.items():
        found = difference(value, fast.outputs[name], name)
        if found:
            raise BuildError(f"the compiled and vector engines disagree: {found}")
    return Computed(exact.outputs, None, EXACT, length, dict(exact.updated), magnitudes,
                    rules)


def _error_magnitudes(target: Any, arrays: dict[str, Any], **options: Any
                      ) -> tuple[dict[str, Any], dict[str, str]]:
    """The error magnitudes of a case's real outputs (golden.magnitudes, for a float32 back end:
    the coarser analysis, whose undecided branches include float64's), flattened, with NaN
    for every element without a finite magnitude (unknown or unbounded: the class rule applies
    there), and the rule of each output. An output with no finite magnitude has none."""
    from refinterp.golden.magnitudes import error_magnitudes

    magnitudes: dict[str, Any] = {}
    rules: dict[str, str] = {}
    for name, (values, rule) in error_magnitudes(target, inputs=arrays, dtype="float32",
                                                 **options).items():
        rules[name] = rule
        if values is None:
            continue
        for key, array in flatten_packs({name: values}).items():
            array = np.asarray(array, np.float64)
            finite = np.isfinite(array)
            if finite.any():
                magnitudes[key] = np.where(finite, array, np.nan)
    return magnitudes, rules


def kept_magnitudes(computed: Computed, tolerance: dict[str, Any]) -> None:
    """Keep in `computed` only the magnitudes that change some element's allowance from what
    the class rule alone gives (`tolerance`, the output's class bounds), for float32 or float64
    back ends: elsewhere bounds.npz would say nothing the case does not already say (a data
    movement's m = 0 under the exact class), and every file costs a disk block."""
    kept = {}
    for key, magnitude in computed.magnitudes.items():
        expected = np.asarray(flatten_packs(computed.outputs)[key], np.float64)
        finite = ~np.isnan(magnitude)
        for dtype in STORED_DTYPES:
            stored = Bound.from_json(tolerance[dtype])
            with np.errstate(invalid="ignore", over="ignore"):
                alone = stored.atol + stored.rtol * np.abs(expected)
                own = allowed_errors(magnitude, expected, tolerance, dtype)
            if np.any(own[finite] != alone[finite]):
                kept[key] = magnitude
                break
    computed.magnitudes = kept


def _output_entries(computed: Computed, tolerance: dict[str, Any]) -> dict[str, Any]:
    """The `outputs` of a manifest: each output's array entry and tolerance, with `bound`
    (the rule of its error magnitudes) where bounds.npz holds them."""
    entries = {}
    for key, entry in _array_entries(computed.outputs).items():
        own = dict(tolerance)
        if key in computed.magnitudes:
            name = key if key in computed.bound_rules else key.rsplit(".", 1)[0]
            own["bound"] = {"file": BOUNDS_FILE, "rule": computed.bound_rules.get(name, "")}
        entries[key] = {**entry, "tolerance": own}
    return entries


def _write_outputs(writer: "CaseWriter", computed: Computed) -> None:
    """outputs.npz and, when some output has error magnitudes, bounds.npz."""
    writer.write("outputs.npz", encode_npz(computed.outputs))
    if computed.magnitudes:
        writer.write(BOUNDS_FILE, encode_npz(computed.magnitudes))


# --------------------------------------------------------------------------- writing


def _array_entries(arrays: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {key: {"dtype": kind_of(a), "shape": list(np.shape(a)),
                  "sha256": sha256(encode_npy(a))}
            for key, a in flatten_packs(arrays).items()}


def _packs(arrays: dict[str, Any]) -> dict[str, int]:
    return {name: len(v) for name, v in arrays.items() if isinstance(v, list)}


def _magnitude(arrays: dict[str, Any]) -> float:
    """The largest finite magnitude among the real input arrays (1 if none)."""
    largest = 1.0
    for array in flatten_packs(arrays).values():
        if array.dtype.kind == "f" and array.size:
            finite = np.abs(array[np.isfinite(array)])
            if finite.size:
                largest = max(largest, float(finite.max()))
    return largest


@contextmanager
def _as_build_error() -> Iterator[None]:
    """A FileDiagnostic (a file that cannot be written, an unsafe name) raised as a BuildError
    with its code, so that `build_case` names the case in it."""
    try:
        yield
    except FileDiagnostic as error:
        raise BuildError(error.message, code=error.code) from None


def case_path(operator: str | None, name: str) -> str:
    """The folder of a case relative to its suite (`/`-separated): `<operator>/<name>`, or
    `models/<name>` for a model case (`operator` None). Each part must be a safe file name
    (`files.safe_component`: no `.`, `..`, separator, NUL or leading dot), else E0801."""
    with _as_build_error():
        return "/".join([safe_component(operator, "the operator") if operator is not None
                         else MODELS, safe_component(name, "the case name")])


def _nested_suite(root: Path, folder: Path) -> bool:
    """Is `folder` (inside `root`) or a folder between the two the root of a suite nested in
    `root` (it holds its own manifest.json: docs/golden.md "Module suites")?"""
    while folder != root and root in folder.parents:
        if (folder / "manifest.json").exists():
            return True
        folder = folder.parent
    return False


class CaseWriter:
    """Writes one case folder atomically (core.files): the files go to a new folder beside
    it, and `finish` writes case.json (listing their hashes) and puts the folder in place,
    setting the old one aside first; `abort` removes the new folder. The folder must lie
    inside `root` (default: its parent folder) after resolving links, outside any suite
    nested there; an existing folder is replaced only if it is a case folder (it holds
    case.json) or empty. Every failure is a BuildError (E0801)."""

    def __init__(self, folder: Path, root: Path | None = None) -> None:
        self.folder = Path(folder)
        self.files: dict[str, str] = {}
        root = Path(root) if root is not None else self.folder.parent
        try:
            with _as_build_error():
                safe_component(self.folder.name, "the case folder's name")
                inside(root, self.folder, "the case folder")
                self._check_replaceable()
                self.folder.parent.mkdir(parents=True, exist_ok=True)
                inside(root, self.folder.parent, "the case folder's parent")
                if _nested_suite(root.resolve(), self.folder.parent.resolve()):
                    raise BuildError(f"'{self.folder}' lies in a suite nested in '{root}' (a "
                                     f"folder with its own manifest.json); refusing to write "
                                     f"there", code="E0801")
                self.temp = make_folder(self.folder, "the case folder")
        except OSError as error:
            raise BuildError(f"cannot write the case folder '{self.folder}': "
                             f"{error.strerror or error}", code="E0801") from None

    def _check_replaceable(self) -> None:
        folder = self.folder
        if not os.path.lexists(folder):
            return
        if folder.is_symlink() or not folder.is_dir() or \
                (any(folder.iterdir()) and not (folder / "case.json").is_file()):
            raise BuildError(f"'{folder}' exists and is no case folder; refusing to replace it",
                             code="E0801")

    def write(self, name: str, data: bytes | str) -> None:
        """Write the file `name` (`/`-separated for a module in a subfolder: `lib/util.sknd`)
        and remember its hash for case.json's `files`."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        parts = name.split("/")
        with _as_build_error():
            for part in parts:
                safe_component(part, "a case file's name")
            target = self.temp.joinpath(*parts)
            if len(parts) > 1:
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                except OSError as error:
                    raise BuildError(f"cannot write the case file '{name}': "
                                     f"{error.strerror or error}", code="E0801") from None
            write_bytes(target, raw, f"the case file '{name}'")
        self.files[name] = sha256(raw)

    def finish(self, manifest: dict[str, Any]) -> str:
        """Write case.json, put the folder in place; the sha256 of case.json."""
        manifest["files"] = dict(sorted(self.files.items()))
        text = canonical_json(manifest)
        with _as_build_error():
            write_text(self.temp / "case.json", text, "the case's case.json")
            replace_folder(self.temp, self.folder, "the case folder")
        return sha256(text.encode("utf-8"))

    def abort(self) -> None:
        remove_made_folder(self.temp)


# --------------------------------------------------------------------------- a user's modules

# names a module copied into a case folder must not take: the case's own files
RESERVED_MODULES = ("model", "case", "inputs", "outputs", "params", "updated", "bounds",
                    "views")


def case_target(spec: CaseSpec) -> Any:
    """What a case runs: a standard operator by name (`math.add`), or for an operator of a
    user's file (`spec.file`), that operator (an `api.Target`) of the file loaded with the
    case's search path. A file that does not load is a BuildError naming where."""
    if spec.file is None:
        return spec.operator
    try:
        program = api.load(spec.file, search_path=spec.search_path)
        return api.resolve(program, spec.operator.split(".", 1)[1])
    except api.Error as error:
        where = f" ({error.span})" if error.span else ""
        raise BuildError(f"cannot load {spec.file}: {error.code}: {error.message}{where}",
                         notes=list(error.notes)) from None


def module_sources(program: Any, main_as: str | None = None) -> dict[str, bytes]:
    """The module files of a loaded program that are not in the bundled standard library,
    by the name each takes in a case folder, so that the case runs from its folder alone: an
    imported module under its import path (`helpers` -> helpers.sknd, `lib.util` ->
    lib/util.sknd, found first beside the case's model.sknd), the main module as `main_as`
    (default: its own module name). A module whose name is a case file's, or two different
    files under one name, is a BuildError."""
    stdlib = STDLIB_DIR.resolve()
    found: dict[str, bytes] = {}
    for module in program.loaded.modules:
        path = Path(module.path).resolve()
        if path.is_relative_to(stdlib):
            continue
        if module is program.main and main_as is not None:
            name = main_as
        else:
            if module.name.split(".")[0] in RESERVED_MODULES:
                raise BuildError(f"module '{module.name}' ({module.path}) cannot be copied into "
                                 f"a case folder, whose {module.name.split('.')[0]}.* files "
                                 f"are the case's own; rename the module")
            name = "/".join(module.name.split(".")) + path.suffix
        try:
            data = path.read_bytes()
        except OSError as error:
            raise BuildError(f"cannot read module '{module.name}' ({module.path}): "
                             f"{error.strerror or error}", code="E0800") from None
        if found.get(name, data) != data:
            raise BuildError(f"two different files are module '{module.name}' ({module.path} "
                             f"and another); a case folder holds one file per module name")
        found[name] = data
    return found


def _operator_sources(target: Any) -> dict[str, bytes]:
    """The files an operator case copies beside its model.sknd (none for a standard
    operator of the bundled library)."""
    return {} if isinstance(target, str) else module_sources(target.program)


def _check_copied(model: Path, sources: dict[str, bytes], main_as: str | None) -> None:
    """The copied program (`model`, in the new case folder; its main module named `main_as`)
    must load exactly the module files `sources` (imports resolve differently when a module
    imported from a subfolder imports a module that lies elsewhere)."""
    try:
        copied = module_sources(api.load(model), main_as)
    except api.Error as error:
        raise BuildError(f"the case folder's copy of the program does not load: "
                         f"{error.code}: {error.message}") from None
    if copied != sources:
        raise BuildError("the copied modules do not import one another as the originals do "
                         "(a module in a subfolder imports a module from elsewhere); a case "
                         "folder cannot hold this program")


def _entry_span(spec: CaseSpec) -> Any:
    """Where the table declares the case (its [[case]] or [[family]] entry)."""
    if not spec.table:
        return None
    kind, number = spec.entry
    return table_span(spec.table, kind, number) if kind else table_span(spec.table)


def _regenerate(spec: CaseSpec, suite: Path) -> str:
    """The command that rebuilds the case, to run in the suite folder (so that it does not
    depend on where the suite is)."""
    shown = _relative(Path(spec.table) if spec.table else Path("TABLE"), suite)
    paths = "".join(f" --path {shlex.quote(_relative(Path(folder), suite))}"
                    for folder in spec.search_path)
    return f"refinterp golden build {shown} -o .{paths} -k '^{re.escape(spec.id)}$'"


def _relative(path: Path, suite: Path) -> str:
    """`path` relative to the suite folder (`/`-separated), or as it is on another drive."""
    try:
        return Path(os.path.relpath(path.resolve(), suite.resolve())).as_posix()
    except ValueError:
        return path.as_posix()


def _output_types(target: Any, arrays: dict[str, Any]) -> dict[str, str]:
    """Output dtypes for the model of an error case: the declared one, or the first input's."""
    if isinstance(target, str):
        signature = api.signature(target)
    else:
        from refinterp.signature import signature as signature_of
        signature = signature_of(target.definition, target.module)
    first = next(iter(flatten_packs(arrays).values()), None)
    default = kind_of(first) if first is not None else "real"
    result = {}
    for parameter in signature.outputs:
        base = parameter.type.split("[")[0].split("^")[0].strip()
        result[parameter.name] = base if base in ("real", "int", "bool") else default
    return result


def case_types(spec: CaseSpec, arrays: dict[str, Any], outputs: dict[str, Any]
               ) -> dict[str, str]:
    """The Nx type of each typed input and output of a typed case (case.json's `types`;
    docs/nx.md "Typed evaluation"): the table's by name, else its default for the tensors of
    the default's kind. A name that is no input or output is a BuildError."""
    unknown = sorted(set(spec.types) - {""} - set(arrays) - set(outputs))
    if unknown:
        raise BuildError(f"types names {unknown}, which are no inputs or outputs of "
                         f"{spec.operator}")
    tensors = {**arrays, **{k: v for k, v in outputs.items() if not isinstance(v, str)}}
    return resolve_types(spec.types, tensors)


def _typed_model(spec: CaseSpec, arrays: dict[str, Any], outputs: dict[str, Any]) -> str:
    """The model.sknd of a typed case: the operator's inputs and outputs pass through
    `nx._as_type` (golden.model.operator_model); a real -> int `nx.cast` saturates."""
    kinds = [kind_of(v) for v in flatten_packs(arrays).values()]
    saturate = any(saturates(spec.operator, kinds, kind_of(v)) for v in outputs.values()
                   if not isinstance(v, str))
    return operator_model(spec.id, spec.operator, arrays, outputs, spec.attributes,
                          spec.generics, case_types(spec, arrays, outputs), saturate)


def _typed_target(spec: CaseSpec, target: Any, arrays: dict[str, Any]) -> Any:
    """What a typed case runs: its typed model, whose output declarations come from one
    untyped run (the declared dtypes where that run fails)."""
    try:
        outputs: dict[str, Any] = api.evaluate(
            target, inputs=arrays, attributes=spec.attributes, generics=spec.generics,
            profile=spec.profile, engine="vector").outputs
    except api.Error:
        outputs = _output_types(target, arrays)
    try:
        text = _typed_model(spec, arrays, outputs)
    except ValueError as error:
        raise BuildError(f"no model.sknd can declare this case: {error}") from None
    return api.load_source(text, path="model.sknd")


def build_case(spec: CaseSpec, suite: Path) -> list[tuple[str, str, str]]:
    """Build one case (and its profile variants) into `suite`; (id, path, case.json sha256)
    of each folder written."""
    arrays = spec.arrays()
    if spec.model is not None:
        try:
            return [_model_case(spec, arrays, suite)]
        except BuildError as error:
            raise BuildError(f"case {spec.id}: {error.message}",
                             span=_entry_span(spec)) from None
    try:
        target = case_target(spec)
        runs, attributes, generics = target, spec.attributes, spec.generics
        if spec.types:  # a typed case runs its typed model (attributes written in it)
            runs, attributes, generics = _typed_target(spec, target, arrays), {}, ()
        computed = compute(runs, arrays, attributes=attributes, generics=generics,
                           profile=spec.profile)
        outcome = _written(spec, arrays, computed, suite, target=target)
    except BuildError as error:
        raise BuildError(f"case {spec.id}: {error.message}", span=_entry_span(spec),
                         notes=list(error.notes)) from None
    written = [outcome]
    if computed.error is None:  # layout variants: the same logical inputs, the same outputs
        for kind in spec.layouts:
            found = layouts.layouts_of(arrays, kind)
            if found:
                variant = replace(spec, id=f"{spec.id}{layouts.SUFFIX}{kind}",
                                  name=f"{spec.name}{layouts.SUFFIX}{kind}", layouts=())
                written.append(_written(variant, arrays, computed, suite, found, kind,
                                        target=target))
    if spec.profile == "spec":
        for profile in api.PROFILES:
            if profile == spec.profile:
                continue
            other = compute(runs, arrays, attributes=attributes, generics=generics,
                            profile=profile)
            if _differs(computed, other):
                variant = replace(spec, id=f"{spec.id}@{profile}", name=f"{spec.name}@{profile}",
                                  profile=profile,
                                  error=None if other.error is None else
                                  {"code": other.error.code, "message": ""})
                written.append(_written(variant, arrays, other, suite, target=target))
    return written


def _differs(one: Computed, other: Computed) -> bool:
    if (one.error is None) != (other.error is None):
        return True
    if one.error is not None:
        return one.error.code != other.error.code
    return any(not _identical(one.outputs[k], other.outputs[k]) for k in one.outputs)


def _identical(a: Any, b: Any) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(_identical(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    # the same reals, -0.0 apart from 0.0; any NaN equals any NaN (its sign and payload carry
    # no meaning: `inf - inf` is a NaN with the sign bit set on x86)
    same = ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))
    return bool(same.all())


def _written(spec: CaseSpec, arrays: dict[str, Any], computed: Computed, suite: Path,
             views: dict[str, layouts.Layout] | None = None,
             layout: str | None = None, *, target: Any = None, folder: Path | None = None,
             command: str | None = None) -> tuple[str, str, str]:
    """Check the outcome against the table, write the folder (with `views`, the layouts of
    the inputs of a layout variant `layout`: views.npz and each input's `view`). `target`
    is what the case runs (`case_target`; default the standard operator); its modules from
    outside the bundled library are copied beside model.sknd. The folder is the suite's
    `<operator>/<name>`, or `folder` (`eval --save-case`, its `command` recorded)."""
    target = spec.operator if target is None else target
    if spec.error is not None:
        if computed.error is None:
            raise BuildError(f"the table expects error {spec.error['code']}, but the case "
                             f"runs")
        if computed.error.code != spec.error["code"] or \
                not re.search(spec.error["message"], computed.error.message):
            raise BuildError(f"the table expects {spec.error['code']} matching "
                             f"{spec.error['message']!r}; got {computed.error.code}: "
                             f"{computed.error.message}")
    elif computed.error is not None:
        raise BuildError(f"fails with {computed.error.code}: {computed.error.message}")
    if folder is None:
        path = case_path(spec.operator, spec.name)
        writer = CaseWriter(suite / path, suite)
    else:
        path = folder.name
        writer = CaseWriter(folder)
    try:
        sources = _operator_sources(target)
        for name, data in sorted(sources.items()):
            writer.write(name, data)
        outputs = computed.outputs if computed.error is None else \
            _output_types(target, arrays)
        try:
            model = _typed_model(spec, arrays, outputs) if spec.types else \
                operator_model(spec.id, spec.operator, arrays, outputs, spec.attributes,
                               spec.generics)
        except ValueError as error:
            raise BuildError(f"no model.sknd can declare this case: {error}") from None
        writer.write("model.sknd", model)
        if sources:
            _check_copied(writer.temp / "model.sknd",
                          {**sources, "model.sknd": model.encode("utf-8")}, "model.sknd")
        writer.write("inputs.npz", encode_npz(arrays))
        manifest: dict[str, Any] = {
            "format": FORMAT, "id": spec.id, "kind": "operator", "operator": spec.operator,
            "attributes": json_values(spec.attributes), "generics": list(spec.generics),
            "profile": spec.profile, "versions": versions(),
            "command": _regenerate(spec, suite) if command is None else command,
            "inputs": {name: {**entry, **_spec_entry(spec, name)}
                       for name, entry in _array_entries(arrays).items()},
            "packs": {"inputs": _packs(arrays)},
        }
        if spec.types:
            manifest["types"] = case_types(spec, arrays, outputs)
        if views:
            writer.write(layouts.VIEWS_FILE, encode_npz(layouts.buffers(views)))
            for name, view in layouts.manifest_entries(views).items():
                manifest["inputs"][name]["view"] = view
            manifest["layout"] = layout
        # the model runs as written: what another implementation is handed computes the golden
        # (a layout variant's model runs on the strided inputs a Python back end is given)
        check = compute(api.load_source(model, path=str(writer.temp / "model.sknd")),
                        layouts.strided_inputs(arrays, views or {}), profile=spec.profile)
        if _differs(computed, check):
            raise BuildError("model.sknd does not compute what the operator does")
        if computed.error is not None:
            manifest["error"] = {"code": computed.error.code, "pattern": spec.error["message"],
                                 "message": computed.error.message}
        else:
            tolerance = {"class": spec.klass, "reduction_length": computed.length,
                         **{dtype: b.as_json() for dtype, b in
                            bounds(spec.klass, computed.length, _magnitude(arrays)).items()}}
            kept_magnitudes(computed, tolerance)
            _write_outputs(writer, computed)
            if spec.reason:
                tolerance["reason"] = spec.reason
            manifest["outputs"] = _output_entries(computed, tolerance)
            manifest["packs"]["outputs"] = _packs(computed.outputs)
            manifest["engine"] = computed.engine
        digest = writer.finish(manifest)
    except BaseException:
        writer.abort()  # no half-written case folder is left behind
        raise
    return spec.id, path, digest


def _model_case(spec: CaseSpec, arrays: dict[str, Any], suite: Path) -> tuple[str, str, str]:
    """A whole-model case: the model's variables are random (from the case's seed)."""
    try:
        program = api.load(spec.model, search_path=spec.search_path)
    except api.Error as error:
        where = f" ({error.span})" if error.span else ""
        raise BuildError(f"cannot load {spec.model}: {error.code}: {error.message}{where}",
                         notes=list(error.notes)) from None
    try:
        first = api.evaluate(program, inputs=arrays, random_params=True, seed=spec.params_seed,
                             profile=spec.profile, engine="vector")
    except api.Error as error:
        raise BuildError(f"the model fails: {error.code}: {error.message}") from None
    path = case_path(None, spec.name)
    params = {k: _float32_exact(v) for k, v in first.params.items()}
    return write_model_case(suite / path, program.path, arrays, params, spec.profile,
                            spec.klass, spec.id, _regenerate(spec, suite),
                            {name: _spec_of(spec, name) for name in flatten_packs(arrays)},
                            suite_path=path, root=suite, search_path=spec.search_path)


def save_operator_case(folder: Path, target: Any, arrays: dict[str, Any],
                       attributes: dict[str, Any], generics: tuple[str, ...], profile: str,
                       klass: str, command: str) -> tuple[str, str, str]:
    """Freeze a run of an operator (`target`: an `api.Target`, from a user's file or the
    standard library) as an operator case in `folder` (`eval --save-case`): id
    `<module>.<op>/<folder name>`, a model.sknd invoking it with `attributes` and `generics`
    under `profile`, and the modules it needs from outside the bundled standard library
    copied beside it (`module_sources`). The (id, folder name, case.json sha256)."""
    folder = Path(folder)
    attributes = {name: None if value is NULL else value for name, value in attributes.items()}
    spec = CaseSpec(f"{target.name}/{folder.name}", target.name, folder.name, klass, {},
                    attributes, tuple(generics), profile)
    computed = compute(target, arrays, attributes=attributes, generics=spec.generics,
                       profile=profile)
    return _written(spec, arrays, computed, folder.parent, target=target, folder=folder,
                    command=command)


def relative_to_graph(program: Any, variables: dict[str, Any]) -> dict[str, Any]:
    """Variables keyed by their name relative to the program's graph (`conv1.filter` for
    `main.G.conv1.filter`): the keys do not depend on the model file's name."""
    definition, module = program.find()
    prefix = f"{module.name}.{definition.name}."
    return {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in variables.items()}


def _float32_exact(array: np.ndarray) -> np.ndarray:
    """Real values rounded to float32 (and held as float64): every back end, float32 ones
    included, then computes on exactly the same values."""
    if array.dtype.kind != "f":
        return array
    return array.astype(np.float32).astype(np.float64)


def write_model_case(folder: Path, source: Path, arrays: dict[str, Any],
                     params: dict[str, Any], profile: str, klass: str, case_id: str,
                     command: str, input_specs: dict[str, Any] | None = None,
                     suite_path: str = "", root: Path | None = None,
                     search_path: tuple[str, ...] = (),
                     stdlib: str | Path | None = None) -> tuple[str, str, str]:
    """Freeze a run of a model (a file, or a folder with main.sknd and its own modules) as a
    case folder: the model's files (and every module it imports from outside the bundled
    standard library: `module_sources`, found through `search_path` or the `stdlib` it ran
    with), inputs, params (the variables it read), outputs and updated variables, and
    case.json. Used for whole-model cases (inside the suite `root`) and `eval --save-case`."""
    source = Path(source)
    program = api.load(source, search_path=search_path, stdlib=stdlib)
    params = relative_to_graph(program, params)
    files = sorted(p for p in source.parent.glob("*.sknd") if not is_temporary(p.name)) \
        if source.name == "main.sknd" else [source]
    sources = {"model.sknd" if file == source else file.name: file.read_bytes()
               for file in files}
    imported = module_sources(program, "model.sknd")
    writer = CaseWriter(folder, root)
    try:
        for name, data in sorted({**sources, **imported}.items()):
            writer.write(name, data)
        if set(imported) - {"model.sknd"}:
            _check_copied(writer.temp / "model.sknd", imported, "model.sknd")
        copied = api.load(writer.temp / "model.sknd")
        computed = compute(copied, arrays, profile=profile, params=params or None)
        if computed.error is not None:
            raise BuildError(f"the model fails: {computed.error.code}: {computed.error.message}")
        writer.write("inputs.npz", encode_npz(arrays))
        if params:
            writer.write("params.npz", encode_npz(params))
        tolerance = {"class": klass, "reduction_length": computed.length,
                     **{dtype: b.as_json() for dtype, b in
                        bounds(klass, computed.length, _magnitude(arrays)).items()}}
        kept_magnitudes(computed, tolerance)
        _write_outputs(writer, computed)
        updated = relative_to_graph(copied, computed.updated)
        if updated:
            writer.write("updated.npz", encode_npz(updated))
        inputs = _array_entries(arrays)
        for name, entry in inputs.items():
            if input_specs and input_specs.get(name):
                entry["spec"] = input_specs[name]
        manifest: dict[str, Any] = {
            "format": FORMAT, "id": case_id, "kind": "model", "graph": copied.find()[0].name,
            "profile": profile, "versions": versions(), "command": command, "engine":
            computed.engine, "inputs": inputs, "params": _array_entries(params),
            "outputs": _output_entries(computed, tolerance),
            "updated": _array_entries(updated),
            "packs": {"inputs": _packs(arrays), "outputs": _packs(computed.outputs)},
        }
        digest = writer.finish(manifest)
    except BaseException:
        writer.abort()  # no half-written case folder is left behind
        raise
    return case_id, suite_path or folder.name, digest


def _spec_entry(spec: CaseSpec, flat_name: str) -> dict[str, Any]:
    """An input's `spec` entry of case.json: its generator spec, none for an input the spec
    does not generate (a run frozen by `eval --save-case`)."""
    if flat_name not in spec.inputs and flat_name.rpartition(".")[0] not in spec.inputs:
        return {}
    return {"spec": _spec_of(spec, flat_name)}


def _spec_of(spec: CaseSpec, flat_name: str) -> dict[str, Any]:
    """The generator spec of a (flattened) input key."""
    if flat_name in spec.inputs:
        item = spec.inputs[flat_name]
        return item.as_json() if not isinstance(item, list) else {}
    pack, _, index = flat_name.rpartition(".")
    return spec.inputs[pack][int(index)].as_json()


# --------------------------------------------------------------------------- the suite


def select(specs: Iterable[CaseSpec], include: str | None = None,
           exclude: str | None = None) -> list[CaseSpec]:
    """The specs whose id matches `include` and not `exclude` (regular expressions, searched)."""
    return [s for s in specs if (include is None or re.search(include, s.id)) and
            (exclude is None or not re.search(exclude, s.id))]


def per_operator(specs: Iterable[CaseSpec], limit: int) -> list[CaseSpec]:
    """At most `limit` cases of each operator (model cases are all kept), chosen in this order:
    up to two error cases, the special-value samples, the `rank0` and `empty` samples, the
    table's explicit `[[case]]` entries (attribute combinations, integer rounding, … in table
    order), then the other samples; the result keeps table order. This selects the committed
    suite from the full tables (docs/golden.md, "The committed suite")."""
    specs = list(specs)
    chosen: set[str] = set()
    by_operator: dict[str, list[CaseSpec]] = {}
    for spec in specs:
        if spec.model is not None:
            chosen.add(spec.id)
        else:
            by_operator.setdefault(spec.operator, []).append(spec)
    for cases in by_operator.values():
        def rank(case: CaseSpec) -> int:
            if case.error is not None:
                return 0
            sample = case.entry[0] == "family"
            if sample and case.name.startswith("special"):
                return 1
            if sample and case.name in ("rank0", "empty"):
                return 2
            return 3 if not sample else 4
        errors = [c for c in cases if c.error is not None][:2]
        ordered = errors + sorted((c for c in cases if c.error is None), key=rank)
        chosen.update(c.id for c in ordered[:limit])
    return [s for s in specs if s.id in chosen]


def read_tables(paths: Iterable[str | Path]) -> list[CaseSpec]:
    specs: list[CaseSpec] = []
    for path in paths:
        specs.extend(read_table(path))
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.id in seen:
            raise BuildError(f"case '{spec.id}' is declared in {seen[spec.id]} and {spec.table}",
                             code="E1100")
        seen[spec.id] = spec.table
    return specs


def _build_one(args: tuple[CaseSpec, str]) -> list[tuple[str, str, str]]:
    spec, suite = args
    return build_case(spec, Path(suite))


def build_suite(specs: list[CaseSpec], suite: str | Path, jobs: int = 1,
                progress: Callable[[str], None] | None = None) -> list[tuple[str, str, str]]:
    """Build the cases into `suite` (with `jobs` worker processes) and rewrite its
    manifest.json; the (id, path, sha256) of every case written, sorted by id. First the
    leftovers of an interrupted build are tidied (`recover`) and every case folder this build
    does not replace is read back, so that a damaged one stops the build before it starts."""
    suite = output_folder(suite, "the suite folder")
    recover(suite)
    planned = {case_path(None if s.model is not None else s.operator, s.name) for s in specs}
    for folder in case_folders(suite):
        path = folder.relative_to(suite).as_posix()
        if not any(path[:k] in planned for k in range(len(path) + 1)
                   if k == len(path) or path[k] == "@"):  # the case or one of its variants
            _index_entry(suite, folder)
    work = [(spec, str(suite)) for spec in specs]
    written: list[tuple[str, str, str]] = []
    if jobs > 1 and len(work) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for spec, result in zip(specs, pool.map(_build_one, work, chunksize=4)):
                if progress is not None:
                    progress(spec.id)
                written.extend(result)
    else:
        for item in work:
            if progress is not None:
                progress(item[0].id)
            written.extend(_build_one(item))
    write_suite_manifest(suite)
    return sorted(written)


def recover(suite: Path) -> list[str]:
    """Tidy what an interrupted build left in `suite` (files.recover_folders, in the suite
    folder and in each folder of cases, not in a suite nested there): a case folder set aside
    and not replaced is put back, half-written folders and files are removed. The paths of the
    case folders put back."""
    restored = recover_folders(suite)
    for entry in sorted(os.scandir(suite), key=lambda e: e.name):
        folder = Path(entry.path)
        if is_temporary(entry.name) or not entry.is_dir(follow_symlinks=False) or \
                (folder / "manifest.json").exists():
            continue
        restored += [f"{entry.name}/{name}" for name in recover_folders(folder)]
    return restored


def case_folders(suite: Path) -> list[Path]:
    """Every case folder of a suite (a folder holding case.json), sorted. Hidden and temporary
    names (files.is_temporary), symbolic links, and the folders of a suite nested in it (a
    folder with its own manifest.json, such as golden/nx/ in golden/: docs/golden.md "Module
    suites") are never counted."""
    found: list[Path] = []

    def walk(folder: Path) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if is_temporary(entry.name) or not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path)
            if (path / "case.json").is_file():
                found.append(path)
            elif not (path / "manifest.json").exists():
                walk(path)
    walk(Path(suite))
    return sorted(found)


def _index_entry(suite: Path, folder: Path) -> dict[str, Any]:
    """The manifest.json entry of a case folder, from its case.json: a case.json that cannot
    be read, is no JSON object or has no string `id` is a diagnostic (E0800)."""
    path = folder / "case.json"
    raw = read_bytes(path, "case.json", MAX_CASE_JSON)
    try:
        case = json.loads(raw)
    except ValueError as error:
        case = error
    if not isinstance(case, dict) or not isinstance(case.get("id"), str) or \
            not isinstance(case.get("operator"), (str, type(None))):
        reason = f"not JSON ({case})" if isinstance(case, ValueError) else \
            "not a JSON object with a string 'id'"
        raise GoldenDiagnostic(f"'{path}' is no case manifest: {reason}; rebuild the case or "
                               f"remove its folder", code="E0800")
    return {"id": case["id"], "path": folder.relative_to(suite).as_posix(),
            "operator": case.get("operator"), "kind": "error" if "error" in case else "value",
            "sha256": sha256(raw)}


def write_suite_manifest(suite: Path) -> dict[str, Any]:
    """Index every case folder of the suite (`case_folders`) in manifest.json, written
    atomically."""
    suite = Path(suite)
    cases = [_index_entry(suite, folder) for folder in case_folders(suite)]
    per_operator: dict[str, int] = {}
    for case in cases:
        key = case["operator"] or case["id"]
        per_operator[key] = per_operator.get(key, 0) + 1
    cases.sort(key=lambda c: c["id"])
    manifest = {"format": SUITE_FORMAT, "suite_version": SUITE_VERSION, "count": len(cases),
                "operators": dict(sorted(per_operator.items())), "cases": cases}
    write_text(suite / "manifest.json", canonical_json(manifest), "the suite's manifest.json")
    return manifest
