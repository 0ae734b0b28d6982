"""Einsum specifications and OCANNL `%cd` accumulating assignments as SkriptND operators.

Translates an einsum spec, in NumPy notation (`ij,jk->ik`, `...`) or in OCANNL's generalized
notation (`batch|input->output` rows, `;` between operands, `=>` before the result, `...` and
`..v..` row variables, `_` placeholders, fixed indices), together with an OCANNL accumulation
(`=+`, `=:+`, `=:*`, `=:@^`, ...) and a primitive operation (`*`, `relu`, `where`, ...), into the
text of one SkriptND operator with a `@lower` block: an initialisation (the accumulator's
neutral element, or the old value of the result for the non-clearing forms) followed by one
accumulating update over the product space of all axes. A `%cd`-like one-liner
(`c =:+ a * b ~logic:"ij;jk=>ik"`) names all of this at once. docs/ocannl.md describes the
mapping and where it differs from OCANNL.

Operand arrays are laid out as OCANNL lays out tensors: batch axes, then output axes, then
input axes; their element type (real, int, bool) is NumPy's promotion of the operands'.
Malformed specs are `Diagnostic`s (E0100) with a caret under the spec text.

The package's other modules: `broadcast` (an operator specialised to arrays that broadcast),
`ocannl_cd` (`%cd` blocks: several assignments, `.grad`/`.merge` nodes, `~~`, `*+`/`++`, slot
fillers), `ocannl_cd_expr` (tensor expressions inside `%cd` assignments: `*.`, `!.`, ...),
`ocannl_ndarray` (OCANNL's array literals), `ocannl_shapes` (OCANNL's shape inference for
params) and `ocannl_op` (`%op` tensor expressions).

May import: `refinterp.api` and the rings below it (core for diagnostics and source spans).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

from refinterp.core.diagnostics import Diagnostic
from refinterp.core.source import SourceFile

SPEC_ERROR = "E0100"  # a malformed spec or one-liner is a syntax error of that text
OPTION_ERROR = "E0901"  # an unknown accumulation or operation name given as an option

# ----------------------------------------------------------------------------- operations

Formula = Callable[..., str]


@dataclass(frozen=True)
class Operation:
    """A primitive operation of OCANNL (arrayjit `Ops`): its name, arity and the SkriptND
    formula computing `interpret_unop`/`interpret_binop`/`interpret_ternop` on its arguments."""

    name: str
    arity: int
    formula: Formula


def _select(condition: str, then: str, otherwise: str) -> str:
    return f"({condition} ? {then} : {otherwise})"


OPERATIONS: dict[str, Operation] = {op.name: op for op in [
    Operation("id", 1, lambda x: x),
    Operation("relu", 1, lambda x: _select(f"{x} >= 0.0", x, "0.0")),
    Operation("sat01", 1, lambda x: _select(f"{x} <= 0.0", "0.0",
                                            _select(f"{x} >= 1.0", "1.0", x))),
    Operation("exp", 1, lambda x: f"`exp`({x})"),
    Operation("log", 1, lambda x: f"`log`({x})"),
    Operation("exp2", 1, lambda x: f"(2.0 ** {x})"),
    Operation("log2", 1, lambda x: f"(`log`({x}) / `log`(2.0))"),
    Operation("sin", 1, lambda x: f"`sin`({x})"),
    Operation("cos", 1, lambda x: f"`cos`({x})"),
    Operation("sqrt", 1, lambda x: f"`sqrt`({x})"),
    Operation("recip", 1, lambda x: f"(1.0 / {x})"),
    Operation("recip_sqrt", 1, lambda x: f"(1.0 / `sqrt`({x}))"),
    Operation("neg", 1, lambda x: f"(-{x})"),
    Operation("tanh", 1, lambda x: f"`tanh`({x})"),
    Operation("not", 1, lambda x: _select(f"{x} == 0.0", "1.0", "0.0")),
    Operation("fst", 2, lambda x, y: x),
    Operation("snd", 2, lambda x, y: y),
    Operation("add", 2, lambda x, y: f"({x} + {y})"),
    Operation("sub", 2, lambda x, y: f"({x} - {y})"),
    Operation("mul", 2, lambda x, y: f"({x} * {y})"),
    Operation("div", 2, lambda x, y: f"({x} / {y})"),
    Operation("pow", 2, lambda x, y: f"({x} ** {y})"),
    Operation("relu_gate", 2, lambda x, y: _select(f"{x} > 0.0", y, "0.0")),
    Operation("sat01_gate", 2, lambda x, y: _select(f"{x} > 0.0 && {x} < 1.0", y, "0.0")),
    # Base's Float.max/min: the first argument when it is greater (smaller) or NaN
    Operation("max", 2, lambda x, y: _select(f"{x} > {y} || {x} != {x}", x, y)),
    Operation("min", 2, lambda x, y: _select(f"{x} < {y} || {x} != {x}", x, y)),
    Operation("mod_", 2, lambda x, y: f"({x} % {y})"),
    Operation("lt", 2, lambda x, y: _select(f"{x} < {y}", "1.0", "0.0")),
    Operation("eq", 2, lambda x, y: _select(f"{x} == {y}", "1.0", "0.0")),
    Operation("or_", 2, lambda x, y: _select(f"{x} != 0.0 || {y} != 0.0", "1.0", "0.0")),
    Operation("and_", 2, lambda x, y: _select(f"{x} != 0.0 && {y} != 0.0", "1.0", "0.0")),
    Operation("where", 3, lambda x, y, z: _select(f"{x} != 0.0", y, z)),
    Operation("fma", 3, lambda x, y, z: f"({x} * {y} + {z})"),
]}

# the infix spellings of the binary operations (the seed's table, and ops.ml's `=` for eq and
# the current ppx's `@-` for min)
INFIX: dict[str, str] = {"-@>": "fst", "-/>": "snd", "+": "add", "-": "sub", "*": "mul",
                         "/": "div", "**": "pow", "-?/": "relu_gate", "-?^": "sat01_gate",
                         "<": "lt", "<>": "eq", "||": "or_", "&&": "and_", "%": "mod_",
                         "@^": "max", "^^": "min", "@-": "min"}
ALIASES = {"or": "or_", "and": "and_", "mod": "mod_"}


@dataclass(frozen=True)
class Accumulation:
    """An OCANNL assignment operator: the binary operation accumulating into the result, its
    neutral element (`Ops.neutral_elem`) and whether it clears the result first (`=:`)."""

    op: str  # an OPERATIONS key; "snd" is plain assignment (`=:`)
    clears: bool

    @property
    def neutral(self) -> str:
        return NEUTRAL[self.op]

    @property
    def spelling(self) -> str:
        symbol = ACCUMULATORS_BY_OP[self.op]
        return "=:" if self.op == "snd" else ("=:" if self.clears else "=") + symbol


# Ops.neutral_elem (arrayjit/lib/ops.ml) as SkriptND literals
NEUTRAL = {"add": "0.0", "sub": "0.0", "mul": "1.0", "div": "1.0", "pow": "1.0",
           "relu_gate": "1.0", "sat01_gate": "0.5", "max": "-inf", "min": "inf",
           "and_": "1.0", "or_": "0.0", "snd": "0.0"}
ACCUMULATORS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "**": "pow", "?/": "relu_gate",
                "?^": "sat01_gate", "||": "or_", "&&": "and_", "@^": "max", "^^": "min",
                "@-": "min"}
ACCUMULATORS_BY_OP = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**",
                      "relu_gate": "?/", "sat01_gate": "?^", "or_": "||", "and_": "&&",
                      "max": "@^", "min": "^^", "snd": ""}


# ----------------------------------------------------------------------------- element types

DTYPES = ("real", "int", "bool")
# operations and accumulations over ints: those whose interpret function stays in the integers
INT_OPERATIONS = {"id", "relu", "sat01", "neg", "not", "fst", "snd", "add", "sub", "mul",
                  "relu_gate", "sat01_gate", "max", "min", "mod_", "lt", "eq", "or_", "and_",
                  "where", "fma"}
INT_NEUTRAL = {"add": "0", "sub": "0", "mul": "1", "relu_gate": "1", "or_": "0", "and_": "1",
               "snd": "0", "max": "-9223372036854775808", "min": "9223372036854775807"}
# over bools, as NumPy computes them: `*` is `&&` and `+` is `||` (np.einsum on bool arrays)
BOOL_FORMULAS: dict[str, Formula] = {
    "id": lambda x: x, "fst": lambda x, y: x, "snd": lambda x, y: y,
    "not": lambda x: f"!{x}", "eq": lambda x, y: f"({x} == {y})",
    "mul": lambda x, y: f"({x} && {y})", "and_": lambda x, y: f"({x} && {y})",
    "min": lambda x, y: f"({x} && {y})", "add": lambda x, y: f"({x} || {y})",
    "or_": lambda x, y: f"({x} || {y})", "max": lambda x, y: f"({x} || {y})"}
BOOL_NEUTRAL = {"add": "false", "or_": "false", "max": "false", "snd": "false",
                "mul": "true", "and_": "true", "min": "true"}


def typed_formula(operation: Operation, dtype: str) -> Formula:
    """The formula of `operation` over elements of `dtype`; an operation that has none there
    (`exp` over ints, `sub` over bools) is E0901."""
    if dtype == "real":
        return operation.formula
    if dtype == "bool" and operation.name in BOOL_FORMULAS:
        return BOOL_FORMULAS[operation.name]
    if dtype == "int" and operation.name in INT_OPERATIONS:
        return lambda *args: re.sub(r"(?<![\w.])(\d+)\.0(?![\d.])", r"\1",
                                    operation.formula(*args))
    allowed = BOOL_FORMULAS if dtype == "bool" else INT_OPERATIONS
    raise Diagnostic(f"'{operation.name}' has no {dtype} form", code=OPTION_ERROR,
                     notes=[f"over {dtype}s: " + ", ".join(sorted(allowed))])


def typed_neutral(accumulation: Accumulation, dtype: str) -> str:
    """The neutral element of `accumulation` as a literal of `dtype` (E0901 if it has none)."""
    table = {"real": NEUTRAL, "int": INT_NEUTRAL, "bool": BOOL_NEUTRAL}[dtype]
    if accumulation.op not in table:
        raise Diagnostic(f"the accumulation '{accumulation.spelling}' has no {dtype} form",
                         code=OPTION_ERROR,
                         notes=[f"over {dtype}s: " + ", ".join(sorted(table))])
    return table[accumulation.op]


def dtype_of(arrays: list) -> str:
    """The element type NumPy's promotion gives `arrays`: real if any is floating, else int if
    any is an integer, else bool (none given: real)."""
    import numpy as np

    kinds = {np.asarray(a).dtype.kind for a in arrays}
    if not kinds or kinds - {"b", "i", "u"}:
        return "real"
    return "int" if kinds & {"i", "u"} else "bool"


def parse_accumulation(text: str) -> Accumulation:
    """`=+`, `=:+`, `=:` ... as an Accumulation; an unknown spelling is E0901."""
    body = text.strip()
    if body == "=:":
        return Accumulation("snd", False)
    if body.startswith("=:"):
        symbol, clears = body[2:], True
    elif body.startswith("="):
        symbol, clears = body[1:], False
    else:
        symbol, clears = "", False
    if symbol not in ACCUMULATORS:
        raise Diagnostic(f"unknown accumulation '{text}'", code=OPTION_ERROR,
                         notes=["accumulations: =: and =OP or =:OP with OP one of "
                                + " ".join(ACCUMULATORS)])
    return Accumulation(ACCUMULATORS[symbol], clears)


def parse_operation(text: str) -> Operation:
    """A primitive operation by name (`relu`, `mul`) or infix spelling (`*`, `-?/`)."""
    name = INFIX.get(text.strip(), ALIASES.get(text.strip(), text.strip()))
    if name not in OPERATIONS:
        raise Diagnostic(f"unknown primitive operation '{text}'", code=OPTION_ERROR,
                         notes=["operations: " + ", ".join(OPERATIONS)
                                + "; infix: " + " ".join(INFIX)])
    return OPERATIONS[name]


# ----------------------------------------------------------------------------- spec model


@dataclass(frozen=True)
class Axis:
    """One array axis of an operand: a variable (`name`), a fixed index, a placeholder `_`
    (a fresh variable of its own), a row variable (`row`, any number of axes) or an axis of
    extent 1 that broadcasts (`one`, read at 0; refinterp/einsum/broadcast.py)."""

    kind: str  # "var" | "fixed" | "skip" | "row" | "one" | "conv"
    name: str = ""  # a conv axis: the output variable
    index: int = 0  # a conv axis: the stride
    kernel: str = ""  # a conv axis: the kernel variable ("" for an offset or none)
    dilation: int = 0  # a conv axis: the kernel's dilation, or the offset when no kernel
    start: int = 0  # the position in the spec text, for diagnostics
    end: int = 0


@dataclass
class Operand:
    """An operand or the result: its axes in array order (batch, output, input)."""

    axes: list[Axis]
    start: int
    end: int

    @property
    def rows(self) -> list[str]:
        return [a.name for a in self.axes if a.kind == "row"]


@dataclass
class Spec:
    """A parsed einsum spec: operands, result, and the text it came from."""

    operands: list[Operand]
    result: Operand
    source: SourceFile
    notation: str  # "numpy" | "ocannl"


def _error(source: SourceFile, start: int, end: int, message: str,
           notes: list[str] | None = None) -> Diagnostic:
    return Diagnostic(message, span=source.span(start, max(end, start + 1)), code=SPEC_ERROR,
                      notes=notes or [])


def parse_spec(text: str, path: str = "<einsum spec>") -> Spec:
    """Parse an einsum spec: OCANNL notation when it contains `=>`, else NumPy notation.
    The `~logic` shorthands `.`, `@` and `T` are expanded by `logic_spec` first."""
    source = SourceFile(path, text)
    if "=>" in text:
        return _parse_ocannl(source)
    return _parse_numpy(source)


def _parse_numpy(source: SourceFile) -> Spec:
    text = source.text
    arrow = text.find("->")
    left_end = arrow if arrow >= 0 else len(text)
    if text.count("->") > 1:
        second = text.find("->", arrow + 2)
        raise _error(source, second, second + 2, "a second '->' in the spec")
    operands: list[Operand] = []
    start = 0
    for piece in text[:left_end].split(","):
        operands.append(_numpy_operand(source, start, start + len(piece)))
        start += len(piece) + 1
    if arrow >= 0:
        result = _numpy_operand(source, arrow + 2, len(text))
    else:  # implicit output: the labels used once, in alphabetical order, after any '...'
        counts: dict[str, int] = {}
        for operand in operands:
            for axis in operand.axes:
                if axis.kind == "var":
                    counts[axis.name] = counts.get(axis.name, 0) + 1
        axes = [Axis("row", "ellipsis")] if any(o.rows for o in operands) else []
        axes += [Axis("var", name) for name in sorted(n for n, c in counts.items() if c == 1)]
        result = Operand(axes, len(text), len(text))
    return Spec(operands, result, source, "numpy")


def _numpy_operand(source: SourceFile, start: int, end: int) -> Operand:
    text, axes, index = source.text, [], start
    while index < end:
        char = text[index]
        if char.isspace():
            index += 1
        elif text.startswith("...", index) and index + 3 <= end:
            if any(a.kind == "row" for a in axes):
                raise _error(source, index, index + 3, "a second '...' in one operand")
            axes.append(Axis("row", "ellipsis", start=index, end=index + 3))
            index += 3
        elif char.isalpha() and char.isascii():
            axes.append(Axis("var", char, start=index, end=index + 1))
            index += 1
        else:
            raise _error(source, index, index + 1,
                         f"unexpected '{char}' in a NumPy einsum spec",
                         ["NumPy notation: letters, '...', ',' between operands, '->' before "
                          "the result; OCANNL notation needs '=>'"])
    return Operand(axes, start, end)


_OCANNL_TOKEN = re.compile(r"\s+|=>|->|\.\.\.|\.\.|[|;,_]|\d+|[A-Za-z][A-Za-z0-9_]*|.",
                           re.DOTALL)
_UNSUPPORTED = {"^": "axis concatenation", "&": "'&'", "<": "convolution axes with '<'",
                "=": "convolution axes with '='"}
# OCANNL's conv_expr: [stride*]output[+[dilation*]kernel | +offset]
_CONV = re.compile(r"^(?:(?P<stride>\d+)\*)?(?P<out>[A-Za-z]\w*)"
                   r"(?:\+(?:(?:(?P<dilation>\d+)\*)?(?P<kernel>[A-Za-z]\w*|_)|(?P<offset>\d+)))?$")


def _parse_ocannl(source: SourceFile) -> Spec:
    text = source.text
    multichar = any(c in text for c in ",*+^&<") or re.search(r"=(?!>)", text) is not None
    tokens: list[tuple[str, int, int]] = []
    for match in _OCANNL_TOKEN.finditer(text):
        token = match.group()
        if token.isspace():
            continue
        if token in _UNSUPPORTED:
            raise _error(source, match.start(), match.end(),
                         f"{_UNSUPPORTED[token]} are not supported by refinterp's einsum "
                         f"front end")
        if not multichar and token[0].isalpha() and len(token) > 1:
            # single-char mode: every letter (and `_`) is an axis of its own, a run of digits
            # one number
            for part in re.finditer(r"\d+|.", token):
                tokens.append((part.group(), match.start() + part.start(),
                               match.start() + part.end()))
            continue
        if token not in ("=>", "->", "...", "..", "|", ";", ",", "_", "+", "*") \
                and not token.isdigit() \
                and not token[0].isalpha():
            raise _error(source, match.start(), match.end(),
                         f"unexpected '{token}' in an OCANNL einsum spec")
        tokens.append((token, match.start(), match.end()))
    arrows = [t for t in tokens if t[0] == "=>"]
    if len(arrows) != 1:
        raise _error(source, arrows[1][1], arrows[1][2], "a second '=>' in the spec")
    split = tokens.index(arrows[0])
    operands: list[list[tuple[str, int, int]]] = [[]]
    for token in tokens[:split]:
        if token[0] == ";":
            operands.append([])
        else:
            operands[-1].append(token)
    starts = [0] + [t[2] for t in tokens[:split] if t[0] == ";"]
    ends = [t[1] for t in tokens[:split] if t[0] == ";"] + [arrows[0][1]]
    parsed = [_ocannl_shape(source, toks, s, e, multichar)
              for toks, s, e in zip(operands, starts, ends)]
    result = _ocannl_shape(source, tokens[split + 1:], arrows[0][2], len(text), multichar)
    return Spec(parsed, result, source, "ocannl")


def _ocannl_shape(source: SourceFile, tokens: list[tuple[str, int, int]], start: int,
                  end: int, multichar: bool) -> Operand:
    """`batch|input->output` (each part optional but the output) as array axes in OCANNL's
    layout: batch, output, input."""
    rows: dict[str, list[tuple[str, int, int]]] = {"batch": [], "input": [], "output": []}
    pipes = [i for i, t in enumerate(tokens) if t[0] == "|"]
    arrows = [i for i, t in enumerate(tokens) if t[0] == "->"]
    for marks, what in ((pipes, "'|'"), (arrows, "'->'")):
        if len(marks) > 1:
            token = tokens[marks[1]]
            raise _error(source, token[1], token[2], f"a second {what} in one shape")
    rest = tokens
    if pipes:
        rows["batch"], rest = tokens[:pipes[0]], tokens[pipes[0] + 1:]
        if arrows and arrows[0] < pipes[0]:
            token = tokens[arrows[0]]
            raise _error(source, token[1], token[2], "'->' before '|': write batch|input->output")
    arrow = [i for i, t in enumerate(rest) if t[0] == "->"]
    if arrow:
        rows["input"], rows["output"] = rest[:arrow[0]], rest[arrow[0] + 1:]
    else:
        rows["output"] = rest
    axes: list[Axis] = []
    for kind in ("batch", "output", "input"):
        axes += _ocannl_row(source, rows[kind], kind, multichar)
    return Operand(axes, start, end)


def _ocannl_row(source: SourceFile, tokens: list[tuple[str, int, int]], kind: str,
                multichar: bool) -> list[Axis]:
    axes: list[Axis] = []
    index = 0
    expect_item = True  # in multichar mode, items are separated by commas
    while index < len(tokens):
        token, start, end = tokens[index]
        if token == ",":
            if not multichar or expect_item:
                raise _error(source, start, end, "an axis is missing before ','")
            expect_item = True
            index += 1
            continue
        if multichar and not expect_item and token != "..":
            raise _error(source, start, end, "',' expected between axes in multichar mode")
        run = 0
        while index + run < len(tokens) and tokens[index + run][0] not in (",", "..", "..."):
            run += 1
        if any(t[0] in "+*" for t in tokens[index:index + run]):
            axes.append(_conv_axis(source, tokens[index:index + run]))
            expect_item = False
            index += run
            continue
        if token == "...":
            axes.append(Axis("row", kind, start=start, end=end))
        elif token == "..":
            if index + 2 >= len(tokens) or not tokens[index + 1][0][0].isalpha() \
                    or tokens[index + 2][0] != "..":
                raise _error(source, start, end, "a row variable is written ..name..")
            name, end = tokens[index + 1][0], tokens[index + 2][2]
            axes.append(Axis("row", name, start=start, end=end))
            index += 2
        elif token == "_":
            axes.append(Axis("skip", start=start, end=end))
        elif token.isdigit():
            axes.append(Axis("fixed", index=int(token), start=start, end=end))
        elif token[0].isalpha():
            axes.append(Axis("var", token, start=start, end=end))
        else:
            raise _error(source, start, end, f"unexpected '{token}' in a row")
        expect_item = False
        index += 1
    row_vars = [a for a in axes if a.kind == "row"]
    if len(row_vars) > 1:
        raise _error(source, row_vars[1].start, row_vars[1].end, "a second row variable in one row")
    return axes


def _conv_axis(source: SourceFile, tokens: list[tuple[str, int, int]]) -> Axis:
    """A convolution axis `[stride*]output[+[dilation*]kernel]` or `[stride*]output+offset`."""
    start, end = tokens[0][1], tokens[-1][2]
    match = _CONV.match("".join(t[0] for t in tokens))
    if match is None:
        raise _error(source, start, end, "a convolution axis is [stride*]output"
                     "[+[dilation*]kernel] or [stride*]output+offset")
    stride = int(match["stride"] or 1)
    if match["offset"] is not None:
        return Axis("conv", match["out"], stride, "", int(match["offset"]), start, end)
    kernel = match["kernel"] or ""
    dilation = int(match["dilation"] or 1) if kernel else 0
    if kernel == "_":  # OCANNL's `_offset_only`: the dilation is the offset
        kernel, dilation = "", int(match["dilation"] or 1)
    return Axis("conv", match["out"], stride, kernel, dilation, start, end)


def logic_spec(logic: str, operands: int) -> str:
    """The einsum spec of a `~logic` shorthand: `.` pointwise, `@` OCANNL's compose (output
    axes of rhs2 match input axes of rhs1), `T` transpose of input and output axes; any
    other text is returned as it is."""
    if logic == ".":
        return ",".join(["..."] * operands) + "->..."
    if logic == "@":
        return "..b..|..k..->..o..; ..b..|..i..->..k.. => ..b..|..i..->..o.."
    if logic == "T":
        return "..b..|..i..->..o.. => ..b..|..o..->..i.."
    return logic


# ----------------------------------------------------------------------------- generation


@dataclass
class Einsum:
    """A complete einsum assignment: spec, operand and result names, accumulation, operation."""

    spec: Spec
    names: list[str]
    result: str = "out"
    accumulation: Accumulation = field(default_factory=lambda: Accumulation("add", True))
    operation: Operation | None = None
    operator: str = "einsum"
    dtype: str = "real"  # the element type of every operand and the result (DTYPES)

    def __post_init__(self) -> None:
        if self.operation is None:
            self.operation = OPERATIONS["id"] if len(self.spec.operands) == 1 \
                else OPERATIONS["mul"]
        arity = len(self.spec.operands)
        if self.operation.arity != arity and not (self.operation.name == "mul" and arity > 2):
            operand = self.spec.operands[-1]
            raise _error(self.spec.source, operand.start, operand.end,
                         f"the operation '{self.operation.name}' takes "
                         f"{self.operation.arity} operand(s); the spec has {arity}")
        if len(self.names) != arity:
            raise Diagnostic(f"the spec has {arity} operand(s); {len(self.names)} name(s) "
                             f"given", code=OPTION_ERROR)

    @property
    def old_name(self) -> str:
        return f"{self.result}_old"

    def reads_old(self) -> bool:
        """Whether the result's old value is an input: a non-clearing accumulation, unless it
        is plain assignment `=:` onto every cell (then the old value is never seen)."""
        if self.accumulation.clears:
            return False
        if self.accumulation.op == "snd":
            covered = all(a.kind in ("var", "row") for a in self.spec.result.axes)
            return not covered
        return True

    def row_ranks(self) -> list[str]:
        """Row variables whose length an attribute must give: those that never stand alone
        (as the only row variable) in an operand whose rank fixes them."""
        alone = set()
        for operand in self._sources():
            if len(operand.rows) == 1:
                alone.add(operand.rows[0])
        ranked = []
        for operand in self._sources():
            if len(operand.rows) > 1:
                for name in operand.rows:
                    if name not in alone and name not in ranked:
                        ranked.append(name)
        return ranked

    def _sources(self) -> list[Operand]:
        """The operands whose shapes are given: the inputs and, if read, the old result."""
        return self.spec.operands + ([self.spec.result] if self.reads_old() else [])

    def to_sknd(self) -> str:
        """The SkriptND text of the operator."""
        return _Generator(self).text()


def _ident(name: str) -> str:
    return re.sub(r"\W", "_", name)


class _Generator:
    """Writes one Einsum as a SkriptND operator (names: index `i_x`, extent `n_x` for axis
    variable x; pack index `ri_v`, pack extent `r_v`, attribute `v_rank` for row variable v)."""

    def __init__(self, einsum: Einsum) -> None:
        self.e = einsum
        self.spec = einsum.spec
        self.fresh = 0
        # by id() of axes and operands of `self.spec`, which holds them as long as these dicts
        self.skips: dict[int, str] = {}  # id of a placeholder axis -> its index name
        self.ranked = einsum.row_ranks()
        self.declared: dict[int, list[str]] = {}  # id of an operand -> its declared extents
        self.skip_bounds: list[str] = []
        # a conv output variable that no operand has as an axis: its extent by the conv rule
        self.conv_extents: dict[str, str] = {}
        self.direct = {a.name for o in einsum._sources() for a in o.axes if a.kind == "var"}
        self._check()

    def _conv_extent(self, axis: Axis, extent: str) -> str:
        """The output extent of a valid (unpadded) convolution axis over an input axis of
        `extent`: the positions where the whole (dilated) kernel window fits."""
        if axis.kernel:
            reach = f"(n_{_ident(axis.kernel)} - 1)"
            reach = f"{axis.dilation} * {reach}" if axis.dilation != 1 else reach
        else:
            reach = str(axis.dilation)
        size = f"{extent} - {reach} - 1" if reach != "0" else f"{extent} - 1"
        return f"({size}) / {axis.index} + 1" if axis.index != 1 else f"({size} + 1)"

    def extent_of(self, name: str) -> str:
        """The extent of axis variable `name`: its symbol, or its convolution's rule."""
        if name not in self.direct and name in self.conv_extents:
            return self.conv_extents[name]
        return f"n_{_ident(name)}"

    def _check(self) -> None:
        spec, source = self.spec, self.spec.source
        known_vars = {a.name for o in self.e._sources() for a in o.axes if a.kind == "var"}
        known_rows = {a.name for o in self.e._sources() for a in o.axes if a.kind == "row"}
        for axis in (a for o in spec.operands for a in o.axes if a.kind == "conv"):
            if axis.kernel and axis.kernel not in known_vars:
                raise _error(source, axis.start, axis.end,
                             f"the kernel axis '{axis.kernel}' of this convolution has no "
                             f"extent", ["the kernel variable must be an axis of an operand"])
        known_vars |= {a.name for o in spec.operands for a in o.axes if a.kind == "conv"}
        seen: set[str] = set()
        for axis in spec.result.axes:
            if axis.kind == "conv":
                raise _error(source, axis.start, axis.end,
                             "strided and convolution axes are not supported in the result")
            if axis.kind in ("var", "row"):
                key = axis.kind + axis.name
                if key in seen:
                    raise _error(source, axis.start, axis.end,
                                 f"'{axis.name}' appears twice in the result")
                seen.add(key)
            missing = (axis.kind == "var" and axis.name not in known_vars) or \
                (axis.kind == "row" and axis.name not in known_rows) or \
                (axis.kind == "skip" and not self.e.reads_old())
            if missing:
                raise _error(source, axis.start, axis.end,
                             "the extent of this result axis is not given by any operand",
                             ["an axis of the result must appear in an operand, or the "
                              "accumulation must be non-clearing (=+, ...) onto an existing "
                              "result"])
        names = list(self.e.names) + [self.e.result] + \
            ([self.e.old_name] if self.e.reads_old() else [])
        for name in names:
            if not name.isidentifier():
                raise Diagnostic(f"'{name}' is no valid tensor name", code=OPTION_ERROR)
        internal = re.compile(r"^(?:(?:n|i|r|ri)_\w*|[ceu]\d+|\w*_rank)$")
        for name in names:
            if internal.match(name) or name == self.e.operator:
                raise Diagnostic(f"'{name}' is a name the generated operator uses for itself; "
                                 f"choose another tensor name", code=OPTION_ERROR)
        if len(set(names)) != len(names):
            raise Diagnostic(f"tensor names must differ: {', '.join(names)}", code=OPTION_ERROR)

    # -- pieces
    def extents(self, operand: Operand) -> list[str]:
        """The declared extents of an operand (or of the old result); a fixed index or a
        placeholder gets an extent symbol of its own."""
        key = id(operand)
        if key in self.declared:
            return self.declared[key]
        parts = []
        for axis in operand.axes:
            if axis.kind == "var":
                parts.append(f"n_{_ident(axis.name)}")
            elif axis.kind == "row":
                length = f"..({_ident(axis.name)}_rank)" if axis.name in self.ranked else ".."
                parts.append(f"r_{_ident(axis.name)}{length}")
            elif axis.kind == "one":
                parts.append("1")
            elif axis.kind == "conv":
                self.fresh += 1
                parts.append(f"e{self.fresh}")
                self.conv_extents.setdefault(axis.name, self._conv_extent(axis, f"e{self.fresh}"))
            else:
                self.fresh += 1
                parts.append(f"e{self.fresh}")
                if axis.kind == "skip":
                    self.skip_bounds.append(f"{self.skip_index(axis)} < e{self.fresh}")
        self.declared[key] = parts
        return parts

    def skip_index(self, axis: Axis) -> str:
        return self.skips.setdefault(id(axis), f"u{len(self.skips) + 1}")

    def result_extents(self) -> list[str]:
        if self.e.reads_old():
            return self.extents(self.spec.result)
        parts = []
        for axis in self.spec.result.axes:
            if axis.kind == "var":
                parts.append(self.extent_of(axis.name))
            elif axis.kind == "row":
                parts.append(f"r_{_ident(axis.name)}..")
            else:  # a fixed index of a fresh result: the smallest extent holding it
                parts.append(str(axis.index + 1))
        return parts

    def access(self, name: str, operand: Operand) -> str:
        parts = []
        for axis in operand.axes:
            if axis.kind == "var":
                parts.append(f"i_{_ident(axis.name)}")
            elif axis.kind == "row":
                parts.append(f"ri_{_ident(axis.name)}..")
            elif axis.kind in ("fixed", "one"):
                parts.append(str(axis.index))
            elif axis.kind == "conv":
                parts.append(self._conv_index(axis))
            else:
                parts.append(self.skip_index(axis))
        if len(parts) == 1 and not parts[0].endswith(".."):
            return f"{name}[{parts[0]},]"  # a rank-1 tensor access (spec §2.4)
        return f"{name}[{', '.join(parts)}]"

    @staticmethod
    def _conv_index(axis: Axis) -> str:
        terms = [f"{axis.index} * i_{_ident(axis.name)}" if axis.index != 1
                 else f"i_{_ident(axis.name)}"]
        if axis.kernel:
            terms.append(f"{axis.dilation} * i_{_ident(axis.kernel)}" if axis.dilation != 1
                         else f"i_{_ident(axis.kernel)}")
        elif axis.dilation:
            terms.append(str(axis.dilation))
        return " + ".join(terms)

    def bounds(self) -> list[str]:
        """Index bounds of the update: the result's variables first, then the others in the
        order of first appearance (this is the order of the accumulation)."""
        bounds: list[str] = []
        seen: set[str] = set()
        for operand in [self.spec.result] + self.spec.operands:
            for axis in operand.axes:
                names = [axis.name] if axis.kind == "var" else \
                    [n for n in (axis.name, axis.kernel) if n] if axis.kind == "conv" else []
                for name in names:
                    if "v" + name not in seen:
                        seen.add("v" + name)
                        bounds.append(f"i_{_ident(name)} < {self.extent_of(name)}")
                if axis.kind == "row" and "r" + axis.name not in seen:
                    seen.add("r" + axis.name)
                    bounds.append(f"ri_{_ident(axis.name)} < r_{_ident(axis.name)}")
        return bounds + self.skip_bounds

    def text(self) -> str:
        e, spec = self.e, self.spec
        lines = [f"# {spec.source.text.strip()}: {e.result} {e.accumulation.spelling} "
                 f"{e.operation.name}({', '.join(e.names)})",
                 f"operator {e.operator} {{"]
        if self.ranked:
            lines += ["    @attrib {"] + [f"        {_ident(n)}_rank: int;" for n in self.ranked]
            lines += ["    }"]
        lines.append("    @input {")
        for name, operand in zip(e.names, spec.operands):
            lines.append(f"        {name}: {e.dtype}[{', '.join(self.extents(operand))}];")
        reads_old = e.reads_old()
        if reads_old:
            lines.append(f"        {e.old_name}: {e.dtype}[{', '.join(self.result_extents())}];")
        lines += ["    }", "    @output {"]
        out_extents = ", ".join(self.result_extents())
        lines += [f"        {e.result}: {e.dtype}[{out_extents}];", "    }", "    @lower {"]
        # initialisation: every cell of the result
        rank = len(spec.result.axes)
        init_index = [f"c{k}" for k in range(rank)]
        init_access = self._init_access(init_index)
        init_value = f"{e.old_name}{init_access[len(e.result):]}" if reads_old \
            else typed_neutral(e.accumulation, e.dtype)
        init_bounds = self._init_bounds(init_index)
        lines.append(f"        {init_access} = {init_value}" +
                     "".join(f",\n            {b}" for b in init_bounds) + ";")
        # the update over the product space
        target = self.access(e.result, spec.result)
        values = [self.access(n, o) for n, o in zip(e.names, spec.operands)]
        formula = typed_formula(e.operation, e.dtype)
        if e.operation.arity == 2 and len(values) > 2 and e.dtype != "bool":
            value = "(" + " * ".join(values) + ")"  # NumPy's n-ary product
        elif e.operation.arity == 2 and len(values) > 2:
            value = "(" + " && ".join(values) + ")"
        else:
            value = formula(*values)
        accumulate = e.accumulation.op
        if accumulate == "add" and e.dtype != "bool":
            update = f"{target} += {value}"
        elif accumulate == "mul" and e.dtype != "bool":
            update = f"{target} *= {value}"
        elif accumulate == "snd":
            update = f"{target} := {value}"
        else:
            combine = typed_formula(OPERATIONS[accumulate], e.dtype)
            update = f"{target} := {combine(target, value)}"
        lines.append(f"        {update}" + "".join(f",\n            {b}" for b in self.bounds())
                     + ";")
        lines += ["    }", "}"]
        return "\n".join(lines) + "\n"

    def _init_access(self, index: list[str]) -> str:
        parts = []
        for axis, name in zip(self.spec.result.axes, index):
            parts.append(f"{name}.." if axis.kind == "row" else name)
        if len(parts) == 1 and not parts[0].endswith(".."):
            return f"{self.e.result}[{parts[0]},]"
        return f"{self.e.result}[{', '.join(parts)}]"

    def _init_bounds(self, index: list[str]) -> list[str]:
        bounds = []
        for name, extent in zip(index, self.result_extents()):
            extent = extent.split("..")[0]
            bounds.append(f"{name} < {extent}")
        return bounds


