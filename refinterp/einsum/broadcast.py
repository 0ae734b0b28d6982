"""Broadcasting for einsum specs (refinterp/einsum/__init__.py), by specialising the operator to the
shapes of the given arrays.

The generic operator of a spec declares one extent per axis variable and one pack per row
variable, shared by every operand, so equal letters and equal row variables must have equal
extents. NumPy (`np.einsum`) and OCANNL both broadcast instead: a row variable (`...`,
`..v..`) may be shorter in one operand than in another (it is aligned to the right, the missing
axes broadcast "to the left"), and an axis of extent 1 stands for any extent. When the arrays
need that, `specialise` writes the spec again for their shapes: every row variable becomes its
axes, one variable per position (`v__0`, `v__1`, ... counted in the longest occurrence), and an
operand's axis of extent 1 facing a larger extent is declared with extent 1 and read at 0. The
result gets the broadcast extents. docs/ocannl.md, "Broadcasting".
"""

from __future__ import annotations

from dataclasses import replace

from refinterp.einsum import Axis, Einsum, Operand, _ident

Key = tuple[str, ...]  # ("var", name) or ("row", name, position)


def _row_lengths(einsum: Einsum, sources: list[tuple[str, Operand]],
                 shapes: dict[str, tuple[int, ...]],
                 ranks: dict[str, int]) -> dict[tuple[int, str], int] | None:
    """How many axes each row variable holds in each source (by source number), or None
    when the ranks do not say it."""
    lengths: dict[tuple[int, str], int] = {}
    for number, (name, operand) in enumerate(sources):
        rows = operand.rows
        free = len(shapes[name]) - (len(operand.axes) - len(rows))
        if free < 0:
            return None
        if len(rows) == 1:
            lengths[number, rows[0]] = free
        elif rows:
            known = [ranks.get(f"{_ident(row)}_rank") for row in rows]
            if any(not isinstance(k, int) or k < 0 for k in known) or sum(known) != free:
                return None
            lengths.update({(number, row): int(k) for row, k in zip(rows, known)})
    return lengths


def _layout(operand: Operand, number: int, lengths: dict[tuple[int, str], int],
            longest: dict[str, int]) -> list[tuple[Axis, Key | None]]:
    """The array axes of a source, each with the key of what it stands for (None: a fixed
    index or a placeholder, an axis of its own)."""
    axes: list[tuple[Axis, Key | None]] = []
    for axis in operand.axes:
        if axis.kind == "var":
            axes.append((axis, ("var", axis.name)))
        elif axis.kind == "row":
            count = lengths[number, axis.name]
            first = longest[axis.name] - count
            axes += [(axis, ("row", axis.name, str(first + k))) for k in range(count)]
        else:
            axes.append((axis, None))
    return axes


def _var_of(key: Key, axis: Axis) -> Axis:
    name = key[1] if key[0] == "var" else f"{key[1]}__{key[2]}"
    return Axis("var", name, start=axis.start, end=axis.end)


def specialise(einsum: Einsum, shapes: dict[str, tuple[int, ...]],
               ranks: dict[str, int]) -> Einsum | None:
    """The einsum written again for these shapes when they need broadcasting (a row variable
    of different lengths, or extents that differ only by 1s); None when they do not, or when
    they cannot broadcast (the generic operator then reports the mismatch)."""
    sources = list(zip(einsum.names, einsum.spec.operands))
    if einsum.reads_old():
        sources.append((einsum.old_name, einsum.spec.result))
    if any(name not in shapes for name, _ in sources):
        return None
    lengths = _row_lengths(einsum, sources, shapes, ranks)
    if lengths is None:
        return None
    longest: dict[str, int] = {}
    for (_, row), count in lengths.items():
        longest[row] = max(longest.get(row, 0), count)
    layouts = [_layout(operand, number, lengths, longest)
               for number, (_, operand) in enumerate(sources)]
    extents: dict[Key, set[int]] = {}
    for (name, _), layout in zip(sources, layouts):
        for (_, key), extent in zip(layout, shapes[name]):
            if key is not None:
                extents.setdefault(key, set()).add(int(extent))
    if any(len(found - {1}) > 1 for found in extents.values()):
        return None  # not broadcastable: the generic operator says where
    uneven = any(longest[row] != count for (_, row), count in lengths.items())
    if not uneven and all(len(found) == 1 for found in extents.values()):
        return None
    broadcast = {key: max(found) for key, found in extents.items()}
    operands = []
    for (name, operand), layout in zip(sources[:len(einsum.names)], layouts):
        axes = []
        for (axis, key), extent in zip(layout, shapes[name]):
            if key is None:
                axes.append(axis)
            elif extent == 1 and broadcast[key] > 1:
                axes.append(Axis("one", start=axis.start, end=axis.end))
            else:
                axes.append(_var_of(key, axis))
        operands.append(Operand(axes, operand.start, operand.end))
    result_axes: list[Axis] = []
    for axis in einsum.spec.result.axes:
        if axis.kind == "var":
            result_axes.append(axis)
        elif axis.kind == "row":
            if axis.name not in longest:
                return None
            result_axes += [_var_of(("row", axis.name, str(k)), axis)
                            for k in range(longest[axis.name])]
        else:
            result_axes.append(axis)
    result = Operand(result_axes, einsum.spec.result.start, einsum.spec.result.end)
    spec = replace(einsum.spec, operands=operands, result=result)
    return replace(einsum, spec=spec)
