"""Code generation for the compiled engine, part three: the formula (`Generator`): its locals,
condition, value and store inside its loops, as the source of one kernel function
`kernel(K, OOR, OVERFLOW, MIN, MAX, T_0, ..)` over flat lists (`compiled.engine` compiles and
runs it).
"""

from __future__ import annotations

import re

from refinterp.lower.common import Refused
from refinterp.lower.compiled.accesses import Accesses
from refinterp.lower.compiled.source import MAX_LOOPS, may_raise
from refinterp.lower.plan import UPDATE_OPS
from refinterp.numeric import rules
from refinterp.syntax import ast


class Generator(Accesses):
    """Builds the Python source of one formula (`generate`). As an expression pass,
    `visit(node)` gives the (Python source, kind) of a scalar expression, or raises Refused."""

    complete = True

    def update(self, op: str, flat: str, out_kind: str, kind: str, body: list[str]) -> str:
        """Append the lines combining `v` (of `kind`) with the output's element `{flat}[o]` by
        the update operator `op` (`=` keeps `v`), as the reference's `combine` and `checked`
        (reference.py) do; the result has the output's kind, else Refused."""
        if op not in ("=", ":="):
            if op not in UPDATE_OPS:
                raise Refused(op)
            rule = rules.binary_function(UPDATE_OPS[op], out_kind, kind, self.profile)
            if rule.kind is None:
                raise Refused(op)
            if kind == out_kind and op in ("+=", "*=") and kind in ("int", "real"):
                body.append(f"v = {flat}[o] {UPDATE_OPS[op]} v")
            elif kind == out_kind and op in ("&=", "|="):  # of two bools
                body.append(f"v = {flat}[o] {'and' if op == '&=' else 'or'} v")
            else:
                body.append(f"v = {self.bound(rule.function)}({flat}[o], v)")
            kind = rule.kind
        if out_kind == "int" and kind != "int" and rules.kind_type(kind) == "int":
            # a value that may be int(±inf): stored, it saturates
            body.append("if v.__class__ is not int: v = MAX if v > 0 else MIN")
            kind = "int"
        if kind != out_kind:  # the reference reports it
            raise Refused("value type")
        return kind


    def generate(self) -> str:
        formula = self.formula
        if len(self.depth) > MAX_LOOPS:
            raise Refused(f"{len(self.depth)} nested loops (at most {MAX_LOOPS})")
        body: list[str] = []
        for local in formula.locals:
            emitted = len(self.lines)
            source, kind = self.visit(local.value)
            name = f"L_{local.name}"
            level = self.level(source) if len(self.lines) == emitted and \
                not may_raise(source) else self.innermost
            if level < self.innermost:  # loop-invariant and cannot fail: hoisted
                self.define(name, source, level)
            else:
                self.lines.append(f"{name} = {source}")
                self.levels[name] = level
            self.locals[local.name] = kind
        body.extend(self.take())
        if formula.condition is not None:
            cond, kind = self.visit(formula.condition)
            body.extend(self.take())
            if kind != "bool":
                raise Refused("condition")
            body.append(f"if not {cond}: continue")
        target = ast.Subscript(ast.Name(formula.output), formula.access, span=formula.node.span)
        if formula.item is None and isinstance(self.arrays.get(formula.output), list):
            body.extend(self.packed_store(target))
            return self.kernel(body)
        value, kind = self.visit(formula.value)
        body.extend(self.take())
        body.append(f"v = {value}")  # the value, then where it goes, as on the reference
        if formula.item is None:
            layout = self.tensor_layout(formula.output)
        else:  # `ys[k][..] = ..`
            item = ast.Subscript(ast.Name(formula.output), (formula.item,), span=target.span)
            layout = self.item_layout(item, target)
        out_flat, out_kind = layout.flat, layout.kind
        offset = self.offset(target, layout)
        body.extend(self.take())
        body.append(f"o = {offset}")
        kind = self.update(formula.op, out_flat, out_kind, kind, body)
        if out_kind == "int":
            body.append("if not MIN <= v <= MAX: raise OVERFLOW(v)")
        body.append(f"{out_flat}[o] = v")
        # (an item `ys[k]` of a pack may be chosen by the innermost index: not kept)
        kept = self.accumulator(body, out_flat, offset) if formula.item is None else None
        return self.kernel(body, (out_flat, kept) if kept is not None else None)

    def accumulator(self, body: list[str], flat: str, offset: str) -> str | None:
        """Where the output element `{flat}[o]` does not depend on the innermost loop and
        nothing else reads or writes the output, the innermost loop keeps that element in a
        local `A` instead (read before the loop, written back after it: `kernel`): the same
        operations on the same values in the same order, without an indexed load and store
        per iteration. Rewrites `body` and returns `offset`, or returns None (body unchanged).
        An error inside the loop discards every output anyway (`compile_formula.run` copies
        the flat lists back only after the kernel returns)."""
        if not self.depth or may_raise(offset) or self.level(offset) >= self.innermost:
            return None
        element = f"{flat}[o]"
        if f"o = {offset}" not in body or any(re.search(r"\bA\b", line) for line in body):
            return None
        rewritten = [line.replace(element, "A") for line in body if line != f"o = {offset}"]
        elsewhere = re.compile(rf"\b{re.escape(flat)}\b|\bo\b")  # the output, its offset
        if rewritten[-1] != "A = v" or any(elsewhere.search(line) for line in [
                *rewritten, *(v for values in self.hoisted.values() for v in values.values())]):
            return None
        # `v = E; v = A + v; A = v` reads better, and runs faster, as `A = A + (E)`
        if len(rewritten) >= 3 and rewritten[-1] == "A = v" and \
                re.fullmatch(r"v = A [+*] v", rewritten[-2]) and \
                rewritten[-3].startswith("v = ") and not re.search(r"\bv\b", rewritten[-3][4:]):
            rewritten[-3:] = [f"A = A {rewritten[-2][6]} ({rewritten[-3][4:]})"]
        body[:] = rewritten
        return offset

    def packed_store(self, target: ast.Subscript) -> list[str]:
        """The lines of a packed assignment `ys[..] = v` (`=` or `:=`; §2.12): the value (one
        for every item, or a pack `[v0, v1, ..]` of one per item), then each item's position,
        then the writes, as the reference's update of several cells. Its position is resolved
        once, against no extent, so a guard `|e|` (which would skip here) is refused."""
        formula = self.formula
        pack, arrays = self.pack(formula.output)
        if formula.op not in ("=", ":=") or \
                any(isinstance(i, ast.Bounded) for i in formula.access):
            raise Refused("packed update")
        value = formula.value
        if isinstance(value, ast.ListExpr):
            if len(value.items) != len(arrays) or \
                    any(isinstance(i, (ast.Expand, ast.Range)) for i in value.items):
                raise Refused("packed values")
            values = []
            for j, item in enumerate(value.items):  # each computed before the next's checks
                source, kind = self.visit(item)
                self.lines.append(f"v{j} = {source}")
                values.append((f"v{j}", kind))
        else:
            source, kind = self.visit(value)
            self.lines.append(f"v = {source}")
            values = [("v", kind)] * len(arrays)
        writes = []
        for j, (array, (name, kind)) in enumerate(zip(arrays, values)):
            flat = self.item_variable(pack, j)
            layout = self.layout(flat, [array], None,
                                 f"an index is out of range for item {j} of "
                                 f"'{formula.output}' of shape {list(array.shape)}")
            if kind != layout.kind:
                raise Refused("value type")
            self.lines.append(f"o{j} = {self.offset(target, layout)}")
            if kind == "int":
                self.lines.append(f"if not MIN <= {name} <= MAX: raise OVERFLOW({name})")
            writes.append(f"{flat}[o{j}] = {name}")
        return self.take() + writes

    def kernel(self, body: list[str], accumulate: tuple[str, str] | None = None) -> str:
        """The source of the kernel: the body inside the formula's loops; with `accumulate`
        (the output's flat list and an offset, `accumulator`), that element held in `A` around
        the innermost loop."""
        formula = self.formula
        loops = []
        for r in formula.indices:  # declaration order, row-major within a packed index
            if isinstance(r.bound, tuple):
                loops.extend(f"for I_{r.name}_{k} in range({n}):"
                             for k, n in enumerate(r.bound))
            else:  # index variables are prefixed: an index `o` or `v` must not clash
                loops.append(f"for I_{r.name} in range({r.bound}):")
        source = ["def kernel(" + ", ".join(["K", "OOR", "OVERFLOW", "MIN", "MAX",
                                             *self.tensors.values()]) + "):"]
        source.extend(f"    {line}" for line in self.prologue.values())
        self.merge_hoisted(body + ([accumulate[1]] if accumulate else []))
        flat, kept = accumulate if accumulate else (None, None)
        depth = 1
        for loop in ["", *loops]:  # the values hoisted before the loops, then into each loop
            if loop:
                if accumulate and depth == len(loops):  # around the innermost loop
                    source.append("    " * depth + f"A = {flat}[{kept}]")
                source.append("    " * depth + loop)
                depth += 1
            source.extend("    " * depth + f"{name} = {value}"
                          for name, value in self.hoisted.get(depth - 1, {}).items())
        if not loops:  # a rank-0 formula runs once; `continue` needs a loop
            source.append("    " * depth + "for _once in (0,):")
            depth += 1
        source.extend("    " * depth + line for line in body)
        if accumulate:
            source.append("    " * (depth - 1) + f"{flat}[{kept}] = A")
        return "\n".join(source) + "\n"

    def take(self) -> list[str]:
        lines, self.lines = self.lines, []
        return lines


def generate_source(generator: Generator) -> str:
    """The generated source, or Refused (also for a formula nested too deeply)."""
    try:
        return generator.generate()
    except RecursionError:
        raise Refused("nested too deeply") from None

