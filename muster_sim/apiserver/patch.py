"""Patch formats: JSON merge patch, strategic merge patch and JSON patch."""

from __future__ import annotations

import copy
from typing import Any

from muster_sim.errors import ApiError

Obj = dict[str, Any]

# The Content-Types a PATCH names its format with.
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# patchMergeKey of the list fields muster and its neighbours patch; a list field not
# named here is replaced whole, as for a field without the tag in the Go types.
# Only the lists whose Go type carries `patchStrategy:"merge"` (k8s.io/api core/v1 types.go);
# every other list (tolerations, taints, container statuses) is replaced whole, as a real
# server does: a patch of tolerations that drops one is refused by pod validation.
MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "ownerReferences": "uid",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "addresses": "type",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}
# list fields of primitives whose patch strategy is "merge" (union) rather than replace
MERGE_PRIMITIVE_LISTS = frozenset({"finalizers"})


class PatchError(ApiError):
    """A patch that cannot be applied: 422, as the real server answers."""

    def __init__(self, message: str) -> None:
        super().__init__(422, "Invalid", message)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: Obj = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Kubernetes' strategic merge: like a merge patch, but keyed lists merge by their key."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result: Obj = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key == "$retainKeys":
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            drop = set(value or [])
            result[field] = [v for v in result.get(field) or [] if v not in drop]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _merge_keyed_list(result.get(key), value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in MERGE_PRIMITIVE_LISTS:
            existing = list(result.get(key) or [])
            result[key] = existing + [v for v in value if v not in existing]
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None and isinstance(value, dict):
                result.pop(key, None)
            else:
                result[key] = merged
    if isinstance(retain, list):
        for key in list(result):
            if key not in retain and key not in patch:
                del result[key]
    return result


def _merge_keyed_list(target: Any, patch: list[Any], key: str) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    result: list[Any] = list(target) if isinstance(target, list) else []
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            result.append(copy.deepcopy(item))
            continue
        index = next(
            (
                i
                for i, old in enumerate(result)
                if isinstance(old, dict) and old.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
            continue
        if index is None:
            result.append(copy.deepcopy(item))
        else:
            result[index] = strategic_merge_patch(result[index], item)
    return result


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: apply add/remove/replace/move/copy/test operations in order."""
    if not isinstance(operations, list):
        raise PatchError("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid JSON patch operation: {op!r}")
        kind = op["op"]
        path = _pointer(str(op["path"]))
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)[0]
        elif kind == "replace":
            doc = _remove(doc, path)[0]
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "move":
            doc, value = _remove(doc, _pointer(str(op.get("from", ""))))
            doc = _add(doc, path, value)
        elif kind == "copy":
            value = copy.deepcopy(_get(doc, _pointer(str(op.get("from", "")))))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"testing value {op['path']} failed")
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return doc


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, path: list[str]) -> Any:
    node = doc
    for part in path[:-1]:
        node = _child(node, part, path)
    return node


def _child(node: Any, part: str, path: list[str]) -> Any:
    try:
        if isinstance(node, list):
            return node[int(part)]
        return node[part]
    except (KeyError, IndexError, ValueError, TypeError):
        raise PatchError(f"doc is missing path: /{'/'.join(path)}") from None


def _get(doc: Any, path: list[str]) -> Any:
    node = doc
    for part in path:
        node = _child(node, part, path)
    return node


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent = _parent(doc, path)
    last = path[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else _index(last, len(parent) + 1, path)
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError(f"doc is missing path: /{'/'.join(path)}")
    return doc


def _remove(doc: Any, path: list[str]) -> tuple[Any, Any]:
    if not path:
        return None, doc
    parent = _parent(doc, path)
    last = path[-1]
    if isinstance(parent, list):
        return doc, parent.pop(_index(last, len(parent), path))
    if isinstance(parent, dict) and last in parent:
        return doc, parent.pop(last)
    raise PatchError(f"doc is missing path: /{'/'.join(path)}")


def _index(part: str, size: int, path: list[str]) -> int:
    try:
        index = int(part)
    except ValueError:
        raise PatchError(f"invalid array index in /{'/'.join(path)}") from None
    if not 0 <= index < size:
        raise PatchError(f"array index out of bounds in /{'/'.join(path)}")
    return index
