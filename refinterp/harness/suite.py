"""Golden cases as the harness sees them: a `Case` per case folder of a suite (docs/golden.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from refinterp.core.diagnostics import Diagnostic
from refinterp.golden.layouts import read_layouts, strided_inputs
from refinterp.golden.schema import read_case_manifest, read_suite_manifest
from refinterp.io import MAX_INPUT_SIZE, group_packs, read_arrays


@dataclass(frozen=True)
class Case:
    """One golden case: its folder and manifest, with its arrays read on demand (each file
    within `max_input_size` bytes: refinterp.io). `digest` is the sha256 of its case.json
    that the suite's manifest.json states (None for a case folder given alone); `broken`
    says why its case.json cannot be read (its manifest is then only the suite's entry:
    the harness reports the case `broken`, harness.trust)."""

    id: str
    folder: Path
    manifest: dict[str, Any]
    max_input_size: int = field(default=MAX_INPUT_SIZE, compare=False)
    digest: str | None = field(default=None, compare=False)
    broken: str | None = field(default=None, compare=False)

    @property
    def operator(self) -> str | None:
        """`module.op` of an operator case, None for a model case."""
        return self.manifest.get("operator")

    @property
    def group(self) -> str:
        """What the case checks, for summaries: the operator, or `models/<name>`."""
        return self.operator or self.id

    @property
    def module(self) -> str:
        """The stdlib module of an operator case, `models` for a model case."""
        return self.operator.split(".")[0] if self.operator else self.id.split("/")[0]

    @property
    def profile(self) -> str:
        return self.manifest.get("profile", "spec")

    @property
    def error(self) -> dict[str, str] | None:
        """`{"code", "pattern", "message"}` of an error case, else None."""
        return self.manifest.get("error")

    @property
    def model(self) -> Path:
        return self.folder / "model.sknd"

    def file(self, name: str) -> Path | None:
        """`<folder>/<name>.npz` if the case has it."""
        path = self.folder / f"{name}.npz"
        return path if path.exists() else None

    def _arrays(self, name: str) -> dict[str, Any]:
        path = self.file(name)
        return group_packs(read_arrays(path, f"{name}.npz of case {self.id}",
                                       max_input_size=self.max_input_size)) if path else {}

    @cached_property
    def inputs(self) -> dict[str, Any]:
        return self._arrays("inputs")

    @cached_property
    def layouts(self) -> dict[str, Any]:
        """Input key (packs flattened) -> (flat buffer, `View`) for the inputs the case
        delivers through a strided view (docs/golden.md "Input layouts (views)"); {} for
        most cases."""
        return read_layouts(self.folder, self.manifest, self.max_input_size)

    @cached_property
    def layout_inputs(self) -> dict[str, Any]:
        """What a Python back end is given: `inputs`, except that an input with a view is a
        real strided NumPy view of its buffer (zero, negative strides, an offset), or the
        materialized array when the view has a mask."""
        return strided_inputs(self.inputs, self.layouts)

    @cached_property
    def params(self) -> dict[str, Any]:
        return self._arrays("params")

    @cached_property
    def expected(self) -> dict[str, Any]:
        """The golden outputs, flattened (`ys.0`, `ys.1` for a pack)."""
        path = self.file("outputs")
        return read_arrays(path, f"outputs.npz of case {self.id}",
                           max_input_size=self.max_input_size) if path else {}

    @cached_property
    def magnitudes(self) -> dict[str, Any]:
        """The error magnitudes of the real outputs that have them (`bounds.npz`, flattened
        keys; docs/golden.md "Per-element error bounds"); {} for a case without."""
        path = self.file("bounds")
        return read_arrays(path, f"bounds.npz of case {self.id}",
                           max_input_size=self.max_input_size) if path else {}

    def tolerance(self, key: str) -> dict[str, Any]:
        """The `tolerance` object of output `key` (flattened name)."""
        return self.manifest["outputs"][key]["tolerance"]

    def name_for_path(self) -> str:
        """The id as one file name (`/` and `@` replaced)."""
        return self.id.replace("/", "__").replace("@", "_at_")

    @property
    def attributes(self) -> dict[str, Any]:
        return self.manifest.get("attributes", {})

    def __hash__(self) -> int:
        return hash(self.id)


def load_case(folder: str | Path, max_input_size: int = MAX_INPUT_SIZE,
              digest: str | None = None) -> Case:
    """The case of one folder (its case.json checked: golden.schema); its array files are
    read within `max_input_size` bytes each."""
    folder = Path(folder)
    manifest = read_case_manifest(folder)
    return Case(manifest["id"], folder, manifest, max_input_size, digest)


def _listed_case(folder: Path, entry: dict[str, Any], max_input_size: int) -> Case:
    """The case of a suite manifest's entry; one whose case.json cannot be read is kept,
    `broken`, under the entry's id (and operator), so that the other cases still run."""
    try:
        return load_case(folder, max_input_size, entry.get("sha256"))
    except (Diagnostic, OSError) as error:
        reason = f"{error.message} [{error.code}]" if isinstance(error, Diagnostic) else \
            f"cannot read {folder / 'case.json'}: {error.strerror or error}"
        manifest = {"id": entry["id"]}
        if isinstance(entry.get("operator"), str):
            manifest["operator"] = entry["operator"]
        return Case(entry["id"], folder, manifest, max_input_size, entry.get("sha256"),
                    reason)


def load_suite(suite: str | Path, max_input_size: int = MAX_INPUT_SIZE) -> list[Case]:
    """Every case of a suite (its manifest.json), sorted by id; a case folder alone gives one.
    A case whose case.json cannot be read is `broken` (the others are still loaded)."""
    suite = Path(suite)
    if (suite / "case.json").exists():
        return [_listed_case(suite, {"id": suite.name}, max_input_size)]
    entries = read_suite_manifest(suite)
    return [_listed_case(suite / entry["path"], entry, max_input_size)
            for entry in sorted(entries, key=lambda e: e["id"])]
