"""CycleState is a declared channel: each of its fields, and each policy field of the
session policies it carries (Holds, ScaleUp), is written by the one module its comment
names, and a CycleState field is read only by the modules its comment names. The code is
read (ast), not run, so a write that no test exercises is still caught.

An object is known by the name it is reached through: the cycle's state is always `state`
(a parameter, `self.state`, `self._state`, `cycle.state`), the holds `holds`, the
scale-up `scale_up`; the last test holds the code to that naming."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCHEDULER = ROOT / "scheduler"

# The classes whose fields declare a writer, the module each lives in, and the name an
# object of the class is reached by.
OWNERS = {
    "CycleState": ("framework/cycle_state.py", "state"),
    "Holds": ("framework/holds.py", "holds"),
    "ScaleUp": ("framework/scaleup.py", "scale_up"),
}
# Methods that change the container a field holds: a call is a write of the field.
MUTATORS = frozenset(
    {"append", "extend", "insert", "remove", "pop", "clear", "add", "discard", "update"}
    | {"setdefault", "popitem", "sort", "reverse"}
)
_PATH = re.compile(r"\b[a-z_]+/[a-z_]+\.py\b")


@dataclass(frozen=True)
class Declared:
    """A field whose comment names its writer (and readers)."""

    owner: str
    name: str
    writer: str
    readers: frozenset[str]


def sources() -> Iterator[tuple[str, ast.Module]]:
    """Every module of scheduler/, by its path under scheduler/, parsed."""
    for path in sorted(SCHEDULER.rglob("*.py")):
        yield str(path.relative_to(SCHEDULER)), ast.parse(path.read_text())


def declared_fields(owner: str) -> list[Declared]:
    """The fields of `owner`'s __init__ with a "Writer: ... Readers: ..." comment above."""
    relative, reached_as = OWNERS[owner]
    text = (SCHEDULER / relative).read_text()
    lines = text.splitlines()
    init = _method(_class(ast.parse(text), owner), "__init__")
    found: list[Declared] = []
    for statement in init.body:
        target = _self_target(statement)
        if target is None:
            continue
        comment = _comment_above(lines, statement.lineno)
        match = re.search(r"Writer: (\S+?)\.? Readers: (.*)", comment)
        if match is None:
            continue
        writer = match.group(1)
        readers = frozenset(_PATH.findall(match.group(2)))
        found.append(Declared(reached_as, target, writer, readers))
    return found


def all_declared() -> dict[tuple[str, str], Declared]:
    """Every declared field, by (the name its owner is reached by, field name)."""
    return {
        (field.owner, field.name): field for owner in OWNERS for field in declared_fields(owner)
    }


def test_every_field_of_the_cycle_state_declares_its_writer_and_readers() -> None:
    tree = ast.parse((SCHEDULER / OWNERS["CycleState"][0]).read_text())
    cls = _class(tree, "CycleState")
    assigned = {
        target
        for statement in _method(cls, "__init__").body
        if (target := _self_target(statement)) is not None
    }
    declared = {field.name for field in declared_fields("CycleState")}
    assert assigned == declared, "a CycleState field without a Writer/Readers comment"
    assert set(_slots(cls)) == assigned, "CycleState's __slots__ and its fields differ"
    for field in declared_fields("CycleState"):
        assert (SCHEDULER / field.writer).is_file(), field
        for reader in field.readers:
            assert (SCHEDULER / reader).is_file(), (field, reader)


def test_the_policies_name_the_plugins_that_set_them() -> None:
    writers = {(f.owner, f.name): f.writer for f in all_declared().values() if f.owner != "state"}
    assert writers == {
        ("holds", "policy"): "plugins/sla.py",
        ("holds", "admitting"): "actions/enqueue.py",
        ("holds", "devices"): "plugins/predicates.py",
        ("scale_up", "policy"): "plugins/scaleup.py",
    }


def test_each_field_is_written_only_by_its_declared_writer() -> None:
    declared = all_declared()
    wrong: list[str] = []
    for module, tree in sources():
        for owner, name, line in _writes(tree, module):
            field = declared.get((owner, name))
            if field is not None and module != field.writer:
                wrong.append(f"{module}:{line} writes {owner}.{name} (its writer: {field.writer})")
    assert wrong == []


def test_each_field_of_the_cycle_state_is_read_by_its_declared_readers_only() -> None:
    fields = {field.name: field for field in declared_fields("CycleState")}
    read_by: dict[str, set[str]] = {name: set() for name in fields}
    for module, tree in sources():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and _reached_as(node.value) == "state"
                and node.attr in read_by
            ):
                read_by[node.attr].add(module)
    for name, field in fields.items():
        undeclared = read_by[name] - field.readers - {field.writer}
        assert undeclared == set(), f"state.{name} is read by modules its comment omits"
        assert field.readers <= read_by[name], f"state.{name}'s comment names a non-reader"


def test_the_cycle_state_is_made_only_by_the_cycle_builder() -> None:
    makers = {
        module
        for module, tree in sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _reached_as(node.func) == "CycleState"
    }
    # The writer of the fields the constructor sets (holds, scale_up).
    assert makers == {"framework/cycle.py"}