# ----------------------------------------------------------------------------- one-liners

_LINE = re.compile(r"^\s*(?P<lhs>[A-Za-z_]\w*)\s*(?P<asgn>=:?(?:\*\*|\?/|\?\^|\|\||&&|@\^|"
                   r"\^\^|@-|[-+*/])?)(?P<rhs>.*?)(?:~logic\s*:\s*\"(?P<logic>[^\"]*)\")?\s*$",
                   re.DOTALL)
_INFIX_RE = "|".join(re.escape(s) for s in sorted(INFIX, key=len, reverse=True))


@dataclass
class OneLiner:
    """A parsed `%cd`-like assignment `lhs ASGN rhs [~logic:"SPEC"]`."""

    result: str
    accumulation: Accumulation
    operation: Operation
    operands: list[str]
    logic: str | None
    logic_start: int


def parse_one_liner(text: str, path: str = "<assignment>") -> OneLiner:
    """`c =:+ a * b ~logic:"ij;jk=>ik"`, `c =: relu a`, `c =+ where(m, a, b) ~logic:"."`."""
    source = SourceFile(path, text)
    match = _LINE.match(text)
    if match is None or not match["asgn"]:
        raise _error(source, 0, len(text), "expected LHS =OP RHS [~logic:\"SPEC\"]",
                     ["e.g. c =:+ a * b ~logic:\"ij;jk=>ik\""])
    accumulation = parse_accumulation(match["asgn"])
    rhs, rhs_start = match["rhs"], match.start("rhs")
    name = r"[A-Za-z_]\w*"
    infix = re.fullmatch(rf"\s*({name})\s*({_INFIX_RE})\s*({name})\s*", rhs)
    call = re.fullmatch(rf"\s*({name})\s*\(\s*({name}(?:\s*,\s*{name})*)\s*\)\s*", rhs)
    words = rhs.split()
    if infix:
        operation, operands = parse_operation(infix[2]), [infix[1], infix[3]]
    elif call:
        operation = _named(source, call[1], rhs_start + call.start(1))
        operands = [x.strip() for x in call[2].split(",")]
    elif len(words) == 1 and re.fullmatch(name, words[0]):
        operation, operands = OPERATIONS["id"], words
    elif len(words) > 1 and all(re.fullmatch(name, w) for w in words):
        operation = _named(source, words[0], rhs_start + rhs.find(words[0]))
        operands = words[1:]
    else:
        raise _error(source, rhs_start, rhs_start + len(rhs),
                     "expected `a OP b`, `op a ...`, `op(a, ...)` or `a`")
    if len(operands) != operation.arity:
        raise _error(source, rhs_start, rhs_start + len(rhs),
                     f"'{operation.name}' takes {operation.arity} operand(s); "
                     f"{len(operands)} given")
    logic_start = match.start("logic") if match["logic"] is not None else -1
    return OneLiner(match["lhs"], accumulation, operation, operands, match["logic"], logic_start)


