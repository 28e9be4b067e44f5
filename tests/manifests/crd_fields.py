"""Flattens a CRD's schema into one line per field path, the form of volcano_fields.txt.

A line is `<Kind> <path> <type> [constraint ...]`: the path is dotted, `[]` stands for
an array's items and `*` for a map's values (additionalProperties); the type is the
schema's, or `int-or-string` for a quantity; each constraint is `name=value` (a list
`name[a,b]`; a CEL rule of x-kubernetes-validations with its whitespace taken out, for
the rules compare, not their messages). The same function reads muster's CRDs and
Volcano's, so the two compare line for line. Regenerate the Volcano list from a checkout
of volcano-sh/volcano with

    python -m tests.manifests.crd_fields \\
        config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml \\
        config/crd/volcano/bases/scheduling.volcano.sh_queues.yaml \\
        config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Schema = dict[str, Any]

# Constraints that change what the API server accepts, stores or merges; descriptions
# and the like do not, so they are not compared.
SCALAR_CONSTRAINTS = (
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "default",
    "nullable",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
)
LIST_CONSTRAINTS = ("enum", "required", "x-kubernetes-list-map-keys")
# CEL validation rules: what the API server refuses beyond the schema.
VALIDATIONS = "x-kubernetes-validations"
# Keys that say where the children are, handled by walking them.
STRUCTURE = {"type", "properties", "items", "additionalProperties", "anyOf"}


@dataclass(frozen=True)
class Field:
    """One field of a CRD's schema: where it is, its type and its constraints."""

    kind: str
    path: str
    type: str
    constraints: tuple[tuple[str, str], ...]

    def line(self) -> str:
        """The field as a line of volcano_fields.txt."""
        parts = [self.kind, self.path, self.type]
        scalars = [(n, v) for n, v in self.constraints if not v.startswith("[")]
        lists = [(n, v) for n, v in self.constraints if v.startswith("[")]
        parts += [f"{name}={value}" for name, value in scalars]
        parts += [f"{name}{value}" for name, value in lists]
        return " ".join(parts)


def _text(value: Any) -> str:
    """A constraint's value as one token: strings bare, everything else as JSON."""
    token = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if any(c.isspace() for c in token) or token.startswith("["):
        token = json.dumps(token)
    return token


def _type_of(node: Schema) -> str:
    if node.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(node.get("type", "untyped"))


def _constraints(node: Schema) -> tuple[tuple[str, str], ...]:
    found = [(name, _text(node[name])) for name in SCALAR_CONSTRAINTS if name in node]
    for name in LIST_CONSTRAINTS:
        if name in node:
            found.append((name, "[" + ",".join(_text(v) for v in node[name]) + "]"))
    if VALIDATIONS in node:
        # A line is split on whitespace; no rule here has a string literal with a space.
        rules = ["".join(str(v["rule"]).split()) for v in node[VALIDATIONS]]
        found.append((VALIDATIONS, "[" + ",".join(rules) + "]"))
    return tuple(sorted(found))


def fields_of_schema(kind: str, schema: Schema, path: str = "") -> list[Field]:
    """Every field under `schema` (not the root itself), parents before children."""
    found: list[Field] = []
    children: list[tuple[str, Schema]] = [
        (f"{path}.{name}" if path else name, child)
        for name, child in sorted((schema.get("properties") or {}).items())
    ]
    if isinstance(schema.get("items"), dict):
        children.append((f"{path}[]", schema["items"]))
    if isinstance(schema.get("additionalProperties"), dict):
        children.append((f"{path}.*", schema["additionalProperties"]))
    for child_path, child in children:
        found.append(Field(kind, child_path, _type_of(child), _constraints(child)))
        found.extend(fields_of_schema(kind, child, child_path))
    return found


def crd_schema(crd: Schema, version: str | None = None) -> Schema:
    """The openAPIV3Schema of one version of a CRD (by default, its storage version)."""
    (served,) = [
        v
        for v in crd["spec"]["versions"]
        if (v["name"] == version if version is not None else v.get("storage"))
    ]
    schema: Schema = served["schema"]["openAPIV3Schema"]
    return schema


def fields_of_crd(crd: Schema, version: str | None = None) -> list[Field]:
    """Every field of one version of a CRD (by default, its storage version)."""
    return fields_of_schema(crd["spec"]["names"]["kind"], crd_schema(crd, version))


def parse_line(line: str) -> Field:
    """A line of volcano_fields.txt back into a Field (the inverse of Field.line)."""
    kind, path, type_, *tokens = line.split()
    constraints = []
    for token in tokens:
        if "=" in token and ("[" not in token or token.index("=") < token.index("[")):
            name, _, value = token.partition("=")
        else:
            name, bracket, rest = token.partition("[")
            value = bracket + rest
        constraints.append((name, value))
    return Field(kind, path, type_, tuple(sorted(constraints)))


def read_field_list(path: Path) -> list[Field]:
    """The fields listed in a file of lines, skipping blank lines and `#` comments."""
    lines = [line.strip() for line in path.read_text().splitlines()]
    return [parse_line(line) for line in lines if line and not line.startswith("#")]


def main(argv: list[str]) -> None:
    """Print the field lines of every CRD in the files named."""
    for name in argv:
        for doc in yaml.safe_load_all(Path(name).read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                for field in fields_of_crd(doc):
                    print(field.line())


if __name__ == "__main__":
    main(sys.argv[1:])
