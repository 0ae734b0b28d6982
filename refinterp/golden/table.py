"""Case tables: the declarative TOML files that say which golden cases exist.

docs/golden.md ("Case tables") documents the format; in short, a table holds `module = "math"`,
optional `[classes]` (operator name -> tolerance class), `[[family]]` entries (a list of
operators and a sample set that expands into several cases each) and `[[case]]` entries (one
case each). Reading a table gives `CaseSpec`s, fully determined: every input's dtype, shape and
generator (with its seed, derived from the case id unless given), so that building a case needs
nothing but its spec.

Errors in a table are `TableError` diagnostics (E1100) located at the table's entry (a table
is the suite author's input: it gets a diagnostic, never a traceback).
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from refinterp.core.diagnostics import Diagnostic, FileDiagnostic, GoldenDiagnostic
from refinterp.core.files import read_source, safe_component
from refinterp.core.source import SourceFile, Span
from refinterp.golden.layouts import KINDS as LAYOUT_KINDS
from refinterp.golden.tolerance import CLASSES
from refinterp.numeric.nx_types import TYPES as NX_TYPES, resolve_types, to_type
from refinterp.numeric.representation import MAX_TENSOR_SIZE, check_tensor_size

DTYPES = ("real", "int", "bool")
TYPE_PATTERN = re.compile(r"^\s*(real|int|bool)\s*\[\s*([0-9,\s]*)\]\s*$")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.@-]+$")

# Special values (docs/golden.md, "Inputs"): every real one is exactly representable in float32.
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)           # the smallest normal float32
F32_SUBNORMAL = float(np.float32(2.0) ** -149)        # the smallest subnormal float32
SPECIAL_REALS = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.0, -1.0, 0.5, -2.5,
                 F32_MAX, F32_TINY, F32_SUBNORMAL)
SPECIAL_INTS = (0, 1, -1, 7, -7, 2**31 - 1, -2**31)
SPECIAL_BOOLS = (False, True)
SPECIALS = {"real": SPECIAL_REALS, "int": SPECIAL_INTS, "bool": SPECIAL_BOOLS}


class TableError(GoldenDiagnostic):
    """A case table that cannot be read or is wrong, located at the entry (E1100)."""


def table_span(path: str | Path, kind: str = "", number: int = 0, text: str = "") -> Span | None:
    """The span of a table's line: the `number`-th (1-based) `[[kind]]` header, else the
    first line containing `text`, else line 1; None if the file cannot be read."""
    try:
        source = read_source(path)
    except (OSError, FileDiagnostic):  # not a regular file, too large
        return None
    offset = 0
    if kind:
        found = [m.start() for m in re.finditer(rf"^[ \t]*\[\[{kind}\]\]", source.text, re.M)]
        if 0 < number <= len(found):
            offset = found[number - 1]
    elif text and text in source.text:
        offset = source.text.index(text)
    end = source.text.find("\n", offset)
    return source.span(offset, end if end >= 0 else len(source.text))


@dataclass(frozen=True)
class InputSpec:
    """How one input array is made: `generator` is "uniform" (reals in `low..high`, rounded to
    float32; ints in `low..high-1`), "bool" (each true with probability 1/2), "values" (the
    given `values`) or "special" (the special values of the dtype, cycled over the shape)."""

    dtype: str
    shape: tuple[int, ...]
    generator: str = "uniform"
    low: float = -4.0
    high: float = 4.0
    values: Any = None
    seed: int = 0

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"dtype": self.dtype, "shape": list(self.shape),
                                "generator": self.generator}
        if self.generator == "uniform":
            data.update(low=self.low, high=self.high, seed=self.seed)
        elif self.generator == "bool":
            data["seed"] = self.seed
        elif self.generator == "values":
            data["values"] = json_values(self.values)
        return data

    def make(self) -> np.ndarray:
        """The array (float64, int64 or bool), the same on every machine for the same spec."""
        shape = self.shape
        if self.generator == "values":
            return _array(self.values, self.dtype, shape)
        if self.generator == "special":
            pool = SPECIALS[self.dtype]
            size = int(np.prod(shape))
            return _array([pool[k % len(pool)] for k in range(size)], self.dtype, shape)
        rng = np.random.default_rng(self.seed)
        if self.generator == "bool" or self.dtype == "bool":
            return np.asarray(rng.random(shape) < 0.5)  # an array also for rank 0
        if self.dtype == "int":
            return rng.integers(int(self.low), int(self.high), shape, dtype=np.int64)
        drawn = rng.uniform(self.low, self.high, shape)
        return drawn.astype(np.float32).astype(np.float64)  # exactly representable in float32


@dataclass(frozen=True)
class CaseSpec:
    """One golden case, as a table declares it."""

    id: str                       # "<module>.<op>/<name>"
    operator: str                 # "<module>.<op>"
    name: str
    klass: str                    # tolerance class
    inputs: dict[str, InputSpec | list[InputSpec]]
    attributes: dict[str, Any] = field(default_factory=dict)
    generics: tuple[str, ...] = ()
    profile: str = "spec"
    error: dict[str, str] | None = None   # {"code": ..., "message": regex} for an error case
    reason: str | None = None             # why the tolerance class was overridden
    table: str = ""                       # the table file it came from
    model: str | None = None              # a whole-model case: the model file or folder
    params_seed: int = 0                  # its variables are random, from this seed
    entry: tuple[str, int] = ("", 0)      # ("case" | "family", number) in the table
    layouts: tuple[str, ...] = ()         # layout variants to emit (golden.layouts.KINDS)
    # the absolute path of the .sknd file defining the operator (None: a standard operator);
    # `operator` is then "<the file's stem>.<op>"
    file: str | None = None
    search_path: tuple[str, ...] = ()     # absolute folders for the file's (or model's) imports
    # the Nx types of a typed case of the nx module (docs/nx.md "Typed evaluation"): by
    # tensor name, the key "" for every int / real tensor of the type's kind not named
    types: dict[str, str] = field(default_factory=dict)

    def arrays(self) -> dict[str, Any]:
        """The input arrays (a pack as a list), in declaration order; a typed input holds
        values of its type (nx_types.to_type)."""
        arrays = {name: [s.make() for s in spec] if isinstance(spec, list) else spec.make()
                  for name, spec in self.inputs.items()}
        for name, type_name in resolve_types(self.types, arrays).items():
            arrays[name] = to_type(arrays[name], type_name)
        return arrays


def _array(values: Any, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    numpy_dtype = {"real": np.float64, "int": np.int64, "bool": np.bool_}[dtype]
    flat = np.array(values, dtype=object).reshape(-1) if np.ndim(values) else [values]
    converted = [float(v) if dtype == "real" else v for v in flat]
    return np.array(converted, dtype=numpy_dtype).reshape(shape)


def json_values(values: Any) -> Any:
    """Values for JSON: non-finite reals as the strings "nan", "inf", "-inf"."""
    if isinstance(values, dict):
        return {k: json_values(v) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return [json_values(v) for v in values]
    if isinstance(values, float) and not np.isfinite(values):
        return str(values)
    return values


def _real_values(values: Any) -> Any:
    """Table values with the strings "nan", "inf", "-inf", "-0.0" read as reals."""
    if isinstance(values, list):
        return [_real_values(v) for v in values]
    if isinstance(values, str):
        return float(values)
    return values


def derived_seed(case_id: str, input_name: str) -> int:
    """The seed of an input whose table gives none: from the case id and the input name, so
    that a case is the same whatever else the suite holds and in whatever order it is built."""
    digest = hashlib.sha256(f"{case_id}/{input_name}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


# --------------------------------------------------------------------------- reading a table


def read_table(path: str | Path) -> list[CaseSpec]:
    """Every case a table declares, in table order (families first, then single cases)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as error:
        raise TableError(f"cannot read the case table '{path}': {error}") from None
    except tomllib.TOMLDecodeError as error:
        where = re.search(r"line (\d+), column (\d+)", str(error))
        source = SourceFile(str(path), text)  # a table, not SkriptND text: no text check
        if where:
            line, col = int(where.group(1)), int(where.group(2))
        else:  # "at end of document"
            line, col = source.position(len(source.text))
        span = Span(source, line, col, line, col + 1)
        raise TableError(f"the case table is not valid TOML: {error}", span=span) from None
    return _Reader(path, data).cases()


