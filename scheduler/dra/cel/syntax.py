"""A selector's text as cel-python's parse tree: parsed by a parser of muster's own, after
rewriting the three constructs cel-python reads otherwise than cel-go.

`cel.bind(v, init, e)` becomes `[init].map(v, e)[0]` (the same single evaluation of init,
bound to v), a method `.min()` becomes `._k8s_min()` (cel-python takes `min` for a macro),
and `l.map(x, keep, e)` becomes `l.filter(x, keep).map(x, e)` (cel-python would drop `e`).
Optional field selection (`.?name`, `[?key]`), which cel-python's grammar lacks, is refused
by name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import celpy
import lark
from celpy.celparser import CELParser
from celpy.evaluation import TranspilerTree

from scheduler.dra.cel.errors import NOT_IMPLEMENTED, SelectorError

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

_OPTIONAL_SYNTAX = re.compile(r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|([.\[]\s*\?)""")


def parse(text: str) -> TranspilerTree:
    """cel-python's tree of the text; SelectorError says why the text does not parse."""
    try:
        tree = _PARSER.parse(text)
    except (lark.exceptions.UnexpectedToken, lark.exceptions.UnexpectedCharacters) as problem:
        if _uses_optional_syntax(text):
            raise SelectorError(
                f"compilation failed: {NOT_IMPLEMENTED} optional field selection "
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


def rewritten(text: str) -> str:
    """The text with every `cel.bind(...)`, `.min()` and three-argument `.map()` in forms
    cel-python reads as cel-go does; one rewrite at a time, outermost first, until none
    is left."""
    for _ in range(256):
        tree = parse(text)
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