@pytest.mark.parametrize("owner", sorted(OWNERS))
def test_an_object_of_a_declaring_class_is_named_as_it_is_reached(owner: str) -> None:
    reached_as = OWNERS[owner][1]
    wrong: list[str] = []
    for module, tree in sources():
        for name, annotation, line in _annotated(tree):
            if _names(annotation, owner) and name.lstrip("_") != reached_as:
                wrong.append(f"{module}:{line} names a {owner} {name!r}, not {reached_as!r}")
    assert wrong == []


def test_the_design_documents_who_writes_and_reads_each_field() -> None:
    text = (ROOT / "docs" / "design.md").read_text()
    rows = {
        match.group(1): (match.group(2), match.group(3))
        for match in re.finditer(r"^ *\| `([a-z_]+)` \| (.*?) \| (.*?) \|$", text, re.M)
    }
    for field in declared_fields("CycleState"):
        assert field.name in rows, f"docs/design.md's CycleState table lacks {field.name}"
        written, read = rows[field.name]
        assert _PATH.findall(written)[:1] == [field.writer], field.name
        assert frozenset(_PATH.findall(read)) == field.readers, field.name


# Reading the code --------------------------------------------------------------------


def _class(tree: ast.Module, name: str) -> ast.ClassDef:
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef:
    return next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)


def _slots(cls: ast.ClassDef) -> list[str]:
    for statement in cls.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in statement.targets
        ):
            value = statement.value
            assert isinstance(value, ast.Tuple)
            return [e.value for e in value.elts if isinstance(e, ast.Constant)]
    return []


def _self_target(statement: ast.stmt) -> str | None:
    """The field a `self.NAME = ...` or `self.NAME: T = ...` statement sets, or None."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.AnnAssign):
        targets = [statement.target]
    elif isinstance(statement, ast.Assign):
        targets = statement.targets
    for target in targets:
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
        ):
            return target.attr
    return None


def _comment_above(lines: list[str], lineno: int) -> str:
    """The comment lines right above line `lineno` (1-based), joined."""
    found: list[str] = []
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith("#"):
        found.insert(0, lines[index].strip().lstrip("#").strip())
        index -= 1
    return " ".join(found)


def _reached_as(node: ast.expr) -> str | None:
    """The name an expression reaches its object by: `state`, `self._state` and
    `cycle.state` are all `state`; None for anything else (a call, a subscript)."""
    if isinstance(node, ast.Name):
        return node.id.lstrip("_")
    if isinstance(node, ast.Attribute):
        return node.attr.lstrip("_")
    return None


def _writes(tree: ast.Module, module: str) -> Iterator[tuple[str, str, int]]:
    """(owner's name, field, line) of every write in the module: an assignment to
    OWNER.FIELD or OWNER.FIELD[...], a mutating call OWNER.FIELD.append(...), a `del`; and,
    inside a declaring class's own methods other than __init__, to self.FIELD."""
    for node in ast.walk(tree):
        for target in _targets(node):
            if isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(target, ast.Attribute):
                owner = _reached_as(target.value)
                if owner is not None:
                    yield owner, target.attr, target.lineno
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
            and isinstance(node.func.value, ast.Attribute)
        ):
            owner = _reached_as(node.func.value.value)
            if owner is not None:
                yield owner, node.func.value.attr, node.lineno
    for cls_name, (relative, reached_as) in OWNERS.items():
        if relative != module:
            continue
        cls = _class(tree, cls_name)
        for method in cls.body:
            if not isinstance(method, ast.FunctionDef) or method.name == "__init__":
                continue
            for node in ast.walk(method):
                for target in _targets(node):
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                    ):
                        yield reached_as, target.attr, target.lineno


def _targets(node: ast.AST) -> Iterator[ast.expr]:
    """What an assignment, augmented assignment or `del` writes, tuples unpacked."""
    if isinstance(node, ast.Assign):
        pending = list(node.targets)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        pending = [node.target]
    elif isinstance(node, ast.Delete):
        pending = list(node.targets)
    else:
        return
    while pending:
        target = pending.pop()
        if isinstance(target, ast.Tuple | ast.List):
            pending.extend(target.elts)
        elif isinstance(target, ast.Starred):
            pending.append(target.value)
        else:
            yield target


def _annotated(tree: ast.Module) -> Iterator[tuple[str, ast.expr, int]]:
    """(name, annotation, line) of every annotated parameter, variable and attribute."""
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            yield node.arg, node.annotation, node.lineno
        elif isinstance(node, ast.AnnAssign):
            target = node.target
            name = _reached_as(target)
            if name is not None:
                yield name, node.annotation, node.lineno


def _names(annotation: ast.expr, cls: str) -> bool:
    """Whether the annotation is the class (or the class or None, or a string naming it)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return re.fullmatch(rf"{cls}( \| None)?", annotation.value) is not None
    if isinstance(annotation, ast.BinOp):
        return _names(annotation.left, cls) or _names(annotation.right, cls)
    return isinstance(annotation, ast.Name) and annotation.id == cls