def _named(source: SourceFile, word: str, start: int) -> Operation:
    name = ALIASES.get(word, word)
    if name not in OPERATIONS:
        raise _error(source, start, start + len(word), f"unknown primitive operation '{word}'",
                     ["operations: " + ", ".join(OPERATIONS)])
    return OPERATIONS[name]


def einsum_of_one_liner(text: str) -> Einsum:
    """The Einsum of a one-liner; without `~logic` the operation is pointwise (`.`)."""
    line = parse_one_liner(text)
    logic = line.logic if line.logic is not None else "."
    spec = parse_spec(logic_spec(logic, len(line.operands)))
    return Einsum(spec, line.operands, line.result, line.accumulation, line.operation)


def build(spec: str, *, names: list[str] | None = None, result: str | None = None,
          accumulation: str = "=:+", operation: str | None = None,
          operator: str = "einsum") -> Einsum:
    """An Einsum from a spec (NumPy or OCANNL notation, or a `~logic` shorthand `.`/`@`/`T`
    with the operand count taken from `names` or the operation), or from a one-liner
    (`c =:+ a * b ~logic:"..."`, recognised by its `=` after a name)."""
    if _LINE.match(spec) and re.match(r"^\s*[A-Za-z_]\w*\s*=(?!>)", spec):
        einsum = einsum_of_one_liner(spec)
        einsum.operator = operator
        return einsum
    op = parse_operation(operation) if operation is not None else None
    count = len(names) if names else (op.arity if op else 2)
    parsed = parse_spec(logic_spec(spec.strip(), count)) if spec.strip() in (".", "@", "T") \
        else parse_spec(spec)
    arity = len(parsed.operands)
    chosen = names if names else [chr(ord("a") + k) for k in range(arity)]
    return Einsum(parsed, list(chosen), result or "out", parse_accumulation(accumulation), op,
                  operator)


