"""PATCH: JSON merge patch, strategic merge patch with list merge keys, JSON patch."""

from __future__ import annotations

from typing import Any

from tests.sim.conftest import Raw, pod_body, unique

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSONPATCH = "application/json-patch+json"


def _patch(raw: Raw, path: str, body: Any, kind: str) -> tuple[int, Any]:
    response = raw.request("PATCH", path, body, content_type=kind)
    import json

    return response.status, json.loads(response.data)


def test_merge_patch_merges_maps_and_deletes_with_null(raw: Raw) -> None:
    name = unique("m")
    raw.json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"metadata": {"name": name, "labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}},
    )
    code, cm = _patch(
        raw,
        f"/api/v1/namespaces/default/configmaps/{name}",
        {"metadata": {"labels": {"a": None, "c": "3"}}, "data": {"y": "2"}},
        MERGE,
    )
    assert code == 200
    assert cm["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert cm["data"] == {"x": "1", "y": "2"}


def test_strategic_merge_patch_merges_conditions_by_type(raw: Raw) -> None:
    name = unique("sc")
    raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name))
    path = f"/api/v1/namespaces/default/pods/{name}/status"
    _patch(
        raw,
        path,
        {
            "status": {
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
                    {"type": "Custom", "status": "True"},
                ]
            }
        },
        STRATEGIC,
    )
    code, pod = _patch(
        raw,
        path,
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/3 nodes are available",
                    }
                ]
            }
        },
        STRATEGIC,
    )
    assert code == 200
    by_type = {c["type"]: c for c in pod["status"]["conditions"]}
    assert set(by_type) == {"PodScheduled", "Custom"}
    assert by_type["PodScheduled"]["message"] == "0/3 nodes are available"


def test_strategic_merge_patch_merges_containers_and_owner_refs(raw: Raw) -> None:
    name = unique("sm")
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u-1"}]
    raw.json(
        "POST",
        "/api/v1/namespaces/default/pods",
        pod_body(name, ownerReferences=refs, tolerations=[{"key": "k1", "operator": "Exists"}]),
    )
    code, pod = _patch(
        raw,
        f"/api/v1/namespaces/default/pods/{name}",
        {
            "metadata": {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "u-2"}
                ]
            },
            "spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]},
        },
        STRATEGIC,
    )
    assert code == 200, pod
    assert [r["uid"] for r in pod["metadata"]["ownerReferences"]] == ["u-1", "u-2"]
    assert [c["image"] for c in pod["spec"]["containers"]] == ["busybox:1.37"]
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m"}


def test_strategic_merge_patch_replaces_lists_without_a_merge_strategy(raw: Raw) -> None:
    # tolerations and taints have no patchStrategy in k8s.io/api: a patch replaces the
    # whole list (checked on kube-apiserver 1.24: a pod then refuses the dropped toleration)
    name = unique("sr")
    raw.json(
        "POST",
        "/api/v1/namespaces/default/pods",
        pod_body(name, tolerations=[{"key": "k1", "operator": "Exists"}]),
    )
    code, body = _patch(
        raw,
        f"/api/v1/namespaces/default/pods/{name}",
        {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}},
        STRATEGIC,
    )
    assert code == 422, body
    assert "existing toleration can not be modified" in body["message"]
    node = unique("node")
    raw.json("POST", "/api/v1/nodes", {"metadata": {"name": node}})
    code, patched = _patch(raw, f"/api/v1/nodes/{node}", {"spec": {"taints": []}}, STRATEGIC)
    assert code == 200 and not patched["spec"].get("taints"), patched


def test_strategic_delete_directive_removes_a_list_item(raw: Raw) -> None:
    name = unique("sd")
    raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name))
    path = f"/api/v1/namespaces/default/pods/{name}/status"
    _patch(raw, path, {"status": {"conditions": [{"type": "A", "status": "True"}]}}, STRATEGIC)
    _, pod = _patch(
        raw, path, {"status": {"conditions": [{"type": "A", "$patch": "delete"}]}}, STRATEGIC
    )
    assert [c["type"] for c in pod["status"].get("conditions", [])] == []


def test_json_patch_operations(raw: Raw) -> None:
    name = unique("j")
    raw.json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"metadata": {"name": name}, "data": {"a": "1", "b": "2"}},
    )
    path = f"/api/v1/namespaces/default/configmaps/{name}"
    code, cm = _patch(
        raw,
        path,
        [
            {"op": "test", "path": "/data/a", "value": "1"},
            {"op": "replace", "path": "/data/a", "value": "10"},
            {"op": "remove", "path": "/data/b"},
            {"op": "add", "path": "/metadata/labels", "value": {"x~y/z": "1"}},
            {"op": "copy", "from": "/data/a", "path": "/data/c"},
        ],
        JSONPATCH,
    )
    assert code == 200
    assert cm["data"] == {"a": "10", "c": "10"}
    assert cm["metadata"]["labels"] == {"x~y/z": "1"}
    code, body = _patch(raw, path, [{"op": "test", "path": "/data/a", "value": "nope"}], JSONPATCH)
    assert code == 422 and body["kind"] == "Status"


def test_patch_with_stale_resource_version_is_409(raw: Raw) -> None:
    name = unique("prv")
    _, cm = raw.json("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}})
    path = f"/api/v1/namespaces/default/configmaps/{name}"
    _patch(raw, path, {"data": {"a": "1"}}, MERGE)
    code, body = _patch(
        raw,
        path,
        {"metadata": {"resourceVersion": cm["metadata"]["resourceVersion"]}, "data": {"a": "2"}},
        MERGE,
    )
    assert code == 409 and body["reason"] == "Conflict"


def test_patch_of_missing_object_is_404(raw: Raw) -> None:
    code, body = _patch(raw, "/api/v1/namespaces/default/configmaps/ghost", {"data": {}}, MERGE)
    assert code == 404 and body["reason"] == "NotFound"
