"""Device selectors: Kubernetes' CEL on cel-python, each compiled once, bounded, memoised.

1. **Compile** (`SelectorMemo.selector`, once per text): cel-python parses the expression.
   Three constructs it reads otherwise than cel-go are rewritten first: `cel.bind(v,
   init, e)` becomes `[init].map(v, e)[0]` (the same single evaluation of init, bound to
   v), a method `.min()` becomes `._k8s_min()` (cel-python takes `min` for a macro), and
   `l.map(x, keep, e)` becomes `l.filter(x, keep).map(x, e)` (cel-python would drop `e`). A walk
   over the tree then refuses what kube-scheduler's environment would not compile or
   what muster does not implement, with a compile error naming it: a function outside
   Kubernetes' library as dra/cel_library.py implements it, an undeclared variable, a
   field of `device` that does not exist. cel-python transpiles the tree into Python,
   with the library's functions and its overrides of `==`, `<` and `in`.
2. **Bound**: cel-python has no runtime cost accounting, so the cost is bounded
   statically, as cel-go estimates it: every operation costs 1 (a literal 0), a function
   or a concatenation also costs reading its receiver and arguments (a tenth of a
   string's length, an element of a list), and a comprehension (`all`, `exists`,
   `exists_one`, `map`, `filter`) costs its range's largest size times its body's cost
   plus one. Sizes come from what a device can hold (32 domains, 32 names per domain, 63
   characters a domain, 32 a name, 64 a string value, as the API server limits them),
   from literals (a list's length, a string's, `lists.range(n)` for a literal n)
   and from the functions that build them (`split`, `filter`, ...). A selector whose bound
   exceeds Kubernetes' limit of 1,000,000 per evaluation, or iterates over a list whose
   size cannot be bounded, is refused at compile: the API server refuses the same at
   create from its own estimate, so this only catches what reaches muster otherwise.
3. **Evaluate** (`Selector.matches`): with `device` as kube-scheduler builds it (driver;
   attributes and capacity by domain, an unqualified name under the driver's domain, an
   unknown domain an empty map; allowMultipleAllocations), true or false; a runtime error
   (a missing key, no such overload, a non-bool result, a device attribute muster cannot
   represent) raises `SelectorError` with cel-go's words, which the caller prefixes with
   kube-scheduler's `class <name>: selector #<i>: CEL runtime error: `.
4. **Memoise** (`SelectorMemo`): the answer of one selector for one device depends on
   nothing else, so it is kept per (slice, device) across sessions; a slice is known by
   name, uid, resourceVersion and generation, so a changed slice is a new key, and
   `keep_only` drops the slices no longer listed. An evaluation costs tens of
   microseconds; a cluster has thousands of devices and a handful of selectors.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
import celpy.celtypes as ct
import celpy.evaluation as celpy_evaluation
import lark
from celpy.celparser import CELParser
from celpy.evaluation import Activation, CELEvalError, Transpiler, TranspilerTree

from scheduler.api import dra
from scheduler.api.quantity import parse_quantity
from scheduler.dra.cel_library import (
    FUNCTIONS,
    NAMESPACES,
    STANDARD_FUNCTIONS,
    Quantity,
    parse_semver,
    type_name,
)

# The API server's limits on what a device holds, which bound what a selector can iterate:
# domains and names per device, a domain's length, a name's (an ID's), a string value's.
MAX_DOMAINS = 32
MAX_NAMES = 32
MAX_DOMAIN = 63
MAX_ID = 32
MAX_STRING = 64
# cel-go charges a tenth of a string's length to read it (StringTraversalCostFactor).
_STRING_TRAVERSAL_DIVISOR = 10
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
# What Kubernetes' CEL environment offers a selector and muster does not implement: refused
# at compile with these words, so a selector is never read as something it does not say.
_NOT_IMPLEMENTED = "muster does not implement"
_OPTIONAL_FUNCTIONS = frozenset({"hasValue", "orValue", "optMap", "optFlatMap"})
_TWO_VARIABLE_MACROS = frozenset(
    {"existsOne", "transformList", "transformMap", "transformMapEntry"}
)
_LIBRARY_NOT_IMPLEMENTED = frozenset(
    {
        # strings extension
        "format",
        # URLs, IP addresses and CIDRs
        "url",
        "isURL",
        "getScheme",
        "getHost",
        "getHostname",
        "getPort",
        "getEscapedPath",
        "getQuery",
        "ip",
        "isIP",
        "cidr",
        "isCIDR",
        "containsIP",
        "containsCIDR",
        "isUnspecified",
        "isLoopback",
        "isLinkLocalMulticast",
        "isLinkLocalUnicast",
        "isGlobalUnicast",
        "masked",
        "prefixLength",
        "isCanonical",
        # lists extension
        "sortBy",
        # list-type attributes (DRAListTypeAttributes, alpha)
        "includes",
    }
)
_OPTIONAL_SYNTAX = re.compile(r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|([.\[]\s*\?)""")
_DEVICE_FIELDS = frozenset({"driver", "attributes", "capacity", "allowMultipleAllocations"})
# Namespaced functions, by their namespace.
_NAMESPACE_FUNCTIONS = {
    "lists": frozenset({"range"}),
    "sets": frozenset({"contains", "equivalent", "intersects"}),
    "strings": frozenset({"quote"}),
}
# Functions whose answer is a string or list about as long as their receiver.
_SIZE_KEEPING = frozenset(
    {
        "lowerAscii",
        "upperAscii",
        "trim",
        "substring",
        "charAt",
        "find",
        "findAll",
        "quote",
        "slice",
        "distinct",
        "reverse",
        "sort",
        "flatten",
        "join",
    }
)


