"""Deletion: graceful pods, finalizers, propagation policies, garbage collection, namespaces."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.sim.conftest import Raw, bind, pod_body, unique, wait_for

SIM_CONFIG = {"terminate_delay": 0.3}


def _gone(raw: Raw, path: str) -> bool:
    return raw.request("GET", path).status == 404


def test_bound_pod_deletion_is_graceful_then_the_kubelet_removes_it(
    raw: Raw, core: client.CoreV1Api
) -> None:
    name = unique("g")
    core.create_namespaced_pod("default", pod_body(name))
    bind(core, "default", name, "sim-node-0000")
    code, body = raw.json("DELETE", f"/api/v1/namespaces/default/pods/{name}")
    assert code == 200
    assert body["metadata"]["deletionTimestamp"]
    assert body["metadata"]["deletionGracePeriodSeconds"] == 30
    code, still = raw.json("GET", f"/api/v1/namespaces/default/pods/{name}")
    assert code == 200 and still["metadata"]["deletionTimestamp"]
    wait_for(lambda: _gone(raw, f"/api/v1/namespaces/default/pods/{name}"))


def test_grace_zero_and_unbound_pods_are_deleted_at_once(raw: Raw, core: client.CoreV1Api) -> None:
    bound = unique("z")
    core.create_namespaced_pod("default", pod_body(bound))
    bind(core, "default", bound, "sim-node-0000")
    raw.json("DELETE", f"/api/v1/namespaces/default/pods/{bound}?gracePeriodSeconds=0")
    assert _gone(raw, f"/api/v1/namespaces/default/pods/{bound}")
    unbound = unique("u")
    core.create_namespaced_pod("default", pod_body(unbound))
    core.delete_namespaced_pod(unbound, "default")
    assert _gone(raw, f"/api/v1/namespaces/default/pods/{unbound}")


def test_finalizers_hold_deletion_until_removed(raw: Raw) -> None:
    name = unique("f")
    raw.json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"metadata": {"name": name, "finalizers": ["muster.dev/hold"]}},
    )
    code, body = raw.json("DELETE", f"/api/v1/namespaces/default/configmaps/{name}")
    assert code == 200 and body["metadata"]["deletionTimestamp"]
    code, held = raw.json("GET", f"/api/v1/namespaces/default/configmaps/{name}")
    assert code == 200
    held["metadata"]["finalizers"].append("another")
    code, _ = raw.json("PUT", f"/api/v1/namespaces/default/configmaps/{name}", held)
    assert code == 422  # no new finalizers on an object being deleted
    raw.request(
        "PATCH",
        f"/api/v1/namespaces/default/configmaps/{name}",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    assert _gone(raw, f"/api/v1/namespaces/default/configmaps/{name}")


def _owned(raw: Raw, owner: dict[str, Any], name: str, **extra: Any) -> None:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        **extra,
    }
    raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name, ownerReferences=[ref]))


def test_background_deletion_collects_dependents(raw: Raw) -> None:
    _, owner = raw.json(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("owner")}}
    )
    kids = [unique("kid") for _ in range(2)]
    for kid in kids:
        _owned(raw, owner, kid)
    raw.json("DELETE", f"/api/v1/namespaces/default/configmaps/{owner['metadata']['name']}")
    for kid in kids:
        wait_for(lambda kid=kid: _gone(raw, f"/api/v1/namespaces/default/pods/{kid}"))


def test_dependent_with_a_living_second_owner_survives(raw: Raw) -> None:
    _, first = raw.json(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("o1")}}
    )
    _, second = raw.json(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("o2")}}
    )
    kid = unique("shared")
    refs = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
        }
        for o in (first, second)
    ]
    raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(kid, ownerReferences=refs))
    raw.json("DELETE", f"/api/v1/namespaces/default/configmaps/{first['metadata']['name']}")
    _, pod = raw.json("GET", f"/api/v1/namespaces/default/pods/{kid}")
    assert [r["name"] for r in pod["metadata"]["ownerReferences"]] == [second["metadata"]["name"]]


def test_orphan_propagation_keeps_dependents_without_the_reference(raw: Raw) -> None:
    _, owner = raw.json(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("orph")}}
    )
    kid = unique("left")
    _owned(raw, owner, kid)
    raw.json(
        "DELETE",
        f"/api/v1/namespaces/default/configmaps/{owner['metadata']['name']}"
        "?propagationPolicy=Orphan",
    )
    assert _gone(raw, f"/api/v1/namespaces/default/configmaps/{owner['metadata']['name']}")
    code, pod = raw.json("GET", f"/api/v1/namespaces/default/pods/{kid}")
    assert code == 200 and "ownerReferences" not in pod["metadata"]


def test_foreground_deletion_waits_for_dependents(raw: Raw, core: client.CoreV1Api) -> None:
    _, owner = raw.json(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("fg")}}
    )
    kid = unique("slow")
    _owned(raw, owner, kid, blockOwnerDeletion=True)
    bind(core, "default", kid, "sim-node-0001")  # a bound pod terminates gracefully
    owner_path = f"/api/v1/namespaces/default/configmaps/{owner['metadata']['name']}"
    code, body = raw.json("DELETE", owner_path, {"propagationPolicy": "Foreground"})
    assert code == 200
    assert "foregroundDeletion" in body["metadata"]["finalizers"]
    assert raw.json("GET", owner_path)[0] == 200  # held while the pod terminates
    wait_for(lambda: _gone(raw, f"/api/v1/namespaces/default/pods/{kid}"))
    wait_for(lambda: _gone(raw, owner_path))


def test_precondition_uid_mismatch_is_409(raw: Raw) -> None:
    name = unique("pre")
    raw.json("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}})
    code, body = raw.json(
        "DELETE",
        f"/api/v1/namespaces/default/configmaps/{name}",
        {"preconditions": {"uid": "not-it"}},
    )
    assert code == 409 and "Precondition failed" in body["message"]


def test_namespace_deletion_removes_its_contents(raw: Raw, core: client.CoreV1Api) -> None:
    ns = unique("doomed")
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "c"}})
    core.create_namespaced_pod(ns, pod_body("p"))
    bind(core, ns, "p", "sim-node-0000")
    code, body = raw.json("DELETE", f"/api/v1/namespaces/{ns}")
    assert code == 200 and body["status"]["phase"] == "Terminating"
    code, refused = raw.json(
        "POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "late"}}
    )
    assert code == 403 and "because it is being terminated" in refused["message"]
    wait_for(lambda: _gone(raw, f"/api/v1/namespaces/{ns}"))
    assert _gone(raw, f"/api/v1/namespaces/{ns}/configmaps/c")


def test_a_finished_delete_answers_the_object_or_a_status_as_each_registry_does(raw: Raw) -> None:
    # kube-apiserver's registries with ReturnDeletedObject answer with the object (the
    # official client's delete_persistent_volume decodes one); the others with a Status.
    claim, volume, klass, config = (unique(k) for k in ("pvc", "pv", "sc", "cm"))
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    created = [
        ("/api/v1/namespaces/default/persistentvolumeclaims", claim, {"spec": spec}),
        (
            "/api/v1/persistentvolumes",
            volume,
            {
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/data"},
                }
            },
        ),
        ("/apis/storage.k8s.io/v1/storageclasses", klass, {"provisioner": "example.com/x"}),
        ("/api/v1/namespaces/default/configmaps", config, {}),
    ]
    answers = {}
    for path, name, body in created:
        code, _ = raw.json("POST", path, {"metadata": {"name": name}, **body})
        assert code == 201, (path, code)
        code, answer = raw.json("DELETE", f"{path}/{name}")
        assert code == 200, (path, code, answer)
        answers[name] = answer["kind"]

    assert answers == {
        claim: "PersistentVolumeClaim",
        volume: "PersistentVolume",
        klass: "StorageClass",
        config: "Status",
    }
