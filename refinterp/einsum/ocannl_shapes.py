"""OCANNL's shape inference for `%op` tensor expressions (docs/ocannl.md "`%op` expressions").

A tensor's shape is three rows of axes — batch, input, output. A row is known (a tuple of
extents) or unknown (a row variable). The operations add OCANNL's row inequalities
(`tensor/shape.ml`, `get_inequalities`), `cur >= subr` with `cur` the row of the bigger tensor
and `subr` the row that broadcasts into it:

- pointwise (`+`, `-`, `*.`, `/.`, `**.`, unary operations): every row of the result >= the
  same row of each operand;
- compose (`*`, `w * x` is "w applied to x"): `w.input >= x.output`, `result.batch >= w.batch`
  and `>= x.batch`, `result.input >= x.input`, `result.output >= w.output`.

For known rows, `cur >= subr` means `cur` has at least `subr`'s axes and, aligned to the
right, each extent of `subr` equals `cur`'s or is 1 (broadcasting). Solving, in OCANNL's order
(its `shape_inference.md`, "Solving the constraints"), as far as this model of rows (wholly
known or wholly unknown) goes:

1. the row of an operation's result whose lower bounds are all known is their broadcast
   (the least row above them: no further axes, no larger extents);
2. otherwise the unknown row of a param (a *terminal* row) takes its least upper bound — the
   row above it, or what is known of that row's lower bounds (OCANNL incorporates a known
   lower bound into a row variable at once) — or, with no upper bound, the broadcast of its
   known lower bounds (`w.input >= x.output` makes `w.input` exactly `x.output`);
3. repeat; a row nothing bounds is a diagnostic naming it (E0305), and every inequality is
   finally checked (E0306 names the operation and both rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from refinterp.core.diagnostics import Diagnostic

KINDS = ("batch", "input", "output")
UNKNOWN_SHAPE = "E0305"  # a row nothing in the expression determines
SHAPE_MISMATCH = "E0306"  # rows that do not broadcast

Row = tuple[int, ...]
RowRef = tuple[str, str]  # (tensor, kind)


@dataclass(frozen=True)
class Constraint:
    """`cur >= subr`, added by the operation `what` (its source text)."""

    cur: RowRef
    subr: RowRef
    what: str


@dataclass
class Shapes:
    """The rows of every tensor of an expression and the inequalities between them."""

    rows: dict[RowRef, Row | None] = field(default_factory=dict)
    terminal: set[RowRef] = field(default_factory=set)
    constraints: list[Constraint] = field(default_factory=list)

    def tensor(self, name: str, batch: Row | None = None, input: Row | None = None,
               output: Row | None = None, terminal: bool = False) -> None:
        """Declare a tensor; a row given as None is unknown (inferred). A terminal tensor (a
        param) has its unknown rows settled from their bounds (step 2)."""
        for kind, row in zip(KINDS, (batch, input, output)):
            self.rows[name, kind] = None if row is None else tuple(int(d) for d in row)
            if terminal and row is None:
                self.terminal.add((name, kind))

    def pointwise(self, result: str, operands: list[str], what: str) -> None:
        """`result = op(operands...)` broadcasting every row (Pointwise_bin / Pointwise_un)."""
        self.tensor(result)
        for operand in operands:
            for kind in KINDS:
                self.constraints.append(Constraint((result, kind), (operand, kind), what))

    def compose(self, result: str, first: str, second: str, what: str) -> None:
        """`result = first * second`: `first` applied to `second` (Compose)."""
        self.tensor(result)
        self.constraints += [Constraint((first, "input"), (second, "output"), what),
                             Constraint((result, "batch"), (first, "batch"), what),
                             Constraint((result, "batch"), (second, "batch"), what),
                             Constraint((result, "input"), (second, "input"), what),
                             Constraint((result, "output"), (first, "output"), what)]

    def solve(self, describe: dict[str, str] | None = None) -> dict[str, tuple[Row, Row, Row]]:
        """Every tensor's (batch, input, output) rows; `describe` names tensors in messages."""
        names = describe or {}
        while self._forward() or self._settle_terminal():
            pass
        unknown = [r for r, row in self.rows.items() if row is None]
        if unknown:
            first = [r for r in unknown if r in self.terminal] or unknown
            listed = ", ".join(f"the {kind} axes of '{names.get(t, t)}'" for t, kind in first)
            raise Diagnostic(f"shape inference cannot settle {listed}: nothing in the "
                             f"expression bounds them", code=UNKNOWN_SHAPE,
                             notes=["declare them inline (\"w\" 8, \"w\" (2, 3)) or use the "
                                    "tensor where its shape follows from the others"])
        for c in self.constraints:
            cur, subr = self.rows[c.cur], self.rows[c.subr]
            if not fits(cur, subr):
                raise Diagnostic(
                    f"shapes do not match in '{c.what}': the {c.subr[1]} axes of "
                    f"'{names.get(c.subr[0], c.subr[0])}' {list(subr)} do not broadcast to the "
                    f"{c.cur[1]} axes of '{names.get(c.cur[0], c.cur[0])}' {list(cur)}",
                    code=SHAPE_MISMATCH)
        tensors = dict.fromkeys(t for t, _ in self.rows)
        return {t: tuple(self.rows[t, k] for k in KINDS) for t in tensors}  # type: ignore

    def _lower(self, ref: RowRef) -> list[RowRef]:
        return [c.subr for c in self.constraints if c.cur == ref]

    def _forward(self) -> bool:
        """Step 1: settle the result rows whose lower bounds are all known."""
        changed = False
        for ref, row in self.rows.items():
            if row is None and ref not in self.terminal:
                lower = [self.rows[r] for r in self._lower(ref)]
                if lower and all(r is not None for r in lower):
                    self.rows[ref] = join(lower)  # type: ignore[arg-type]
                    changed = True
        return changed

    def _settle_terminal(self) -> bool:
        """Step 2: settle the first unknown param row that has a bound."""
        for ref in [r for r in self.rows if r in self.terminal and self.rows[r] is None]:
            bound = self._upper(ref, set())
            if bound is None:
                lower = [self.rows[r] for r in self._lower(ref)]
                if not lower or any(r is None for r in lower):
                    continue
                bound = join(lower)  # type: ignore[arg-type]
            self.rows[ref] = bound
            return True
        return False

    def _upper(self, ref: RowRef, seen: set[RowRef]) -> Row | None:
        """The least upper bound of a row: the fewest-axes of what is known above it."""
        seen.add(ref)
        found: list[Row] = []
        for c in self.constraints:
            if c.subr != ref or c.cur in seen:
                continue
            row = self.rows[c.cur]
            if row is None:
                known = [self.rows[r] for r in self._lower(c.cur) if self.rows[r] is not None]
                row = join(known) if known else self._upper(c.cur, seen)  # type: ignore
            if row is not None:
                found.append(row)
        return min(found, key=len) if found else None


def fits(cur: Row, subr: Row) -> bool:
    """`cur >= subr`: `subr` broadcasts to `cur` (aligned right, extents equal or 1)."""
    if len(subr) > len(cur):
        return False
    return all(s in (c, 1) for c, s in zip(cur[len(cur) - len(subr):], subr))


def join(rows: list[Row]) -> Row:
    """The broadcast of rows: as many axes as the longest, at each axis (aligned right) the
    extent other than 1 (a mismatch is left for the final check to report)."""
    length = max(len(r) for r in rows)
    result = []
    for position in range(length):
        extents = [r[position - (length - len(r))] for r in rows
                   if position >= length - len(r)]
        result.append(max(extents))
    return tuple(result)
