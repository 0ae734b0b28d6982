"""refinterp's public Python API: load SkriptND programs, discover operators, check and evaluate.

    import refinterp.api as ri

    program = ri.load("model.sknd")                    # a file, a model folder, or
    program = ri.load_source(text)                     # source text
    [s.one_line() for s in ri.operators("nn")]         # what a module offers
    ri.signature("nn.conv").describe()                 # one operator in full
    ri.shapes(program, inputs={"x": ri.TensorType("real", (1, 3, 8, 8))}).outputs
    run = ri.evaluate("nn.relu", inputs={"x": np.array([-1.0, 2.0])},
                      limits=ri.Limits(max_work=10**9))    # limits and hooks: one object each
    run.outputs["y"], run.inputs, run.params           # what was computed, from what

Every error in the user's input is raised as `ri.Error` (refinterp.core.diagnostics.Diagnostic) with
a stable `code`, `message`, primary `span` (`file`, `line`, `col`), `related` spans, `notes`
and the operator call `stack`; `str(error)` renders it as the command line does, and
`error.as_json()` gives it as data. docs/api.md documents all of it, with examples that the
tests run.

A *target* names what to instantiate or run: a loaded `Program` (with `op=` naming one of its
operators or graphs, default its first graph, else its only operator), a path to a file or model
folder, or a standard operator `module.op` (e.g. `"nn.conv"`, run from the bundled or the given
`stdlib`); `resolve` finds it once (a `Target`), and every function taking a target takes one.

What bounds a run is one `Limits` object and what a run tells its caller one `Hooks` object,
each made once by the caller and passed down unchanged to the executor (docs/limits.md).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import numpy as np

from refinterp.numeric import nx_types as nx_typing, rules
from refinterp.numeric.representation import (canonical, check_pack_length, check_tensor_size,
                                              format_bytes, kind_of, tensor_bytes)
from refinterp.language.invocation import tensor_type
from refinterp.run.abstract import Undetermined, abstract_tensor
from refinterp.run.compose import Executor
from refinterp.run.hooks import Hooks
from refinterp.run.limits import Limits, Work, out_of_memory
# the defaults of the limits (the fields of `Limits`), by their names
from refinterp.numeric.representation import MAX_PACK_LENGTH, MAX_TENSOR_SIZE  # noqa: F401
from refinterp.run.limits import (MAX_DEPTH, MAX_ITERATIONS,  # noqa: F401
                                  MAX_LOWER_ITERATIONS, MAX_WORK)
from refinterp.run.locate import declaration_span
from refinterp.core.cache import BoundedCache
from refinterp.core.diagnostics import (ArgumentDiagnostic, Diagnostic, SelectionDiagnostic,
                                        did_you_mean)
from refinterp.language.symbolic_inputs import dynamic_extents, symbolic_input_types
from refinterp.numeric.symbolic import Undecided
from refinterp.language.instance import (Invocation, TensorType, describe_type, fixed_input_types,
                                         instantiate)
from refinterp.lower.engines import DEFAULT_ENGINE, ENGINE_ALIASES, ENGINE_NAMES, make_engine
from refinterp.language.modules import (STDLIB_DIR, LoadedModule, LoadedProgram, Loader,
                                        find_operator, is_private, stdlib_module_files,
                                        unknown_operator_notes)
from refinterp.run.params import ParameterStore
from refinterp.syntax import ast
from refinterp.language.values import NULL, Value

if TYPE_CHECKING:
    from refinterp.lower.engines import Engine
    from refinterp.signature import OperatorSignature

Error = Diagnostic
PROFILES = tuple(rules.PROFILES)
ENGINES = ENGINE_NAMES

__all__ = ["Error", "TensorType", "Program", "Target", "Shapes", "Run", "Limits", "Hooks",
           "load", "load_source", "load_module", "operators", "signature", "resolve", "shapes",
           "evaluate", "random_inputs", "fixed_inputs", "parse_value", "parse_array",
           "values_text", "SMALL_ARRAY", "describe_type",
           "evaluate_expression", "run_operator", "stdlib_modules", "lint", "PROFILES",
           "ENGINES"]


# ------------------------------------------------------------------------------- programs


@dataclass
class Program:
    """A loaded SkriptND program: its main module and everything it imports."""

    loaded: LoadedProgram
    # the `shapes` checks of its graphs that `evaluate` made before running them with params,
    # by what they depend on (docs/api.md "Variables"): kept with the program they are about
    checks: BoundedCache[Shapes] = field(default_factory=lambda: BoundedCache(8), repr=False,
                                         compare=False)

    @property
    def path(self) -> Path:
        """The main module's file."""
        return self.loaded.main.path

    @property
    def main(self) -> LoadedModule:
        return self.loaded.main

    @property
    def warnings(self) -> list[Diagnostic]:
        """Parser warnings of all loaded modules."""
        return self.loaded.warnings

    def operators(self) -> list[OperatorSignature]:
        """The signatures of the main module's operators and graphs, in source order."""
        from refinterp.signature import module_signatures

        return module_signatures(self.loaded.main)

    def signature(self, name: str | None = None) -> OperatorSignature:
        """The signature of operator or graph `name`: one of the main module's, or `m.op` of
        a module it imports (default: the first graph, else the only operator)."""
        from refinterp.signature import signature as _signature

        definition, module = self.find(name)
        return _signature(definition, module)

    def find(self, name: str | None = None) -> tuple[ast.OperatorDef, LoadedModule]:
        """The definition called `name` (default: the first graph, else the only operator),
        in the main module or, qualified, in an imported module."""
        main = self.loaded.main
        definitions = main.tree.definitions
        if name is None:
            graphs = [d for d in definitions if d.is_graph]
            if graphs:
                return graphs[0], main
            if len(definitions) == 1:
                return definitions[0], main
            raise SelectionDiagnostic(
                f"{main.path} defines {len(definitions)} operators; choose one with --op NAME",
                notes=[_candidates(definitions)])
        found = find_operator(tuple(name.split(".")), main)
        if found is not None:
            return found
        raise SelectionDiagnostic(
            f"no operator or graph '{name}' in {main.path}",
            notes=unknown_operator_notes(tuple(name.split(".")), main, self.loaded.stdlib)
            + [_candidates(definitions)])


