"""Running operators (spec §2.10): an operator runs by its @lower formulas (an engine), by its
@compose block (recursively, each invocation instantiated first), or, without a body, by an
intrinsic registered under its qualified name.

The same executor also *checks* a composition without computing anything (`abstract=True`):
tensors are `AbstractTensor`s (type and shape only), every invocation is instantiated (so
unknown operators and attributes, missing arguments, failed assertions and wrong declared
shapes are found), operators with @lower or an intrinsic give their declared outputs, and
branches and loops are followed wherever their conditions and counts are compile-time. Where
they depend on tensor values, the check stops there (`Undetermined`), saying where.

Where an error is reported (docs/api.md): an invalid invocation is reported at the call, at the
argument at fault when one is; an error inside a standard-library operator is reported at the
innermost call in the user's code. The original place stays as a related span.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any, Callable

import numpy as np

from refinterp.numeric import rules
from refinterp.numeric.representation import (INT64_MAX, INT64_MIN, NUMPY_DTYPES as DTYPES,
                                              AbstractTensor, check_pack_length, kind_of,
                                              limit_note)
from refinterp.core.cache import IdentityCache
from refinterp.core.diagnostics import ComposeDiagnostic, Diagnostic, Frame, LoweringDiagnostic
from refinterp.language.checks import check_main_graph
from refinterp.language.binding import free_names
from refinterp.language.expr import Environment, evaluate
from refinterp.language.instance import (Invocation, OperatorInstance, TensorType,
                                         describe_type, instantiate_cached)
from refinterp.language.inputs import LengthError, declared_dims
from refinterp.language.invocation import EmptyPack, item_type, tensor_type, typed_pack
from refinterp.run.intrinsics import lookup as lookup_intrinsic
from refinterp.lower.engines import DEFAULT_ENGINE, ENGINES, Engine, lower_cost
from refinterp.lower.common import constant_array, lowering_plan
from refinterp.language.modules import (LoadedModule, LoadedProgram, bundled_definition,
                                        find_operator, interface_differences,
                                        unknown_operator_notes)
from refinterp.run.params import ParameterStore
from refinterp.syntax import ast
from refinterp.syntax.visitor import nodes, tree_depth, walk
from refinterp.run.abstract import (DeclaredVariables, Undetermined, abstract_tensor,
                                    abstract_value)
from refinterp.run.hooks import Hooks
from refinterp.run.jagged import DynamicExtents
from refinterp.run.limits import STEP_WORK, Limits, Work, declared_sizes, out_of_memory
from refinterp.run.locate import declaration_span, relocate
from refinterp.run.scope import BlockScope, ScopePath, liveness, value_names
from refinterp.language.types import CASTS, Type
from refinterp.language.values import NULL
from refinterp.numeric.symbolic import Undecided, agree, describe, interval, symbol

FRAMES_PER_CALL = 60
POSITIONS = "<positions>"  # the name of a pack's positions while indexing a pack of tensors

# What a composition resolves the same way at every run, kept per syntax node (docs/performance.md
# "Invocations"): the operator a call names in its module (`resolve`: the module is part of the
# entry, so a program loaded again resolves again), whether an expression invokes an operator
# in a module (`invokes`), whether a call is one invocation whose arguments invoke nothing
# (`reduces_to_invocation`, for auto-labels), and the value of a compile-time scalar without
# names under a profile (`tensor`: `0.5` in `math.add(t, 0.5)`). Each depends only on what its
# entry holds.
_RESOLVED: IdentityCache[tuple[LoadedModule, Any]] = IdentityCache(1 << 14)
_INVOKES: IdentityCache[tuple[LoadedModule, bool]] = IdentityCache(1 << 14)
_SINGLE: IdentityCache[tuple[LoadedModule, bool]] = IdentityCache(1 << 14)
_CONSTANTS: IdentityCache[tuple[rules.Profile, Any]] = IdentityCache(1 << 12)


class Executor:
    """Runs operators of a loaded program."""

    def __init__(self, program: LoadedProgram, profile: rules.Profile = rules.SPEC,
                 engine: Engine = ENGINES[DEFAULT_ENGINE],
                 params: ParameterStore | DeclaredVariables | None = None,
                 abstract: bool = False, limits: Limits = Limits(), hooks: Hooks = Hooks(),
                 work: Work | None = None) -> None:
        """`limits` bound the run (docs/limits.md) and `hooks` are told what it does (its
        `observe` and `trace`; `log` and `progress` are the engine's and the caller's), both
        as the caller made them. `work` is the run's budget and deadline (default: from
        `limits`, the deadline counted from now); `work.spent` is the work done so far."""
        self.program = program
        # hooks.observe is told every tensor a @compose/@update block binds, by its scoped name
        # relative to the root (`conv1`, `block.relu`), in the order they are computed (harness
        # probes); hooks.trace every invocation, root included: ("call", operator, scoped
        # name, inputs) before it runs and ("return", ..., outputs) after (refinterp.trace)
        self.hooks = hooks
        self.engine = engine
        self.abstract = abstract
        if abstract:
            params = DeclaredVariables()
        self.params = params if params is not None else ParameterStore()
        self.library_files = {str(m.path) for m in program.modules if m.library}
        self.running: list[str] = []  # the operators being run, outermost first (progress)
        # checks a check without values leaves to a run (symbolic extents the bounds do not
        # decide): (what, why, span), in the order met (docs/semantics.md "Shapes without
        # values")
        self.deferred: list[tuple[str, str, Any]] = []
        self.fresh_names: set[str] = set()  # the symbols made for data-dependent extents
        self.profile = profile
        self.limits = limits
        if isinstance(self.params, ParameterStore):  # its .dat files are read within the limit
            self.params.max_tensor_size = limits.max_tensor_size
        self.work = work if work is not None else Work(limits.max_work, limits.timeout)
        self.depth = 0
        self.jagged = DynamicExtents()

    def run(self, definition: ast.OperatorDef, module: LoadedModule, invocation: Invocation,
            inputs: dict[str, Any]) -> dict[str, Any]:
        """Instantiate and run `definition` as the root of a run (its scoped name is
        `module.operator`, e.g. `main.G`); return its outputs by name."""
        # each nested invocation takes a few dozen Python frames: make room for max_depth of
        # them, so that exceeding max_depth is a diagnostic rather than a RecursionError
        sys.setrecursionlimit(max(sys.getrecursionlimit(),
                                  FRAMES_PER_CALL * self.limits.max_depth + 2000))
        if definition.is_graph:  # the root graph of a run is the main graph (§2.6, §2.15)
            for finding in check_main_graph(definition, self.profile):
                raise finding
        self.jagged.mark_inputs(invocation.inputs, inputs)  # a run's dynamic extents
        if self.hooks.trace is not None:  # the trace lists the inputs in declaration order
            declared = [d.name for d in definition.block("input").entries] \
                if definition.block("input") is not None else []
            inputs = {**{n: inputs[n] for n in declared if n in inputs},
                      **{n: inputs[n] for n in sorted(inputs) if n not in declared}}
        return self.call(definition, module, invocation, inputs, (module.name, definition.name),
                         definition.span)

    def call(self, definition: ast.OperatorDef, module: LoadedModule, invocation: Invocation,
             inputs: dict[str, Any], path: ScopePath | None, span: Any) -> dict[str, Any]:
        """One invocation, the root or a nested one (at `span`): charged to the run's work
        (the one place invocations are), told to the trace, run."""
        qualified = f"{module.name}.{definition.name}"
        self.work.charge(STEP_WORK, f"the invocation of {qualified}", span)
        if self.hooks.trace is not None:
            self.hooks.trace("call", qualified, path, inputs)
        outputs = self.run_instance(definition, module, invocation, inputs, path)
        if self.hooks.trace is not None:
            self.hooks.trace("return", qualified, path, outputs)
        return outputs

    def run_instance(self, definition: ast.OperatorDef, module: LoadedModule,
                     invocation: Invocation, inputs: dict[str, Any],
                     path: ScopePath | None) -> dict[str, Any]:
        """Instantiate and run `definition` with scoped name `path` (None: unnamed). A
        MemoryError while it runs (and not in an invocation within it) is E1205 naming it."""
        instance = None
        try:
            limits = self.limits  # the limits instantiation checks
            if invocation.max_pack_length != limits.max_pack_length or \
                    invocation.max_tensor_size != limits.max_tensor_size:
                invocation = replace(invocation, max_pack_length=limits.max_pack_length,
                                     max_tensor_size=limits.max_tensor_size)
            instance = instantiate_cached(definition, invocation)
            return self.run_checked(instance, module, invocation, inputs, path)
        except MemoryError:
            raise out_of_memory(f"running '{module.name}.{definition.name}'", definition.span,
                                declared_sizes(instance) if instance is not None else ()
                                ) from None

    def run_checked(self, instance: OperatorInstance, module: LoadedModule,
                    invocation: Invocation, inputs: dict[str, Any],
                    path: ScopePath | None) -> dict[str, Any]:
        """Run an operator instance within the limits: by its @lower block, its @compose
        block, an intrinsic or a bundled definition."""
        definition = instance.definition
        self.limits.check_instance(instance, sizes=not self.abstract)
        self.deferred.extend(instance.deferred)
        if instance.defaults:  # inputs left to their declared defaults
            inputs = {**{name: self.constant(info, value)
                         for name, (info, value) in instance.defaults.items()}, **inputs}
        if self.abstract and definition.block("compose") is None:
            self.variables(instance, path)
            return {name: abstract_tensor(info, f"output '{name}' of '{definition.name}'",
                                          definition.span,
                                          self.fresh_extent(definition.name, name))
                    for name, info in instance.outputs.items()}
        if definition.block("lower") is not None:
            try:
                self.limits.check_lowering(instance, lambda formula: lower_cost(
                    self.engine, instance, formula, inputs))
                self.charge_lowering(instance)
                arrays = {**inputs, **self.variables(instance, path)}
                outputs = self.engine(instance, arrays, self.profile)
            except RecursionError:  # the planner and the engines walk formulas recursively
                raise too_deep_formula(definition) from None
        elif definition.block("compose") is not None:
            outputs = self.compose(instance, module, inputs, path)
        else:
            intrinsic = lookup_intrinsic(f"{module.name}.{definition.name}")
            if intrinsic is None:
                return self.run_bundled(definition, module, invocation, inputs, path)
            outputs = intrinsic(instance, inputs)
        # a pack output of zero items has its declared item type (docs/semantics.md "Empty packs")
        outputs = {name: typed_pack(instance.outputs.get(name), value)
                   for name, value in outputs.items()}
        self.jagged.mark(instance.outputs, outputs)
        return outputs

    def shape_of(self, array: Any) -> tuple:
        """A tensor's shape as `x.shape` reads it: a run's dynamic extents with their symbols
        (`run.jagged.DynamicExtents`), an abstract tensor's as it is."""
        if isinstance(array, np.ndarray):
            return self.jagged.tensor_type(array).shape
        return tuple(array.shape)

    def fresh_extent(self, operator: str, output: str) -> Callable[[int, Any], Any]:
        """Makes the symbol of a data-dependent extent of an output checked without values
        (nonzero's count): `operator.output.axis`, primed when that name is taken, bounded by
        the declared bound (docs/semantics.md "Shapes without values")."""
        def make(axis: int, bound: Any) -> Any:
            name = f"{operator}.{output}.{axis}"
            while name in self.fresh_names:
                name += "'"
            self.fresh_names.add(name)
            high = bound if isinstance(bound, int) or bound is None else interval(bound)[1]
            return symbol(name, high, low=0)
        return make

    def within(self, extent: Any, bound: Any, what: str, span: Any) -> bool:
        """Whether `extent <= bound`; checked without values, an answer that depends on the
        symbols is left to a run (`deferred`) and taken as yes."""
        try:
            return not extent > bound
        except Undecided:
            self.deferred.append((f"{what}: {describe(extent)} <= {describe(bound)}",
                                  "its bound", span))
            return True

    def charge_lowering(self, instance: OperatorInstance) -> None:
        """Charge the iterations of every formula of a @lower block to the run's work before
        the block runs (the one place @lower work is charged; counts are known before)."""
        for formula in lowering_plan(instance).formulas:
            count = formula.iterations()
            self.work.charge(count, f"the formula ({count} iteration{'s' * (count != 1)})",
                             formula.node.span)

    def run_bundled(self, definition: ast.OperatorDef, module: LoadedModule,
                    invocation: Invocation, inputs: dict[str, Any],
                    path: ScopePath | None) -> dict[str, Any]:
        """Run a body-less library declaration without an intrinsic by refinterp's bundled
        definition of the same qualified name, if that has a body and the same interface
        (docs/semantics.md, "Body-less operators"); else E0606."""
        qualified = f"{module.name}.{definition.name}"
        found = bundled_definition(module.name, definition.name) if module.library else None
        notes = []
        if found is not None and found[0] is not definition:
            bundled, bundled_module = found
            notes = interface_differences(definition, bundled)
            if not notes:
                return self.run_instance(bundled, bundled_module, invocation, inputs, path)
        raise ComposeDiagnostic(f"operator '{qualified}' has no @lower or @compose block and "
                                f"no intrinsic implementation", definition.span,
                                notes=notes, code="E0606")

    # ------------------------------------------------------------------ @compose

    def compose(self, instance: OperatorInstance, module: LoadedModule,
                inputs: dict[str, Any], path: ScopePath | None) -> dict[str, Any]:
        """Run the @compose block, then the @update block (§2.11)."""
        block = instance.definition.block("compose")
        scope = BlockScope(instance, module, dict(inputs), path, shape_of=self.shape_of)
        for name, (info, value) in instance.constants.items():
            scope.tensors[name] = self.constant(info, value)
        variables = self.variables(instance, path)
        scope.tensors.update(variables)
        # auto-label rule 1: a lone component without local tensors keeps the operator's scope
        scope.propagate = len(block.entries) == 1 and not instance.constants and \
            not instance.variables
        keep = liveness(instance.definition)
        for k, component in enumerate(block.entries):
            known = len(scope.tensors)
            self.component(component, scope)
            if keep is not None:  # drop what no later component reads: its memory is reused
                keep.release(scope.tensors, k, len(scope.tensors) - known)
        outputs = {}
        for name, info in instance.outputs.items():
            if name not in scope.tensors:
                raise ComposeDiagnostic(f"the @compose block never assigns output '{name}'",
                                        instance.definition.block("compose").span)
            if scope.tensors[name] is NULL:  # an absent optional value (`y = o;`, o omitted)
                if _declared_optional(instance.definition, name):
                    continue  # an optional output may be absent: the result omits it
                raise ComposeDiagnostic(
                    f"output '{name}' is composed as null (an absent optional value) but is "
                    f"not declared optional", declaration_span(instance.definition, name),
                    ["resolve the optional value (`o ?? default`), or declare the output "
                     "`optional`"])
            outputs[name] = self.check_output(name, info, scope.tensors[name], instance)
        self.update(instance, scope, variables, path)
        return outputs

    def constant(self, info: TensorType | tuple, value: Any) -> Any:
        """A @constant (or an input's default) as an array, or abstract when checking."""
        return abstract_tensor(info) if self.abstract else \
            typed_pack(info, constant_array(info, value))

    # ------------------------------------------------------------------ variables

    def variables(self, instance: OperatorInstance, path: ScopePath | None) -> dict[str, Any]:
        """The values of the instance's @variable tensors, by their scoped names (a pack
        variable `ws` as `ws.0`, `ws.1`, ...)."""
        if not instance.variables:
            return {}
        block = instance.definition.block("variable")
        if path is None:
            raise ComposeDiagnostic(
                f"the variables of '{instance.definition.name}' have no scoped name: the "
                f"invocation has no label", block.span,
                ["auto-labels (spec §2.10) only name an invocation that is the single "
                 "right-hand side of a one-result component; write `label: op(...)`"])
        values: dict[str, Any] = {}
        for decl in block.entries:
            info = instance.variables[decl.name]
            scoped = ".".join((*path, decl.name))
            if isinstance(info, tuple):
                values[decl.name] = typed_pack(info, [
                    self.params.load(f"{scoped}.{i}", item, decl.span)
                    for i, item in enumerate(info)])
            else:
                values[decl.name] = self.params.load(scoped, info, decl.span)
        return values

    def update(self, instance: OperatorInstance, scope: BlockScope, variables: dict[str, Any],
               path: ScopePath | None) -> None:
        """§2.11: the @update block runs after @compose (seeing its intermediate tensors) and
        may assign the variables; their new values must keep the declared types and shapes."""
        block = instance.definition.block("update")
        if block is None:
            return
        inner = BlockScope(scope.instance, scope.module, dict(scope.tensors), path, block="update",
                           shape_of=self.shape_of)
        for component in block.entries:
            self.component(component, inner)
        for name, old in variables.items():
            new = inner.tensors[name]
            if new is old:
                continue
            declared = instance.variables[name]
            self.check_output(name, declared, new, instance, what="variable")
            scoped = ".".join((*(path or ()), name))
            if isinstance(new, list):
                for i, item in enumerate(new):
                    self.params.update(f"{scoped}.{i}", item)
            else:
                self.params.update(scoped, new)

    def check_output(self, name: str, declared: TensorType | tuple, value: Any,
                     instance: OperatorInstance, what: str = "output") -> Any:
        """§2.10: composed outputs (and updated variables) must have the declared types and
        shapes; a dynamic extent must stay within its bound (§2.6)."""
        actual = tensor_type(value)
        declared_items = declared if isinstance(declared, tuple) else (declared,)
        actual_items = actual if isinstance(actual, tuple) else (actual,)
        if item_type(declared) is not None and item_type(actual) is not None:
            declared_items, actual_items = (item_type(declared),), (item_type(actual),)
        open_extents: list[tuple[Any, Any]] = []  # symbolic extents that may differ

        def differ(e: Any, f: Any) -> bool:
            same = agree(e, f)
            if same is None:
                open_extents.append((e, f))
            return same is False

        mismatch = len(declared_items) != len(actual_items) or any(
            d.dtype != a.dtype or (d.shape is not None and any(
                e is not None and differ(e, f) for e, f in zip(d.shape, a.shape)))
            or (d.shape is not None and len(d.shape) != len(a.shape))
            for d, a in zip(declared_items, actual_items))
        if not mismatch:
            self.deferred.extend(
                (f"{what} '{name}': {describe(f)} == {describe(e)}", "its declared extent",
                 declaration_span(instance.definition, name)) for e, f in open_extents)
        if mismatch:
            raise ComposeDiagnostic(
                f"{what} '{name}' is {'composed' if what == 'output' else 'updated'} as "
                f"{describe_type(actual)} but declared {describe_type(declared)}",
                declaration_span(instance.definition, name), code="E0603")
        for d, a in zip(declared_items, actual_items):
            for axis, (bound, extent) in enumerate(zip(d.bounds, a.shape or ())):
                if bound is not None and not self.within(extent, bound, f"{what} '{name}'",
                                                         declaration_span(instance.definition,
                                                                          name)):
                    raise ComposeDiagnostic(
                        f"{what} '{name}' has extent {extent} in dimension {axis}, above its "
                        f"bound {bound}", declaration_span(instance.definition, name),
                        code="E0603")
        return value

    def component(self, component: ast.Component, scope: BlockScope) -> None:
        results = self.rhs(component.value, scope, len(component.targets),
                           self.component_path(component, scope))
        self.bind(component, component.targets, results, scope)

    def component_path(self, component: ast.Component, scope: BlockScope) -> ScopePath | None:
        """The scoped name of the invocation (or block) a component's right-hand side reduces
        to, by the two auto-label rules of §2.10 (an explicit label is applied where the
        invocation or block is run): rule 1, the lone component of an operator without local
        tensors keeps the operator's scope; rule 2, a one-result component is labelled by its
        result's name. Otherwise the invocation is unnamed (None)."""
        if scope.path is None or not self.reduces_to_invocation(component.value, scope):
            return None
        if scope.propagate:
            return scope.path
        targets = component.targets
        if len(targets) == 1 and isinstance(targets[0], ast.LName):
            return (*scope.path, targets[0].name)
        return None

    def reduces_to_invocation(self, node: ast.Rhs, scope: BlockScope) -> bool:
        """Whether a right-hand side is (or, choosing compile-time branches, reduces to) one
        invocation whose arguments invoke nothing; a labelled or single-result block counts
        too (§2.10.1: blocks are labelled like invocations)."""
        if isinstance(node, ast.Region):
            return True
        if isinstance(node, ast.Call):
            cached = _SINGLE.get(node)
            if cached is not None and cached[0] is scope.module:
                return cached[1]
            single = self.is_invocation(node, scope) and \
                not any(self.invokes(arg, scope) for arg in node.args)
            _SINGLE.put(node, (scope.module, single))
            return single
        if isinstance(node, ast.Select) and not self.mentions_tensor(node.cond, scope):
            flag = evaluate(node.cond, scope.environment(self.profile))
            taken = node.then if flag is True else node.otherwise
            return flag is not NULL and taken is not None and \
                self.reduces_to_invocation(taken, scope)
        if isinstance(node, ast.IfExpr):
            for cond, then in node.branches:
                if self.invokes(cond, scope) or self.mentions_tensor(cond, scope):
                    return False
                if evaluate(cond, scope.environment(self.profile)) is True:
                    return self.reduces_to_invocation(then, scope)
            return self.reduces_to_invocation(node.otherwise, scope)
        return False

    def invokes(self, node: object, scope: BlockScope) -> bool:
        """Whether an expression (a node, or a tuple of them) contains an operator
        invocation."""
        if not isinstance(node, ast.Node):
            return any(self.invokes(item, scope) for item in nodes(node))
        cached = _INVOKES.get(node)
        if cached is not None and cached[0] is scope.module:
            return cached[1]
        found = any(isinstance(item, ast.Call) and self.is_invocation(item, scope)
                    for item in walk(node))
        _INVOKES.put(node, (scope.module, found))
        return found

    def bind(self, component: ast.Component, targets: tuple, results: list, scope: BlockScope
             ) -> None:
        if len(results) != len(targets):
            raise ComposeDiagnostic(f"{len(results)} results for {len(targets)} targets",
                                    component.span, code="E0602")
        for target, value in zip(targets, results):
            if isinstance(target, ast.LPlaceholder):
                continue
            if isinstance(target, ast.LList):
                items, parts = self.split_pack(target, value, scope)
                self.bind(component, items, parts, scope)
                continue
            if isinstance(target, ast.LName):
                self.check_assignable(target, scope)
                if target.pack is not None:
                    self.check_pack_lengths_stated([target])
                if target.pack is not None and target.pack.length is not None:
                    expected = evaluate(target.pack.length, scope.environment(self.profile))
                    if not isinstance(value, list) or len(value) != expected:
                        raise ComposeDiagnostic(f"'{target.name}' is declared as a pack of "
                                                f"{expected} tensors", target.span)
                if target.type is not None:
                    self.check_typed_result(target, value, scope)
                scope.tensors[target.name] = value
                if self.hooks.observe is not None and scope.path is not None:
                    self.hooks.observe(".".join((*scope.path[2:], target.name)), value)
                continue
            raise ComposeDiagnostic("unsupported target", target.span)

    def split_pack(self, target: ast.LList, value: Any, scope: BlockScope
                   ) -> tuple[tuple, list[Any]]:
        """§2.10 `[b, c..(k)] = ...`: split a packed result over a list of targets. Single
        targets (a name, `~`) take one item each; at most one packed target (`c..(k)`, or an
        unzipping `(e, f)..(k)`) takes the rest, whose length must equal its declared `k`.
        Returns the targets to bind (an unzipping target's names in its place) and their
        values."""
        if not isinstance(value, list):
            raise ComposeDiagnostic("a list of targets needs a packed result", target.span)
        packed = [item for item in target.items
                  if isinstance(item, ast.LZip) or (isinstance(item, ast.LName) and item.pack)]
        if len(packed) > 1:
            raise ComposeDiagnostic("a list of targets may hold at most one packed target "
                                    "(spec §2.10)", packed[1].span)
        self.check_pack_lengths_stated(packed)
        rest = len(value) - (len(target.items) - len(packed))
        if rest < 0 or (not packed and rest):
            raise ComposeDiagnostic(f"a list of {len(target.items)} targets cannot take a pack "
                                    f"of {len(value)} items", target.span)
        items: list[Any] = []
        parts: list[Any] = []
        position = 0
        for item in target.items:
            if not (isinstance(item, ast.LZip) or (isinstance(item, ast.LName) and item.pack)):
                items.append(item)
                parts.append(value[position])
                position += 1
                continue
            chunk = value[position:position + rest] or self.empty_like(value)
            position += rest
            if isinstance(item, ast.LName):  # its declared length is checked when it is bound
                items.append(item)
                parts.append(chunk)
                continue
            width = len(item.items)
            if rest % width:
                raise ComposeDiagnostic(f"{rest} items cannot be unzipped into {width} packs",
                                        item.span)
            self.check_zip_length(item, rest // width, scope)
            for offset, name in enumerate(item.items):
                items.append(name)
                parts.append(chunk[offset::width] or self.empty_like(value))
        return tuple(items), parts

    def check_pack_lengths_stated(self, packed: list) -> None:
        """§2.10 (L1002): "the length of such results must be explicitly denoted": under
        `--profile spec` a packed target states its length (`a..(n)`, `[b, c..(k)]`; not `a..`
        nor `c..`); a profile whose `packed_target_length` is "rest" (`khronos`, as the Khronos
        parser does) accepts `c..`, taking the rest."""
        if self.profile.packed_target_length == "rest":
            return
        for item in packed:
            if item.pack is None or item.pack.length is None:
                name = item.name if isinstance(item, ast.LName) else "(e, f)"
                raise ComposeDiagnostic(
                    f"a packed target must state its length, `{name}..(n)` (spec §2.10: \"the "
                    "length of such results must be explicitly denoted\"); --profile "
                    f"khronos accepts `{name}..`", item.span)

    @staticmethod
    def empty_like(pack: list) -> list:
        """A pack of zero items split from `pack`: typed by `pack`'s item type where it is
        known (docs/semantics.md "Empty packs")."""
        if pack and not isinstance(pack[0], list) and pack[0] is not NULL:
            return EmptyPack(tensor_type(pack[0]))
        item = item_type(pack)
        return EmptyPack(item) if item is not None else []

    def check_zip_length(self, target: ast.LZip, length: int, scope: BlockScope) -> None:
        """An unzipping target `(e, f)..(k)` declares the length `k` of each of its packs."""
        if target.pack is None or target.pack.length is None:
            return
        expected = evaluate(target.pack.length, scope.environment(self.profile))
        if expected != length:
            raise ComposeDiagnostic(f"the unzipped packs are declared of {expected} tensors "
                                    f"but have {length}", target.span)

    def check_assignable(self, target: ast.LName, scope: BlockScope) -> None:
        """§2.11: in the operator's own blocks (not in nested blocks, whose names shadow),
        variables are assigned only in @update and outputs only in @compose."""
        instance = scope.instance
        name = target.name
        if scope.nested:
            return
        if name in instance.variables and scope.block != "update":
            raise ComposeDiagnostic(f"variable '{name}' can only be assigned in the @update "
                                    f"block (spec §2.11)", target.span)
        if name in instance.outputs and scope.block == "update":
            raise ComposeDiagnostic(f"output '{name}' can only be assigned in the @compose "
                                    f"block (spec §2.11)", target.span)

    def check_typed_result(self, target: ast.LName, value: Any, scope: BlockScope) -> None:
        """A typed result `y: real[n] = ...` must have that type and shape (extents written
        `~` are not checked)."""
        spec = target.type
        assert spec is not None
        dtype = scope.instance.dtypes.get(spec.name, spec.name)
        env = scope.environment(self.profile)
        items = value if isinstance(value, list) else [value]
        if item_type(value) is not None:  # a pack of zero items: its item type
            items = [abstract_tensor(item_type(value))]
        for item in items:
            if item is NULL:
                continue
            if kind_of(item) != dtype:
                raise ComposeDiagnostic(f"'{target.name}' is declared {dtype} but the result "
                                        f"is {kind_of(item)}", target.span)
            if spec.shape is None:
                continue
            shape = self.declared_shape(target, spec, env)
            actual = list(item.shape)
            if len(shape) != len(actual) or any(e is not None and e != a
                                                for e, a in zip(shape, actual)):
                raise ComposeDiagnostic(
                    f"'{target.name}' is declared with shape "
                    f"[{', '.join('~' if e is None else str(e) for e in shape)}] but the "
                    f"result has shape {actual}", target.span)

    @staticmethod
    def declared_shape(target: ast.LName | ast.Carried, spec: ast.TypeSpec,
                       env: Environment) -> list[Any]:
        """The extents a typed result or carried value declares (`inputs.declared_dims`, §2.6:
        items absent by a false bool length or a null value omitted, `~` None)."""
        shape: list[Any] = []
        for extent in spec.shape or ():
            try:
                shape.extend(declared_dims(extent, env))
            except LengthError as error:
                raise ComposeDiagnostic(f"{error.message} in the type of '{target.name}'",
                                        extent.span, error.notes) from None
        return shape

    # ------------------------------------------------------------------ right-hand sides

    def rhs(self, node: ast.Rhs, scope: BlockScope, expected: int,
            path: ScopePath | None = None) -> list[Any]:
        """The results of a right-hand side (one per target); `path` is the scoped name the
        invocation or block it reduces to gets unless it has an explicit label."""
        if isinstance(node, ast.Call) and self.is_invocation(node, scope):
            return self.invoke(node, scope, path)
        if isinstance(node, ast.Region):
            if node.label is not None and scope.path is not None:
                path = (*scope.path, node.label)
            inner = scope.child(path)  # an unnamed block adds no scope component
            for component in node.components:
                self.component(component, inner)
            return [self.tensor(y, inner) for y in node.yields]
        if isinstance(node, ast.IfExpr):
            return self.branch(node, scope, expected, path)
        if isinstance(node, ast.LoopExpr):
            return self.loop(node, scope, expected, path)
        return [self.tensor(node, scope, path)]

    def loop(self, node: ast.LoopExpr, scope: BlockScope, expected: int,
             path: ScopePath | None = None) -> list[Any]:
        """§2.10.1 loops: carried values (`with`), scanned packs (`for`), a count `..(n)` /
        `..(i -> n)` (compile-time or a rank-0 int tensor), and `while` conditions before or
        after the body. The loop stops at the first of: count reached, scans exhausted,
        condition false. The body's first results update the carried values, the rest are
        packed into scan outputs (after zero iterations, typed empty packs: `empty_scans`).
        `unroll` computes the same values. Every iteration's body invocation has the same
        scoped name (`path`), so it shares its variables."""
        inner = scope.child()
        carried = [c.name for c in node.carried]
        for item in node.carried:
            inner.tensors[item.name] = self.carried_init(item, scope)
        scans = []
        for scan in node.scans:
            pack = self.tensor(scan.pack, scope)
            if not isinstance(pack, list):
                raise ComposeDiagnostic(f"'for {scan.name} : ...' needs a pack of tensors",
                                        scan.pack.span)
            scans.append((scan.name, pack))
        if len({len(pack) for _, pack in scans}) > 1:
            raise ComposeDiagnostic("the scanned packs have different lengths", node.span)
        length = len(scans[0][1]) if scans else None
        count = self.loop_count(node, scope)
        if count is not None and length is not None and count > length:
            raise ComposeDiagnostic(f"the loop count {count} exceeds the scanned packs' length "
                                    f"{length}", node.count.span)
        if count is None and length is None and node.pre_condition is None and \
                node.post_condition is None:
            raise ComposeDiagnostic("a loop needs a 'for' clause, a count or a condition",
                                    node.span)
        outputs: list[list[Any]] = []
        iteration = 0
        while (count is None or iteration < count) and (length is None or iteration < length):
            if iteration >= self.limits.max_iterations:
                raise ComposeDiagnostic(f"the loop ran {self.limits.max_iterations} iterations "
                                        f"(--max-iterations), the most a loop may run",
                                        node.span, [limit_note("--max-iterations")],
                                        code="E0604")
            self.work.charge(STEP_WORK, "a loop step", node.span)  # the one place loop steps are
            for name, pack in scans:
                inner.tensors[name] = pack[iteration]
            if node.count is not None and node.count.index is not None:
                inner.tensors[node.count.index] = np.array(iteration, dtype=np.int64)
            if node.pre_condition is not None and not self.condition(node.pre_condition, inner):
                break
            results = self.rhs(node.body, inner.child(), len(carried), path)
            if len(results) < len(carried):
                raise ComposeDiagnostic(f"the loop body gives {len(results)} results for "
                                        f"{len(carried)} carried values", node.body.span)
            for name, value in zip(carried, results):
                inner.tensors[name] = value
            outputs.append(results[len(carried):])
            if len(results) > len(carried):  # each scanned output is a pack growing by one
                check_pack_length(len(outputs), self.limits.max_pack_length,
                                  "a scanned output of the loop", node.span)
            iteration += 1
            if node.post_condition is not None and \
                    not self.condition(node.post_condition, inner):
                break
        scanned = [list(column) for column in zip(*outputs)] if outputs else \
            self.empty_scans(node, inner, scans, len(carried), expected, path)
        return [inner.tensors[name] for name in carried] + scanned

    def empty_scans(self, node: ast.LoopExpr, inner: BlockScope, scans: list[tuple[str, list]],
                    carried: int, expected: int, path: ScopePath | None) -> list[list]:
        """The scanned outputs of a loop that ran no iteration (§2.10.1: a count, a scan or a
        condition may allow none; docs/semantics.md "Empty packs"): packs of zero items, typed
        by the results the body gives when run once on abstract tensors (the executor's
        checking mode) — the carried values as they are, each scan's first item (or the item
        type of an empty scan), the loop index a rank-0 int. Where that is impossible (an
        empty scan of unknown item type; a body that needs tensor values, or that fails: it
        never runs, so it reports nothing) they are empty packs of unknown item type."""
        untyped: list[list] = [[] for _ in range(max(0, expected - carried))]
        body = inner.child()
        body.tensors = {name: abstract_value(value) for name, value in body.tensors.items()}
        for name, pack in scans:
            item = item_type(pack)
            if not pack and item is None:
                return untyped
            body.tensors[name] = abstract_value(pack[0]) if pack else abstract_tensor(item)
        if node.count is not None and node.count.index is not None:
            body.tensors[node.count.index] = AbstractTensor("int", ())
        checker = self
        if not self.abstract:
            checker = Executor(self.program, self.profile, engine=self.engine, abstract=True,
                               limits=self.limits, work=self.work)
            checker.depth = self.depth
        try:
            results = checker.rhs(node.body, body, carried, path)
        except (Diagnostic, Undetermined):
            return untyped
        return [EmptyPack(tensor_type(result)) if isinstance(result, AbstractTensor) else []
                for result in results[carried:]]

    def carried_init(self, item: ast.Carried, scope: BlockScope) -> Any:
        value = self.tensor(item.init, scope)
        if item.type is None:
            return value
        shape = self.declared_shape(item, item.type, scope.environment(self.profile))
        dtype = DTYPES.get(scope.instance.dtypes.get(item.type.name, item.type.name))
        if dtype is None or isinstance(value, list) or value is NULL:
            raise ComposeDiagnostic(f"cannot initialise '{item.name}' as {item.type.name}",
                                    item.span)
        if any(not isinstance(e, int) or isinstance(e, bool) or e < 0 for e in shape):
            raise ComposeDiagnostic(f"'{item.name}' is declared with shape {shape}; extents "
                                    f"are non-negative ints", item.span)
        if value.ndim != 0 and list(value.shape) != shape:
            raise ComposeDiagnostic(f"'{item.name}' is declared with shape {shape}; its "
                                    f"initial value has shape {list(value.shape)}", item.span)
        if isinstance(value, AbstractTensor):
            return AbstractTensor(kind_of(dtype), tuple(shape))
        if value.ndim == 0:
            self.limits.check_tensor(TensorType(kind_of(dtype), tuple(shape)), f"'{item.name}'",
                                     item.span)
            return np.full(shape, value, dtype=dtype)
        return value.astype(dtype)

    def loop_count(self, node: ast.LoopExpr, scope: BlockScope) -> int | None:
        if node.count is None or node.count.count is None:
            return None
        value = self.tensor(node.count.count, scope)
        if value is NULL:  # an absent optional count (`do..(steps)`, steps omitted): no limit
            return None
        if isinstance(value, list) or value.size != 1 or \
                kind_of(value) != "int":
            raise ComposeDiagnostic("a loop count must be an int (or an int tensor of volume 1)",
                                    node.count.span, code="E0607")
        if isinstance(value, AbstractTensor):
            raise Undetermined("a loop count depends on tensor values", node.count.span)
        count = int(value.reshape(()))
        if count < 0:
            raise ComposeDiagnostic(f"the loop count is negative ({count})", node.count.span,
                                    code="E0607")
        return count

    def branch(self, node: ast.IfExpr, scope: BlockScope, expected: int,
               path: ScopePath | None = None) -> list[Any]:
        """§2.10.1: only the taken branch runs; a condition is compile-time or a bool tensor of
        volume 1."""
        for cond, then in node.branches:
            flag = self.condition(cond, scope)
            if flag:
                return self.rhs(then, scope, expected, path)
        return self.rhs(node.otherwise, scope, expected, path)

    def condition(self, cond: ast.Rhs, scope: BlockScope) -> bool:
        if isinstance(cond, ast.Expr) and not isinstance(cond, ast.Call) and \
                not self.mentions_tensor(cond, scope):
            value = evaluate(cond, scope.environment(self.profile))
            if not isinstance(value, bool):
                raise ComposeDiagnostic("a branch condition must be a bool", cond.span,
                                        code="E0607")
            return value
        result, = self.rhs(cond, scope, 1)
        if isinstance(result, list) or result.dtype != np.bool_ or result.size != 1:
            raise ComposeDiagnostic("a dynamic branch condition must be a bool tensor of volume "
                                    "1", cond.span, code="E0607")
        if isinstance(result, AbstractTensor):
            raise Undetermined("a condition depends on tensor values", cond.span)
        return bool(result.reshape(()))

    def is_scalar_cast(self, node: ast.Call, scope: BlockScope) -> bool:
        """A cast of a compile-time value, e.g. `real(factor * ..)` (§4.5 area_downsample):
        evaluated as a compile-time scalar, not invoked."""
        return len(node.callee) == 1 and node.callee[0] in CASTS and \
            not self.mentions_tensor(node, scope)

    def mentions_tensor(self, node: ast.Expr, scope: BlockScope) -> bool:
        """Whether the expression uses a tensor's value (`x.shape`/`x.rank` do not)."""
        return bool(value_names(node) & set(scope.tensors))

    def tensor(self, node: ast.Expr, scope: BlockScope, path: ScopePath | None = None) -> Any:
        """A tensor-valued expression: a name, a pack `[a, b]`, `~`, a compile-time choice
        between tensors (`c ? x : y`, `x ?? y`), or a compile-time scalar (a rank-0 tensor)."""
        if isinstance(node, ast.Placeholder):
            return NULL
        if isinstance(node, ast.Name) and node.name in scope.tensors:
            return scope.tensors[node.name]
        if isinstance(node, ast.ListExpr) and all(not isinstance(i, ast.Range)
                                                   for i in node.items):
            items: list[Any] = []
            expanded = set()  # the item types of the expanded packs of zero items
            for item in node.items:
                if isinstance(item, ast.Expand):
                    value = self.tensor(item.operand, scope)
                    items.extend(value if isinstance(value, list) else [value])
                    expanded.add(item_type(value))
                else:
                    items.append(self.tensor(item, scope))
            if not items and len(expanded) == 1 and None not in expanded:
                return EmptyPack(expanded.pop())  # `[xs..]` of typed empty packs keeps the type
            return items
        if isinstance(node, ast.Select):
            if self.mentions_tensor(node.cond, scope):
                raise ComposeDiagnostic(
                    "the condition of '?:' between tensors must be a compile-time value",
                    node.cond.span,
                    ["§2.10.1: '?:' and '??' branch at compile time; a condition computed from "
                     "tensors needs 'if ... then ... else ...' (or an element-wise operator "
                     "such as math.select)"], code="E0607")
            flag = evaluate(node.cond, scope.environment(self.profile))
            if flag is NULL:
                return NULL
            if flag:
                return self.tensor(node.then, scope, path)
            return self.tensor(node.otherwise, scope, path) if node.otherwise is not None \
                else NULL
        if isinstance(node, ast.Binary) and node.op == "??":
            first = self.tensor(node.left, scope)
            return first if first is not NULL else self.tensor(node.right, scope)
        if isinstance(node, ast.Subscript) and self.mentions_tensor(node.base, scope):
            return self.pack_items(node, scope)
        if isinstance(node, ast.Call) and not self.is_scalar_cast(node, scope):
            results = self.invoke(node, scope, path)  # an unknown operator is reported here
            if len(results) != 1:
                raise ComposeDiagnostic("an invocation used as an argument must have one result",
                                        node.span, code="E0602")
            return results[0]
        value = self.scalar(node, scope)  # a compile-time scalar
        if value is NULL:
            return NULL
        if isinstance(value, tuple):
            raise ComposeDiagnostic("a compile-time pack is not a tensor; write a list of "
                                    "tensors", node.span)
        if rules.kind(value) == "int" and not INT64_MIN <= value <= INT64_MAX:
            raise ComposeDiagnostic(f"{value} does not fit in an int tensor (int64)", node.span,
                                    code="E0502")
        if rules.kind(value) not in DTYPES:  # a string
            raise ComposeDiagnostic("a string is not a tensor; a compile-time scalar "
                                    "argument is a real, an int or a bool", node.span)
        return np.array(value, dtype=DTYPES[rules.kind(value)])

    def scalar(self, node: ast.Expr, scope: BlockScope) -> Any:
        """The value of a compile-time scalar expression (a tensor's value in it is refused);
        one without names is evaluated once per profile (`_CONSTANTS`)."""
        if free_names(node):
            if self.mentions_tensor(node, scope):
                raise ComposeDiagnostic("tensor arithmetic must be written as operator "
                                        "invocations", node.span)
            return evaluate(node, scope.environment(self.profile))
        cached = _CONSTANTS.get(node)
        if cached is not None and cached[0] is self.profile:
            return cached[1]
        value = evaluate(node, scope.environment(self.profile))
        _CONSTANTS.put(node, (self.profile, value))
        return value

    def pack_items(self, node: ast.Subscript, scope: BlockScope) -> Any:
        """`xs[k]`, `xs[::-1]`, `xs[[0, 2]]`, `xs[mask]` on a pack of tensors (§2.10: the
        right-hand side may be "a compile-time expression resulting in a tuple of tensors (or
        packs of tensors)"): the index must be compile-time; the items it selects are those
        §2.4 Indexing selects, found by the compile-time evaluator indexing the pack of
        positions [0, 1, ..., n-1] in the same way (one definition of indexing)."""
        pack = self.tensor(node.base, scope)
        if pack is NULL:
            return NULL
        if not isinstance(pack, list):
            raise ComposeDiagnostic("only a pack of tensors can be indexed in @compose; the "
                                    "elements of a tensor are read in @lower formulas",
                                    node.span)
        if any(self.mentions_tensor(item, scope) for item in node.items):
            raise ComposeDiagnostic("the index of a pack of tensors must be a compile-time "
                                    "value", node.span)
        env = scope.environment(self.profile)
        env.values[POSITIONS] = tuple(range(len(pack)))
        env.types[POSITIONS] = Type("int", packed=True)
        positions = evaluate(replace(node, base=ast.Name(POSITIONS, span=node.base.span)), env)
        if positions is NULL:
            return NULL
        if isinstance(positions, tuple):
            items = [pack[k] for k in positions]
            return items if items or not isinstance(pack, EmptyPack) else pack
        return pack[positions]

    # ------------------------------------------------------------------ invocations

    def is_invocation(self, node: ast.Call, scope: BlockScope) -> bool:
        return self.resolve(node, scope.module, quiet=True) is not None

    def resolve(self, node: ast.Call, module: LoadedModule, quiet: bool = False
                ) -> tuple[ast.OperatorDef, LoadedModule] | None:
        """`op` in the invoking module, or `a.b.op` in the imported module `a.b`."""
        cached = _RESOLVED.get(node)
        if cached is not None and cached[0] is module:
            found = cached[1]
        else:
            found = find_operator(node.callee, module)
            _RESOLVED.put(node, (module, found))
        if found is not None:
            definition, target = found
            if definition.name.startswith("_") and target is not module and not quiet:
                raise ComposeDiagnostic(
                    f"operator '{'.'.join(node.callee)}' is private to module "
                    f"'{target.name}'", node.span,
                    ["operators whose names start with '_' can only be invoked from their own "
                     "module"], code="E0605")
            return found
        if quiet:
            return None
        raise ComposeDiagnostic(f"unknown operator '{'.'.join(node.callee)}'", node.span,
                                unknown_operator_notes(node.callee, module, self.program.stdlib),
                                code="E0601")

    def invoke(self, node: ast.Call, scope: BlockScope, path: ScopePath | None = None) -> list[Any]:
        """Run an invocation. Its scoped name: the explicit label under the caller's scope, or
        `path` (auto-label); an invoked graph without an explicit label is its own root scope
        `module.graph` (§2.10)."""
        resolved = self.resolve(node, scope.module)
        assert resolved is not None
        definition, module = resolved
        if node.label is not None:
            path = None if scope.path is None else (*scope.path, node.label)
        elif definition.is_graph:
            path = (module.name, definition.name)
        attributes = {}
        if node.attributes:
            env = scope.environment(self.profile)
            attributes = {a.name: evaluate(a.value, env) for a in node.attributes}
        generics = tuple(scope.instance.dtypes.get(g.name, g.name) for g in node.generics)
        declared = definition.block("input").entries if definition.block("input") else ()
        if len(node.args) > len(declared):
            raise ComposeDiagnostic(f"'{definition.name}' takes {len(declared)} inputs; got "
                                    f"{len(node.args)}", node.span, code="E0602")
        inputs: dict[str, Any] = {}
        jagged = []  # packs of dynamic tensors the profile does not pad (for a note)
        for decl, arg in zip(declared, node.args):
            value = self.tensor(arg, scope)
            if value is not NULL:
                padded = self.jagged.pad(value)
                if padded is not value and self.profile.jagged_packs != "pad":
                    jagged.append(decl.name)
                    padded = value
                inputs[decl.name] = padded
        invocation = Invocation(attributes, {k: self.jagged.tensor_type(v)
                                             for k, v in inputs.items()},
                                generics, self.profile,
                                max_pack_length=self.limits.max_pack_length,
                                max_tensor_size=self.limits.max_tensor_size)
        self.depth += 1
        try:
            if self.depth > self.limits.max_depth:
                raise ComposeDiagnostic(f"operator calls nest deeper than "
                                        f"{self.limits.max_depth} (--max-depth)", node.span,
                                        [limit_note("--max-depth")], code="E0604")
            self.running.append(".".join(node.callee))
            outputs = self.call(definition, module, invocation, inputs, path, node.span)
        except Diagnostic as diag:
            if jagged:
                diag.notes.append(
                    f"the items of pack {', '.join(repr(n) for n in jagged)} differ in a dynamic "
                    f"(~|bound) extent; --profile khronos pads them with zeros to the largest "
                    f"(docs/semantics.md, \"Jagged packs\")")
            relocate(diag, node, scope.module, definition, self.library_files)
            raise diag.with_frame(Frame(".".join(node.callee), node.span)) from None
        except Undetermined as stop:  # say where in the user's code the check stopped
            if stop.span is not None and stop.span.path in self.library_files and \
                    not scope.module.library:
                stop.span = node.span
            raise
        finally:
            self.depth -= 1
            del self.running[self.depth:]
        return list(outputs.values())


def _declared_optional(definition: ast.OperatorDef, name: str) -> bool:
    """Whether output `name` of `definition` is declared `optional`."""
    block = definition.block("output")
    return any(decl.name == name and decl.type.optional for decl in (block.entries if block
                                                                     else ()))


def too_deep_formula(definition: ast.OperatorDef) -> LoweringDiagnostic:
    """E0500 at the deepest formula of a @lower block that the engines could not walk within
    Python's recursion limit (docs/limits.md, "Fixed limits")."""
    formulas = definition.block("lower").entries  # type: ignore[union-attr]
    depth, deepest = max(((tree_depth(f), f) for f in formulas), key=lambda pair: pair[0])
    return LoweringDiagnostic(f"this formula is nested too deeply to run ({depth} levels of "
                              f"operators and operands)", deepest.span,
                              ["the engines walk a formula recursively: split a long chain "
                               "into several formulas or locals"])
