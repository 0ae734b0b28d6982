"""Robustness of the core (fuzz findings): a user's bad input is a diagnostic, never an
internal error (a Python exception escaping) and never a hang.

- long flat chains (`1 + 1 + ... + 1`, `x[0:1][0:1]...`, `a ?? b ?? ...`) are checked and
  evaluated without recursion along them, and a tree nested too deeply otherwise is the
  diagnostic "nesting too deep" at its start;
- caches derived from syntax trees are keyed by identity, never by hashing a deep tree;
- a compile-time int beyond the machine's index size is a diagnostic;
- instantiation checks declared packs, ranks and element-wise constants before building them;
- an NNEF tensor file's header is checked before its data is read;
- the generated-code path refuses formulas Python cannot compile (and the reference runs them);
- a `--stdlib` folder is listed two levels deep at most, and never raises OSError.
Every test is fast: a test that took long would itself show a missing bound.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import refinterp.api as ri
from refinterp.cli import main
from refinterp.core.cache import IdentityCache
from refinterp.core.source import SourceFile
from refinterp.language.binding import affine_form, free_names
from refinterp.language.expr import Environment, evaluate
from refinterp.language.modules import stdlib_module_files
from refinterp.numeric.tensorfile import HEADER_SIZE, read_tensor
from refinterp.syntax.parser import parse_expression
from refinterp.syntax.visitor import chain_below, tree_depth, walk

LONG = 5000  # terms of a long chain: its tree is this deep, five times the recursion limit


def value(text: str, **values: object) -> object:
    return evaluate(parse_expression(SourceFile("<test>", text)), Environment(dict(values)))


def error(text: str) -> ri.Error:
    with pytest.raises(ri.Error) as raised:
        value(text)
    return raised.value


# ------------------------------------------------------------------ long chains


CHAINS = {
    "plus": (" + ".join(["1"] * LONG), LONG),
    "minus": (" - ".join(["1"] * LONG), 2 - LONG),
    "times": (" * ".join(["2"] * 62), 2 ** 62),
    "power": (" ** ".join(["1"] * LONG), 1),
    "and": (" && ".join(["true"] * LONG), True),
    "or": (" || ".join(["false"] * LONG), False),
    "min": (" << ".join(["3"] * LONG), 3),
    "reals": (" + ".join(["1.5"] * LONG), 1.5 * LONG),
    "slices": ("[1, 2]" + "[0:2]" * LONG, (1, 2)),
    "shrinking slices": ("[1, 2, 3]" + "[1:]" * LONG, ()),
    "cumulative folds": ("[1, 2]" + " + ..." * LONG, (1, 2 + LONG)),
    "member then plus": ("[1, 2]" + ".size" + " + 1" * LONG, 2 + LONG),
    "unary": ("- " * 400 + "1", 1),
    "coalesce": (" ?? ".join(["x"] * 900 + ["7"]), 7),
    "else-if": ("false ? 1 : " * 450 + "2", 2),
    "if": ("true ? 1 : " * 450 + "2", 1),
}


@pytest.mark.parametrize("text, expected", CHAINS.values(), ids=CHAINS.keys())
def test_long_chains_are_evaluated_without_recursion(text: str, expected: object) -> None:
    x = ri.NULL if "??" in text else 0
    assert value(text, x=x) == expected


def test_a_long_chain_keeps_the_order_of_its_errors() -> None:
    """The first error in evaluation order is reported, as plain recursion would."""
    terms = ["1"] * LONG
    terms[3000] = "true"
    terms[4000] = "(1 / 0)"
    found = error(" + ".join(terms))
    assert found.code == "E0400" and found.span.col == 1  # `1 + ... + true`, innermost first
    terms[3000] = "1"
    found = error(" + ".join(terms))
    assert found.code == "E0402" and "division by zero" in found.message


def test_coalesce_and_select_chains_check_from_the_inside_out() -> None:
    found = error(" ?? ".join(["1"] * 900))
    assert found.code == "E0400" and found.span.col == 1 + 5 * 898  # the innermost `1 ?? 1`
    found = error("true ? 1 : " * 450 + "2.0")
    assert found.code == "E0400" and "a select" in found.message


def test_nesting_too_deep_for_recursion_is_a_positioned_diagnostic() -> None:
    limit = sys.getrecursionlimit()  # a run raises it for deep invocations: use Python's own
    sys.setrecursionlimit(1000)
    try:
        found = error("[true] ? [1] : " * 450 + "[0]")
    finally:
        sys.setrecursionlimit(limit)
    assert (found.code, found.message) == ("E0402", "nesting too deep to evaluate")
    assert (found.span.line, found.span.col, found.span.end_col) == (1, 1, 2)


def test_walks_over_every_node_do_not_recurse() -> None:
    tree = parse_expression(SourceFile("<test>", " + ".join(["x", *["1"] * LONG])))
    assert free_names(tree) == {"x"}
    assert affine_form(tree).coefficient == 1 and affine_form(tree).offset == LONG
    assert tree_depth(tree) == LONG + 1
    assert sum(1 for _ in walk(tree)) == 2 * LONG + 1
    assert len(chain_below(tree)) == LONG and chain_below(tree)[0].name == "x"


def test_no_recursion_limit_is_raised() -> None:
    limit = sys.getrecursionlimit()
    value(" + ".join(["1"] * LONG))
    assert sys.getrecursionlimit() == limit


CHAINED = """import math;