def _candidates(definitions: list[ast.OperatorDef]) -> str:
    """The note listing the operators and graphs one may choose (private ones are not)."""
    return "candidates: " + (", ".join(d.name for d in definitions if not is_private(d.name))
                             or "none")


def __getattr__(name: str) -> Any:
    """`stdlib_modules` and `OperatorSignature` (refinterp.signature), imported when first
    asked for: a run needs no signatures (start-up time, docs/performance.md)."""
    if name in ("stdlib_modules", "OperatorSignature"):
        from refinterp import signature as signatures

        value = getattr(signatures, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_CACHE: BoundedCache[tuple[Program, tuple]] = BoundedCache(64)  # recently loaded programs


def _stamps(program: LoadedProgram) -> tuple:
    """(path, modification time, size) of every file of a program: a cached program is reused
    only while none of its files changed."""
    stamps = []
    for module in program.modules:
        try:
            stat = module.path.stat()
            stamps.append((str(module.path), stat.st_mtime_ns, stat.st_size))
        except OSError:
            stamps.append((str(module.path), None, None))
    return tuple(stamps)


def load(path: str | Path, *, stdlib: str | Path | None = None,
         search_path: tuple[str | Path, ...] | list[str | Path] = ()) -> Program:
    """Load a `.sknd` file or a model folder (its `main.sknd`) with all its imports. `stdlib`
    replaces the bundled standard library; `search_path` adds folders for imports. A loaded
    program is cached and reused while none of its files has changed (modification time and
    size)."""
    key = (str(Path(path).resolve()), None if stdlib is None else str(Path(stdlib).resolve()),
           tuple(str(p) for p in search_path))
    cached = _CACHE.get(key)
    if cached is not None and _stamps(cached[0].loaded) == cached[1]:
        return cached[0]
    program = Program(Loader(list(search_path), stdlib).load(path))
    _CACHE.put(key, (program, _stamps(program.loaded)))
    return program


def load_source(text: str, *, path: str | Path = "<source>.sknd",
                stdlib: str | Path | None = None,
                search_path: tuple[str | Path, ...] | list[str | Path] = ()) -> Program:
    """Load SkriptND source text as the main module (never cached); diagnostics name it
    `path`, and its imports are looked up as for a file at `path`."""
    return Program(Loader(list(search_path), stdlib).load_source(text, path))


def load_module(name: str, *, stdlib: str | Path | None = None) -> Program:
    """A standard-library module by qualified name (`"nn"`, `"math"`)."""
    root = Path(stdlib) if stdlib is not None else STDLIB_DIR
    parts = name.split(".")
    if len(parts) <= 2 and all(part.isidentifier() for part in parts):
        # the file the listing below would name, without listing the folder (every
        # `api.evaluate("math.add", …)` comes here): .sknd before .nnef, as the listing
        from refinterp.language.modules import EXTENSIONS
        for ext in EXTENSIONS:
            candidate = root.joinpath(*parts[:-1], parts[-1] + ext)
            if candidate.is_file():
                return load(candidate, stdlib=stdlib)
    modules = stdlib_module_files(root)
    if name in modules:
        return load(modules[name], stdlib=stdlib)
    hint = did_you_mean(name, list(modules))
    raise SelectionDiagnostic(f"no standard module '{name}' in {root}",
                              notes=([hint] if hint else []) + ["modules: " + ", ".join(modules)])


def operators(module: str | Program, *, stdlib: str | Path | None = None
              ) -> list[OperatorSignature]:
    """The signatures of a module's operators: a standard module by name, or a program."""
    program = module if isinstance(module, Program) else load_module(module, stdlib=stdlib)
    return program.operators()


def signature(name: str, *, stdlib: str | Path | None = None) -> OperatorSignature:
    """The signature of standard operator `module.op` (e.g. `"nn.conv"`)."""
    from refinterp.signature import signature as _signature

    found = resolve(name, stdlib=stdlib)
    return _signature(found.definition, found.module)


@dataclass(frozen=True, eq=False)
class Target:
    """What to instantiate or run, found (`resolve`): the program, the definition of the
    operator or graph, and the module that defines it. Compared by identity (a definition is
    a whole syntax tree)."""

    program: Program
    definition: ast.OperatorDef
    module: LoadedModule

    @property
    def name(self) -> str:
        """The qualified name (`nn.relu`, `main.G`)."""
        return f"{self.module.name}.{self.definition.name}"


def resolve(target: Target | Program | str | Path, op: str | None = None, *,
            stdlib: str | Path | None = None) -> Target:
    """Find what `target` and `op` name (see the module docstring; docs/api.md "Targets"):
    an operator or graph of a program, of a file or model folder, or a standard operator
    `module.op` from the bundled library or `stdlib`. A `Target` is returned as it is."""
    if isinstance(target, Target):
        if op is not None:
            raise ArgumentDiagnostic("a resolved Target names its operator; give no op")
        return target
    if isinstance(target, Program):
        return Target(target, *target.find(op))
    text = str(target)
    path = Path(text)
    if op is None and not _is_model(path) and "." in text and not text.endswith(
            (".sknd", ".nnef")) and "/" not in text:
        module_name, _, op = text.rpartition(".")
        program = load_module(module_name, stdlib=stdlib)
        return Target(program, *program.find(op))
    program = load(path, stdlib=stdlib)
    return Target(program, *program.find(op))


def _is_model(path: Path) -> bool:
    """Whether `path` names a file or a model folder (one with a main module). A folder without
    one — a golden case folder named `layout.scatter_nd` in the working directory — does not
    hide the standard operator of that name."""
    try:
        return path.is_file() or any((path / f"main{ext}").is_file()
                                     for ext in (".sknd", ".nnef"))
    except OSError:
        return False


# ------------------------------------------------------------------------------- values


def evaluate_expression(text: str, values: Mapping[str, Any] | None = None,
                        profile: str = "spec", name: str = "<expr>") -> Value:
    """Evaluate a compile-time SkriptND expression (`refinterp expr`) with symbols `values`;
    packs come back as tuples, null as `refinterp.language.values.NULL`."""
    from refinterp.language.expr import Environment, evaluate as evaluate_compile_time
    from refinterp.core.source import SourceFile
    from refinterp.syntax.parser import parse_expression

    env = Environment(dict(_attributes(values)), profile=_profile(profile))
    return evaluate_compile_time(parse_expression(SourceFile(name, text)), env)


def parse_value(text: str, profile: str = "spec", name: str = "<value>") -> Value:
    """A SkriptND literal expression as a value (an attribute on the command line: `3`,
    `[1, 2]`, `'LOWER'`). An undefined name gets a hint that strings are quoted."""
    try:
        return evaluate_expression(text, None, profile, name)
    except Diagnostic as diag:
        if diag.code == "E0401":
            bare = text.strip()
            diag.notes.append(f"a string value is quoted: '{bare}' (on a shell command line, "
                              f"e.g. --attrib \"{name.strip('<>').split()[-1]}='{bare}'\")"
                              if bare.isidentifier() else "a string value is quoted: 'text'")
        raise


def parse_array(text: str, profile: str = "spec", name: str = "<value>") -> np.ndarray:
    """An input array written as a literal (`refinterp eval --input x=...`): a SkriptND
    literal expression (`parse_value`), except that a list of lists is a rank-≥2 array, as in
    NumPy (`[[1.0, 2.0, 3.0]]` is real[1, 3]). Its rows must all be lists of the same shape
    and type; a ragged one is an ArgumentDiagnostic (E0901) at that row."""
    from refinterp.core.source import SourceFile
    from refinterp.language.expr import Environment, evaluate as evaluate_compile_time
    from refinterp.syntax.parser import parse_expression

    tree = parse_expression(SourceFile(name, text))
    if not _is_nested_list(tree):
        return np.asarray(parse_value(text, profile, name))
    env = Environment({}, profile=_profile(profile))

    def array(node: ast.Expr) -> np.ndarray:
        if not _is_nested_list(node):
            return np.asarray(evaluate_compile_time(node, env))
        rows = []
        for item in node.items:
            if not isinstance(item, ast.ListExpr):
                raise ArgumentDiagnostic("a ragged array: every item of a list of lists must be "
                                         "a list", item.span)
            rows.append((array(item), item))
        first = rows[0][0]
        for row, item in rows[1:]:
            if row.shape != first.shape or row.dtype.kind != first.dtype.kind:
                raise ArgumentDiagnostic(
                    f"a ragged array: this row is {kind_of(row)}{list(row.shape)}, the first "
                    f"{kind_of(first)}{list(first.shape)}", item.span,
                    notes=["the rows of a list of lists are one array's: the same shape and "
                           "type"])
        return np.stack([row for row, _ in rows])
    return array(tree)


def _is_nested_list(node: ast.Expr) -> bool:
    """`[[...], ...]`: a list literal with a list literal among its items."""
    return isinstance(node, ast.ListExpr) and any(isinstance(i, ast.ListExpr)
                                                  for i in node.items)


def format_file(path: str | Path) -> tuple[str, str, list[Diagnostic]]:
    """The canonical form of a file (`refinterp fmt`): (canonical text, original text, parser
    warnings). Formatting needs no imports."""
    from refinterp.language.modules import read_source, resolve_main
    from refinterp.syntax.parser import parse_module
    from refinterp.syntax.printer import format_module

    source = read_source(resolve_main(path))
    result = parse_module(source)
    return format_module(result.module), source.text, list(result.warnings)


def lint(path: str | Path, *, profile: str = "spec") -> list[Diagnostic]:
    """The static checks of every definition (`refinterp lint`, docs/semantics.md "Static
    rules") in a file, or in every .sknd/.nnef file under a folder; a model folder's main.sknd
    must hold a graph. Errors and warnings, file by file in path order; a syntax error or an
    unreadable file is a finding too. Nothing is imported or instantiated. `profile` decides
    which @using symbols input shapes may use (the binding order, §2.6.1)."""
    rule_profile = _profile(profile)
    from refinterp.language import checks
    from refinterp.language.modules import EXTENSIONS, read_source, resolve_main
    from refinterp.syntax.parser import parse_module

    root = Path(path)
    if not root.is_dir():
        files = [resolve_main(root)]  # a missing file: E0200, raised
    else:
        files = sorted(p for ext in EXTENSIONS for p in root.rglob(f"*{ext}") if p.is_file())
    found: list[Diagnostic] = []
    for file in files:
        try:
            result = parse_module(read_source(file))
        except Diagnostic as diag:
            found.append(diag)
            continue
        found.extend(result.warnings)
        found.extend(checks.check_module(result.module, rule_profile))
        if root.is_dir() and file == root / "main.sknd":
            found.extend(checks.check_main(result.module, is_model=True))
    return found


# ------------------------------------------------------------------------------- invocations


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Value]:
    """Attribute values as the evaluator holds them: Python None is null, lists are packs."""
    def convert(value: Any) -> Value:
        if value is None:
            return NULL
        if isinstance(value, (list, tuple)):
            return tuple(convert(v) for v in value)
        if isinstance(value, np.generic):
            return value.item()
        return value
    return {name: convert(value) for name, value in (attributes or {}).items()}


