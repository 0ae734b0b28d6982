"""What the eager back ends (torch, jax) share: a `Call` (one invocation as the translations
see it) and a `Translations` table that translations register in. Framework-free: each back
end keeps its own table and converts arrays itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Call:
    """One invocation: attributes as in case.json, generics, inputs as the framework's arrays."""

    attributes: dict[str, Any]
    inputs: dict[str, Any]
    generics: list[str] = field(default_factory=list)

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute `name` as given, else `default` (the operator's default)."""
        return self.attributes.get(name, default)

    def ints(self, name: str, default: Any = None) -> list[int] | None:
        """An int pack attribute as a list of ints (a single value given for a pack stays a
        one-item list); `default` when absent (None stays None)."""
        value = self.attributes.get(name, default)
        if value is None:
            return None
        return [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]

    def __getitem__(self, name: str) -> Any:
        return self.inputs[name]

    def get(self, name: str) -> Any:
        """An optional input, None when absent."""
        return self.inputs.get(name)


Translation = Callable[[Call], Any]


class Translations(dict):
    """Operator name -> (translation, its output names in order)."""

    def register(self, operator: str, *outputs: str) -> Callable[[Translation], Translation]:
        """Decorator: register the function as the translation of `operator`, returning
        `outputs` in order."""
        def register(function: Translation) -> Translation:
            self[operator] = (function, outputs)
            return function
        return register