operator f {
    @attrib { n: int = @E@; }
    @input { x: real[4]; }
    @output { y: real[4]; }
    @assert { @E@ > 0: "n is {n}"; }
    @lower { y[i] = x[i] + real(n), i < 4; }
}

graph G {
    @input { x: real[2]; }
    @output { y: real[2]; }
    @compose { y = math.add(x, @R@); }
}
"""


def test_long_chains_in_a_program_instantiate_check_and_run() -> None:
    program = ri.load_source(CHAINED.replace("@E@", " + ".join(["1"] * LONG))
                             .replace("@R@", " + ".join(["0.5"] * LONG)))
    assert ri.shapes(program, op="f").outputs["y"].shape == (4,)
    run = ri.evaluate(program, op="f", inputs={"x": np.zeros(4)})
    assert run.outputs["y"].tolist() == [float(LONG)] * 4
    assert ri.shapes(program, op="G", inputs={"x": ri.TensorType("real", (2,))}).checked
    run = ri.evaluate(program, op="G", inputs={"x": np.zeros(2)})
    assert run.outputs["y"].tolist() == [LONG / 2] * 2


def test_syntax_tree_caches_hold_their_trees_by_identity() -> None:
    cache: IdentityCache[int] = IdentityCache(2)
    first = parse_expression(SourceFile("<a>", " + ".join(["1"] * LONG)))
    equal = parse_expression(SourceFile("<b>", " + ".join(["1"] * LONG)))
    cache.put(first, 1)
    assert cache.get(first) == 1 and cache.get(equal) is None  # nothing is hashed or compared
    cache.put(equal, 2)
    cache.put(object(), 3)
    assert cache.get(first) is None and cache.get(equal) == 2 and len(cache) == 2


# ------------------------------------------------------------------ ints beyond index size


@pytest.mark.parametrize("text, message", [
    ("[0 : 2 ** 63]", "a pack of 9223372036854775808 items"),
    ("[2 ** 63 : 0 : -1]", "a pack of 9223372036854775808 items"),
    ("[0 : 2 ** 70 : 2 ** 40]", "a pack of 1073741824 items"),
    ("[0 : 3][2 ** 63]", "index 9223372036854775808 is out of range"),
    ("[1 ..(2 ** 64)]", "a pack of 18446744073709551616 items"),
])
def test_ints_beyond_the_index_size_are_diagnostics(text: str, message: str) -> None:
    found = error(text)
    assert found.code == "E0402" and message in found.message


def test_huge_slice_bounds_clip() -> None:
    assert value("[0 : 3][-2 ** 70 : 2 ** 70 : 2 ** 63]") == (0,)


# ------------------------------------------------------------------ instantiation limits


LIMITED = """
operator packed {
    @attrib { n: int; }
    @input { x: real[4]; }
    @output { ys: real[4]..(n); }
    @lower { ys[k][i] = x[i], i < 4, k < n; }
}

operator ranked {
    @attrib { n: int; }
    @input { x: real[4]; }
    @output { y: real[1 ..(n)]; }
    @lower { y[i] = 0.0, i < 1; }
}

