"""OCANNL `%op` tensor expressions (`relu("w" * x + "b" hid_dim)`) evaluated on given arrays
(docs/ocannl.md "`%op` expressions").

The expression is OCaml syntax over `TDSL.O`'s operators, with OCaml's precedences:

- `a * b` compose (matrix multiplication generalised: `a` applied to `b`, `Compose`);
  `a *. b`, `a /. b` pointwise multiplication, division; `a + b`, `a - b` pointwise;
  `a **. p` pointwise power by a number (`pointpow`); `- a` / `~- a` negation;
  `relu a`, `exp(a)`, ... the unary primitive operations, pointwise;
- tensors: identifiers (inputs, or params declared outside, `TDSL.param "w"`); inline
  declarations `"w"` (a param, its shape inferred), `"b" 8` / `"b" hid_dim` (one output axis),
  `"w" (2, 3)` (output axes), `"a" [ -4 ]` (an array literal: shape and initial values);
  numbers `2.0`, `'q' 2.0` (one output axis of extent 1); `!.x` / `!..n` constants.

Shapes come from refinterp/einsum/ocannl_shapes.py; each operation then runs as one einsum
assignment (refinterp/einsum/__init__.py) on the inferred shapes, so the values are the
interpreter's. Params not given take values drawn uniformly from [0, 1) by
`numpy.random.default_rng(seed)`, in order of first appearance (OCANNL's random
initialisation, not its generator).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from refinterp import einsum as front
from refinterp.core.diagnostics import Diagnostic
from refinterp.core.source import SourceFile
from refinterp.einsum import ocannl_ndarray
from refinterp.einsum.ocannl_cd_expr import read_float
from refinterp.einsum.ocannl_shapes import Row, Shapes

_TOKEN = re.compile(r"\s+|\"[^\"]*\"|'[^']*'|\*\+|\+\+|!\.\.|!\.|\*\*\.|\*\.|/\.|~-"
                    r"|\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?|[A-Za-z_][\w.]*"
                    r"|[-+*/()\[\],]|.")
_BINARY = {"+": "add", "-": "sub", "*.": "mul", "/.": "div", "*": "compose"}
_LEVELS = [("+", "-"), ("*", "*.", "/.")]
# letters of the generated einsum specs, by row kind: a row of n axes takes the last n
_LETTERS = {"batch": "abcdefg", "input": "hijklmn", "output": "opqrstu", "contract": "vwxyz"}


@dataclass
class Node:
    """An expression node: a tensor (`op` is "tensor", `name` its name) or an operation
    (`op` an Operation name or "compose") over `args`; `text` is its source text."""

    op: str
    name: str
    args: list["Node"] = field(default_factory=list)
    text: str = ""
    exponent: float | None = None  # for `**.`


@dataclass
class Declared:
    """A tensor the expression names: an input, a param, or a constant (known values)."""

    kind: str  # "input", "param", "constant"
    values: np.ndarray | None = None
    rows: tuple[Row | None, Row | None, Row | None] = (None, None, None)


@dataclass
class OpResult:
    """The value of an expression, every tensor's inferred (batch, input, output) rows
    (operations by their source text) and the values the params had."""

    value: np.ndarray
    shapes: dict[str, tuple[Row, Row, Row]]
    params: dict[str, np.ndarray]


class _Parser:
    def __init__(self, text: str, inputs: set[str], dims: dict[str, int],
                 constants: dict[str, float], path: str) -> None:
        self.source = SourceFile(path, text)
        self.text = text
        self.tokens = [(m.group(), m.start()) for m in _TOKEN.finditer(text)
                       if not m.group().isspace()]
        self.at = 0
        self.inputs, self.dims, self.constants = inputs, dims, constants
        self.declared: dict[str, Declared] = {}
        self.numbers = 0

    def peek(self, ahead: int = 0) -> str:
        at = self.at + ahead
        return self.tokens[at][0] if at < len(self.tokens) else ""

    def where(self) -> int:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else len(self.text)

    def take(self) -> str:
        token = self.peek()
        self.at += 1
        return token

    def error(self, start: int, message: str, end: int | None = None) -> Diagnostic:
        end = end if end is not None else start + max(1, len(self.peek()))
        return Diagnostic(message, span=self.source.span(start, max(end, start + 1)),
                          code=front.SPEC_ERROR)

    def expect(self, token: str) -> None:
        if self.peek() != token:
            raise self.error(self.where(), f"expected '{token}', found "
                                           f"'{self.peek() or 'the end'}'")
        self.take()

    def expression(self, level: int = 0) -> Node:
        if level == len(_LEVELS):
            return self.power()
        start = self.where()
        left = self.expression(level + 1)
        if self.peek() in ("*+", "++"):
            raise self.error(self.where(), "the einsum operators '*+' and '++' are modelled in "
                                           "%cd blocks, not in %op expressions (their shape "
                                           "inference for params is not modelled)")
        while self.peek() in _LEVELS[level]:
            symbol = self.take()
            right = self.expression(level + 1)
            text = self.text[start:self._end()].strip()
            left = Node(_BINARY[symbol], "", [left, right], text)
        return left

    def _end(self) -> int:
        token, start = self.tokens[self.at - 1]
        return start + len(token)

    def power(self) -> Node:
        start = self.where()
        base = self.unary()
        if self.peek() != "**.":
            return base
        self.take()
        exponent = self.number_value()
        return Node("pow", "", [base], self.text[start:self._end()].strip(), exponent)

    def number_value(self) -> float:
        """A float after `**.`, `!.`, `!..` (`ocannl_cd_expr.read_float`: a literal, a name
        given in `constants`, a parenthesised float expression)."""
        start = self.where()
        return read_float(self, self.constants, lambda token: self.error(
            start, f"expected a number, found '{token or 'the end'}'", start + len(token)))

    def unary(self) -> Node:
        start = self.where()
        if self.peek() in ("-", "~-"):
            self.take()
            inner = self.unary()
            return Node("neg", "", [inner], self.text[start:self._end()].strip())
        word = self.peek()
        if word in front.OPERATIONS and front.OPERATIONS[word].arity == 1 \
                and word not in self.inputs:
            self.take()
            inner = self.unary()
            return Node(word, "", [inner], self.text[start:self._end()].strip())
        return self.atom()

    def atom(self) -> Node:
        start, token = self.where(), self.peek()
        if token == "(":
            self.take()
            inner = self.expression()
            self.expect(")")
            return inner
        if token.startswith('"'):
            self.take()
            return self.declaration(token[1:-1], start)
        if token.startswith("'") or token[:1].isdigit() or token in ("!.", "!.."):
            return self.constant(start)
        if re.fullmatch(r"[A-Za-z_]\w*", token or "-"):
            self.take()
            if token not in self.declared:
                self.declared[token] = Declared("input" if token in self.inputs else "param",
                                                rows=((), None, None) if token not in
                                                self.inputs else (None, None, None))
            return Node("tensor", token, text=token)
        raise self.error(start, f"expected a tensor, a number or '('; found "
                                f"'{token or 'the end'}'")

    def constant(self, start: int) -> Node:
        token = self.peek()
        if token in ("!.", "!.."):
            self.take()
            value = self.number_value()
            literal = ocannl_ndarray.parse(repr(value))
        else:
            label = self.take() if token.startswith("'") else ""
            number = self.take()
            try:
                literal = ocannl_ndarray.parse(f"{label} {number}")
            except Diagnostic:
                raise self.error(start, "expected a number after the label") from None
        self.numbers += 1
        name = f"number{self.numbers}"
        self.declared[name] = Declared("constant", literal.values,
                                       (literal.batch, literal.input, literal.output))
        return Node("tensor", name, text=self.text[start:self._end()].strip())

    def declaration(self, name: str, start: int) -> Node:
        """An inline declaration and its optional configuration."""
        rows: tuple = ((), None, None)
        values = None
        token = self.peek()
        if token == "[":
            literal = self.literal()
            rows, values = (literal.batch, literal.input, literal.output), literal.values
        elif token == "(":
            self.take()
            extents = [self.dimension()]
            while self.peek() == ",":
                self.take()
                extents.append(self.dimension())
            self.expect(")")
            rows = ((), None, tuple(extents))
        elif token[:1].isdigit() or re.fullmatch(r"[A-Za-z_][\w.]*", token or "-"):
            rows = ((), None, (self.dimension(),))
        if name in self.declared and (values is not None or rows != ((), None, None)):
            raise self.error(start, f"'{name}' is declared twice", self._end())
        if name not in self.declared:
            if name in self.inputs:
                raise self.error(start, f"'{name}' is an input; an inline declaration makes "
                                        f"a param", self._end())
            self.declared[name] = Declared("param", values, rows)
        return Node("tensor", name, text=f'"{name}"')

    def dimension(self) -> int:
        start, token = self.where(), self.take()
        if token.isdigit():
            return int(token)
        if token in self.dims:
            return int(self.dims[token])
        raise self.error(start, f"unknown dimension '{token}'", start + len(token))

    def literal(self) -> ocannl_ndarray.NdLiteral:
        """An array literal `[ ... ]` after a declaration, read by ocannl_ndarray."""
        start, depth = self.where(), 0
        while self.at < len(self.tokens):
            token = self.take()
            if token in ("[", "("):
                depth += 1
            elif token in ("]", ")"):
                depth -= 1
            if depth == 0:
                break
        try:
            return ocannl_ndarray.parse(self.text[start:self._end()])
        except Diagnostic as error:
            raise self.error(start, f"in the array literal: {error.message}",
                             self._end()) from None


def parse(text: str, inputs: set[str] | frozenset = frozenset(),
          dims: dict[str, int] | None = None, constants: dict[str, float] | None = None,
          path: str = "<%op expression>") -> tuple[Node, dict[str, Declared]]:
    """The expression tree and the tensors it names (inputs, params, constants)."""
    parser = _Parser(text, set(inputs), dims or {}, constants or {}, path)
    node = parser.expression()
    if parser.peek():
        raise parser.error(parser.where(), f"unexpected '{parser.peek()}'")
    return node, parser.declared


def _operations(node: Node) -> list[Node]:
    """The operation nodes, operands before their users."""
    found: list[Node] = []
    for arg in node.args:
        found += _operations(arg)
    return found + ([node] if node.op != "tensor" else [])


def _key(node: Node, keys: dict[int, str]) -> str:
    return node.name if node.op == "tensor" else keys[id(node)]


def infer(node: Node, declared: dict[str, Declared],
          layouts: dict[str, tuple[Row, Row, Row]]) -> tuple[dict, dict[int, str]]:
    """The rows of every tensor (operations keyed `%1`, `%2`, ...) and those keys by node."""
    shapes = Shapes()
    names: dict[str, str] = {}
    for name, tensor in declared.items():
        rows = layouts[name] if tensor.kind == "input" else tensor.rows
        shapes.tensor(name, *rows, terminal=tensor.kind == "param")
    keys: dict[int, str] = {}
    for number, op in enumerate(_operations(node), start=1):
        key = keys[id(op)] = f"%{number}"
        names[key] = op.text
        args = [_key(a, keys) for a in op.args]
        if op.op == "compose":
            shapes.compose(key, args[0], args[1], op.text)
        elif op.op == "pow":
            shapes.tensor(f"{key}.p", (), (), (1,))  # pointpow's exponent: NTDSL.number p
            shapes.pointwise(key, [args[0], f"{key}.p"], op.text)
        else:
            shapes.pointwise(key, args, op.text)
    return shapes.solve(names), keys


def _letters(kind: str, row: Row) -> str:
    pool = _LETTERS[kind]
    if len(row) > len(pool):
        raise Diagnostic(f"a row of {len(row)} axes: at most {len(pool)} are modelled",
                         code=front.OPTION_ERROR)
    return pool[len(pool) - len(row):]


def _shape_spec(rows: tuple[Row, Row, Row], input_kind: str = "input",
                output_kind: str = "output") -> str:
    batch = _letters("batch", rows[0])
    inputs = _letters(input_kind, rows[1])
    outputs = _letters(output_kind, rows[2])
    return (f"{batch}|" if batch else "") + (f"{inputs}->" if inputs else "") + outputs


def _spec_of(op: Node, operand_rows: list, result_rows: tuple) -> str:
    """The einsum spec (OCANNL notation) running one operation on the inferred rows."""
    if op.op == "compose":
        first = _shape_spec(operand_rows[0], input_kind="contract")
        second = _shape_spec(operand_rows[1], output_kind="contract")
        return f"{first}; {second} => {_shape_spec(result_rows)}"
    operands = "; ".join(_shape_spec(rows) for rows in operand_rows)
    return f"{operands} => {_shape_spec(result_rows)}"


def _layout(name: str, array: np.ndarray, kinds: tuple[int, int] | None) -> tuple:
    """An input's rows from its array: `kinds` = (batch axes, input axes), the rest output;
    the array laid out batch, output, input."""
    batch, inputs = kinds or (0, 0)
    shape = np.shape(array)
    if min(batch, inputs) < 0 or batch + inputs > len(shape) or len(shape) == 0:
        raise Diagnostic(f"input '{name}' has shape {list(shape)}: not {batch} batch and "
                         f"{inputs} input axes besides output axes", code="E0306")
    output = shape[batch:len(shape) - inputs]
    return tuple(shape[:batch]), tuple(shape[len(shape) - inputs:]), tuple(output)


def evaluate(text: str, inputs: dict[str, np.ndarray], *,
             kinds: dict[str, tuple[int, int]] | None = None,
             params: dict[str, np.ndarray] | None = None, dims: dict[str, int] | None = None,
             constants: dict[str, float] | None = None, seed: int = 0,
             **options: object) -> OpResult:
    """Evaluate a `%op` expression: `inputs` by name (laid out batch, output, input; `kinds`
    gives an input's (batch, input) axis counts, default all output axes), `params` values by
    name (others drawn from `seed`), `dims` the dimension names of declarations (`hid_dim`),
    `constants` the floats named after `!.`, `!..`, `**.`. Options pass to einsum.evaluate."""
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in inputs.items()}
    node, declared = parse(text, set(arrays), dims, constants)
    layouts = {n: _layout(n, arrays[n], (kinds or {}).get(n)) for n in arrays}
    try:
        found, keys = infer(node, declared, layouts)
    except Diagnostic as error:  # shape inference is of the whole expression: point at it
        if error.span is None:
            error.span = SourceFile("<%op expression>", text).span(0, max(1, len(text)))
        raise
    values = dict(arrays)
    rng = np.random.default_rng(seed)
    given = params or {}
    used: dict[str, np.ndarray] = {}
    for name, tensor in declared.items():
        if tensor.kind == "input":
            continue
        shape = tuple(found[name][0]) + tuple(found[name][2]) + tuple(found[name][1])
        if tensor.values is not None:
            value = tensor.values
        elif name in given:
            value = np.asarray(given[name], dtype=np.float64)
            if value.shape != shape:
                raise Diagnostic(f"param '{name}' is given with shape {list(value.shape)}; its "
                                 f"inferred shape is {list(shape)} (batch, output, input axes)",
                                 code="E0306")
        else:
            value = rng.uniform(0.0, 1.0, size=shape)
        values[name] = value
        if tensor.kind == "param":
            used[name] = value
    for op in _operations(node):
        key = keys[id(op)]
        args = [_key(a, keys) for a in op.args]
        operands = {f"t{k}": values[a] for k, a in enumerate(args)}
        rows = [found[a] for a in args]
        if op.op == "pow":
            operands["t1"] = np.array([op.exponent])
            rows.append(((), (), (1,)))
        spec = _spec_of(op, rows, found[key])
        operation = "mul" if op.op == "compose" else op.op
        accumulation = "=:+" if op.op == "compose" else "=:"
        einsum = front.build(spec, names=list(operands), result="r",
                             accumulation=accumulation, operation=operation)
        values[key] = front.evaluate(einsum, operands, **options).outputs["r"]
    texts = {keys[id(op)]: op.text for op in _operations(node)}
    shapes = {texts.get(k, k): v for k, v in found.items() if not k.endswith(".p")}
    return OpResult(values[_key(node, keys)], shapes, used)