# ----------------------------------------------------------------------------- running


def infer_ranks(einsum: Einsum, shapes: dict[str, tuple[int, ...]],
                given: dict | None = None) -> dict[str, int]:
    """The `<v>_rank` attributes that the ranks of the given arrays determine, besides those
    `given`: an operand whose row variables are all known but one fixes that one (repeated
    until nothing changes)."""
    sources = list(zip(einsum.names, einsum.spec.operands))
    if einsum.reads_old():
        sources.append((einsum.old_name, einsum.spec.result))
    every = {r for _, o in sources for r in o.rows}
    known: dict[str, int] = {v: int(given[f"{_ident(v)}_rank"]) for v in every
                             if given and isinstance(given.get(f"{_ident(v)}_rank"), int)}
    changed = True
    while changed:
        changed = False
        for name, operand in sources:
            if name not in shapes:
                continue
            rows = operand.rows
            free = len(shapes[name]) - (len(operand.axes) - len(rows))
            unknown = [r for r in rows if r not in known]
            if len(unknown) == 1:
                known[unknown[0]] = free - sum(known[r] for r in rows if r in known)
                changed = True
            elif len(unknown) > 1 and _split_is_free(einsum, operand, unknown):
                # the split of these axes among the row variables changes nothing: all to
                # the first
                rest = free - sum(known[r] for r in rows if r in known)
                known.update({r: (rest if k == 0 else 0) for k, r in enumerate(unknown)})
                changed = True
    ranked = einsum.row_ranks()
    return {f"{_ident(v)}_rank": n for v, n in known.items() if v in ranked and n >= 0}