operator constant {
    @attrib { n: int; }
    @input { x: real[4]; }
    @constant { c: real[n, n] = real(i + j), i < n, j < n; }
    @output { y: real[4]; }
    @lower { y[i] = x[i] + c[0, 0], i < 4; }
}

operator repeated {
    @attrib { p: int[]..(100000000) = 1; }
    @input { x: real[4]; }
    @output { y: real[4]; }
    @lower { y[i] = x[i], i < 4; }
}
"""


def limited_error(op: str, command: str, n: object = None, **limits: int) -> ri.Error:
    program = ri.load_source(LIMITED, path="limited.sknd")
    attributes = {} if n is None else {"n": n}
    with pytest.raises(ri.Error) as raised:
        if command == "shapes":
            ri.shapes(program, op=op, attributes=attributes,
                      inputs={"x": ri.TensorType("real", (4,))}, limits=ri.Limits(**limits))
        else:
            ri.evaluate(program, op=op, attributes=attributes, inputs={"x": np.zeros(4)},
                        limits=ri.Limits(**limits))
    return raised.value


@pytest.mark.parametrize("command", ["shapes", "eval"])
@pytest.mark.parametrize("n", [100_000_000, 2 ** 64])
def test_a_declared_pack_is_checked_before_it_is_built(command: str, n: int) -> None:
    found = limited_error("packed", command, n)
    assert found.code == "E1202" and f"a pack of {n} tensors" in found.message
    assert found.span.line == 5


def test_the_run_s_pack_limit_reaches_instantiation() -> None:
    found = limited_error("packed", "eval", 20, max_pack_length=10)
    assert found.code == "E1202" and "limit of 10" in found.message


@pytest.mark.parametrize("command", ["shapes", "eval"])
@pytest.mark.parametrize("n", [65, 100_000_000, 2 ** 64])
def test_a_rank_above_numpy_s_is_refused_before_the_shape_is_built(command: str,
                                                                   n: int) -> None:
    found = limited_error("ranked", command, n)
    assert found.code == "E0300" and f"rank {n}" in found.message and "64" in found.message


def test_a_negative_repeated_rank_is_a_diagnostic() -> None:
    found = limited_error("ranked", "shapes", -1)
    assert found.code == "E0300" and "not a non-negative int" in found.message


@pytest.mark.parametrize("command", ["shapes", "eval"])
def test_an_element_wise_constant_is_checked_before_it_is_evaluated(command: str) -> None:
    found = limited_error("constant", command, 100_000)
    assert found.code == "E1200" and "'c' of 'constant'" in found.message
    found = limited_error("constant", command, 2 ** 40)
    assert found.code == "E1200"


def test_a_packed_attribute_is_expanded_within_the_compile_time_limit() -> None:
    found = limited_error("repeated", "shapes")
    assert found.code == "E0402" and "a pack of 100000000 items" in found.message


def test_an_overflowing_compose_loop_start_is_a_diagnostic(tmp_path: Path, capsys) -> None:
    path = tmp_path / "loop.sknd"
    path.write_text("import math;\ngraph G {\n    @input { x: int[3]; }\n"
                    "    @output { y: int[3]; }\n    @compose {\n"
                    "        y = with s = 99999999999999999999999 do..(2) math.add(s, x);\n"
                    "    }\n}\n")
    assert main(["eval", str(path), "--input", "x=[1, 2, 3]", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "E0502"


# ------------------------------------------------------------------ NNEF tensor files


def dat_header(shape: tuple[int, ...], bits: int, item_type: int, length: int) -> bytes:
    extents = list(shape) + [0] * (8 - len(shape))
    head = b"\x4e\xef\x01\x00" + struct.pack("<II8III", length, len(shape), *extents, bits,
                                            item_type)
    return head + bytes(HEADER_SIZE - len(head))


def test_a_tensor_file_above_the_size_limit_is_refused_before_its_data_is_read(
        tmp_path: Path) -> None:
    path = tmp_path / "big.dat"
    with path.open("wb") as file:  # a sparse 1.2 GB file: read whole, it would take 9.6 GB
        file.write(dat_header((60000, 20000), 8, 4, 1_200_000_000))
        file.truncate(HEADER_SIZE + 1_200_000_000)
    with pytest.raises(ri.Error) as raised:
        read_tensor(path)
    assert raised.value.code == "E1200" and "'" + str(path) + "'" in raised.value.message
    with pytest.raises(ri.Error) as raised:
        read_tensor(path, max_size=10)
    assert raised.value.code == "E1200" and "limit of 10 bytes" in raised.value.message


@pytest.mark.parametrize("data, message", [
    (dat_header((4,), 32, 0, 16)[:60], "is truncated: 60 bytes, shorter than the 128-byte"),
    (dat_header((4,), 32, 0, 16) + bytes(10), "is truncated: the data length"),
    (dat_header((65536, 65536), 8, 4, 0) + bytes(10), ": the data length does not match"),
])
def test_a_truncated_or_inconsistent_tensor_file_names_the_file(tmp_path: Path, data: bytes,
                                                                message: str) -> None:
    path = tmp_path / "t.dat"
    path.write_bytes(data)
    with pytest.raises(ri.Error) as raised:
        read_tensor(path)
    assert raised.value.code == "E0800"
    assert raised.value.message.startswith(f"'{path}'") and message in raised.value.message


# ------------------------------------------------------------------ generated code


def test_a_rank_40_formula_runs_on_the_reference(tmp_path: Path) -> None:
    x = np.ones((1,) * 40)
    told: list[str] = []
    for engine in ("scalar", "vector"):
        run = ri.evaluate("math.add", inputs={"x": x, "y": np.array([1.0])}, engine=engine,
                          hooks=ri.Hooks(log=lambda instance, how: told.append(how)))
        assert run.outputs["z"].shape == (1,) * 40 and run.outputs["z"].item() == 2.0
    assert "40 nested loops" in told[0]


@pytest.mark.parametrize("terms", [300, 2000])
def test_a_formula_nested_too_deeply_for_python_runs_on_the_reference(terms: int) -> None:
    program = ri.load_source(
        "operator f {\n    @input { x: real[4]; }\n    @output { y: real[4]; }\n"
        f"    @lower {{ y[i] = x[i]{' + 1.0' * terms}, i < 4; }}\n}}\n")
    told: list[str] = []
    run = ri.evaluate(program, op="f", inputs={"x": np.zeros(4)}, engine="scalar",
                      hooks=ri.Hooks(log=lambda instance, how: told.append(how)))
    assert run.outputs["y"].tolist() == [float(terms)] * 4
    assert "reference (nested" in told[0]


# ------------------------------------------------------------------ --stdlib folders


def test_a_stdlib_listing_reads_two_levels_of_folders(tmp_path: Path) -> None:
    for relative in ("nn.sknd", "a/b.sknd", "a/b/c.sknd", "d/e/f/g.sknd"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("")
    assert list(stdlib_module_files(tmp_path)) == ["a.b", "nn"]
    assert stdlib_module_files(tmp_path / "missing") == {}


def test_an_import_finds_a_deeper_stdlib_module_by_its_path(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c.sknd").write_text(
        "operator id {\n    @input { x: real[]; }\n    @output { y: real[]; }\n"
        "    @lower { y[] = x[]; }\n}\n")
    program = ri.load_source("import a.b.c;\ngraph G {\n    @input { x: real[]; }\n"
                             "    @output { y: real[]; }\n    @compose { y = a.b.c.id(x); }\n}\n",
                             stdlib=tmp_path)
    assert ri.evaluate(program, inputs={"x": np.array(3.0)}).outputs["y"].item() == 3.0


@pytest.mark.parametrize("args", [
    ["ops", "nn.relu", "--stdlib", "/"],
    ["ops", "nn", "--stdlib", "/proc"],
    ["eval", "--op", "nn.relu", "--stdlib", "/", "--input", "x=[1.0]"],
])
def test_an_odd_stdlib_folder_is_a_diagnostic(args: list[str], capsys) -> None:
    assert main([*args, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "E0203"


# ------------------------------------------------------------------ the command line


def test_the_command_line_evaluates_a_long_chain(capsys) -> None:
    assert main(["expr", " + ".join(["1"] * LONG)]) == 0
    assert capsys.readouterr().out.strip() == str(LONG)
    assert main(["expr", "[0 : 2 ** 63]"]) == 1
    assert "[E0402]" in capsys.readouterr().err
