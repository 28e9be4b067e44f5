"""One device selector compiled into a Python function of `device` and evaluated to true or
false, or to the SelectorError a selector's author reads.

Compiling parses the rewritten text (syntax.py), bounds its cost (cost.py) and has
cel-python transpile the tree into Python, with the library's functions (library/) and its
overrides of `==`, `<` and `in`; the transpiled statements become one function, made once
per text. Evaluating runs it on the `device` variable (device.py): true or false; a runtime
error (a missing key, no such overload, a non-bool result, a device attribute muster
cannot represent) raises SelectorError with cel-go's words, which the caller prefixes with
kube-scheduler's `class <name>: selector #<i>: CEL runtime error: `.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import celpy.celtypes as ct
import celpy.evaluation as celpy_evaluation
from celpy.evaluation import Activation, CELEvalError, Transpiler, TranspilerTree

from scheduler.dra.cel.cost import cost_bound
from scheduler.dra.cel.errors import SelectorError
from scheduler.dra.cel.library import FUNCTIONS
from scheduler.dra.cel.library.equality import type_name
from scheduler.dra.cel.library.values import NAMESPACES
from scheduler.dra.cel.syntax import parse, rewritten

# Where a selector reads one of the device's plain fields; one that reads `device` in no
# other way needs no attribute or capacity maps (device.py).
_PLAIN_FIELD = re.compile(r"\bdevice\s*\.\s*(?:driver|allowMultipleAllocations)\b")
_DEVICE = re.compile(r"\bdevice\b")
_HAS = re.compile(
    r"lambda activation: (not isinstance\(celpy\.evaluation\.result\(.*\), CELEvalError\))$", re.M
)
# The names the transpiled code reads: cel-python's module (operators, result(), macros)
# and this package, whose functions it calls by their module and qualified names.
_GLOBALS: dict[str, Any] = {**vars(celpy_evaluation), "scheduler": sys.modules["scheduler"]}


class Selector:
    """One compiled selector: `matches(device)` or a compile error, and its cost bound."""

    __slots__ = ("_run", "compile_error", "cost", "reads_maps", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        # Whether it may read device.attributes or device.capacity: any use of `device`
        # but its plain fields, a string literal that names it included, counts.
        self.reads_maps = bool(_DEVICE.search(_PLAIN_FIELD.sub("", text)))
        self.cost = 0
        self.compile_error: str | None = None
        self._run: Any = None
        try:
            tree = parse(rewritten(text))
            self.cost = cost_bound(tree)
            self._run = _transpiled(tree)
        except SelectorError as problem:
            self.compile_error = str(problem)

    def matches(self, device: Any) -> bool:
        """Whether the device (a `device_value`) matches; SelectorError says why it could
        not be evaluated (a compile error included)."""
        if self.compile_error is not None:
            raise SelectorError(self.compile_error)
        if isinstance(device, SelectorError):
            raise device
        value = self._run(_Scope({"device": device, **NAMESPACES}, None))
        if isinstance(value, CELEvalError):
            raise SelectorError(_runtime_message(value))
        if isinstance(value, bool | ct.BoolType):
            return bool(value)
        kind = type_name(value)
        raise SelectorError(
            f"CEL result of type {kind} could not be converted to bool: "
            f"unsupported native conversion from {kind} to 'bool'"
        )


class _Scope:
    """The variables a transpiled selector reads (`activation.device`), with the macros'
    bound variables in nested scopes: cel-python's Activation does the same with a copy
    of its name tables per evaluation, several times slower."""

    __slots__ = ("_names", "_outer")

    def __init__(self, names: dict[str, Any], outer: _Scope | None) -> None:
        self._names = names
        self._outer = outer

    def __getattr__(self, name: str) -> Any:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope._names:
                return scope._names[name]
            scope = scope._outer
        raise NameError(name)

    def nested_activation(self, annotations: Any = None, vars: Any = None) -> _Scope:
        """A scope for one step of a macro, with its bound variable."""
        return _Scope(dict(vars or {}), self)


def _runtime_message(problem: CELEvalError) -> str:
    # cel-python's wording where cel-go's differs in what a selector's author reads.
    message = str(problem.args[0]) if problem.args else "evaluation error"
    cause = problem.args[1] if len(problem.args) > 1 else None
    if cause is KeyError and len(problem.args) > 2 and problem.args[2]:
        return f"no such key: {problem.args[2][0]}"
    if cause is NameError and len(problem.args) > 2 and problem.args[2]:
        return f"undeclared reference to '{problem.args[2][0]}'"
    return message


def _transpiled(tree: TranspilerTree) -> Any:
    """A Python function of the scope that evaluates the tree, made once: the transpiled
    statements define the macros' helpers, and the last one, which evaluates, becomes
    the function's body."""
    transpiler = Transpiler(ast=tree, activation=Activation(functions=dict(FUNCTIONS)))
    try:
        transpiler.transpile()
    except Exception as problem:  # cel-python raises what it likes on a construct it lacks
        raise SelectorError(f"compilation failed: {problem}") from None
    # has() answers a Python bool, which cel-python's && and || refuse: make it CEL's.
    text = _HAS.sub(r"lambda activation: celpy.celtypes.BoolType(\1)", transpiler.source_text)
    *helpers, last = text.rstrip("\n").split("\n")
    if not last.startswith("CEL = "):
        raise SelectorError("compilation failed: cel-python's output is not understood")
    source = "\n".join(
        [*helpers, "def _evaluate(base_activation):", "    return " + last.removeprefix("CEL = ")]
    )
    namespace = dict(_GLOBALS)
    exec(compile(source, "<selector>", "exec"), namespace)
    return namespace["_evaluate"]