def summary(array: np.ndarray) -> dict[str, Any]:
    """The type, shape, min, max and mean of an array (None for an empty one): what
    `refinterp eval` prints of each output."""
    values = np.asarray(array).astype(float) if np.size(array) else None
    return {"dtype": kind_of(array), "shape": list(np.shape(array)),
            **{k: None if values is None else float(getattr(values, k)())
               for k in ("min", "max", "mean")}}


SMALL_ARRAY = 64  # the most elements whose values `values_text` prints (`refinterp eval`)


def values_text(array: np.ndarray, prefix: str = "") -> str | None:
    """The values of an array of at most SMALL_ARRAY elements in NumPy's print style, each real
    with the fewest digits that read back as the same float64 (`floatmode="unique"`, so
    float32 values print short too), continuation lines aligned after `prefix`; None for a
    larger array. What `refinterp eval` prints beside its summary."""
    array = np.asarray(array)
    if array.size > SMALL_ARRAY:
        return None
    return prefix + np.array2string(array, max_line_width=100, threshold=SMALL_ARRAY + 1,
                                    floatmode="unique", separator=" ", prefix=prefix)


def _profile(name: str) -> rules.Profile:
    if name not in rules.PROFILES:
        raise ArgumentDiagnostic(f"unknown profile '{name}'; choose one of "
                                 f"{', '.join(rules.PROFILES)}")
    return rules.PROFILES[name]


