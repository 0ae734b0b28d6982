"""Syntax trees as plain data: the form the parse cache keeps on disk (language.modules,
docs/performance.md "Start-up", docs/security.md "The parse cache").

`dumps(value, source)` writes a value made of the node classes of `syntax.ast`, spans of
`source`, tuples, str, int, float, bool and None as one flat JSON array, a program in
postfix order:

    "=text"                      the string `text`
    int, float, true/false, null that value
    "(", n                       the tuple of the last n values
    "Span", l, c, el, ec         the span (l, c)-(el, ec) of `source` (0, 0, 0, 0: NO_SPAN)
    "<Class>", l, c, el, ec      a node of that class, spanned so, whose fields are the last
                                 values, one per field in field order

`loads(data, kind, source)` reads it back and never calls anything the data chooses: the
only classes it makes are those of an explicit allow-list (`NODE_CLASSES`, every node class
of `syntax.ast`) and `Span`, each node's fields are checked against the class's annotations
(exact types: a `tuple[Expr, ...]` field holds a tuple of expression nodes), spans must lie in
`source`, and the whole must be of `kind` (an annotation such as "tuple[Block, ...]"). Anything
else is a `SerialError`. The array holds no nested array and no object, which `loads` checks
before JSON reads a byte (`[` and `{` inside strings are written as \\u escapes), so no entry
can make the JSON reader recurse; building is a loop, so trees of any depth are written and
read without recursion."""

from __future__ import annotations

import dataclasses
import gc
import typing
from typing import Any, Callable

from refinterp.core.source import NO_SPAN, SourceFile, Span
from refinterp.syntax import ast


class SerialError(ValueError):
    """Data that is not the serial form of a value of the kind asked for (or a value that has
    none)."""


# The allow-list: tag → class, every concrete node class of syntax.ast whose fields are all
# set by its __init__ and that has no __post_init__ (a node is made from its fields alone).
NODE_CLASSES: dict[str, type] = {
    name: cls for name, cls in vars(ast).items()
    if isinstance(cls, type) and issubclass(cls, ast.Node) and cls is not ast.Node
    and cls.__module__ == ast.__name__ and not hasattr(cls, "__post_init__")
    and all(f.init for f in dataclasses.fields(cls))}
_TAGS = {cls: name for name, cls in NODE_CLASSES.items()}

_LITERAL = "="          # prefix of a string value
_TUPLE = "("            # tag of a tuple
_SPAN = "Span"          # tag of a span on its own (a node's span is in its own op)
_SCALARS = (int, float, bool, type(None))


# ---------------------------------------------------------------------------------- writing


class _Op(tuple):
    """Items to emit as they are (an op and its numbers), on the encoder's work stack."""

    __slots__ = ()


def dumps(value: object, source: SourceFile) -> bytes:
    """The serial form of `value` (see the module), whose spans must all be `source`'s or
    NO_SPAN; a SerialError for anything else (a list, a node of another module, ...)."""
    out: list[object] = []
    emit, extend = out.append, out.extend
    todo = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is str:
            emit(_LITERAL + item)
        elif kind is _Op:
            extend(item)
        elif kind is tuple:
            todo.append(_Op((_TUPLE, len(item))))
            todo.extend(reversed(item))
        elif kind in _SCALARS:
            emit(item)
        elif kind is Span:
            extend((_SPAN, *_numbers(item, source)))
        elif kind in _TAGS:
            tag = _TAGS[kind]
            names = (_SCHEMAS.get(tag) or _schema(tag))[1]
            todo.append(_Op((tag, *_numbers(item.span, source))))
            todo.extend(getattr(item, name) for name in reversed(names[1:]))
        else:
            raise SerialError(f"a {kind.__name__} has no serial form")
    import json  # here: only a miss writes, and a run imports no json otherwise

    try:
        text = json.dumps(out, ensure_ascii=True, separators=(",", ":"))
    except ValueError as exc:  # an int too long to print
        raise SerialError(str(exc)) from None
    # the only structural '[' is the first character: any other is inside a string
    return ("[" + text[1:].replace("[", "\\u005b").replace("{", "\\u007b")).encode("ascii")


def _numbers(span: Span, source: SourceFile) -> tuple[int, int, int, int]:
    """A span's numbers, if `loads` will take them back (see `_span_in`)."""
    if span.source is source:
        numbers = span.line, span.col, span.end_line, span.end_col
        if _span_in(*numbers, len(source.line_starts)):
            return numbers
        raise SerialError(f"a span outside its file: {numbers}")
    if span == NO_SPAN:
        return 0, 0, 0, 0
    raise SerialError(f"a span of another file ({span.path})")