class _Reader:
    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path, self.data = path, data
        self.source = self.program_file(data["file"], "") if "file" in data else None
        self.search = self.search_path(data.get("path", []), "")
        self.module = data.get("module", None if self.source is None else self.source.stem)
        if not isinstance(self.module, str):
            raise TableError("a case table starts with module = \"<module name>\" (or names "
                             "its operators' file: file = \"<file>.sknd\")",
                             span=table_span(path))
        if self.source is not None and self.module != self.source.stem:
            raise TableError(f"module = \"{self.module}\", but the operators' file "
                             f"'{self.source.name}' is module '{self.source.stem}' (a file's "
                             f"module is its name without the extension)",
                             span=table_span(path, text="module"))
        self.file_name(self.module, "the module")
        self.classes: dict[str, str] = data.get("classes", {})
        if not isinstance(self.classes, dict):
            raise TableError("[classes] is a table of operator = \"<class>\"",
                             span=table_span(path, text="classes"))
        for op, klass in self.classes.items():
            self.check_class(klass, f"[classes] {op}")
        known = {"module", "file", "path", "classes", "family", "case"}
        for key in data:
            if key not in known:
                raise TableError(f"unknown top-level key '{key}'; the keys are "
                                 f"{', '.join(sorted(known))}",
                                 span=table_span(path, text=key))

    def span_of(self, where: str) -> Span | None:
        """The table line of entry `where` ("case #3", "family #1", ...)."""
        entry = re.match(r"(case|family) #(\d+)", where)
        return table_span(self.path, entry.group(1), int(entry.group(2))) if entry else \
            table_span(self.path)

    def fail(self, where: str, message: str) -> TableError:
        """An error in entry `where` ("case #3", "family #1", "case math.add/x")."""
        return TableError(f"{where}: {message}", span=self.span_of(where))

    def file_name(self, name: str, what: str, where: str = "") -> str:
        """`name`, which becomes a folder's name in a suite: a safe one (no `.`, `..`,
        separator, NUL or leading dot: core.files.safe_component), else E1100 at entry
        `where` (at the `module` line without one)."""
        try:
            return safe_component(name, what)
        except FileDiagnostic as error:
            span = self.span_of(where) if where else table_span(self.path, text="module")
            raise TableError(error.message, span=span) from None

    def program_file(self, name: Any, where: str) -> Path:
        """The absolute path of a `file = "<file>.sknd"` (relative to the table): an existing
        file whose name is a module name (what `import` names), else E1100 at entry `where`
        (at the table's `file` line without one)."""
        def fail(message: str) -> TableError:
            return self.fail(where, message) if where else \
                TableError(message, span=table_span(self.path, text="file"))
        if not isinstance(name, str) or not name:
            raise fail(f"file must be the name of a .sknd file; got {name!r}")
        path = (self.path.parent / name).resolve()
        if not path.stem.isidentifier() or path.suffix not in (".sknd", ".nnef"):
            raise fail(f"file '{name}': an operators' file is <module>.sknd, its module an "
                       f"identifier (what `import` names)")
        if not path.is_file():
            raise fail(f"file '{name}' not found (looked for {path})")
        return path

    def search_path(self, value: Any, where: str) -> tuple[str, ...]:
        """The absolute folders of a `path = ["lib", ...]` (relative to the table), each an
        existing folder, else E1100 at entry `where` (at the `path` line without one)."""
        def fail(message: str) -> TableError:
            return self.fail(where, message) if where else \
                TableError(message, span=table_span(self.path, text="path"))
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise fail(f"path must be a list of folders; got {value!r}")
        folders = []
        for name in value:
            folder = (self.path.parent / name).resolve()
            if not folder.is_dir():
                raise fail(f"path: folder '{name}' not found (looked for {folder})")
            folders.append(str(folder))
        return tuple(folders)

    def check_class(self, klass: Any, where: str) -> str:
        if klass not in CLASSES:
            raise self.fail(where, f"tolerance class {klass!r} is none of {', '.join(CLASSES)}")
        return klass

    def cases(self) -> list[CaseSpec]:
        result: list[CaseSpec] = []
        for k, family in enumerate(self.entries("family")):
            result.extend(self.family(family, f"family #{k + 1}"))
        for k, entry in enumerate(self.entries("case")):
            result.append(self.case(entry, f"case #{k + 1}"))
        seen: set[str] = set()
        for spec in result:
            if spec.id in seen:
                raise TableError(f"two cases are called '{spec.id}'",
                                 span=table_span(self.path, text=f'"{spec.name}"'))
            seen.add(spec.id)
        return result

    def entries(self, kind: str) -> list[dict[str, Any]]:
        """The `[[kind]]` entries ("case" or "family"): an array of tables."""
        value = self.data.get(kind, [])
        if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
            raise TableError(f"'{kind}' holds [[{kind}]] entries (an array of tables)",
                             span=table_span(self.path, text=kind))
        return value

    def typed(self, entry: dict[str, Any], key: str, kind: type, default: Any,
              where: str) -> Any:
        """`entry[key]` (or `default`), which must be a `kind`: a dict (TOML table) or a list
        (TOML array) of strings, attribute values or input specs."""
        value = entry.get(key, default)
        if not isinstance(value, kind):
            name = "a table" if kind is dict else "an array"
            raise self.fail(where, f"{key} must be {name}; got {value!r}")
        return value

    # ---------------------------------------------------------------- single cases

    CASE_KEYS = {"op", "name", "inputs", "attributes", "generics", "profile", "error",
                 "class", "reason", "domain", "model", "layouts", "file", "path", "types"}

    def case(self, entry: dict[str, Any], where: str) -> CaseSpec:
        unknown = set(entry) - self.CASE_KEYS
        if unknown:
            raise self.fail(where, f"unknown key(s) {', '.join(sorted(unknown))}; a case takes "
                                   f"{', '.join(sorted(self.CASE_KEYS))}")
        op, name, model = entry.get("op"), entry.get("name"), entry.get("model")
        if model is not None:  # a whole-model case: the model file, relative to the table
            if not isinstance(model, str) or op is not None:
                raise self.fail(where, "a model case gives model = \"<file>\" and no op")
            model = str((self.path.parent / model))
            op = "model"
            if entry.get("layouts", False) is not False:
                raise self.fail(where, "layouts apply to operator cases only")
            if "file" in entry:
                raise self.fail(where, "a model case names its program by model = \"<file>\", "
                                       "not file")
        if not isinstance(op, str) or not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise self.fail(where, "a case needs op = \"<operator>\" and name = \"<name>\" "
                                   "(letters, digits, _ . @ -; not starting with a dot)")
        self.file_name(name, f"{where}: the case name", where)
        source = self.program_file(entry["file"], where) if "file" in entry else \
            None if model is not None else self.source
        search = self.search + self.search_path(entry.get("path", []), where)
        module = source.stem if source is not None else self.module
        if model is None:
            self.file_name(f"{module}.{op}", f"{where}: the operator", where)
        where = f"{where} ({op}/{name})"
        case_id = f"{module}.{op}/{name}" if model is None else f"{self.module}/{name}"
        domain = entry.get("domain", [-4.0, 4.0])
        inputs = {input_name: self.input(spec, case_id, input_name, domain, where)
                  for input_name, spec in self.typed(entry, "inputs", dict, {}, where).items()}
        error = entry.get("error")
        if error is not None and (not isinstance(error, dict) or "code" not in error):
            raise self.fail(where, "error = { code = \"E....\", message = \"<regex>\" }")
        klass = entry.get("class", self.classes.get(op))
        if klass is None:
            raise self.fail(where, f"no tolerance class: give class = \"...\" or list '{op}' "
                                   f"in [classes]")
        if "class" in entry and op in self.classes and "reason" not in entry:
            raise self.fail(where, "a case that overrides its operator's class gives a reason")
        return CaseSpec(case_id, f"{module}.{op}" if model is None else "",
                        name, self.check_class(klass, where),
                        inputs, dict(self.typed(entry, "attributes", dict, {}, where)),
                        tuple(self.typed(entry, "generics", list, [], where)),
                        entry.get("profile", "spec"),
                        None if error is None else {"code": error["code"],
                                                    "message": error.get("message", "")},
                        entry.get("reason"), str(self.path), model,
                        derived_seed(case_id, "params"), _entry_of(where),
                        self.layouts(entry.get("layouts", False), where),
                        None if source is None else str(source), search,
                        self.types(entry.get("types", {}), module, inputs, where))

    def types(self, value: Any, module: str, inputs: dict[str, Any],
              where: str) -> dict[str, str]:
        """`types = { a = "s8", out = "s8" }` (by tensor name) or `types = "f16"` (every int
        or real tensor of the type's kind): a typed case of the nx module; each type one of
        nx_types.TYPES, of the kind of the input it names."""
        if isinstance(value, str):
            value = {"": value}
        if not isinstance(value, dict) or not all(isinstance(t, str) for t in value.values()):
            raise self.fail(where, f"types must be a table of tensor = \"<Nx type>\" or one "
                                   f"type name; got {value!r}")
        if value and module != "nx":
            raise self.fail(where, "types apply to cases of the nx module (Nx's types)")
        for name, type_name in value.items():
            if type_name not in NX_TYPES:
                raise self.fail(where, f"types: '{type_name}' is none of "
                                       f"{', '.join(NX_TYPES)}")
            spec = inputs.get(name)
            if isinstance(spec, list):
                raise self.fail(where, f"types: '{name}' is a pack (packs are not typed)")
            if spec is not None and spec.dtype != NX_TYPES[type_name].kind:
                raise self.fail(where, f"types: {spec.dtype} input '{name}' cannot have the "
                                       f"type {type_name}")
        return dict(value)

    def layouts(self, value: Any, where: str) -> tuple[str, ...]:
        """`layouts = true` (every kind), false, or a list of kinds, in KINDS order."""
        if value is True:
            return LAYOUT_KINDS
        if value is False:
            return ()
        if not isinstance(value, list) or not all(k in LAYOUT_KINDS for k in value):
            raise self.fail(where, f"layouts = true or a list of kinds among "
                                   f"{', '.join(LAYOUT_KINDS)}; got {value!r}")
        return tuple(k for k in LAYOUT_KINDS if k in value)

    def input(self, spec: Any, case_id: str, name: str, domain: list[float],
              where: str) -> InputSpec | list[InputSpec]:
        if isinstance(spec, list):
            return [self.input(item, case_id, f"{name}.{k}", domain, where)
                    for k, item in enumerate(spec)]
        if isinstance(spec, str):
            spec = {"type": spec}
        if not isinstance(spec, dict) or "type" not in spec:
            raise self.fail(where, f"input '{name}': a type string such as \"real[2,3]\" or a "
                                   f"table {{ type = ..., values = ... }}")
        match = TYPE_PATTERN.match(spec["type"]) if isinstance(spec["type"], str) else None
        if match is None:
            raise self.fail(where, f"input '{name}': type {spec['type']!r} is not "
                                   f"real|int|bool[extents]")
        dtype = match.group(1)
        shape = tuple(int(x) for x in match.group(2).replace(" ", "").split(",") if x)
        try:  # before anything is drawn: an extent of 10^11 is a diagnostic, not a MemoryError
            check_tensor_size(dtype, shape, MAX_TENSOR_SIZE, f"input '{name}'")
        except Diagnostic as error:
            raise self.fail(where, error.message) from None
        bounds = spec.get("range", domain if dtype == "real" else [-8, 8])
        low, high = bounds if isinstance(bounds, list) and len(bounds) == 2 else (None, None)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and
                   math.isfinite(v) and abs(v) < 2.0 ** 63 for v in (low, high)) or low > high:
            raise self.fail(where, f"input '{name}': range {bounds!r} must be two finite "
                                   f"numbers low <= high within int64's range")
        seed = spec.get("seed", derived_seed(case_id, name))
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise self.fail(where, f"input '{name}': seed {seed!r} is not an int >= 0")
        if "values" in spec:
            try:
                values = _real_values(spec["values"]) if dtype == "real" else spec["values"]
                _array(values, dtype, shape)
            except (ValueError, TypeError, OverflowError) as error:
                raise self.fail(where, f"input '{name}': values do not fit {spec['type']}: "
                                       f"{error}") from None
            return InputSpec(dtype, shape, "values", values=values)
        generator = spec.get("generator", "bool" if dtype == "bool" else "uniform")
        if generator not in ("uniform", "bool", "special"):
            raise self.fail(where, f"input '{name}': generator {generator!r} is none of "
                                   f"uniform, bool, special")
        if dtype == "int" and generator == "uniform" and int(low) >= int(high):
            raise self.fail(where, f"input '{name}': range {bounds!r} holds no int to draw "
                                   f"(ints are drawn from [low, high))")
        return InputSpec(dtype, shape, generator, float(low), float(high), seed=seed)

    # ---------------------------------------------------------------- families

    FAMILY_KEYS = {"ops", "kind", "class", "domain", "dtypes", "attributes", "inputs",
                   "generics", "axes", "layouts", "file", "path"}

    def family(self, entry: dict[str, Any], where: str) -> list[CaseSpec]:
        unknown = set(entry) - self.FAMILY_KEYS
        if unknown:
            raise self.fail(where, f"unknown key(s) {', '.join(sorted(unknown))}; a family takes "
                                   f"{', '.join(sorted(self.FAMILY_KEYS))}")
        kind = entry.get("kind")
        if kind not in SAMPLE_SETS:
            raise self.fail(where, f"kind {kind!r} is none of {', '.join(SAMPLE_SETS)}")
        names = entry.get("inputs")
        if not isinstance(names, list) or not names or \
                not all(isinstance(n, str) for n in names):
            raise self.fail(where, "a family names its operators' inputs: inputs = [\"x\", ...]")
        ops = self.typed(entry, "ops", list, [], where)
        dtypes = self.typed(entry, "dtypes", dict, {}, where)
        self.typed(entry, "attributes", dict, {}, where)
        result = []
        for op in ops:
            for name, shapes, attributes, special in SAMPLE_SETS[kind](len(names)):
                inputs: dict[str, Any] = {}
                for k, input_name in enumerate(names):
                    dtype = dtypes.get(input_name, "real")
                    text = f"{dtype}[{','.join(map(str, shapes[k]))}]"
                    inputs[input_name] = {"type": text, "generator": "special"} \
                        if special and k == 0 else text
                    if special and k > 0:  # the other inputs cycle the specials another way
                        inputs[input_name] = {"type": text, "values": _rotated(
                            SPECIALS[dtype], shapes[k], k)}
                case = {"op": op, "name": name, "inputs": inputs,
                        "attributes": {**entry.get("attributes", {}), **attributes},
                        "generics": entry.get("generics", []),
                        "domain": entry.get("domain", [-4.0, 4.0])}
                for key in ("layouts", "file", "path"):
                    if key in entry:
                        case[key] = entry[key]
                if "class" in entry:
                    case["class"] = entry["class"]
                    case["reason"] = "the family's class"
                result.append(self.case(case, where))
        return result