def _input_types(inputs: Mapping[str, Any], limits: Limits) -> dict[str, TensorType | tuple]:
    """TensorTypes of inputs given as TensorTypes or arrays (a pack as a list or tuple, within
    the pack length limit)."""
    def input_type(name: str, value: Any) -> TensorType | tuple:
        if isinstance(value, TensorType):
            return value
        if isinstance(value, (list, tuple)):
            check_pack_length(len(value), limits.max_pack_length, f"input '{name}'")
            return tuple(input_type(name, v) for v in value)
        return tensor_type(np.asarray(value))
    return {name: input_type(name, value) for name, value in inputs.items()}


def fixed_inputs(target: Target | Program | str | Path, *, op: str | None = None,
                 attributes: Mapping[str, Any] | None = None, profile: str = "spec",
                 stdlib: str | Path | None = None,
                 limits: Limits | None = None) -> dict[str, TensorType]:
    """The types of the inputs whose declared shapes are fixed by literals and attributes (a
    graph's `input: real[1, 3, 224, 224]`): what `shapes` assumes for inputs not given, and
    what `eval --random NAME` draws. With `limits`, a type above its tensor size or pack
    length is an Error (E1200, E1202) at the input's declaration."""
    definition = resolve(target, op, stdlib=stdlib).definition
    found = fixed_input_types(definition, _attributes(attributes), _profile(profile))
    if limits is not None:
        for name, info in found.items():
            limits.check_tensor(info, f"input '{name}'", declaration_span(definition, name))
    return found


