"""Operator signatures: what a definition declares, for discovery (listing, help, JSON).

A signature is read from the syntax tree only (nothing is instantiated): the @dtype generics,
the @attrib, @input and @output parameters, the @assert conditions and messages, the kind of
body and the source location. Every type, default and condition is the text the canonical
printer (`syntax.printer`) writes, so a signature reads like the canonical source.

`OperatorSignature.one_line()` has this stable format:

    module.name<G: bound = default, …>{attr: type = default, …}(in: type, …) -> (out: type, …)

- `<...>` (the generics) and `{...}` (the attributes) are left out when there are none; the
  input and output parentheses are always written, empty if need be (`()`).
- Each parameter is `name: type`, followed by ` = default` when one is declared. The type is
  the printed declaration, so an optional parameter reads `bias: optional real[bs]`.
- Items are separated by `, `; nothing else is abbreviated or elided.

For example (nn.conv, shortened here):

    nn.conv{stride: int..(d) = 1, ..., padding: optional int..(2 * d), ...}(input: real[s..(d + 2)],
    filter: real[fs..(d + 2)], bias: optional real[bs]) -> (output: real[os..])

The kinds: "lowered" (an @lower body), "composed" (an @compose body), "intrinsic" (no body, a
Python intrinsic is registered under `module.name`, see `refinterp.run.intrinsics`), "declared" (no
body and no intrinsic) and "graph" (a graph definition, whatever its blocks).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from refinterp.run import intrinsics
from refinterp.language.modules import LoadedModule, stdlib_module_files
from refinterp.syntax import ast
from refinterp.syntax.printer import format_expr, format_type


@dataclass(frozen=True)
class Parameter:
    """One declared generic, attribute, input or output.

    `type` is the declared type as the canonical printer writes it (`optional ` included), or
    the bound (`type`, `arith`, `num`) of a generic. `default` is the printed default, or None.
    `optional` is True when the type is declared `optional` (the value may be null or absent);
    a parameter with a default may be omitted too, but is not optional in this sense.
    """

    name: str
    type: str
    default: str | None
    optional: bool

    def text(self) -> str:
        """`name: type` followed by ` = default` when there is one."""
        default = f" = {self.default}" if self.default is not None else ""
        return f"{self.name}: {self.type}{default}"

    def as_json(self) -> dict[str, Any]:
        """The fields as a JSON-able dict."""
        return {"name": self.name, "type": self.type, "default": self.default,
                "optional": self.optional}


@dataclass(frozen=True)
class Assertion:
    """One @assert entry: the printed condition and the printed message literal (or None)."""

    condition: str
    message: str | None

    def text(self) -> str:
        """`condition` followed by `: message` when there is one."""
        return self.condition + (f": {self.message}" if self.message is not None else "")

    def as_json(self) -> dict[str, Any]:
        """The fields as a JSON-able dict."""
        return {"condition": self.condition, "message": self.message}


SECTIONS = ("generics", "attributes", "inputs", "outputs")


@dataclass(frozen=True)
class OperatorSignature:
    """What one operator or graph definition declares (see the module docstring)."""

    module: str
    name: str
    kind: str
    generics: tuple[Parameter, ...]
    attributes: tuple[Parameter, ...]
    inputs: tuple[Parameter, ...]
    outputs: tuple[Parameter, ...]
    asserts: tuple[Assertion, ...]
    location: str

    @property
    def qualified(self) -> str:
        """`module.name`, the name an invocation from another module uses."""
        return f"{self.module}.{self.name}"

    def parameters(self) -> tuple[Parameter, ...]:
        """Every generic, attribute, input and output, in that order."""
        return self.generics + self.attributes + self.inputs + self.outputs

    def one_line(self) -> str:
        """The compact signature; the format is described in the module docstring."""
        text = self.qualified
        if self.generics:
            text += "<" + _joined(self.generics) + ">"
        if self.attributes:
            text += "{" + _joined(self.attributes) + "}"
        return text + f"({_joined(self.inputs)}) -> ({_joined(self.outputs)})"

    def describe(self) -> str:
        """A multi-line description: a header, then one section per kind of declaration."""
        lines = [f"{self.qualified} ({self.kind}) at {self.location}"]
        for section in SECTIONS:
            lines.extend(_section(section, [p.text() for p in getattr(self, section)]))
        lines.extend(_section("asserts", [a.text() for a in self.asserts]))
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        """Every field (and `qualified`) as JSON-able data: strings, lists, dicts, None."""
        data: dict[str, Any] = {"module": self.module, "name": self.name,
                                "qualified": self.qualified, "kind": self.kind}
        for section in SECTIONS:
            data[section] = [p.as_json() for p in getattr(self, section)]
        data["asserts"] = [a.as_json() for a in self.asserts]
        data["location"] = self.location
        return data


def _joined(parameters: tuple[Parameter, ...]) -> str:
    return ", ".join(p.text() for p in parameters)


def _section(title: str, items: list[str]) -> list[str]:
    if not items:
        return [f"  {title}: none"]
    return [f"  {title}:", *(f"    {item}" for item in items)]


# ----------------------------------------------------------------------------- reading


def signature(definition: ast.OperatorDef, module: LoadedModule) -> OperatorSignature:
    """The signature of one definition of a loaded module."""
    return OperatorSignature(
        module=module.name,
        name=definition.name,
        kind=_kind(definition, module.name),
        generics=tuple(_generic(d) for d in _entries(definition, "dtype")),
        attributes=tuple(_parameter(p) for p in _entries(definition, "attrib")),
        inputs=tuple(_parameter(p) for p in _entries(definition, "input")),
        outputs=tuple(_parameter(p) for p in _entries(definition, "output")),
        asserts=tuple(_assertion(a) for a in _entries(definition, "assert")),
        location=str(definition.span),
    )


def module_signatures(module: LoadedModule) -> list[OperatorSignature]:
    """The signature of every definition of a loaded module, in source order."""
    return [signature(definition, module) for definition in module.tree.definitions]


def stdlib_modules(stdlib: str | Path | None = None) -> list[str]:
    """The qualified names of the modules in a stdlib folder (the bundled one by default),
    sorted; a module in a nested folder has a dotted name (`a/b.sknd` is `a.b`)."""
    return list(stdlib_module_files(stdlib))


def _entries(definition: ast.OperatorDef, kind: str) -> list[Any]:
    """The entries of every block of the given kind, in source order."""
    return [entry for block in definition.blocks if block.kind == kind for entry in block.entries]


def _kind(definition: ast.OperatorDef, module_name: str) -> str:
    if definition.is_graph:
        return "graph"
    if definition.block("lower") is not None:
        return "lowered"
    if definition.block("compose") is not None:
        return "composed"
    if intrinsics.lookup(f"{module_name}.{definition.name}") is not None:
        return "intrinsic"
    return "declared"


def _generic(decl: ast.DtypeDecl) -> Parameter:
    return Parameter(decl.name, decl.base, decl.default, optional=False)


def _parameter(decl: ast.ParamDecl) -> Parameter:
    default = format_expr(decl.default) if decl.default is not None else None
    return Parameter(decl.name, format_type(decl.type), default, decl.type.optional)


def _assertion(entry: ast.Assertion) -> Assertion:
    message = format_expr(entry.message) if entry.message is not None else None
    return Assertion(format_expr(entry.cond), message)
