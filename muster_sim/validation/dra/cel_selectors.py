"""A device selector's CEL expression checked as kube-apiserver compiles it on a write.

kube compiles each selector against its DRA environment (one variable, `device`, with
`driver`, `attributes`, `capacity` and `allowMultipleAllocations`) and refuses what does not
compile: a syntax error, a name it does not know, an operator given the wrong types, a result
that is not a bool. sim parses with cel-python and then infers types the way cel-go's checker
does, as far as types are certain: a name outside the environment, a field `device` lacks, a
`&&` or `||` given a non-bool, `==` between two kinds of scalar and a result of a known
non-bool type are refused in cel-go's words and positions; anything less certain is let
through (sim refuses no selector the real server takes). A syntax error is refused at the
same field and position, though the parser words its detail its own way. What the
environment declares (the types, `device`'s fields, every function's result) is
cel_environment.py's.

kube also estimates each expression's worst-case cost and refuses one over 1,000,000 ("too
complex, exceeds cost limit"); sim cannot reproduce cel-go's estimate and does not check it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import celpy
import lark
from celpy.celparser import CELParseError

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.dra.cel_environment import (
    ANY,
    BOOL,
    BYTES,
    COMPREHENSIONS,
    DEVICE,
    DEVICE_FIELDS,
    DOUBLE,
    DYN,
    FORMATS,
    INT,
    NAMESPACES,
    NULL,
    RETURNS,
    ROOT,
    SCALAR_FAMILIES,
    STRING,
    UINT,
)

MAX_LENGTH = 10 * 1024

_ENVIRONMENT = celpy.Environment()
Tree = lark.Tree[Any]
Node = Tree | lark.Token

_RELATIONS = {
    "relation_lt": ("<", "_<_"),
    "relation_le": ("<=", "_<=_"),
    "relation_gt": (">", "_>_"),
    "relation_ge": (">=", "_>=_"),
    "relation_eq": ("==", "_==_"),
    "relation_ne": ("!=", "_!=_"),
    "relation_in": ("in", "@in"),
}
# The rules of a binary operation (two children when they hold one), by symbol.
_OPERATORS = {
    "conditionalor": "||",
    "conditionaland": "&&",
    "relation": "",
    "addition": "",
    "multiplication": "",
}
_SYMBOLS = {
    **{rule: symbol for rule, (symbol, _) in _RELATIONS.items()},
    "addition_add": "+",
    "addition_sub": "-",
    "multiplication_mul": "*",
    "multiplication_div": "/",
    "multiplication_mod": "%",
}
# The rules that only hand their one operand on, when they hold no operation.
_PASSING = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication"}
    | {"unary", "member", "primary", "paren_expr"}
)
_EXPECTING_AN_EXPRESSION = (
    "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
    "STRING, BYTES, IDENTIFIER}"
)
_ENDS_WANTING_AN_EXPRESSION = (
    "==",
    "!=",
    "<",
    ">",
    "&&",
    "||",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "?",
    ":",
    ",",
    "[",
    " in",
)


def selector_errors(expression: str, path: str) -> list[FieldError]:
    """The errors of one selector's `cel.expression` at `path`: too long, or does not
    compile (422 Invalid with kube's detail)."""
    if len(expression) > MAX_LENGTH:
        # kube does not even compile an expression over the limit
        return [fields.too_long(path, MAX_LENGTH)]
    try:
        tree = _ENVIRONMENT.compile(expression)
    except CELParseError as error:
        return [
            fields.invalid(path, expression, "compilation failed: " + _syntax(expression, error))
        ]
    checker = _Checker(expression)
    result = checker.type_of(tree, frozenset({ROOT}))
    if checker.problems:
        report = "\n".join(_located(expression, at, text) for at, text in checker.problems)
        return [fields.invalid(path, expression, "compilation failed: " + report)]
    if result not in (BOOL, DYN, ANY):
        return [
            fields.invalid(
                path, expression, f"must evaluate to bool or the unknown type, not {result}"
            )
        ]
    return []


def _located(expression: str, offset: int, text: str) -> str:
    """cel-go's error line: `ERROR: <input>:L:C: text` with the source line and a caret."""
    line_number = expression.count("\n", 0, offset) + 1
    line_start = expression.rfind("\n", 0, offset) + 1
    column = offset - line_start + 1
    source = expression.split("\n")[line_number - 1]
    report = f"ERROR: <input>:{line_number}:{column}: {text}"
    if not expression:
        return report
    return f"{report}\n | {source}\n | {'.' * (column - 1)}^"


def _syntax(expression: str, error: CELParseError) -> str:
    cause = error.__cause__ or error.__context__
    token = getattr(cause, "token", None)
    if token is not None and token.type == "$END":
        if not expression.strip():
            return (
                "ERROR: <input>:1:0: Syntax error: mismatched input '<EOF>' expecting "
                + _EXPECTING_AN_EXPRESSION
            )
        detail = "mismatched input '<EOF>'"
        if expression.rstrip().endswith(_ENDS_WANTING_AN_EXPRESSION):
            detail += f" expecting {_EXPECTING_AN_EXPRESSION}"
        return _located(expression, len(expression), f"Syntax error: {detail}")
    offset = getattr(cause, "pos_in_stream", None) or 0
    if token is not None:
        detail = f"mismatched input '{token}'"
        before = expression[:offset].rstrip()
        if not before or before.endswith((*_ENDS_WANTING_AN_EXPRESSION, "(")):
            detail += f" expecting {_EXPECTING_AN_EXPRESSION}"
    else:
        detail = f"token recognition error at: '{expression[offset : offset + 1]}'"
    return _located(expression, offset, f"Syntax error: {detail}")


@dataclass
class _Checker:
    """cel-go's type inference over cel-python's parse tree, as far as types are certain."""

    source: str
    problems: list[tuple[int, str]] = field(default_factory=list)

    def type_of(self, node: Node, scope: frozenset[str]) -> str:
        """The type of `node` with the variables in `scope`; problems are collected."""
        if isinstance(node, lark.Token):
            return DYN
        rule = node.data
        children = node.children
        if rule == "expr" and len(children) == 3:
            self.type_of(children[0], scope)
            return _common(self.type_of(children[1], scope), self.type_of(children[2], scope))
        if rule in ("conditionalor", "conditionaland") and len(children) == 2:
            for operand in children:
                found = self.type_of(operand, scope)
                if found not in (BOOL, DYN, ANY):
                    self.problems.append(
                        (self._position(operand), f"expected type 'bool' but found '{found}'")
                    )
            return BOOL
        if rule == "relation" and len(children) == 2:
            return self._relation(children[0], children[1], scope)
        if rule in ("addition", "multiplication") and len(children) == 2:
            left = self.type_of(children[0].children[0], scope)
            right = self.type_of(children[1], scope)
            return left if left == right and left in (INT, UINT, DOUBLE, STRING) else DYN
        if rule == "unary" and len(children) == 2:
            operand = self.type_of(children[1], scope)
            return BOOL if children[0].data == "unary_not" else operand
        if rule == "member_dot":
            return self._select(children[0], _token(children[1]), scope)
        if rule == "member_dot_arg":
            arguments = children[2] if len(children) > 2 else None
            return self._call(children[0], _token(children[1]), arguments, scope)
        if rule == "member_index":
            container = self.type_of(children[0], scope)
            self.type_of(children[1], scope)
            return _element(container)
        if rule == "ident":
            return self._ident(_token(children[0]), scope)
        if rule == "ident_arg":
            arguments = children[1] if len(children) > 1 else None
            return self._call(None, _token(children[0]), arguments, scope)
        if rule == "literal":
            return _literal(_token(children[0]))
        if rule == "list_lit":
            items = self._arguments(children[0] if children else None, scope)
            return f"list({_common_of(items)})"
        if rule == "map_lit":
            return self._map(children[0] if children else None, scope)
        if rule in ("member_object", "dot_ident", "dot_ident_arg"):
            for child in children:
                if isinstance(child, lark.Tree):
                    self.type_of(child, scope)
            return DYN
        # a rule that only passes its one operand on (expr, relation, member, primary, ...)
        found = DYN
        for child in children:
            if isinstance(child, lark.Tree):
                found = self.type_of(child, scope)
        return found

    def _relation(self, operator: Tree, right: Tree, scope: frozenset[str]) -> str:
        left_node = operator.children[0]
        left = self.type_of(left_node, scope)
        right_type = self.type_of(right, scope)
        symbol, overload = _RELATIONS[operator.data]
        if operator.data in ("relation_eq", "relation_ne"):
            families = (SCALAR_FAMILIES.get(left), SCALAR_FAMILIES.get(right_type))
            if None not in families and families[0] != families[1]:
                self.problems.append(
                    (
                        self._after(_end(left_node), symbol),
                        f"found no matching overload for '{overload}' applied to "
                        f"'({left}, {right_type})'",
                    )
                )
        return BOOL

    def _select(self, target: Tree, name: lark.Token, scope: frozenset[str]) -> str:
        namespaced = self._namespaced(target, str(name), scope)
        if namespaced is not None:
            return DYN
        container = self.type_of(target, scope)
        if container == DEVICE:
            found = DEVICE_FIELDS.get(str(name))
            if found is None:
                self.problems.append((self._before(name, "."), f"undefined field '{name}'"))
                return DYN
            return found
        if container.startswith("map("):
            return _element(container)
        return DYN

    def _call(
        self,
        target: Tree | None,
        name: lark.Token,
        arguments: Tree | None,
        scope: frozenset[str],
    ) -> str:
        function = str(name)
        if target is not None:
            qualified = self._namespaced(target, function, scope)
            if qualified is not None:
                function = qualified
            else:
                self.type_of(target, scope)
        expressions = list(arguments.children) if arguments is not None else []
        if function in ("has",) and target is None:
            return BOOL
        if function == "cel.bind" and len(expressions) == 3:
            variable = _identifier(expressions[0])
            self.type_of(expressions[1], scope)
            inner = scope | {variable} if variable else scope
            return self.type_of(expressions[2], inner)
        if target is not None and function in COMPREHENSIONS and expressions:
            names = [_identifier(e) for e in expressions[:-1]]
            inner = scope | {n for n in names if n}
            self.type_of(expressions[-1], inner)
            return COMPREHENSIONS[function]
        for expression in expressions:
            self.type_of(expression, scope)
        if function.startswith("format.") and function.removeprefix("format.") in FORMATS:
            return DYN
        if function not in RETURNS:
            self.problems.append(
                (
                    self._after(name.end_pos or 0, "("),
                    f"undeclared reference to '{function}' (in container '')",
                )
            )
            return DYN
        return RETURNS[function]

    def _namespaced(self, target: Tree, name: str, scope: frozenset[str]) -> str | None:
        """`ns.name` when `target` is a bare library namespace (cel, sets, ...) not in scope."""
        ident = _bare_identifier(target)
        if ident is None or ident in scope or ident not in NAMESPACES:
            return None
        return f"{ident}.{name}"

    def _ident(self, name: lark.Token, scope: frozenset[str]) -> str:
        if str(name) == ROOT and ROOT in scope:
            return DEVICE
        if str(name) in scope:
            return DYN
        self.problems.append(
            (name.start_pos or 0, f"undeclared reference to '{name}' (in container '')")
        )
        return DYN

    def _arguments(self, node: Tree | None, scope: frozenset[str]) -> list[str]:
        if node is None:
            return []
        return [self.type_of(child, scope) for child in node.children]

    def _map(self, node: Tree | None, scope: frozenset[str]) -> str:
        types = self._arguments(node, scope)
        keys, values = types[0::2], types[1::2]
        return f"map({_common_of(keys)}, {_common_of(values)})"

    def _position(self, node: Node) -> int:
        """Where cel-go places an expression in its messages: a call at its `(`, a field
        selection at its `.`, an index at its `[`, an operation at its operator, anything
        else where it starts."""
        if isinstance(node, lark.Token):
            return node.start_pos or 0
        for step in _descend(node):
            rule, children = step.data, step.children
            if rule == "member_dot":
                return self._before(_token(children[1]), ".")
            if rule in ("member_dot_arg", "ident_arg"):
                name = _token(children[1] if rule == "member_dot_arg" else children[0])
                return self._after(name.end_pos or 0, "(")
            if rule == "member_index":
                return self._after(_end(children[0]), "[")
            if rule == "expr" and len(children) == 3:
                return self._after(_end(children[0]), "?")
            if rule in _OPERATORS and len(children) == 2:
                left = children[0] if rule.startswith("conditional") else children[0].children[0]
                return self._after(_end(left), _OPERATORS[rule] or _SYMBOLS[children[0].data])
        return _start(node)

    def _before(self, token: lark.Token, symbol: str) -> int:
        return self.source.rfind(symbol, 0, token.start_pos or 0)

    def _after(self, offset: int, symbol: str) -> int:
        found = self.source.find(symbol, offset)
        return found if found >= 0 else offset


def _token(node: Node) -> lark.Token:
    """A child the grammar makes a token (a name, a literal)."""
    assert isinstance(node, lark.Token), node
    return node


def _literal(token: lark.Token) -> str:
    return {
        "INT_LIT": INT,
        "UINT_LIT": UINT,
        "FLOAT_LIT": DOUBLE,
        "STRING_LIT": STRING,
        "MLSTRING_LIT": STRING,
        "BYTES_LIT": BYTES,
        "BOOL_LIT": BOOL,
        "NULL_LIT": NULL,
    }.get(token.type, DYN)


def _element(container: str) -> str:
    """The value type of a `map(K, V)` or `list(T)` type; dyn otherwise."""
    if container.startswith("list(") and container.endswith(")"):
        return container[5:-1]
    if container.startswith("map(") and container.endswith(")"):
        inner = container[4:-1]
        depth = 0
        for index, char in enumerate(inner):
            depth += char == "("
            depth -= char == ")"
            if char == "," and depth == 0:
                return inner[index + 2 :]
    return DYN


def _common(first: str, second: str) -> str:
    return first if first == second else DYN


def _common_of(types: list[str]) -> str:
    if not types:
        return DYN
    return types[0] if all(t == types[0] for t in types) else DYN


def _descend(node: Tree) -> Iterator[Tree]:
    """`node` and the rules below it that only hand one operand on, down to the first that
    does something (an operation, a call, a name, a literal)."""
    while True:
        yield node
        children = node.children
        if node.data not in _PASSING or len(children) != 1:
            return
        if not isinstance(children[0], lark.Tree):
            return
        node = children[0]


def _bare_identifier(node: Tree) -> str | None:
    """The name when `node` is nothing but an identifier."""
    for step in _descend(node):
        if step.data == "ident":
            return str(step.children[0])
    return None


def _identifier(node: Node) -> str | None:
    return _bare_identifier(node) if isinstance(node, lark.Tree) else None


def _start(node: Node) -> int:
    if isinstance(node, lark.Token):
        return node.start_pos or 0
    return 0 if node.meta.empty else node.meta.start_pos


def _end(node: Node) -> int:
    if isinstance(node, lark.Token):
        return node.end_pos or 0
    return 0 if node.meta.empty else node.meta.end_pos