@dataclass
class Shapes:
    """What instantiating an operator gives, without computing values.

    `outputs`: each output's type and shape (a pack as a tuple). `symbols`: every bound symbol.
    `checked`: whether the whole @compose block was followed (False where a branch condition, a
    loop count or an extent depends on tensor values; `stopped` then says where and why, and
    outputs are the declared ones). `variables`: the scoped names and types of the variables
    reached."""

    outputs: dict[str, TensorType | tuple]
    symbols: dict[str, Value]
    checked: bool = True
    stopped: str | None = None
    variables: dict[str, TensorType] = field(default_factory=dict)
    quantization: list[Any] = field(default_factory=list)  # with quant=True: QuantEntry list
    # checked without values: every tensor a @compose block binds, by scoped name (symbolic
    # extents as `numeric.symbolic.SymInt`), and the checks left to a run with values, each
    # (what must hold, why it is open, span), once each
    tensors: dict[str, TensorType | tuple] = field(default_factory=dict)
    runtime_checks: list[tuple[str, str, Any]] = field(default_factory=list)

    def extent_symbols(self) -> list[Any]:
        """The symbols (`numeric.symbolic.Symbol`: name and bounds) the outputs' and bound
        symbols' values depend on, by name."""
        from refinterp.numeric.symbolic import symbols_of

        values = [*self.symbols.values(), *(e for info in self.outputs.values()
                                            for item in (info if isinstance(info, tuple)
                                                         else (info,))
                                            for e in (item.shape or ()))]
        return symbols_of(tuple(values))


def shapes(target: Target | Program | str | Path, *, op: str | None = None,
           attributes: Mapping[str, Any] | None = None,
           inputs: Mapping[str, Any] | None = None, generics: tuple[str, ...] = (),
           profile: str = "spec", stdlib: str | Path | None = None,
           limits: Limits = Limits(), quant: bool = False) -> Shapes:
    """Instantiate an operator or graph and check its @compose block without computing values:
    every invocation is instantiated (through compile-time branches and loops), so an unknown
    operator or attribute, a missing argument, a failed assertion or a wrong declared output
    shape raises an Error. `inputs` are TensorTypes or arrays; a graph input whose declared
    shape is fixed needs none. With `quant`, the @quantize entries are resolved and checked
    (`Shapes.quantization`: refinterp.run.quantize.QuantEntry items). `limits` bound the
    check as they bound a run (docs/limits.md): its loops, nesting, packs, work (invocations
    + loop steps checked) and time."""
    work = Work(limits.max_work, limits.timeout)
    found = resolve(target, op, stdlib=stdlib)
    return _check(found, _attributes(attributes), inputs or {}, generics, _profile(profile),
                  limits, work, quant)


