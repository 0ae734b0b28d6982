"""Tensor expressions on the right of `%cd` assignments (docs/ocannl.md "`%cd` blocks and
gradients"): what the `%cd` syntax leaves to `NTDSL.O`.

An assignment `LHS ASGN RHS` whose RHS is more than names and one built-in operator is
rewritten, as the `%cd` translator does, into assignments over intermediate tensors:

- the RHS's top operator, when built in (`+ - * / ** -?/ -?^ < <> || && % @^ ^^ -@> -/>`, or a
  primitive operation applied by name), stays the assignment's operation; each operand that is
  not a tensor name becomes an intermediate tensor computed first;
- any other top (`p =+ learning_rate *. p.grad`) is one intermediate tensor, then
  `LHS ASGN t` (OCANNL's `Accum_unop` with `Identity`);
- intermediate tensors are the einsum operators `a *+ "SPEC" b`, `a ++ "SPEC"`, and `NTDSL.O`'s
  pointwise operations: `*.` `/.` `+` `-`, `**.` by a number
  (`pointpow`), `-`/`~-` negation, unary operations by name; `!.x` / `!..n` are constant tensors
  (`NTDSL.number`: one output axis of extent 1) of a number or of a name in `constants`, as is
  the exponent of `**.` (an OCaml float expression: numbers, names, `+. -. *. /.`).

OCaml's precedences and associativity: `**`-operators (right), `* / % *. /. *+`, `+ - -?/ -?^
-@> -/> +. -. ++`, `@^ ^^ @-` (right), `< <>`, `&&` (right), `||` (right).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from refinterp import einsum as front
from refinterp.core.diagnostics import Diagnostic

_TOKEN = re.compile(r"\s+|\"[^\"]*\"|\*\+|\+\+|!\.\.|!\.|\*\*\.|\*\*|\*\.|/\.|\+\.|-\.|-\?/|-\?\^"
                    r"|-@>|-/>|<>|\|\|"
                    r"|&&|@\^|\^\^|@-|~-|\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?"
                    r"|[A-Za-z_]\w*|[-+*/%<(),]|.")
_LEVELS = [(("||",), "right"), (("&&",), "right"), (("<", "<>"), "left"),
           (("@^", "^^", "@-"), "right"),
           (("+", "-", "-?/", "-?^", "-@>", "-/>", "+.", "-.", "++"), "left"),
           (("*", "/", "%", "*.", "/.", "*+"), "left"), (("**", "**."), "right")]
# NTDSL.O's pointwise operators on intermediate tensors, by the primitive operation computing them
_POINTWISE = {"*.": "*", "/.": "/", "+": "+", "-": "-", "**.": "**"}
_FLOAT_OPS = {"+.": lambda a, b: a + b, "-.": lambda a, b: a - b,
              "*.": lambda a, b: a * b, "/.": lambda a, b: a / b}


@dataclass
class Expr:
    """A node: a tensor `name`, a `number` (after `**.`, `!.`, `!..`), a constant tensor
    (`op` "!."), an infix operator `op` over `args`, or a named operation `op` applied."""

    op: str
    args: list["Expr"] = field(default_factory=list)
    name: str = ""
    number: float = 0.0


@dataclass
class Lifted:
    """The one-liners replacing an assignment (intermediates first) and the constant tensors
    they read, by name, with their values."""

    lines: list[str]
    constants: dict[str, float]


class _Parser:
    def __init__(self, text: str, constants: dict[str, float]) -> None:
        self.tokens = [t for t in _TOKEN.findall(text) if not t.isspace()]
        self.at, self.text, self.constants = 0, text, constants

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else ""

    def take(self) -> str:
        token = self.peek()
        self.at += 1
        return token

    def fail(self, message: str) -> Diagnostic:
        return Diagnostic(f"in '{self.text.strip()}': {message}", code=front.SPEC_ERROR)

    def expect(self, token: str) -> None:
        if self.take() != token:
            raise self.fail(f"expected '{token}'")

    def expression(self, level: int = 0) -> Expr:
        if level == len(_LEVELS):
            return self.unary()
        symbols, associativity = _LEVELS[level]
        left = self.expression(level + 1)
        while self.peek() in symbols:
            symbol = self.take()
            if symbol == "**.":
                left = Expr("**.", [left, Expr("number", number=self.float_atom())])
                continue
            spec = self.spec() if symbol in ("*+", "++") else ""
            if symbol == "++":
                left = Expr("++", [left], name=spec)
                continue
            right = self.expression(level if associativity == "right" else level + 1)
            left = Expr(symbol, [left, right], name=spec)
        return left

    def spec(self) -> str:
        """The einsum spec string after `*+` / `++`."""
        token = self.take()
        if not token.startswith('"'):
            raise self.fail("an einsum spec string must follow '*+' and '++'")
        return token[1:-1]

    def unary(self) -> Expr:
        token = self.peek()
        if token in ("-", "~-"):
            self.take()
            return Expr("neg", [self.unary()])
        name = front.ALIASES.get(token, token)
        if name in front.OPERATIONS and self.at + 1 < len(self.tokens) \
                and self.tokens[self.at + 1] not in _ALL_INFIX + (")", ","):
            self.take()
            operation = front.OPERATIONS[name]
            if self.peek() == "(" and operation.arity > 1:
                self.take()
                args = [self.expression()]
                while self.peek() == ",":
                    self.take()
                    args.append(self.expression())
                self.expect(")")
            else:
                args = [self.unary() for _ in range(operation.arity)]
            return Expr(name, args)
        return self.atom()

    def atom(self) -> Expr:
        token = self.take()
        if token == "(":
            inner = self.expression()
            self.expect(")")
            return inner
        if token in ("!.", "!.."):
            return Expr("!.", number=self.float_atom())
        if re.fullmatch(r"[A-Za-z_]\w*", token or "-"):
            return Expr("name", name=token)
        raise self.fail(f"expected a tensor, '!.' or '('; found '{token or 'the end'}'")

    def float_atom(self) -> float:
        """A number, a name in `constants` or a parenthesised OCaml float expression."""
        return read_float(self, self.constants, lambda token: self.fail(
            f"'{token}' is no number: give its value as a constant"))


def read_float(parser: Any, constants: dict[str, float],
               fail: Callable[[str], Exception]) -> float:
    """The float a `%cd` or `%op` parser reads after `**.`, `!.`, `!..`: a number, a name in
    `constants`, or a parenthesised OCaml float expression (`(p -. 1.)`); `parser` has
    `take`, `peek` and `expect`, `fail(token)` makes the error for a token that is none."""
    token = parser.take()
    if token == "(":
        value = read_float(parser, constants, fail)
        while parser.peek() in _FLOAT_OPS:
            value = _FLOAT_OPS[parser.take()](value, read_float(parser, constants, fail))
        parser.expect(")")
        return value
    if token in constants:
        return float(constants[token])
    try:
        return float(token)
    except ValueError:
        raise fail(token) from None


_ALL_INFIX = tuple(s for symbols, _ in _LEVELS for s in symbols)


def is_simple(rhs: str) -> bool:
    """Whether a RHS is what a one-liner reads directly (names and one built-in operator)."""
    name = r"[A-Za-z_]\w*"
    infix = "|".join(re.escape(s) for s in sorted(front.INFIX, key=len, reverse=True))
    return bool(re.fullmatch(rf"\s*{name}\s*(?:({infix})\s*{name}\s*)?", rhs)
                or re.fullmatch(rf"\s*{name}\s*\(\s*{name}(?:\s*,\s*{name})*\s*\)\s*", rhs)
                or re.fullmatch(rf"\s*{name}(?:\s+{name})+\s*", rhs))


def lift(lhs: str, assignment: str, rhs: str, logic: str, prefix: str,
         constants: dict[str, float] | None = None) -> Lifted:
    """The one-liners computing `lhs assignment rhs` (`logic`: the `~logic:"..."` text or
    ''), intermediates named `<prefix><k>`."""
    parser = _Parser(rhs, constants or {})
    tree = parser.expression()
    if parser.peek():
        raise parser.fail(f"unexpected '{parser.peek()}'")
    lifted = Lifted([], {})
    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def tensor(node: Expr) -> str:
        """The name of a tensor holding the node's value (intermediates assigned first)."""
        if node.op == "name":
            return node.name
        name = fresh()
        if node.op == "!.":
            lifted.constants[name] = node.number
            return name
        if node.op == "**.":
            exponent = fresh()
            lifted.constants[exponent] = node.args[1].number
            lifted.lines.append(f"{name} =: {tensor(node.args[0])} ** {exponent} ~logic:\".\"")
        elif node.op in ("*+", "++"):
            operands = " * ".join(tensor(arg) for arg in node.args)
            lifted.lines.append(f'{name} =:+ {operands} ~logic:"{node.name}"')
        elif node.op in _POINTWISE:
            a, b = (tensor(arg) for arg in node.args)
            lifted.lines.append(f"{name} =: {a} {_POINTWISE[node.op]} {b} ~logic:\".\"")
        elif node.op in front.OPERATIONS and front.OPERATIONS[node.op].arity == 1:
            lifted.lines.append(f"{name} =: {node.op} {tensor(node.args[0])}")
        else:
            raise parser.fail(f"'{node.op}' inside an expression is not modelled (NTDSL.O's "
                              f"'*' composes by shape inference): write it as an assignment "
                              f"with ~logic")
        return name

    suffix = f' ~logic:"{logic}"' if logic else ""
    if tree.op in front.INFIX and tree.op not in ("*.", "/."):
        first, second = (tensor(arg) for arg in tree.args)
        lifted.lines.append(f"{lhs} {assignment} {first} {tree.op} {second}{suffix}")
    elif tree.op in front.OPERATIONS:
        args = ", ".join(tensor(arg) for arg in tree.args)
        lifted.lines.append(f"{lhs} {assignment} {tree.op}({args}){suffix}")
    else:
        lifted.lines.append(f"{lhs} {assignment} {tensor(tree)}{suffix}")
    return lifted
