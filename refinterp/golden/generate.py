"""Generated suites: a conformance suite for any operator, derived from its signature
(`refinterp golden generate`; docs/golden.md, "Generated suites").

Candidates are proposed, not derived by solving the declarations: input shapes follow the
declared patterns under a few `Scheme`s (golden.generate_shapes), attribute values come from
their types, defaults and the string literals of the asserts that name them, generics from
their bounds. A candidate is kept only if refinterp runs it without error (on the arrays the
case will hold); a candidate that fails with E0307 at one of the operator's own `@assert`s is
an error case for that assert. The order of the proposals is fixed, so the same command gives
the same cases; `seed` only changes the drawn input values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any, Iterator

import refinterp.api as api
from refinterp.core.diagnostics import ArgumentDiagnostic, Diagnostic
from refinterp.golden.generate_shapes import (SCHEMES, SPECIAL_SCHEME, Scheme, empty_schemes,
                                              fill_shapes, known_value)
from refinterp.golden.tolerance import tolerance_class
from refinterp.golden.table import SPECIALS, CaseSpec, InputSpec, _rotated, derived_seed
from refinterp.syntax import ast
from refinterp.syntax.printer import format_expr

ERROR_CODE = "E0307"      # a failed @assert
INT_RANGES = ((-8, 8), (0, 2), (0, 1))   # int inputs: the default range, then index-like ones
BASE_TRIES = 240          # candidates tried at most to find a first valid case
OMIT = object()           # an attribute left to its default (or absent, when optional)


@dataclass(frozen=True)
class Operator:
    """What generation needs to know about one operator."""

    target: Any                          # api.Target
    qualified: str                       # "<module>.<op>"
    file: str | None                     # the user's .sknd file, None for a stdlib operator
    search_path: tuple[str, ...]
    inputs: dict[str, ast.TypeSpec]      # every declared input
    required: tuple[str, ...]            # the inputs that must be given
    attributes: tuple[ast.ParamDecl, ...]
    generics: tuple[ast.DtypeDecl, ...]
    asserts: tuple[ast.Assertion, ...]

    @property
    def module(self) -> str:
        return self.qualified.rsplit(".", 1)[0]

    @property
    def name(self) -> str:
        return self.qualified.rsplit(".", 1)[1]

    def assert_text(self, index: int) -> str:
        """`@assert <condition>` and its position, for messages."""
        entry = self.asserts[index]
        return f"@assert {format_expr(entry.cond)} ({entry.span.path}:{entry.span.line})"


def resolve_operator(target: str, op: str | None = None,
                     search_path: tuple[str, ...] = ()) -> Operator:
    """The operator named by `target`: a standard `MODULE.OP`, or an operator of a `.sknd`
    file (`op`, default its only operator; `op` may name one of a module it imports, whose
    own file is then the case's)."""
    path = Path(target)
    file: str | None = None
    if target.endswith(".sknd") or path.is_file():
        program = api.load(path, search_path=search_path)
        found = api.resolve(program, op)   # an operator of the file, or one it imports
        if not found.module.library:
            file = str(Path(found.module.path).resolve())
    else:
        if op is not None:
            raise ArgumentDiagnostic("--op is for a FILE; name a standard operator as "
                                     "MODULE.OP")
        found = api.resolve(target)
    qualified, definition = found.name, found.definition
    if definition.is_graph:
        raise ArgumentDiagnostic(f"'{found.name}' is a graph; golden generate takes an "
                                 f"operator")

    def entries(kind: str) -> list[Any]:
        return [e for b in definition.blocks if b.kind == kind for e in b.entries]
    inputs = {e.name: e.type for e in entries("input")}
    required = tuple(e.name for e in entries("input")
                     if not e.type.optional and e.default is None)
    return Operator(found, qualified, file, tuple(str(Path(p).resolve()) for p in search_path),
                    inputs,
                    required, tuple(entries("attrib")), tuple(entries("dtype")),
                    tuple(entries("assert")))


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class Candidate:
    """One proposed invocation: the shapes of the inputs given, attribute values (OMIT:
    left out), generics, the range of int inputs and whether reals are special values."""

    name: str
    shapes: dict[str, Any]
    attributes: dict[str, Any]
    generics: tuple[str, ...]
    int_range: tuple[int, int] = INT_RANGES[0]
    special: bool = False

    def key(self) -> str:
        given = {k: v for k, v in self.attributes.items() if v is not OMIT}
        return repr((sorted(self.shapes.items()), sorted(given.items(), key=str),
                     self.generics, self.int_range, self.special))


def _literal(text: str | None) -> Any:
    """The value of a printed default, or OMIT if it depends on symbols."""
    if text is None:
        return OMIT
    try:
        value = api.evaluate_expression(text)
    except Diagnostic:
        return OMIT
    return list(value) if isinstance(value, tuple) else value


def _strings(operator: Operator, name: str) -> list[str]:
    """The string literals of the asserts that name attribute `name` (an enum's values)."""
    found: list[str] = []
    for entry in operator.asserts:
        text = format_expr(entry.cond)
        if re.search(rf"\b{re.escape(name)}\b", text):
            for match in re.finditer(r"'([^'\\]*)'|\"([^\"\\]*)\"", text):
                value = match.group(1) if match.group(1) is not None else match.group(2)
                if value not in found:
                    found.append(value)
    return found


SCALARS = {"int": [1, 2, 0, -1, 3, 100, -100], "real": [0.5, 2.0, 0.0, -1.0],
           "bool": [False, True]}


def attribute_values(operator: Operator, decl: ast.ParamDecl,
                     generics: tuple[str, ...] = ()) -> list[Any]:
    """The values proposed for an attribute, the base choice first: its default (OMIT) or
    absence when it has one, else values of its type (a generic type: the dtype `generics`
    give it); then the other values of its type, each string of an enum-like assert, and for a
    pack lists of lengths 0 to 4."""
    base = decl.type.name
    names = [g.name for g in operator.generics]
    if base in names and len(generics) == len(names):
        base = generics[names.index(base)]
    values: list[Any] = []
    if decl.default is not None or decl.type.optional:
        values.append(OMIT)
    default = _literal(format_expr(decl.default)) if decl.default is not None else OMIT
    if base == "str":
        scalars: list[Any] = _strings(operator, decl.name)
        if isinstance(default, str) and default not in scalars:
            scalars.insert(0, default)
        scalars.append("UNKNOWN")
    else:
        scalars = list(SCALARS.get(base, SCALARS["int"]))
    if decl.type.pack is None:
        values.extend(v for v in scalars if v != default or v is OMIT)
    else:
        for length in (1, 2, 3, 4, 0):
            lists = [[scalars[0]] * length, list(range(length)) if base == "int" else None]
            lists += [[v] * length for v in scalars[1:4]]
            values.extend(v for v in lists if v is not None and v not in values)
    if base == "real" and default is not OMIT and not isinstance(default, list):
        values.append(float(default) * 2 + 1.0)  # a non-default value near the default
    unique: list[Any] = []
    for value in values:
        if value is OMIT or value not in unique:
            unique.append(value)
    return unique


def generic_values(decl: ast.DtypeDecl) -> list[str]:
    """The dtypes a generic may be, its default (or real) first."""
    allowed = {"type": ["real", "int", "bool"], "num": ["real", "int"],
               "arith": ["real", "int"]}.get(decl.base, ["real", "int", "bool"])
    first = decl.default if decl.default in allowed else allowed[0]
    return [first] + [v for v in allowed if v != first]


def dtype_of(operator: Operator, name: str, generics: tuple[str, ...]) -> str:
    """The dtype of input `name` under the given generics."""
    base = operator.inputs[name].name
    names = [g.name for g in operator.generics]
    if base in names and len(generics) == len(names):
        return generics[names.index(base)]
    return base if base in ("real", "int", "bool") else "real"


# --------------------------------------------------------------------------- checking


def spec_of(operator: Operator, candidate: Candidate, klass: str, seed: int = 0,
            error: dict[str, str] | None = None, profile: str = "spec") -> CaseSpec:
    """The CaseSpec of a candidate (for a user's file with `file` and `search_path`, when
    CaseSpec has them)."""
    case_id = f"{operator.qualified}/{candidate.name}"
    inputs: dict[str, Any] = {}
    first_real = True
    for name, shape in candidate.shapes.items():
        dtype = dtype_of(operator, name, candidate.generics)
        shapes = shape if isinstance(shape, list) else [shape]
        made = []
        for k, item in enumerate(shapes):
            key = name if not isinstance(shape, list) else f"{name}.{k}"
            own = derived_seed(case_id if not seed else f"{case_id}#{seed}", key)
            if candidate.special and dtype == "real":
                made.append(InputSpec(dtype, item, "special") if first_real else
                            InputSpec(dtype, item, "values",
                                      values=_rotated(SPECIALS["real"], item, 1)))
                first_real = False
            elif dtype == "int":
                made.append(InputSpec(dtype, item, low=candidate.int_range[0],
                                      high=candidate.int_range[1], seed=own))
            elif dtype == "bool":
                made.append(InputSpec(dtype, item, "bool", seed=own))
            else:
                made.append(InputSpec(dtype, item, seed=own))
        inputs[name] = made if isinstance(shape, list) else made[0]
    attributes = {k: v for k, v in candidate.attributes.items() if v is not OMIT}
    extra: dict[str, Any] = {}
    if operator.file is not None:
        extra = {"file": operator.file, "search_path": operator.search_path}
    return CaseSpec(case_id, operator.qualified, candidate.name, klass, inputs, attributes,
                    candidate.generics, profile, error, **extra)


class InternalError(Exception):
    """refinterp raised something other than a diagnostic on a candidate (a bug of refinterp:
    the candidate is left out and named in the generated table)."""


def run_spec(operator: Operator, spec: CaseSpec) -> api.Error | None:
    """Run a case on the arrays it will hold; the error it raises, or None. Anything but a
    diagnostic is an InternalError."""
    try:
        api.evaluate(operator.target, inputs=spec.arrays(), attributes=spec.attributes,
                     generics=spec.generics, profile=spec.profile, engine="vector")
    except api.Error as error:
        return error
    except Exception as error:  # noqa: BLE001 - a bug of refinterp, reported, not raised
        raise InternalError(f"{type(error).__name__}: {error}") from None
    return None


def _describe(spec: CaseSpec) -> str:
    """A candidate in one line: its input types and attributes."""
    def text(item: Any) -> str:
        if isinstance(item, list):
            return "[" + ", ".join(text(i) for i in item) + "]"
        return f"{item.dtype}[{','.join(map(str, item.shape))}]"
    inputs = ", ".join(f"{name}: {text(item)}" for name, item in spec.inputs.items())
    return f"inputs {inputs}; attributes {spec.attributes}" + \
        (f"; generics {list(spec.generics)}" if spec.generics else "")


def failed_assert(operator: Operator, error: api.Error | None) -> int | None:
    """The index of the operator's own @assert that `error` reports, or None."""
    if error is None or error.code != ERROR_CODE or error.span is None:
        return None
    for index, entry in enumerate(operator.asserts):
        span = entry.span
        if (span.path, span.line, span.col) == (error.span.path, error.span.line,
                                                 error.span.col):
            return index
    return None


# --------------------------------------------------------------------------- generation


@dataclass
class Generated:
    """What generation found: the cases (valid ones, then one error case per assert found),
    the asserts no candidate violated alone, and the tolerance class."""

    operator: Operator
    klass: str
    specs: list[CaseSpec] = field(default_factory=list)
    unviolated: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    internal: list[str] = field(default_factory=list)


class _Search:
    """The state of one generation: the base case, what was kept, the error cases found."""

    def __init__(self, operator: Operator, fixed: dict[str, Any], seed: int, profile: str,
                 klass: str) -> None:
        self.operator, self.fixed, self.seed, self.profile = operator, fixed, seed, profile
        self.klass = klass
        self.seen: set[str] = set()
        self.valid: list[CaseSpec] = []
        self.errors: dict[int, CaseSpec] = {}
        self.internal: list[str] = []   # candidates on which refinterp failed internally
        self.tries = 0

    def env(self, attributes: dict[str, Any]) -> dict[str, Any]:
        """Attribute values known at compile time (given, or literal defaults)."""
        values: dict[str, Any] = {}
        for decl in self.operator.attributes:
            value = attributes.get(decl.name, OMIT)
            if value is OMIT and decl.default is not None:
                value = _literal(format_expr(decl.default))
            if value is not OMIT:
                values[decl.name] = tuple(value) if isinstance(value, list) else value
        return values

    def shapes(self, scheme: Scheme, attributes: dict[str, Any], optional: bool = False,
               symbols: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The shapes of the inputs given (the optional ones too with `optional`) under
        `scheme`; `symbols` receives the names bound (fill_shapes)."""
        found = fill_shapes(self.operator.inputs, scheme, self.env(attributes), symbols)
        if found is None:
            return None
        return {k: v for k, v in found.items() if optional or k in self.operator.required}

    def aligned(self, attributes: dict[str, Any], symbols: dict[str, Any]) -> dict[str, Any]:
        """`attributes` with each pack whose declared length is known (`padding: int..(2 *
        K)` once another pack fixed K, `scale: real..(s[axis])` once the shapes fixed s)
        repeated or cut to that length; the attributes the user fixed stay."""
        names = dict(symbols)
        for decl in self.operator.attributes:
            value, length = attributes.get(decl.name), decl.type.pack
            if isinstance(value, list) and length is not None and \
                    isinstance(length.length, ast.Name):
                names.setdefault(length.length.name, len(value))
        result = dict(attributes)
        for decl in self.operator.attributes:
            value, pack = result.get(decl.name), decl.type.pack
            if not isinstance(value, list) or pack is None or decl.name in self.fixed:
                continue
            count = known_value(pack.length, names)
            if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= 64 \
                    and count != len(value) and value:
                result[decl.name] = (value * count)[:count]
        return result

    def attempt(self, candidate: Candidate, keep: bool = True) -> bool:
        """Try a candidate: keep it as a valid case (unless `keep` is False), or as the error
        case of an assert it violates (the first found per assert); True if it is valid."""
        key = candidate.key()
        if key in self.seen:
            return False
        self.seen.add(key)
        self.tries += 1
        spec = spec_of(self.operator, candidate, self.klass, self.seed, profile=self.profile)
        try:
            error = run_spec(self.operator, spec)
        except InternalError as internal:
            self.internal.append(f"{spec.id} ({_describe(spec)}): {internal}")
            return False
        if error is None:
            if keep:
                self.valid.append(spec)
            return True
        index = failed_assert(self.operator, error)
        if index is not None and index not in self.errors:
            named = Candidate(f"assert{index + 1}", candidate.shapes, candidate.attributes,
                              candidate.generics, candidate.int_range, candidate.special)
            self.errors[index] = spec_of(
                self.operator, named, self.klass, self.seed, profile=self.profile,
                error={"code": error.code, "message": re.escape(error.message)})
        return False


def _base_attributes(search: _Search, k: int, generics: tuple[str, ...]) -> dict[str, Any]:
    """The k-th joint choice of attribute values: each attribute its k-th proposal (cycled),
    the attributes the user fixed as given."""
    chosen: dict[str, Any] = {}
    for decl in search.operator.attributes:
        if decl.name in search.fixed:
            chosen[decl.name] = search.fixed[decl.name]
            continue
        values = attribute_values(search.operator, decl, generics)
        if values[0] is OMIT and (decl.default is not None or k == 0):
            chosen[decl.name] = OMIT   # a default is kept; an optional one tried from k = 1
        else:
            chosen[decl.name] = values[k % len(values)]
    return chosen


def _first_base(search: _Search) -> Candidate | None:
    """The first valid candidate, over the generics' dtypes (their defaults, or real, first)
    and then `_base`'s choices, within BASE_TRIES runs in all."""
    combos = list(product(*(generic_values(g) for g in search.operator.generics)))[:6]
    for k, generics in enumerate(combos):
        found = _base(search, generics, search.tries + (BASE_TRIES if k == 0 else 60))
        if found is not None:
            return found
    return None


def _base(search: _Search, generics: tuple[str, ...], limit: int) -> Candidate | None:
    """The first valid candidate over the base schemes, joint attribute choices and int
    ranges, until `limit` runs in all."""
    count = max([len(attribute_values(search.operator, d, generics))
                 for d in search.operator.attributes
                 if d.default is None] or [1])
    schemes = (SCHEMES[0], SCHEMES[1], SCHEMES[2], SCHEMES[5], SCHEMES[4], SCHEMES[3])
    for k, scheme in product(range(count), schemes):
        symbols: dict[str, Any] = {}
        chosen = _base_attributes(search, k, generics)
        shapes = search.shapes(scheme, chosen, symbols=symbols)
        attributes = search.aligned(chosen, symbols) if shapes is not None else chosen
        if attributes != chosen:
            shapes = search.shapes(scheme, attributes)
        for low_high in INT_RANGES if shapes is not None else ():
            if search.tries >= limit:
                return None
            candidate = Candidate(scheme.name, shapes, attributes, generics, low_high)
            if search.attempt(candidate):
                return candidate
    return None


def _scheme_variants(search: _Search, base: Candidate, base_scheme: Scheme) -> Iterator[
        Candidate]:
    """The base's attributes under the other schemes: rank 0, smallest, broadcast, …, and
    empty (one extent symbol 0 in turn)."""
    attributes, generics, ints = base.attributes, base.generics, base.int_range
    for scheme in (*SCHEMES, *empty_schemes(base_scheme, 8)):
        shapes = search.shapes(scheme, attributes)
        if shapes is not None:
            name = "empty" if scheme.name.startswith("empty") else scheme.name
            yield Candidate(name, shapes, attributes, generics, ints)


def _other_variants(search: _Search, base: Candidate, base_scheme: Scheme) -> Iterator[
        Candidate]:
    """The base with its optional inputs, with each other attribute value, with each other
    generic."""
    attributes, generics, ints = base.attributes, base.generics, base.int_range
    optional = search.shapes(base_scheme, attributes, optional=True)
    if optional is not None and optional.keys() != base.shapes.keys():
        yield Candidate("optional_inputs", optional, attributes, generics, ints)
    for decl in search.operator.attributes:
        if decl.name in search.fixed:
            continue
        for k, value in enumerate(attribute_values(search.operator, decl, generics)):
            if value is OMIT or value == attributes.get(decl.name):
                continue
            changed = {**attributes, decl.name: value}
            shapes = search.shapes(base_scheme, changed) or base.shapes
            yield Candidate(f"{decl.name}_{_label(value, k)}", shapes, changed, generics, ints)
    for index, decl in enumerate(search.operator.generics):
        for value in generic_values(decl)[1:]:
            changed_generics = generics[:index] + (value,) + generics[index + 1:]
            yield Candidate(f"{decl.name}_{value}", base.shapes, attributes, changed_generics,
                            ints)


def _label(value: Any, index: int) -> str:
    """A case-name part for an attribute value: the value itself when short and plain."""
    text = str(value).lower() if not isinstance(value, list) else \
        "_".join(str(v) for v in value) or "empty"
    return text if re.fullmatch(r"[A-Za-z0-9_.-]{1,24}", text) else f"v{index}"


def _mutations(base: Candidate) -> Iterator[Candidate]:
    """Shape changes of the base (one extent changed, one axis dropped or added, in one
    input): proposals for the error cases of shape asserts."""
    for name, shape in base.shapes.items():
        items = shape if isinstance(shape, list) else [shape]
        for k, item in enumerate(items):
            changed_items = [
                *(item[:axis] + (item[axis] + 1,) + item[axis + 1:] for axis in range(len(item))),
                *(item[:axis] + (1,) + item[axis + 1:] for axis in range(len(item))),
                *(item[:axis] + (0,) + item[axis + 1:] for axis in range(len(item))),
                item[1:], (2,) + item]
            for changed in changed_items:
                new = list(items)
                new[k] = changed
                value = new if isinstance(shape, list) else changed
                yield Candidate("mutation", {**base.shapes, name: value}, base.attributes,
                                base.generics, base.int_range)
        if isinstance(shape, list):  # a pack of no item, of one more
            for value in ([], shape + shape[-1:]):
                yield Candidate("mutation", {**base.shapes, name: value}, base.attributes,
                                base.generics, base.int_range)


def _special(search: _Search, base: Candidate) -> Candidate | None:
    """A special-values candidate: every real input holds the special values (the first
    cycles them, the others meet each of them), on shapes of 12 elements where possible, else
    on the base's shapes."""
    for scheme in (SPECIAL_SCHEME, SCHEMES[0], SCHEMES[2], None):
        shapes = search.shapes(scheme, base.attributes) if scheme is not None else base.shapes
        if shapes is not None:
            candidate = Candidate("special", shapes, base.attributes, base.generics,
                                  base.int_range, special=True)
            if search.attempt(candidate):
                return candidate
    return None


def generate(operator: Operator, *, attributes: dict[str, Any] | None = None, seed: int = 0,
             max_cases: int = 40, profile: str = "spec") -> Generated:
    """The cases of a generated suite for `operator` (module docstring): at most `max_cases`
    valid ones, then one error case per @assert some candidate violates; `attributes` are
    fixed to the values given."""
    fixed = dict(attributes or {})
    unknown = sorted(set(fixed) - {d.name for d in operator.attributes})
    if unknown:
        raise ArgumentDiagnostic(f"'{operator.qualified}' has no attribute "
                                 f"{', '.join(repr(n) for n in unknown)}")
    klass = tolerance_class(operator.target.definition)
    result = Generated(operator, klass)
    search = _Search(operator, fixed, seed, profile, klass)
    generics = tuple(generic_values(g)[0] for g in operator.generics)
    base = _first_base(search)
    if base is None:
        result.notes.append(f"no valid case found in {search.tries} candidates; only error "
                            f"cases are generated")
        fallback = _fallback(search, generics)
        for candidate in _mutations(fallback) if fallback is not None else ():
            search.attempt(candidate, keep=False)
    else:
        scheme_of = {s.name: s for s in (*SCHEMES, SPECIAL_SCHEME)}
        has_empty = False
        mutated = [base]
        for candidate in _scheme_variants(search, base, scheme_of[base.name]):
            if candidate.name == "empty" and has_empty:
                continue
            has_empty |= search.attempt(candidate) and candidate.name == "empty"
        if any(dtype_of(operator, n, base.generics) == "real" for n in base.shapes):
            _special(search, base)
        for candidate in _other_variants(search, base, scheme_of[base.name]):
            if search.attempt(candidate):
                mutated.append(candidate)
        for candidate in (m for one in mutated for m in _mutations(one)):
            if len(search.errors) == len(operator.asserts):
                break
            search.attempt(candidate, keep=False)
    result.specs = _unique_names(search.valid)[:max_cases] + \
        [search.errors[k] for k in sorted(search.errors)]
    result.internal = search.internal
    result.unviolated = [operator.assert_text(k) for k in range(len(operator.asserts))
                         if k not in search.errors]
    return result


def _fallback(search: _Search, generics: tuple[str, ...]) -> Candidate | None:
    """Without a valid case, a typical candidate to mutate for error cases."""
    attributes = _base_attributes(search, 0, generics)
    shapes = search.shapes(SCHEMES[0], attributes)
    return Candidate("typical", shapes, attributes, generics) if shapes is not None else None


def _unique_names(specs: list[CaseSpec]) -> list[CaseSpec]:
    """The specs with distinct names: a repeated name gets `_2`, `_3`, … (the inputs are
    those of the spec as tried: their seeds stay)."""
    from dataclasses import replace

    seen: dict[str, int] = {}
    result = []
    for spec in specs:
        count = seen.get(spec.name, 0) + 1
        seen[spec.name] = count
        if count > 1:
            name = f"{spec.name}_{count}"
            spec = replace(spec, name=name, id=f"{spec.operator}/{name}")
        result.append(spec)
    return result