def _check(target: Target, values: dict[str, Value], inputs: Mapping[str, Any],
           generics: tuple[str, ...], active: rules.Profile, limits: Limits, work: Work,
           quant: bool = False) -> Shapes:
    """`shapes` of a resolved target, its attributes converted, with the work budget and
    deadline `work`."""
    program, definition, module = target.program, target.definition, target.module
    given = _input_types(inputs, limits)
    for name, info in fixed_input_types(definition, values, active).items():
        given.setdefault(name, info)
    given.update(symbolic_input_types(definition, values, given, active))
    invocation = Invocation(values, given, tuple(generics), active,
                            max_pack_length=limits.max_pack_length,
                            max_tensor_size=limits.max_tensor_size)
    try:
        instance = instantiate(definition, invocation)
    except Undecided as why:
        raise _undecided(why, definition) from None
    limits.check_instance(instance, sizes=False)
    result = Shapes(dict(instance.outputs), dict(instance.symbols))
    result.runtime_checks = _once(instance.deferred)
    if quant:
        from refinterp.run.quantize import quantization
        result.quantization = quantization(instance, module, active)
    if definition.block("compose") is None:
        return result
    tensors: dict[str, Any] = {}

    def observe(name: str, value: Any) -> None:
        if value is not NULL:  # (an absent optional value binds nothing)
            tensors[name] = tensor_type(value)

    executor = Executor(program.loaded, active, abstract=True, limits=limits, work=work,
                        hooks=Hooks(observe=observe))
    try:
        arrays = {name: abstract_tensor(info, f"input '{name}'") for name, info in given.items()}
        outputs = executor.run(definition, module, invocation, arrays)
        result.outputs = {name: tensor_type(value) for name, value in outputs.items()}
    except Undetermined as stop:
        result.checked = False
        result.stopped = stop.reason + (f" ({stop.span})" if stop.span is not None else "")
    except Undecided as why:  # a branch or an extent the symbols' bounds do not decide
        result.checked = False
        result.stopped = f"{why} depends on the values of its symbols"
    result.tensors = tensors
    result.runtime_checks = _once(executor.deferred)
    result.variables = dict(executor.params.declared)
    return result


