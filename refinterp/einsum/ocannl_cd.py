"""OCANNL `%cd` code blocks: a sequence of accumulating assignments (refinterp/einsum/__init__.py's
one-liners) over named tensors, with the record notation for gradient and merge-buffer nodes,
block comments and the einsum operators `*+` / `++` (docs/ocannl.md, "`%cd` blocks").

- Assignments are separated by `;` (outside strings and parentheses); each is a one-liner
  `LHS ASGN RHS [~logic:"SPEC"]`.
- `t.grad` is the gradient node of `t`, named `t_grad`; `t.value` is `t`; `t.merge` (short for
  `t.value.merge`) and `t.grad.merge` are merge buffers, named `t_merge` and `t_grad_merge`.
- `~~(PARTS; SCOPE)` is a block comment: PARTS (strings and tensors) is the comment, SCOPE the
  assignments it covers.
- `a *+ "SPEC" b` (einsum: `+` accumulating `*`) and `a ++ "SPEC"` (einsum1: `+` accumulating
  the identity) make a new tensor that the assignment then reads pointwise:
  `c =: a *+ "ij;jk=>ik" b` is `t =:+ a * b ~logic:"ij;jk=>ik"; c =: t`.
- A gradient node read before any assignment wrote it is zero, with the shape of its tensor's
  value: OCANNL zeroes the gradients before running backprop code.
- A RHS with operators `%cd` does not build in (`p =+ lr *. p.grad`, `!.x`, `t **. 2.0`) is
  rewritten over intermediate tensors (refinterp/einsum/ocannl_cd_expr.py); an inline
  declaration on the left (`"delta" =: ...`) names a new tensor.
- Slot fillers (`t t1 t2 t3 g g1 g2 g3 v v1 v2 v3 lhs rhs1 rhs2 rhs3`) name the tensors of the
  `~projections` in scope (`slots`), whose projections (`projections`, an einsum spec or
  `.`) give each assignment without `~logic` its own spec, slot by slot.

`run_block` runs a block on named arrays; `block_model_text` writes it as a SkriptND model (one
operator per assignment and a graph invoking them in order) for golden cases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from refinterp import einsum as front
from refinterp.core.diagnostics import Diagnostic
from refinterp.core.source import SourceFile
from refinterp.einsum import ocannl_cd_expr

_NODE = re.compile(r"\b([A-Za-z_]\w*)((?:\.(?:value|grad|merge))+)\b")
_EINSUM2 = re.compile(r'^\s*([A-Za-z_]\w*)\s*\*\+\s*"([^"]*)"\s*([A-Za-z_]\w*)\s*$')
_EINSUM1 = re.compile(r'^\s*([A-Za-z_]\w*)\s*\+\+\s*"([^"]*)"\s*$')
_DECLARATION = re.compile(r'^(\s*)"([A-Za-z_]\w*)"')
_LOGIC = re.compile(r'~logic\s*:\s*"([^"]*)"\s*$')
_SLOT = re.compile(r'"[^"]*"|(?<![\w.])(t|v|g|lhs|t1|v1|g1|rhs1|t2|v2|g2|rhs2|t3|v3|g3|rhs3)\b')
_SLOT_OF = {"t": "lhs", "v": "lhs", "g": "lhs", "t1": "rhs1", "v1": "rhs1", "g1": "rhs1",
            "t2": "rhs2", "v2": "rhs2", "g2": "rhs2", "t3": "rhs3", "v3": "rhs3", "g3": "rhs3"}
_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(=:?(?:\*\*|\?/|\?\^|\|\||&&|@\^|\^\^|@-|[-+*/])?)"
                     r"(?!>)(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Assignment:
    """One assignment of a block: its text (node names resolved) and its einsum."""

    text: str
    einsum: front.Einsum
    constants: tuple[tuple[str, float], ...] = ()  # constant tensors it reads (NTDSL.number)


def node_name(tensor: str, accessors: str) -> str:
    """The name of `tensor.value`, `tensor.grad`, `tensor.merge`, `tensor.grad.merge`."""
    parts = [p for p in accessors.split(".") if p]
    if parts not in ([], ["value"], ["grad"], ["merge"], ["value", "merge"], ["grad", "merge"]):
        raise Diagnostic(f"'{tensor}{accessors}' is no tensor node", code=front.SPEC_ERROR,
                         notes=["nodes: t, t.value, t.grad, t.merge, t.grad.merge"])
    return "_".join([tensor] + [p for p in parts if p != "value"])


def _split(text: str, source: SourceFile) -> list[tuple[str, int]]:
    """The assignments of a block with their offsets: split at `;` outside strings and
    parentheses, block comments `~~(PARTS; SCOPE)` replaced by their scope."""
    pieces: list[tuple[str, int]] = []
    depth, quoted, start, index = 0, False, 0, 0
    while index < len(text):
        char = text[index]
        if char == '"':
            quoted = not quoted
        elif not quoted and text.startswith("~~(", index) and depth == 0:
            close = _closing(text, index + 2, source)
            inner = text[index + 3:close]
            head = _top_level_semicolon(inner)
            if head < 0:
                raise _error(source, index, close + 1, "a block comment is ~~(COMMENT; SCOPE)")
            pieces += [(p, index + 3 + head + 1 + o) for p, o in
                       _split(inner[head + 1:], source)]
            index, start = close + 1, close + 1
            continue
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and char == ";":
            pieces.append((text[start:index], start))
            start = index + 1
        index += 1
    pieces.append((text[start:], start))
    return [(p, o) for p, o in pieces if p.strip()]


def _closing(text: str, open_at: int, source: SourceFile) -> int:
    depth, quoted = 0, False
    for index in range(open_at, len(text)):
        char = text[index]
        if char == '"':
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
            if depth == 0:
                return index
    raise _error(source, open_at, len(text), "this '(' is never closed")


def _top_level_semicolon(text: str) -> int:
    depth, quoted = 0, False
    for index, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "()":
            depth += 1 if char == "(" else -1
        elif not quoted and depth == 0 and char == ";":
            return index
    return -1


def _error(source: SourceFile, start: int, end: int, message: str) -> Diagnostic:
    return Diagnostic(message, span=source.span(start, max(end, start + 1)),
                      code=front.SPEC_ERROR)


def is_block(text: str) -> bool:
    """Whether `text` needs the block reader: several assignments, node accessors, block
    comments or the einsum operators `*+` / `++`."""
    outside = re.sub(r'"[^"]*"', '""', text)
    if not re.match(r"\s*(?:~~|[A-Za-z_][\w.]*\s*=(?!>)|\"\"\s*=)", outside):
        return False  # an einsum spec (`ij;jk=>ik`), not assignments
    return bool(";" in outside or "~~" in outside or _NODE.search(outside)
                or "*+" in outside or "++" in outside or outside.lstrip().startswith('""')
                or re.search(r"\*\.|/\.|!\.", outside))


def fill_slots(text: str, slots: dict[str, str]) -> str:
    """`text` with the slot fillers replaced by the tensors of `slots` (keys `lhs`, `rhs1`,
    `rhs2`, `rhs3`): `t`, `v`, `lhs` the tensor, `g` its gradient (`t1`, `g1`, ... alike)."""
    def fill(match: re.Match) -> str:
        word = match.group(1)
        if word is None:
            return match.group(0)  # a string
        slot = _SLOT_OF.get(word, word)
        if slot not in slots:
            raise Diagnostic(f"the slot filler '{word}' needs the tensor of slot '{slot}'",
                             code=front.SPEC_ERROR, notes=["give slots={'lhs': ..., 'rhs1': ...}"])
        return slots[slot] + (".grad" if word.startswith("g") else "")
    return _SLOT.sub(fill, text)


def _slot_logic(line: str, slots: dict[str, str], projections: str) -> str:
    """The `~logic` of an assignment without one, from the projections in scope: pointwise
    (or any shorthand) as it is; an einsum spec `RHS1; RHS2 => LHS` gives each tensor the
    spec of its slot (`g1 =+ g * t2` under `ij;jk=>ik`: `ik;jk=>ij`)."""
    if "=>" not in projections:
        return projections
    sides, result = projections.split("=>")
    specs = dict(zip(("rhs1", "rhs2", "rhs3"), (p.strip() for p in sides.split(";"))))
    specs["lhs"] = result.strip()
    by_tensor = {}
    for slot, tensor in slots.items():
        by_tensor[tensor] = by_tensor[f"{tensor}_grad"] = slot
    parsed = front.parse_one_liner(line)
    found = []
    for tensor in parsed.operands + [parsed.result]:
        if by_tensor.get(tensor) not in specs:
            raise Diagnostic(f"'{tensor}' fills no slot of the projections '{projections}': "
                             f"give '{line.strip()}' its ~logic", code=front.SPEC_ERROR)
        found.append(specs[by_tensor[tensor]])
    return "; ".join(found[:-1]) + " => " + found[-1]


def parse_block(text: str, path: str = "<%cd block>", *, slots: dict[str, str] | None = None,
                projections: str | None = None,
                constants: dict[str, float] | None = None) -> list[Assignment]:
    """The assignments of a block, in order (temporaries of `*+`/`++` and intermediate tensors
    before their use). `slots` and `projections` are the `~projections` in scope (slot
    fillers), `constants` the floats that `!.x`, `!..n` and `**. x` name."""
    source = SourceFile(path, text)
    assignments: list[Assignment] = []
    temporaries = 0
    for piece, _ in _split(text, source):
        if slots:
            piece = fill_slots(piece, slots)
        line = _NODE.sub(lambda m: node_name(m.group(1), m.group(2)), piece.strip())
        line = _DECLARATION.sub(r"\1\2", line)
        match = _ASSIGN.match(line)
        rhs = match.group(3).strip() if match else ""
        made = _EINSUM2.match(rhs) or _EINSUM1.match(rhs)
        if match and made:
            temporaries += 1
            temporary = f"einsum_t{temporaries}"
            operands = f"{made.group(1)} * {made.group(3)}" if made.re is _EINSUM2 \
                else made.group(1)
            first = f'{temporary} =:+ {operands} ~logic:"{made.group(2)}"'
            assignments.append(Assignment(first, front.einsum_of_one_liner(first)))
            line = f"{match.group(1)} {match.group(2)} {temporary}"
        logic = _LOGIC.search(line)
        body = rhs[:_LOGIC.search(rhs).start()] if logic and match else rhs
        lines = [line]
        found: dict[str, float] = {}
        if match and not made and body.strip() and not ocannl_cd_expr.is_simple(body):
            temporaries += 1
            lifted = ocannl_cd_expr.lift(match.group(1), match.group(2), body,
                                         logic.group(1) if logic else "",
                                         f"einsum_t{temporaries}_", constants)
            lines, found = lifted.lines, lifted.constants
        for number, one in enumerate(lines):
            if projections is not None and not _LOGIC.search(one) and number == len(lines) - 1:
                one = f'{one} ~logic:"{_slot_logic(one, slots or {}, projections)}"'
            reads = tuple((k, v) for k, v in found.items() if re.search(rf"\b{k}\b", one))
            assignments.append(Assignment(one, front.einsum_of_one_liner(one), reads))
    if not assignments:
        raise _error(source, 0, len(text), "a %cd block needs at least one assignment")
    return assignments


def _zero_grad(name: str, env: dict) -> object | None:
    """A gradient node not yet written: zeros of its tensor's shape (None if not a gradient
    or its tensor is unknown)."""
    import numpy as np

    if name.endswith("_grad") and name[:-5] in env:
        return np.zeros(np.shape(env[name[:-5]]))
    return None


def _inputs_of(assignment: Assignment, env: dict) -> dict:
    einsum = assignment.einsum
    wanted = list(einsum.names) + ([einsum.result] if einsum.reads_old() else [])
    inputs = {}
    for name in wanted:
        value = env.get(name)
        if value is None:
            value = _zero_grad(name, env)
        if value is None:
            raise Diagnostic(f"'{name}' is read by '{assignment.text}' before any value is "
                             f"given or assigned", code="E0305",
                             notes=["give it as an input (t.grad as t_grad, t.merge as t_merge)"])
        inputs[einsum.old_name if name == einsum.result else name] = value
    return inputs


def run_block(text: str, inputs: dict, *, slots: dict[str, str] | None = None,
              projections: str | None = None, constants: dict[str, float] | None = None,
              **options: object) -> dict:
    """Run a `%cd` block on named arrays (`t.grad` named `t_grad`): every tensor's value after
    the block, inputs included. `slots`, `projections`, `constants`: as `parse_block`; options
    pass to `einsum.evaluate`."""
    import numpy as np

    env = dict(inputs)
    for assignment in parse_block(text, slots=slots, projections=projections,
                                  constants=constants):
        env.update({name: np.array([value]) for name, value in assignment.constants})
        run = front.evaluate(assignment.einsum, _inputs_of(assignment, env), **options)
        env[assignment.einsum.result] = run.outputs[assignment.einsum.result]
    return {k: v for k, v in env.items() if not k.startswith("einsum_t")}


def block_model_text(text: str, shapes: dict[str, tuple[int, ...]],
                     graph: str = "G", **block: object) -> str:
    """The block as a SkriptND model on inputs of fixed `shapes` (reals): operator `s<k>` for
    the k-th assignment (from 1) and a graph invoking them in order; its outputs are the
    tensors the block writes, with their final values. A gradient read before it is written
    starts from zero: its first accumulation (neutral 0: `=+`, `=-`) clears instead. A constant
    tensor is a `layout.constant`. `block`: `parse_block`'s slots, projections, constants."""
    import numpy as np

    env: dict = {name: np.zeros(shape) for name, shape in shapes.items()}
    version: dict[str, str] = {name: name for name in shapes}
    operators, calls, written = [], [], []
    for number, assignment in enumerate(parse_block(text, **block), start=1):  # type: ignore
        for name, value in assignment.constants:
            if name not in version:
                env[name], version[name] = np.array([value]), name
                calls.append(f"        {name} = layout.constant<real>{{shape = [1], "
                             f"value = [{value!r}]}}();")
        einsum = replace(assignment.einsum, operator=f"s{number}")
        result = einsum.result
        if einsum.reads_old() and result not in version:
            if _zero_grad(result, env) is None or einsum.accumulation.neutral != "0.0":
                raise Diagnostic(f"'{result}' is accumulated onto before it has a value",
                                 code="E0305")
            einsum = replace(einsum, accumulation=replace(einsum.accumulation, clears=True))
        inputs = _inputs_of(Assignment(assignment.text, einsum), env)
        special, _, given = front.prepare(einsum, inputs)
        env[result] = front.evaluate(einsum, inputs).outputs[result]
        operators.append(special.to_sknd().rstrip("\n"))
        arguments = [version[n] for n in einsum.names]
        if einsum.reads_old():
            arguments.append(version[result])
        target = f"{result}_{number}"
        version[result] = target
        if result not in written:
            written.append(result)
        attributes = "{" + ", ".join(f"{k} = {v}" for k, v in sorted(given.items())) + "}" \
            if given else ""
        calls.append(f"        {target} = s{number}{attributes}({', '.join(arguments)});")
    outputs = [n for n in written if not n.startswith("einsum_t")]
    calls += [f"        {n} = {version[n]};" for n in outputs]
    dims = lambda shape: ", ".join(str(int(d)) for d in shape)  # noqa: E731
    imports = ["import layout;", ""] if any("layout.constant" in c for c in calls) else []
    lines = imports + ["\n\n".join(operators), "", f"graph {graph} {{", "    @input {"]
    lines += [f"        {n}: real[{dims(s)}];" for n, s in shapes.items()]
    lines += ["    }", "    @output {"]
    lines += [f"        {n}: real[{dims(np.shape(env[n]))}];" for n in outputs]
    lines += ["    }", "    @compose {", *calls, "    }", "}"]
    return "\n".join(lines) + "\n"
