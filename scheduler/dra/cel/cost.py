"""A selector's cost, bounded statically as cel-go estimates it, and the compile errors the
walk finds on its way: a function outside Kubernetes' library, an undeclared variable, a
field of `device` that does not exist.

cel-python has no runtime cost accounting. Every operation costs 1 (a literal 0), a
function or a concatenation also costs reading its receiver and arguments (a tenth of a
string's length, an element of a list), and a comprehension (`all`, `exists`, `exists_one`,
`map`, `filter`) costs its range's largest size times its body's cost plus one. Sizes come
from what a device can hold (32 domains, 32 names per domain, 63 characters a domain, 32 a
name, 64 a string value, as the API server limits them), from literals (a list's length, a
string's, `lists.range(n)` for a literal n) and from the functions that build them
(`split`, `filter`, ...). A selector whose bound exceeds Kubernetes' limit of 1,000,000 per
evaluation, or iterates over a list whose size cannot be bounded, is refused at compile:
the API server refuses the same at create from its own estimate, so this only catches what
reaches muster otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lark

from scheduler.api import dra
from scheduler.dra.cel.errors import NOT_IMPLEMENTED, SelectorError, refuse_unimplemented
from scheduler.dra.cel.library import FUNCTIONS, STANDARD_FUNCTIONS

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


def cost_bound(tree: lark.Tree[lark.Token]) -> int:
    """The bound of the selector's cost per evaluation; SelectorError when it exceeds
    Kubernetes' limit or the tree calls, reads or iterates what muster refuses."""
    return _Bound().cost(tree)


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
        refuse_unimplemented(name)
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
                f"compilation failed: {NOT_IMPLEMENTED} optional values (optional.{token}())"
            )
        if space in _NAMESPACE_FUNCTIONS and not bound:
            return self._namespaced(space, token, argument_nodes)
        refuse_unimplemented(token)
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
                f"compilation failed: {NOT_IMPLEMENTED} two-variable comprehensions "
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


def _ident_name(node: Any) -> str | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data == "ident":
            return str(node.children[0])
        node = node.children[0]
    return None


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
