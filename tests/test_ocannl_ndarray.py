"""OCANNL's array literals (refinterp/einsum/ocannl_ndarray.py): axis kinds by bracket, OCANNL's
layout (batch, output, input) filled linearly in literal order, numbers and dimension labels."""

from __future__ import annotations

import numpy as np
import pytest

from refinterp.core.diagnostics import Diagnostic
from refinterp.einsum.ocannl_ndarray import parse


def test_the_seeds_matrix_maps_3d_vectors_to_2d_vectors() -> None:
    found = parse("[ (1, 2, 3); (4, 5, 6) ]")
    assert (found.batch, found.output, found.input) == ((), (2,), (3,))
    np.testing.assert_array_equal(found.values, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def test_batch_axes_come_first_and_values_fill_the_layout_in_order() -> None:
    found = parse("[ [| 1; 2 |]; [| 3; 4 |]; [| 5; 6 |] ]")  # output 3 outside batch 2
    assert (found.batch, found.output, found.input) == ((2,), (3,), ())
    # OCANNL's Tensor.ndarray: dims batch @ output @ input, values filled linearly
    np.testing.assert_array_equal(found.values, np.arange(1.0, 7.0).reshape(2, 3))
    found = parse("( [1; 2], [3; 4] )")  # input outside output: laid out output, input
    np.testing.assert_array_equal(found.values, [[1.0, 2.0], [3.0, 4.0]])


def test_numbers_are_one_output_axis_and_may_carry_a_label() -> None:
    found = parse("'q' 2.0")
    assert found.output == (1,) and found.label == "q" and found.values.tolist() == [2.0]
    assert parse("[ -4 ]").values.tolist() == [-4.0]
    assert parse("[ (1) ; (2) ]").input == ()  # `(x)` groups


@pytest.mark.parametrize("text", ["[ (1, 2); (3, 4, 5) ]", "[ 1; [2] ]", "[ 1 2 ]", "'q' [1]",
                                  "[ 1; x ]", "[ 1 ] 2"])
def test_malformed_literals_are_diagnostics(text: str) -> None:
    with pytest.raises(Diagnostic) as error:
        parse(text)
    assert error.value.code == "E0100"