def _split_is_free(einsum: Einsum, operand: Operand, unknown: list[str]) -> bool:
    """Whether any split of an operand's axes among its row variables `unknown` gives the same
    result: each of them appears in no other operand nor the result, and they stand side by
    side in the operand (as in `...|...->... => 0`, which sums every axis)."""
    others = [o for o in einsum.spec.operands if o is not operand] + [einsum.spec.result]
    if any(r in o.rows for o in others for r in unknown):
        return False
    places = [k for k, a in enumerate(operand.axes) if a.kind == "row" and a.name in unknown]
    return places == list(range(places[0], places[0] + len(places)))


def prepare(einsum: Einsum, inputs: dict,
            attributes: dict | None = None) -> tuple[Einsum, dict, dict]:
    """The einsum, inputs and attributes to run on these arrays: the element type NumPy's
    promotion gives the operands (arrays of another kind converted), the rank attributes the
    shapes determine, and — where the shapes need broadcasting — the operator specialised to
    them (refinterp/einsum/broadcast.py; then it has no rank attributes)."""
    import numpy as np

    from refinterp.einsum.broadcast import specialise

    sources = list(einsum.names) + ([einsum.old_name] if einsum.reads_old() else [])
    dtype = dtype_of([inputs[n] for n in sources if n in inputs])
    numpy_type = {"real": np.float64, "int": np.int64, "bool": np.bool_}[dtype]
    arrays = {k: np.asarray(v).astype(numpy_type, copy=False) for k, v in inputs.items()}
    if dtype != einsum.dtype:
        einsum = replace(einsum, dtype=dtype)
    shapes = {k: np.shape(v) for k, v in arrays.items()}
    given = dict(infer_ranks(einsum, shapes, attributes))
    given.update(attributes or {})
    special = specialise(einsum, shapes, given)
    if special is not None:
        ranks = {f"{_ident(v)}_rank" for v in einsum.row_ranks()}
        return special, arrays, {k: v for k, v in given.items() if k not in ranks}
    return einsum, arrays, given