def _span_in(line: object, col: object, end_line: object, end_col: object,
             lines: int) -> bool:
    """Whether these are the numbers of a span of a file of `lines` lines (ints, lines in the
    file, in order, columns from 1)."""
    return line.__class__ is col.__class__ is end_line.__class__ is end_col.__class__ is int \
        and 0 < line <= end_line <= lines and col > 0 and end_col > 0  # type: ignore[operator]


# ---------------------------------------------------------------------------------- reading


def loads(data: bytes, kind: str, source: SourceFile) -> Any:
    """The value of `kind` that `data` (from `dumps`) holds, its spans pointing to `source`;
    a SerialError for anything else."""
    if data.count(b"[") != 1 or b"{" in data:  # nesting: checked before JSON reads it
        raise SerialError("not a flat array")
    import json  # here: `import refinterp.api` imports no json (tests/test_startup_imports.py)

    try:
        program = json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError too
        raise SerialError(f"not JSON: {exc}") from None
    if type(program) is not list:
        raise SerialError("not an array")
    collecting = gc.isenabled()
    gc.disable()  # every object made is kept: a collection would find nothing
    try:
        stack = _run(program, source)
    finally:
        if collecting:
            gc.enable()
    if len(stack) != 1 or not _check(_kind(kind))(stack[0]):
        raise SerialError(f"not a {kind}")
    return stack[0]


def _run(program: list, source: SourceFile) -> list:
    """The values the program leaves (see the module), each node checked when made. One loop
    over the items (the hot path of a cache hit: locals only, checks in C where they can be)."""
    stack: list[Any] = []
    push = stack.append
    lines = len(source.line_starts)
    new, set_dict, is_type = object.__new__, object.__setattr__, frozenset.__contains__
    schemas, schema_of, span_in = _SCHEMAS, _schema, _span_in
    no_span, span_class = NO_SPAN, Span
    items = iter(program)
    following = items.__next__
    try:
        for item in items:
            if item.__class__ is not str:
                push(item)  # int, float, bool or None: the only other JSON scalars
            elif item[:1] == _LITERAL:
                push(item[1:])
            elif item == _TUPLE:
                count = following()
                if count.__class__ is not int or not 0 <= count <= len(stack):
                    raise SerialError(f"a tuple of {count!r} values")
                if count:
                    values = tuple(stack[-count:])
                    del stack[-count:]
                    push(values)
                else:
                    push(())
            else:
                line, col, end_line, end_col = following(), following(), following(), following()
                if span_in(line, col, end_line, end_col, lines):
                    span = new(span_class)
                    set_dict(span, "__dict__", {"source": source, "line": line, "col": col,
                                                "end_line": end_line, "end_col": end_col})
                elif line.__class__ is col.__class__ is end_line.__class__ is \
                        end_col.__class__ is int and line == col == end_line == end_col == 0:
                    span = no_span
                else:
                    raise SerialError(f"not a span of the file: {line!r}:{col!r}-"
                                      f"{end_line!r}:{end_col!r}")
                if item == _SPAN:
                    push(span)
                    continue
                cls, keys, types, contents = schemas.get(item) or schema_of(item)
                count = len(types)
                if count:
                    values = stack[-count:]
                    if len(values) != count:
                        raise SerialError(f"{item} needs {count} fields")
                    del stack[-count:]
                    if not all(map(is_type, types, map(type, values))):
                        raise SerialError(f"a field of {item} of a wrong type")
                    for position, check in contents:
                        value = values[position]
                        if value.__class__ is tuple and not check(value):
                            raise SerialError(f"{item}.{keys[position + 1]}: wrong items")
                    values.insert(0, span)
                    fields = dict(zip(keys, values))
                else:
                    fields = {"span": span}
                node = new(cls)
                set_dict(node, "__dict__", fields)
                push(node)
    except (TypeError, ValueError, IndexError, StopIteration) as exc:  # a program cut short
        raise SerialError(f"a malformed program: {exc!r}") from None
    return stack


# ---------------------------------------------------------------------------------- schemas

# A kind: the exact types a value may have, and a check of a tuple's items (None: any
# tuple of the types is fine — tuples are the only containers of a tree).
Kind = tuple[frozenset, typing.Optional[Callable[[tuple], bool]]]
# tag → (class, field names from span on, per field after span its types, and (position,
# check of a tuple's items) for the fields that may hold a tuple): made when first needed, at
# most one per class of NODE_CLASSES (and `_KINDS` one per annotation of those classes)
_SCHEMAS: dict[str, tuple[type, tuple[str, ...], tuple[frozenset, ...],
                          tuple[tuple[int, Callable[[tuple], bool]], ...]]] = {}