def _once(checks: Iterable[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """Each check left to a run once (an instance checked twice lists its asserts twice)."""
    seen: dict[tuple[str, str], tuple[str, str, Any]] = {}
    for check in checks:
        seen.setdefault((check[0], str(check[2])), check)
    return list(seen.values())


def _undecided(why: Undecided, definition: ast.OperatorDef) -> Diagnostic:
    """An instantiation that needs a value its symbols leave open (a declared extent chosen by
    a condition on them): a diagnostic naming the condition."""
    return Diagnostic(f"checking '{definition.name}' without values needs {why}, which depends "
                      f"on the values of its symbols; give the inputs' types with --input",
                      definition.span, code="E0600")


# ------------------------------------------------------------------------------- evaluation


@dataclass
class Run:
    """The result of `evaluate`, with everything needed to reproduce it.

    `outputs`: by output name (a pack as a list of arrays). `inputs`: the input arrays used
    (canonical dtypes; inputs left to their declared defaults are not listed). `params`: every
    variable the run read, by scoped name, with the value it read (before @update): with
    `inputs`, what reproduces the run. `updated`: the new values @update assigned, by scoped
    name; `state` is the variables after the run (`params` overridden by `updated`).
    `attributes`, `profile`, `engine`, `operator` (qualified name). `work`: the work the run
    did, in the units of the `max_work` budget (invocations + loop steps + @lower
    iterations; docs/limits.md)."""

    outputs: dict[str, Any]
    inputs: dict[str, Any]
    params: dict[str, np.ndarray]
    updated: dict[str, np.ndarray]
    attributes: dict[str, Any]
    profile: str
    engine: str
    operator: str
    work: int = 0

    @property
    def state(self) -> dict[str, np.ndarray]:
        """Every variable after the run: the values @update assigned, the others as read (what
        a next step of a stateful graph starts from; `eval --write-params`)."""
        return {**self.params, **self.updated}


def parse_nx_types(items: list[str]) -> dict[str, str]:
    """`[NAME=]TYPE` items (`eval --nx-type`) as the `nx_types` of `evaluate`."""
    return nx_typing.parse_types(items)


def evaluate(target: Target | Program | str | Path, *, op: str | None = None,
             inputs: Mapping[str, Any] | None = None,
             attributes: Mapping[str, Any] | None = None,
             params: Mapping[str, np.ndarray] | None = None, random_params: bool = False,
             seed: int = 0, generics: tuple[str, ...] = (), profile: str = "spec",
             engine: str | Engine = DEFAULT_ENGINE, limits: Limits = Limits(),
             hooks: Hooks = Hooks(), stdlib: str | Path | None = None,
             nx_types: Mapping[str, str] | None = None) -> Run:
    """Run an operator or graph on arrays and return a `Run`.

    `inputs`: arrays (or nested lists) by input name, a pack as a list of arrays; any real,
    int or bool dtype, held as float64/int64/bool. `params`: variable values by scoped name
    (`main.G.conv1.filter`) or relative to the graph (`conv1.filter`); then the model folder's
    `<scoped name>.dat` files; then, with `random_params`, random values (from `seed`). A params
    entry that is no variable of the run is an Error (E0702). `engine` is "reference",
    "compiled", "vector" or "auto" ("scalar": "compiled"; or an engine made by
    `refinterp.lower.engines.make_engine`). `limits` bound the
    run (docs/limits.md; `Limits`: loops, nesting, tensor bytes, @lower iterations, packs, the
    work budget, the vector engine's memory and the time from the call): exceeding one is an
    Error naming it (E1203 the budget, E1204 the time); running out of memory is E1205.
    `hooks` are told what the run does while it runs (`Hooks`: which engine ran each operator,
    progress, every tensor bound, every invocation; docs/api.md "Observing a run").
    `nx_types`: typed evaluation of an `nx` operator (docs/nx.md "Typed evaluation"): the Nx
    type (`s8` ... `bf16`) of inputs and outputs by name (key "": every int / real one of the
    type's kind); typed inputs enter and typed outputs leave wrapped / rounded to it."""
    work = Work(limits.max_work, limits.timeout)
    found = resolve(target, op, stdlib=stdlib)
    if nx_types and (found.definition.is_graph or not found.name.startswith("nx.")):
        raise ArgumentDiagnostic(f"typed evaluation (nx_types) runs an nx operator; "
                                 f"'{found.name}' is not one")
    program, definition, module = found.program, found.definition, found.module
    active = _profile(profile)
    if isinstance(engine, str) and engine not in ENGINE_NAMES and engine not in ENGINE_ALIASES:
        raise ArgumentDiagnostic(f"unknown engine '{engine}'; choose one of "
                                 f"{', '.join(ENGINE_NAMES)}")
    _check_seed(seed)
    arrays = {name: _canonical(name, value, limits) for name, value in (inputs or {}).items()}
    if nx_types:
        arrays = nx_typing.typed_inputs(dict(nx_types), arrays)
    values = _attributes(attributes)
    store = ParameterStore(graph=found.name,
                           arrays={k: _canonical(k, v, limits, "parameter")
                                   for k, v in (params or {}).items()},
                           folder=None if program.main.library else program.path.parent,
                           random=random_params, seed=seed)
    invocation = Invocation(values, dynamic_extents(
        definition, values, {k: tensor_type(v) for k, v in arrays.items()}, active),
                            tuple(generics), active)
    if store.arrays and definition.block("compose") is not None:
        _check_param_names(found, store, values, arrays, generics, active, limits, work)
    executor = Executor(program.loaded, active, params=store,
                        engine=_engine(engine, limits, hooks), limits=limits, hooks=hooks,
                        work=work)
    with _Watch(executor, hooks, definition.name):
        outputs = executor.run(definition, module, invocation, arrays)
    if nx_types:
        outputs = nx_typing.typed_outputs(dict(nx_types), found.name, arrays, outputs)
    _reject_unused(store)
    return Run(outputs, arrays, dict(store.read), dict(store.updated), dict(values),
               profile, engine if isinstance(engine, str) else "custom", found.name,
               work.spent)


def _engine(engine: str | Engine, limits: Limits, hooks: Hooks) -> Engine:
    """The engine of a run: one made by name, with the memory limit (when one is set; else
    the engine's own default) and the log hook; an engine object as it is."""
    if not isinstance(engine, str):
        return engine
    if limits.max_memory is None:
        return make_engine(engine, log=hooks.log)
    return make_engine(engine, limits.max_memory, hooks.log)


def _canonical(name: str, value: Any, limits: Limits, what: str = "input") -> Any:
    """An input (or parameter) in refinterp's representation, within the limits; a pack item
    by item."""
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, np.ndarray) for v in value):
        check_pack_length(len(value), limits.max_pack_length, f"{what} '{name}'")
        return [_canonical(f"{name}.{i}", v, limits, what) for i, v in enumerate(value)]
    try:
        array = np.asarray(value)
        kind = kind_of(array)
    except (TypeError, ValueError):
        kind = "?"
    if kind == "?":
        raise Diagnostic(f"{what} '{name}' is not a real, int or bool array "
                         f"({type(value).__name__})", code="E0802")
    check_tensor_size(kind, array.shape, limits.max_tensor_size, f"{what} '{name}'")
    try:
        return canonical(array)
    except MemoryError:
        raise out_of_memory(f"converting {what} '{name}' ({kind}{list(array.shape)}) to "
                            f"refinterp's representation") from None


def _check_param_names(target: Target, store: ParameterStore, values: dict, arrays: dict,
                       generics: tuple, active: rules.Profile, limits: Limits,
                       work: Work) -> None:
    """Before running: every params entry must name a variable the run reaches (checked
    without values, with a work budget as large as the run's and what is left of its time,
    `work`; where the check cannot follow the composition, after the run). The
    check's result depends only on the program and what instantiates the graph, so a second
    run of the same graph alike (a benchmark, a harness rerun) reuses it (`Program.checks`)."""
    from refinterp.language.instance import invocation_key
    inputs = {k: tensor_type(v) for k, v in arrays.items()}
    key = invocation_key(Invocation(values, inputs, tuple(generics), active))
    if key is not None:  # the time left differs from run to run; the check is the same
        key = (target.name, key, replace(limits, timeout=None))
    checks = target.program.checks
    checked = checks.get(key) if key is not None else None
    if checked is None:
        checked = _check(target, values, inputs, generics, active, limits,
                         Work(limits.max_work, work.remaining()))
        if key is not None:
            checks.put(key, checked)
    if not checked.checked:
        return
    for scoped in checked.variables:
        store.used.update(n for n in store.candidates(scoped) if n in store.arrays)
    _reject_unused(store, sorted(checked.variables))