def evaluate(einsum: Einsum, inputs: dict, attributes: dict | None = None, **options: object):
    """Run the operator of `einsum` on input arrays by name (`refinterp.api.evaluate`'s
    options pass through); rank attributes not given are inferred from the arrays."""
    from refinterp import api

    einsum, inputs, given = prepare(einsum, inputs, attributes)
    program = api.load_source(einsum.to_sknd(), path=f"<einsum {einsum.operator}>")
    try:
        return api.evaluate(program, op=einsum.operator, inputs=inputs, attributes=given,
                            **options)
    except Diagnostic as error:
        missing = [f"{_ident(v)}_rank" for v in einsum.row_ranks()
                   if f"{_ident(v)}_rank" not in given]
        if error.code == "E0302" and missing:
            error.notes.append(f"the arrays do not say how many axes each row variable holds: "
                               f"give {', '.join(missing)} (e.g. --attrib {missing[0]}=1)")
        raise


def model_text(einsum: Einsum, shapes: dict[str, tuple[int, ...]],
               attributes: dict[str, int] | None = None, graph: str = "G") -> str:
    """The operator of `einsum` followed by a graph invoking it on inputs of fixed `shapes`
    (a model file, e.g. for a golden model case) of reals; rank attributes are inferred from
    the shapes unless given, and shapes that need broadcasting specialise the operator."""
    import numpy as np

    from refinterp import api

    einsum, _, given = prepare(einsum, {n: np.zeros(shapes[n]) for n in shapes}, attributes)
    inputs = list(einsum.names) + ([einsum.old_name] if einsum.reads_old() else [])
    program = api.load_source(einsum.to_sknd(), path=f"<einsum {einsum.operator}>")
    found = api.shapes(program, op=einsum.operator, attributes=given,
                       inputs={n: api.TensorType("real", tuple(shapes[n])) for n in inputs})
    result = found.outputs[einsum.result]
    dims = lambda shape: ", ".join(str(int(d)) for d in shape)  # noqa: E731
    attribute_text = "{" + ", ".join(f"{k} = {v}" for k, v in sorted(given.items())) + "}" \
        if given else ""
    lines = [einsum.to_sknd().rstrip("\n"), "", f"graph {graph} {{", "    @input {"]
    lines += [f"        {n}: real[{dims(np.shape(np.empty(shapes[n])))}];" for n in inputs]
    lines += ["    }", "    @output {", f"        {einsum.result}: real[{dims(result.shape)}];",
              "    }", "    @compose {",
              f"        {einsum.result} = {einsum.operator}{attribute_text}({', '.join(inputs)});",
              "    }", "}"]
    return "\n".join(lines) + "\n"