class SelectorError(Exception):
    """A selector that cannot be compiled, or an evaluation that failed: the message is
    what follows kube-scheduler's "CEL compile error: " or "CEL runtime error: "."""


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the cost walk knows of a value: its kind and its largest size (None: no bound)."""

    kind: str
    size: int | None = 0


_SCALAR = _Shape("scalar")


def _reading(shape: _Shape) -> int:
    """What reading a value costs: a tenth of a string's length, as cel-go charges, and
    an element of anything else."""
    size = shape.size or 0
    if shape.kind == "string":
        return -(-size // _STRING_TRAVERSAL_DIVISOR)
    return size


class Selector:
    """One compiled selector: `matches(device)` or a compile error, and its cost bound."""

    __slots__ = ("_run", "compile_error", "cost", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.cost = 0
        self.compile_error: str | None = None
        self._run: Any = None
        try:
            tree = _parse(_rewritten(text))
            self.cost = _Bound().cost(tree)
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


def device_value(driver: str, device: dra.Device) -> Any:
    """The `device` variable kube-scheduler builds for one device, or a SelectorError (a
    value, not raised) when an attribute cannot be represented: kube-scheduler then fails
    every selector evaluated on the device, naming the attribute."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attribute in device.attributes.items():
        value = _attribute_value(attribute)
        if isinstance(value, SelectorError):
            return SelectorError(f"attribute {name}: {value}")
        domain, ident = split_name(name, driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, Any]] = {}
    for name, entry in device.capacity.items():
        domain, ident = split_name(name, driver)
        capacity.setdefault(domain, {})[ident] = Quantity(parse_quantity(entry.value))
    return ct.MapType(
        {
            ct.StringType("driver"): ct.StringType(driver),
            ct.StringType("allowMultipleAllocations"): ct.BoolType(
                bool(device.allow_multiple_allocations)
            ),
            ct.StringType("attributes"): _domains(attributes),
            ct.StringType("capacity"): _domains(capacity),
        }
    )


def split_name(name: str, driver: str) -> tuple[str, str]:
    """A qualified name's domain and ID; an unqualified name is in the driver's domain."""
    domain, slash, ident = name.partition("/")
    return (domain, ident) if slash else (driver, name)


def _attribute_value(attribute: dra.DeviceAttribute) -> Any:
    if attribute.int_value is not None:
        return ct.IntType(attribute.int_value)
    if attribute.bool_value is not None:
        return ct.BoolType(attribute.bool_value)
    if attribute.string_value is not None:
        return ct.StringType(attribute.string_value)
    if attribute.version_value is not None:
        try:
            return parse_semver(attribute.version_value)
        except ValueError as problem:
            return SelectorError(f"parse semantic version: {problem}")
    return SelectorError("unsupported attribute value")