def _reject_unused(store: ParameterStore, variables: list[str] | None = None) -> None:
    """A params entry no variable asked for is an error (docs/api.md: one rule for inputs and
    parameters — a key that names nothing is a mistake, never silently ignored)."""
    unused = store.unused()
    if not unused:
        return
    known = variables if variables is not None else sorted(store.loaded)
    spellings = sorted({n for scoped in known for n in store.candidates(scoped)})
    hint = did_you_mean(unused[0], spellings)
    notes = ([hint] if hint else []) + ["variables: " + (", ".join(known) or "none")]
    raise Diagnostic(f"params entry '{unused[0]}' is not a variable of the run"
                     + (f" (and {len(unused) - 1} more)" if len(unused) > 1 else ""),
                     notes=notes, code="E0702")


class _Watch:
    """Calls `progress(running operators, seconds)` every `interval` seconds while a run lasts
    (a daemon thread reading the executor's stack of running operators)."""

    def __init__(self, executor: Executor, hooks: Hooks, root: str) -> None:
        self.executor, self.root = executor, root
        self.progress, self.interval = hooks.progress, hooks.progress_interval
        self.done = threading.Event()

    def __enter__(self) -> "_Watch":
        if self.progress is not None:
            start = time.monotonic()

            def watch() -> None:
                while not self.done.wait(self.interval):
                    self.progress([self.root, *self.executor.running],
                                  time.monotonic() - start)
            threading.Thread(target=watch, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()


def _check_seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ArgumentDiagnostic(f"a seed is a non-negative int; got {seed!r}")


def random_inputs(types: Mapping[str, TensorType | tuple], seed: int = 0, *,
                  limits: Limits = Limits()) -> dict[str, Any]:
    """Random arrays for input types (a pack as a tuple of types gives a list of arrays):
    real N(0, 1), int uniform in [0, 10), bool with probability 1/2; reproducible from `seed`
    and drawn in the order given. Every type is checked against the tensor size and pack
    length `limits` (docs/limits.md) before anything is drawn."""
    _check_seed(seed)
    for name, info in types.items():
        limits.check_tensor(info, f"input '{name}'")
    rng = np.random.default_rng(seed)

    def draw(info: TensorType | tuple) -> Any:
        if isinstance(info, tuple):
            return [draw(i) for i in info]
        shape = tuple(info.shape or ())
        if any(not isinstance(e, int) or isinstance(e, bool) or e < 0 for e in shape):
            raise ArgumentDiagnostic(f"no random values of shape {list(shape)}; extents are "
                                     f"non-negative ints")
        if info.dtype == "real":
            return rng.standard_normal(shape)
        if info.dtype == "int":
            return rng.integers(0, 10, shape, dtype=np.int64)
        if info.dtype == "bool":
            return rng.random(shape) < 0.5
        raise ArgumentDiagnostic(f"no random values of type '{info.dtype}'; the types are "
                                 f"real, int and bool")

    def drawn(name: str, info: TensorType | tuple) -> Any:
        try:
            return draw(info)
        except MemoryError:
            items = info if isinstance(info, tuple) else (info,)
            size = sum(tensor_bytes(i.dtype, i.shape or ()) for i in items)
            raise out_of_memory(f"drawing random input '{name}' of {format_bytes(size)}"
                                ) from None
    return {name: drawn(name, info) for name, info in types.items()}


def run_operator(name: str, inputs: Mapping[str, Any], attributes: Mapping[str, Any] | None = None,
                 *, generics: tuple[str, ...] = (), file: str | Path | None = None,
                 profile: str = "spec", engine: str | Engine = DEFAULT_ENGINE,
                 limits: Limits = Limits(), stdlib: str | Path | None = None) -> dict[str, Any]:
    """Run operator `name` and return its outputs by name (a pack as a list of arrays): a
    standard operator `module.op`, or an operator of `file`. Shorthand for
    `evaluate(...).outputs`."""
    if file is None and "." not in name:
        raise ArgumentDiagnostic("name a standard operator as module.operator, or pass file=")
    run = evaluate(file if file is not None else name, op=name if file is not None else None,
                   inputs=inputs, attributes=attributes, generics=generics, profile=profile,
                   engine=engine, limits=limits, stdlib=stdlib)
    return run.outputs