_KINDS: dict[str, Kind] = {}


def _schema(tag: str) -> tuple:
    """The class a tag names (allow-list only), its field names, and the kinds of the fields
    after `span`, from the class's annotations."""
    cls = NODE_CLASSES.get(tag) if type(tag) is str else None
    if cls is None:
        raise SerialError(f"{tag!r} is not a syntax node class")
    fields = dataclasses.fields(cls)
    if not fields or fields[0].name != "span":
        raise SerialError(f"{tag} does not start with its span")
    kinds = [_kind(f.type) for f in fields[1:]]
    schema = _SCHEMAS[tag] = (
        cls, tuple(f.name for f in fields), tuple(types for types, _ in kinds),
        tuple((position, items) for position, (_, items) in enumerate(kinds)
              if items is not None))
    return schema


def _kind(annotation: str) -> Kind:
    """The kind of a value of `annotation` (a string as syntax.ast writes them)."""
    kind = _KINDS.get(annotation)
    if kind is None:
        spaced = annotation.replace("'", "")
        for mark in "[],|":
            spaced = spaced.replace(mark, f" {mark} ")
        tokens = spaced.split()
        kind, rest = _parse_union(tokens)
        if rest:
            raise SerialError(f"cannot read the annotation {annotation!r}")
        _KINDS[annotation] = kind
    return kind


def _check(kind: Kind) -> Callable[[Any], bool]:
    """Whether a value is of `kind`, items included."""
    types, items = kind
    if items is None:
        return lambda value: type(value) in types
    return lambda value: type(value) in types and (type(value) is not tuple or items(value))


def _parse_union(tokens: list[str]) -> tuple[Kind, list[str]]:
    kinds = []
    while True:
        kind, tokens = _parse_atom(tokens)
        kinds.append(kind)
        if not tokens or tokens[0] != "|":
            return _union(kinds), tokens
        tokens = tokens[1:]


def _parse_atom(tokens: list[str]) -> tuple[Kind, list[str]]:
    if not tokens:
        raise SerialError("an annotation ends early")
    name, tokens = tokens[0], tokens[1:]
    if not tokens or tokens[0] != "[":
        return _named(name), tokens
    arguments: list[Kind | None] = []  # None: `...`
    tokens = tokens[1:]
    while True:
        if tokens and tokens[0] == "...":
            arguments.append(None)
            tokens = tokens[1:]
        else:
            kind, tokens = _parse_union(tokens)
            arguments.append(kind)
        if not tokens or tokens[0] not in (",", "]"):
            raise SerialError("an annotation's brackets do not close")
        closing, tokens = tokens[0] == "]", tokens[1:]
        if closing:
            return _generic(name, arguments), tokens


_NAMED = {"str": str, "int": int, "float": float, "bool": bool, "None": type(None),
          "Span": Span}


def _named(name: str) -> Kind:
    """A plain name: a built-in type, Span, a node class or an alias of syntax.ast (`Expr`)."""
    if name in _NAMED:
        return frozenset({_NAMED[name]}), None
    if name in NODE_CLASSES:
        return frozenset({NODE_CLASSES[name]}), None
    alias = getattr(ast, name, None)
    if typing.get_origin(alias) is typing.Union:
        return _union([_named(getattr(a, "__forward_arg__", None) or a.__name__)
                       for a in typing.get_args(alias)])
    raise SerialError(f"no kind named {name!r}")


def _generic(name: str, arguments: list[Kind | None]) -> Kind:
    """`Union[...]`, `tuple[X, ...]` or `tuple[X, Y]` (a fixed length)."""
    if name == "Union" and None not in arguments:
        return _union(arguments)  # type: ignore[arg-type]
    if name != "tuple":
        raise SerialError(f"no kind {name}[...]")
    tuples = frozenset({tuple})
    if len(arguments) == 2 and arguments[1] is None and arguments[0] is not None:
        types, items = arguments[0]
        if items is None:
            return tuples, lambda value: types.issuperset(map(type, value))
        check = _check(arguments[0])
        return tuples, lambda value: all(map(check, value))
    if None in arguments:
        raise SerialError("'...' only ends a tuple[X, ...]")
    checks = tuple(_check(a) for a in arguments)  # type: ignore[arg-type]
    return tuples, lambda value: len(value) == len(checks) and \
        all(check(item) for check, item in zip(checks, value))


def _union(kinds: list[Kind]) -> Kind:
    types = frozenset().union(*(types for types, _ in kinds))
    checks = [items for _, items in kinds if items is not None]
    if len(checks) <= 1:
        return types, checks[0] if checks else None
    return types, lambda value: any(check(value) for check in checks)