class _DomainMap(ct.MapType):
    """device.attributes and device.capacity: an unknown domain is an empty map, as
    kube-scheduler's mapper answers (a missing name inside it is still an error)."""

    def __getitem__(self, key: Any) -> Any:
        if key in self:
            return super().__getitem__(key)
        if not isinstance(key, ct.StringType | str):
            return super().__getitem__(key)
        return ct.MapType()

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key]


def _domains(values: dict[str, dict[str, Any]]) -> _DomainMap:
    return _DomainMap(
        {
            ct.StringType(domain): ct.MapType({ct.StringType(k): v for k, v in names.items()})
            for domain, names in values.items()
        }
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


# Compiling -------------------------------------------------------------------------------

# A parser of its own: cel-python keeps one per process (CELParser.CEL_PARSER), made with
# the tree class of whoever asked first, and the transpiler needs its TranspilerTree nodes.
_PARSER = lark.Lark(
    (Path(celpy.__file__).parent / "cel.lark").read_text(),
    parser="lalr",
    start="expr",
    g_regex_flags=re.M,
    lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
    propagate_positions=True,
    maybe_placeholders=False,
    priority="invert",
    tree_class=TranspilerTree,
)
_HAS = re.compile(
    r"lambda activation: (not isinstance\(celpy\.evaluation\.result\(.*\), CELEvalError\))$", re.M
)
# The names the transpiled code reads: cel-python's module (operators, result(), macros)
# and this package, whose functions it calls by their module and qualified names.
_GLOBALS: dict[str, Any] = {**vars(celpy_evaluation), "scheduler": sys.modules["scheduler"]}


def _parse(text: str) -> TranspilerTree:
    try:
        tree = _PARSER.parse(text)
    except (lark.exceptions.UnexpectedToken, lark.exceptions.UnexpectedCharacters) as problem:
        if _uses_optional_syntax(text):
            raise SelectorError(
                f"compilation failed: {_NOT_IMPLEMENTED} optional field selection "
                "(`.?name`, `[?key]`)"
            ) from None
        first = str(problem).splitlines()[0]
        raise SelectorError(f"compilation failed: {first}\n{problem.get_context(text)}") from None
    except lark.exceptions.LarkError as problem:
        raise SelectorError(f"compilation failed: {problem}") from None
    assert isinstance(tree, TranspilerTree)
    return tree


def _uses_optional_syntax(text: str) -> bool:
    """Whether the text selects a field or an entry optionally (`.?` or `[?` outside a
    string literal), which cel-python's grammar lacks."""
    return any(match.group(2) for match in _OPTIONAL_SYNTAX.finditer(text))


def _rewritten(text: str) -> str:
    """The text with every `cel.bind(...)`, `.min()` and three-argument `.map()` in forms
    cel-python reads as cel-go does; one rewrite at a time, outermost first, until none
    is left."""
    for _ in range(256):
        tree = _parse(text)
        edit = _next_edit(tree, text)
        if edit is None:
            return text
        start, end, replacement = edit
        text = text[:start] + replacement + text[end:]
    raise SelectorError("compilation failed: too many cel.bind() calls")


def _next_edit(tree: lark.Tree[lark.Token], text: str) -> tuple[int, int, str] | None:
    for node in _subtrees(tree):
        if node.data != "member_dot_arg":
            continue
        receiver, name = node.children[0], node.children[1]
        assert isinstance(name, lark.Token)
        if name == "min" and len(node.children) == 2:
            assert name.start_pos is not None and name.end_pos is not None
            return name.start_pos, name.end_pos, "_k8s_min"
        if name == "bind" and _is_ident(receiver, "cel") and len(node.children) == 3:
            arguments = node.children[2]
            assert isinstance(arguments, lark.Tree)
            if len(arguments.children) != 3:
                raise SelectorError("compilation failed: cel.bind() takes three arguments")
            variable, init, body = (_source(child, text) for child in arguments.children)
            start, end = node.meta.start_pos, node.meta.end_pos
            return start, end, f"[{init}].map({variable}, {body})[0]"
        if name == "map" and len(node.children) == 3:
            arguments = node.children[2]
            assert isinstance(arguments, lark.Tree)
            if len(arguments.children) == 3:
                # cel-python reads map(x, filter, transform) as map(x, filter).
                variable, keep, body = (_source(child, text) for child in arguments.children)
                start, end = node.meta.start_pos, node.meta.end_pos
                source = _source(receiver, text)
                return start, end, f"{source}.filter({variable}, {keep}).map({variable}, {body})"
    return None


def _subtrees(tree: lark.Tree[lark.Token]) -> list[lark.Tree[lark.Token]]:
    """Every subtree, parents before their children, left to right."""
    found = [tree]
    for child in tree.children:
        if isinstance(child, lark.Tree):
            found.extend(_subtrees(child))
    return found


def _source(node: Any, text: str) -> str:
    if isinstance(node, lark.Token):
        return str(node)
    return text[node.meta.start_pos : node.meta.end_pos]


def _is_ident(node: Any, name: str) -> bool:
    """Whether the node is the bare identifier `name` (through cel-python's wrappers)."""
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data == "ident":
            token = node.children[0]
            return isinstance(token, lark.Token) and token == name
        node = node.children[0]
    return False


def _ident_name(node: Any) -> str | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data == "ident":
            return str(node.children[0])
        node = node.children[0]
    return None


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


class _Bound:
    """The static cost bound of a tree (the module docstring says how it counts), and the
    compile errors found on the way: unknown functions, variables and device fields."""

    def __init__(self) -> None:
        self.scope: list[dict[str, _Shape]] = [{}]

    def cost(self, tree: lark.Tree[lark.Token]) -> int:
        cost, _ = self._walk(tree)
        if cost > dra.CEL_SELECTOR_MAX_COST:
            raise SelectorError(
                f"too complex: muster's bound of its cost is {cost}, more than Kubernetes' "
                f"limit of {dra.CEL_SELECTOR_MAX_COST} for one evaluation"
            )
        return cost

    def _walk(self, node: Any) -> tuple[int, _Shape]:
        if isinstance(node, lark.Token):
            return 0, _SCALAR
        handler = getattr(self, "_" + str(node.data), None)
        if handler is not None:
            answer: tuple[int, _Shape] = handler(node)
            return answer
        return self._children(node)

    def _children(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        total = 0
        shape = _SCALAR
        trees = [child for child in node.children if isinstance(child, lark.Tree)]
        for child in trees:
            cost, shape = self._walk(child)
            total += cost
        if len(trees) > 1:
            total += 1
            shape = _SCALAR
        return total, shape

    def _literal(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        token = node.children[0]
        if isinstance(token, lark.Token) and token.type in ("STRING_LIT", "MLSTRING_LIT"):
            return 0, _Shape("string", len(token))
        return 0, _SCALAR

    def _addition(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        if len(node.children) == 1:
            return self._walk(node.children[0])
        left_cost, left = self._walk(node.children[0])
        right_cost, right = self._walk(node.children[1])
        size = None if left.size is None or right.size is None else left.size + right.size
        kind = left.kind if left.kind == right.kind else "scalar"
        shape = _Shape(kind, size)
        return left_cost + right_cost + 1 + _reading(_Shape(kind, size or 0)), shape

    def _addition_add(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        return self._walk(node.children[0])

    _addition_sub = _addition_add

    def _ident(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        name = str(node.children[0])
        for frame in reversed(self.scope):
            if name in frame:
                return 1, frame[name]
        if name == "device":
            return 1, _Shape("device")
        raise SelectorError(f"compilation failed: undeclared reference to '{name}'")

    def _list_lit(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        if not node.children:
            return 1, _Shape("list", 0)
        items = node.children[0]
        assert isinstance(items, lark.Tree)
        cost = 1
        for item in items.children:
            cost += self._walk(item)[0]
        return cost, _Shape("list", len(items.children))

    def _map_lit(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        cost, _ = self._children(node)
        entries = node.children[0] if node.children else None
        count = len(entries.children) // 2 if isinstance(entries, lark.Tree) else 0
        return cost + 1, _Shape("map", count)

    def _member_dot(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        cost, shape = self._walk(node.children[0])
        return cost + 1, self._field(shape, str(node.children[1]))

    def _member_index(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        cost, shape = self._walk(node.children[0])
        index_cost, _ = self._walk(node.children[1])
        key = _string_constant(node.children[1])
        if shape.kind == "device" and key is not None:
            return cost + index_cost + 1, self._field(shape, key)
        return cost + index_cost + 1, self._field(shape, None)

    def _field(self, shape: _Shape, name: str | None) -> _Shape:
        if shape.kind == "device":
            if name is not None and name not in _DEVICE_FIELDS:
                raise SelectorError(f"compilation failed: undefined field '{name}'")
            if name == "driver":
                return _Shape("string", MAX_STRING)
            if name in ("attributes", "capacity"):
                return _Shape("domains", MAX_DOMAINS)
            return _SCALAR
        if shape.kind == "domains":
            return _Shape("names", MAX_NAMES)
        if shape.kind == "names":
            return _Shape("string", MAX_STRING)
        if shape.kind in ("list", "map"):
            # An element of a list or map built in the selector: as large as its source.
            return _Shape("string", shape.size)
        return _Shape("string", MAX_STRING)

    def _ident_arg(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        name = str(node.children[0])
        _refuse_unimplemented(name)
        if (name not in FUNCTIONS and name not in STANDARD_FUNCTIONS) or name.startswith("_"):
            raise SelectorError(f"compilation failed: undeclared reference to '{name}'")
        cost, shape = 1, _SCALAR
        arguments = node.children[1] if len(node.children) > 1 else None
        if isinstance(arguments, lark.Tree):
            for argument in arguments.children:
                argument_cost, shape = self._walk(argument)
                cost += argument_cost + _reading(shape)
        return cost, (shape if name == "dyn" else _SCALAR)

    def _member_dot_arg(self, node: lark.Tree[lark.Token]) -> tuple[int, _Shape]:
        receiver, token = node.children[0], str(node.children[1])
        arguments = node.children[2] if len(node.children) > 2 else None
        argument_nodes = list(arguments.children) if isinstance(arguments, lark.Tree) else []
        space = _ident_name(receiver)
        bound = any(space in frame for frame in self.scope)
        if space == "optional" and not bound:
            raise SelectorError(
                f"compilation failed: {_NOT_IMPLEMENTED} optional values (optional.{token}())"
            )
        if space in _NAMESPACE_FUNCTIONS and not bound:
            return self._namespaced(space, token, argument_nodes)
        _refuse_unimplemented(token)
        if token in _MACROS:
            return self._macro(receiver, token, argument_nodes)
        if (token not in FUNCTIONS and token not in STANDARD_FUNCTIONS) or token == "range":
            raise SelectorError(f"compilation failed: undeclared reference to '{token}'")
        cost, shape = self._walk(receiver)
        cost += 1 + _reading(shape)
        for argument in argument_nodes:
            argument_cost, argument_shape = self._walk(argument)
            cost += argument_cost + _reading(argument_shape)
        return cost, self._result(token, shape)

    def _result(self, function: str, receiver: _Shape) -> _Shape:
        if function == "split":
            size = None if receiver.size is None else receiver.size + 1
            return _Shape("list", size)
        if function == "replace":
            return _Shape("string", None if receiver.size is None else receiver.size * MAX_STRING)
        if function in _SIZE_KEEPING:
            return _Shape("list" if receiver.kind == "list" else "string", receiver.size)
        return _SCALAR

    def _namespaced(self, space: str, function: str, arguments: list[Any]) -> tuple[int, _Shape]:
        if function not in _NAMESPACE_FUNCTIONS[space]:
            raise SelectorError(f"compilation failed: undeclared reference to '{space}.{function}'")
        cost = 1
        sizes = []
        for argument in arguments:
            argument_cost, shape = self._walk(argument)
            cost += argument_cost
            sizes.append(shape.size)
        if function == "range":
            count = _int_constant(arguments[0]) if arguments else None
            return cost, _Shape("list", count)
        if space == "sets":
            known = [size for size in sizes if size is not None]
            product = 1
            for size in known:
                product *= max(size, 1)
            return cost + product, _SCALAR
        return cost + sum(_reading(_Shape("string", size)) for size in sizes), _Shape(
            "string", None
        )

    def _macro(self, receiver: Any, macro: str, arguments: list[Any]) -> tuple[int, _Shape]:
        if len(arguments) == 3 and macro != "map":
            raise SelectorError(
                f"compilation failed: {_NOT_IMPLEMENTED} two-variable comprehensions "
                f"({macro}(key, value, expression))"
            )
        if len(arguments) not in (2, 3) or _ident_name(arguments[0]) is None:
            raise SelectorError(f"compilation failed: {macro}() takes a variable and an expression")
        range_cost, shape = self._walk(receiver)
        if shape.size is None:
            raise SelectorError(
                f"too complex: {macro}() iterates over a list whose size muster cannot bound"
            )
        variable = _ident_name(arguments[0])
        assert variable is not None
        # Over a map, the variable is a key: a domain, or a name (an ID) within one.
        if shape.kind == "domains":
            element = _Shape("string", MAX_DOMAIN)
        elif shape.kind == "names":
            element = _Shape("string", MAX_ID)
        else:
            element = self._field(shape, None)
        self.scope.append({variable: element})
        try:
            body = sum(self._walk(argument)[0] for argument in arguments[1:])
        finally:
            self.scope.pop()
        cost = range_cost + shape.size * (body + 1)
        if macro in ("map", "filter"):
            return cost, _Shape("list", shape.size)
        return cost, _SCALAR


def _refuse_unimplemented(function: str) -> None:
    """Refuse, by name, a function of Kubernetes' environment that muster lacks."""
    if function in _TWO_VARIABLE_MACROS:
        raise SelectorError(
            f"compilation failed: {_NOT_IMPLEMENTED} two-variable comprehensions ({function}())"
        )
    if function in _OPTIONAL_FUNCTIONS:
        raise SelectorError(
            f"compilation failed: {_NOT_IMPLEMENTED} optional values ({function}())"
        )
    if function in _LIBRARY_NOT_IMPLEMENTED:
        raise SelectorError(
            f"compilation failed: {_NOT_IMPLEMENTED} {function}() of Kubernetes' CEL library"
        )


def _string_constant(node: Any) -> str | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Token) and node.type == "STRING_LIT":
        return str(node)[1:-1]
    return None


def _int_constant(node: Any) -> int | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Token) and node.type == "INT_LIT":
        return int(str(node), 0)
    return None


# The memo --------------------------------------------------------------------------------

# A slice as the memo knows it: name, uid, resourceVersion, generation.
SliceKey = tuple[str, str, str, int]


def slice_key(slice_: dra.ResourceSlice) -> SliceKey:
    """What identifies one version of a slice (a changed slice is a new key)."""
    meta = slice_.metadata
    return (meta.name, meta.uid, meta.resource_version, meta.generation)


class _SliceMemo:
    __slots__ = ("answers", "values")

    def __init__(self) -> None:
        # By the device's position in the slice: its `device` variable, its answers.
        self.values: dict[int, Any] = {}
        self.answers: dict[int, dict[str, bool | str]] = {}


class SelectorMemo:
    """Compiled selectors by text, and every (selector, device) answer found so far: the
    scheduler's cache keeps one across sessions, and each session fills it."""

    def __init__(self) -> None:
        self._selectors: dict[str, Selector] = {}
        self._slices: dict[SliceKey, _SliceMemo] = {}
        self.evaluations = 0

    def selector(self, text: str) -> Selector:
        """The compiled selector (compiled on first use)."""
        compiled = self._selectors.get(text)
        if compiled is None:
            compiled = self._selectors[text] = Selector(text)
        return compiled

    def matches(
        self, text: str, key: SliceKey, index: int, driver: str, device: dra.Device
    ) -> bool:
        """Whether device `index` of the slice matches the selector; SelectorError says why
        it could not be evaluated (the answer is memoised either way)."""
        memo = self._slices.get(key)
        if memo is None:
            memo = self._slices[key] = _SliceMemo()
        answers = memo.answers.get(index)
        if answers is None:
            answers = memo.answers[index] = {}
        answer = answers.get(text)
        if answer is None:
            answer = answers[text] = self._evaluate(text, memo, index, driver, device)
        if isinstance(answer, str):
            raise SelectorError(answer)
        return answer

    def _evaluate(
        self, text: str, memo: _SliceMemo, index: int, driver: str, device: dra.Device
    ) -> bool | str:
        value = memo.values.get(index)
        if value is None:
            value = memo.values[index] = device_value(driver, device)
        self.evaluations += 1
        try:
            return self.selector(text).matches(value)
        except SelectorError as problem:
            return str(problem)

    def keep_only(self, keys: Iterable[SliceKey]) -> None:
        """Forget the slices not among `keys` (those deleted or changed since)."""
        live = set(keys)
        for key in [key for key in self._slices if key not in live]:
            del self._slices[key]