def _entry_of(where: str) -> tuple[str, int]:
    found = re.match(r"(case|family) #(\d+)", where)
    return (found.group(1), int(found.group(2))) if found else ("", 0)


def _rotated(pool: tuple, shape: tuple[int, ...], k: int) -> list:
    """Special values for the k-th input of a special-values case: the pool repeated so that
    each value of the first input meets each value of this one (`k` = 1), or shifted."""
    size = int(np.prod(shape))
    n = len(pool)
    values = [pool[(j // n + (k - 1) * j) % n] for j in range(size)]
    return [str(v) if isinstance(v, float) and not np.isfinite(v) else v for v in values]


# --------------------------------------------------------------------------- sample sets
# A sample set gives, for an operator of n inputs, its cases: (name, input shapes, extra
# attributes, whether the inputs are special values).


def _elementwise(n: int) -> list[tuple[str, list[tuple[int, ...]], dict, bool]]:
    special = len(SPECIAL_REALS) ** min(n, 2)
    samples = [("rank0", [()] * n, {}, False), ("vector", [(7,)] * n, {}, False),
               ("matrix", [(3, 4)] * n, {}, False), ("empty", [(0, 4)] * n, {}, False),
               ("special", [(special,)] * n, {}, True)]
    if n > 1:
        samples.append(("broadcast", [(2, 3, 4)] + [(4,)] * (n - 1), {}, False))
        samples.append(("broadcast_ones", [(2, 1, 4)] + [(3, 1)] * (n - 1), {}, False))
    return samples


def _reduction(n: int) -> list[tuple[str, list[tuple[int, ...]], dict, bool]]:
    return [("all_axes", [(3, 4, 5)], {}, False),
            ("axis1", [(3, 4, 5)], {"axes": [1]}, False),
            ("axes02_squeeze", [(3, 4, 5)], {"axes": [0, 2], "squeeze": True}, False),
            ("negative_axis", [(2, 6)], {"axes": [-1]}, False),
            ("rank1", [(9,)], {"axes": [0]}, False),
            ("empty_kept", [(0, 3)], {"axes": [1]}, False),
            ("special", [(len(SPECIAL_REALS),)], {"axes": [0]}, True)]


SAMPLE_SETS = {"elementwise": _elementwise, "reduction": _reduction}
