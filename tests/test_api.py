"""The Python API used by tests and tools (refinterp.api)."""

import numpy as np
import pytest

from refinterp.api import run_operator
from refinterp.core.diagnostics import Diagnostic
from refinterp.run.intrinsics import intrinsic, lookup


def test_run_operator_runs_a_standard_operator() -> None:
    x = np.arange(6.0).reshape(2, 3)
    y = np.full((2, 3), 0.5)
    assert np.array_equal(run_operator("math.add", {"x": x, "y": y})["z"], x + y)


def test_run_operator_reports_an_unknown_operator_as_a_diagnostic() -> None:
    with pytest.raises(Diagnostic, match="no operator or graph 'nope'"):
        run_operator("math.nope", {})


def test_intrinsics_are_looked_up_by_qualified_name() -> None:
    assert lookup("test.never_registered") is None

    @intrinsic("test.api_identity")
    def identity(instance, inputs):  # pragma: no cover - only registered
        return {"y": inputs["x"]}

    assert lookup("test.api_identity") is identity
    with pytest.raises(ValueError):
        intrinsic("test.api_identity")(identity)


def test_an_attribute_pack_of_mixed_types_is_a_diagnostic() -> None:
    """From the API a pack may mix Python types; the type check reports it (E0303)."""
    import pytest
    import refinterp.api as api

    with pytest.raises(api.Error) as caught:
        api.evaluate("layout.constant", attributes={"shape": [2], "value": [1.0, 2]})
    assert caught.value.code == "E0303" and "a pack mixes types" in caught.value.message


def test_a_folder_without_a_main_module_does_not_hide_a_standard_operator(tmp_path,
                                                                        monkeypatch):
    """A golden suite has a folder per operator (`math.add/`); run from inside it, the name
    `math.add` still means the standard operator, since that folder is not a model."""
    import numpy as np
    from refinterp import api

    (tmp_path / "math.add").mkdir()
    monkeypatch.chdir(tmp_path)
    out = api.run_operator("math.add", {"x": np.array([1.0]), "y": np.array([2.0])})
    assert out["z"].tolist() == [3.0]
