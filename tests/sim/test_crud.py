"""Create, read, update and delete with kube-apiserver's metadata and error semantics."""

from __future__ import annotations

import re

import pytest
from kubernetes import client

from muster_sim.server import SimServer
from tests.sim.conftest import Raw, pod_body, unique


def test_create_fills_uid_resource_version_timestamp_and_generation(core: client.CoreV1Api) -> None:
    pod = core.create_namespaced_pod("default", pod_body(unique("meta")))
    assert re.fullmatch(r"[0-9a-f-]{36}", pod.metadata.uid)
    assert int(pod.metadata.resource_version) > 0
    assert pod.metadata.creation_timestamp is not None
    assert pod.metadata.generation == 1
    assert pod.metadata.namespace == "default"


def test_resource_versions_come_from_one_increasing_counter(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": unique("cm")}})
    pod = core.create_namespaced_pod("default", pod_body(unique("rv")))
    node = core.list_node()
    assert int(cm.metadata.resource_version) < int(pod.metadata.resource_version)
    assert int(pod.metadata.resource_version) <= int(node.metadata.resource_version)


def test_generate_name_makes_a_unique_name(core: client.CoreV1Api) -> None:
    body = {"metadata": {"generateName": "gen-"}, "data": {"a": "b"}}
    first = core.create_namespaced_config_map("default", body)
    second = core.create_namespaced_config_map("default", body)
    assert first.metadata.name.startswith("gen-") and len(first.metadata.name) == 9
    assert first.metadata.name != second.metadata.name


def test_create_existing_name_is_409_already_exists(raw: Raw) -> None:
    name = unique("dup")
    assert (
        raw.json("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}})[0]
        == 201
    )
    code, body = raw.json(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}}
    )
    assert code == 409
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'configmaps "{name}" already exists',
        "reason": "AlreadyExists",
        "details": {"name": name, "kind": "configmaps"},
        "code": 409,
    }


def test_get_missing_is_404_not_found_status(raw: Raw) -> None:
    code, body = raw.json("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/nope")
    assert code == 404
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'leases.coordination.k8s.io "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "group": "coordination.k8s.io", "kind": "leases"},
        "code": 404,
    }


def test_update_with_stale_resource_version_is_409_conflict(raw: Raw) -> None:
    name = unique("stale")
    _, cm = raw.json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"metadata": {"name": name}, "data": {"v": "1"}},
    )
    cm["data"] = {"v": "2"}
    code, updated = raw.json("PUT", f"/api/v1/namespaces/default/configmaps/{name}", cm)
    assert code == 200
    assert int(updated["metadata"]["resourceVersion"]) > int(cm["metadata"]["resourceVersion"])
    code, body = raw.json("PUT", f"/api/v1/namespaces/default/configmaps/{name}", cm)
    assert code == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        f'Operation cannot be fulfilled on configmaps "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_generation_bumps_on_spec_change_only(api_client: client.ApiClient) -> None:
    sched = client.SchedulingV1Api(api_client)
    policy = client.PolicyV1Api(api_client)
    name = unique("pdb")
    pdb = policy.create_namespaced_pod_disruption_budget(
        "default",
        {
            "metadata": {"name": name},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": name}}},
        },
    )
    assert pdb.metadata.generation == 1
    labelled = policy.patch_namespaced_pod_disruption_budget(
        name, "default", {"metadata": {"labels": {"x": "y"}}}
    )
    assert labelled.metadata.generation == 1
    status = policy.patch_namespaced_pod_disruption_budget_status(
        name, "default", {"status": {"disruptionsAllowed": 5}}
    )
    assert status.metadata.generation == 1
    spec = policy.patch_namespaced_pod_disruption_budget(
        name, "default", {"spec": {"minAvailable": 2}}
    )
    assert spec.metadata.generation == 2
    assert sched is not None


def test_noop_update_keeps_the_resource_version(core: client.CoreV1Api) -> None:
    name = unique("noop")
    cm = core.create_namespaced_config_map(
        "default", {"metadata": {"name": name}, "data": {"a": "1"}}
    )
    again = core.replace_namespaced_config_map(name, "default", cm)
    assert again.metadata.resource_version == cm.metadata.resource_version


def test_create_in_missing_namespace_is_404(raw: Raw) -> None:
    code, body = raw.json(
        "POST", "/api/v1/namespaces/ghost/configmaps", {"metadata": {"name": "a"}}
    )
    assert code == 404
    assert body["message"] == 'namespaces "ghost" not found'


@pytest.mark.parametrize("name", ["Upper", "under_score", "-dash", "a" * 254])
def test_invalid_name_is_422_invalid(raw: Raw, name: str) -> None:
    code, body = raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name))
    assert code == 422
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(f'Pod "{name}" is invalid: metadata.name: Invalid value:')
    assert "RFC 1123 subdomain" in body["message"]
    assert body["details"]["causes"][0]["field"] == "metadata.name"


def test_all_namespace_list_spans_namespaces(core: client.CoreV1Api) -> None:
    ns = unique("team")
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "shared"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "shared"}})
    everywhere = core.list_config_map_for_all_namespaces(field_selector="metadata.name=shared")
    assert {(c.metadata.namespace, c.metadata.name) for c in everywhere.items} >= {
        (ns, "shared"),
        ("default", "shared"),
    }
    only = core.list_namespaced_config_map(ns)
    assert [c.metadata.name for c in only.items] == ["shared"]


def test_delete_collection_removes_matching_objects(core: client.CoreV1Api) -> None:
    ns = unique("dc")
    core.create_namespace({"metadata": {"name": ns}})
    for index in range(3):
        core.create_namespaced_config_map(
            ns, {"metadata": {"name": f"c{index}", "labels": {"drop": str(index < 2).lower()}}}
        )
    core.delete_collection_namespaced_config_map(ns, label_selector="drop=true")
    assert [c.metadata.name for c in core.list_namespaced_config_map(ns).items] == ["c2"]


def test_every_builtin_kind_round_trips(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    coord = client.CoordinationV1Api(api_client)
    events = client.EventsV1Api(api_client)
    sched = client.SchedulingV1Api(api_client)
    name = unique("kind")
    core.create_namespaced_secret("default", {"metadata": {"name": name}, "data": {"k": "dg=="}})
    assert core.read_namespaced_secret(name, "default").data == {"k": "dg=="}
    coord.create_namespaced_lease(
        "default", {"metadata": {"name": name}, "spec": {"holderIdentity": "me"}}
    )
    assert coord.read_namespaced_lease(name, "default").spec.holder_identity == "me"
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "FailedScheduling",
            "message": "0/3 nodes are available",
            "type": "Warning",
        },
    )
    listed = core.list_namespaced_event("default", field_selector="reason=FailedScheduling")
    assert [e.metadata.name for e in listed.items] == [name]
    events.create_namespaced_event(
        "default",
        {
            "metadata": {"name": name},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "muster",
            "reportingInstance": "muster-0",
            "action": "Binding",
            "reason": "Scheduled",
            "type": "Normal",
        },
    )
    assert events.read_namespaced_event(name, "default").reason == "Scheduled"
    sched.create_priority_class({"metadata": {"name": name}, "value": 100})
    assert sched.read_priority_class(name).preemption_policy == "PreemptLowerPriority"
    core.delete_namespaced_secret(name, "default")
    with pytest.raises(client.ApiException) as error:
        core.read_namespaced_secret(name, "default")
    assert error.value.status == 404


def test_delete_of_non_pod_answers_success_status(raw: Raw) -> None:
    name = unique("del")
    raw.json("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": name}})
    code, body = raw.json("DELETE", f"/api/v1/namespaces/default/configmaps/{name}")
    assert code == 200
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == name and body["details"]["kind"] == "configmaps"


def test_sim_is_reachable_on_the_port_it_chose(sim: SimServer) -> None:
    assert sim.port > 0
    assert sim.url == f"https://127.0.0.1:{sim.port}"


def test_dry_run_answers_as_a_write_would_and_stores_nothing(raw: Raw) -> None:
    # answers as kube-apiserver 1.24 gives them (checked against a real server)
    path = "/api/v1/namespaces/default/configmaps"
    code, created = raw.json("POST", path + "?dryRun=All", {"metadata": {"name": "dry"}})
    assert code == 201
    assert created["metadata"]["uid"] and created["metadata"]["creationTimestamp"]
    assert "resourceVersion" not in created["metadata"]
    assert raw.json("GET", path + "/dry")[0] == 404

    raw.json("POST", path, {"metadata": {"name": "kept"}, "data": {"a": "1"}})
    code, patched = raw.json(
        "PATCH",
        path + "/kept?dryRun=All",
        {"data": {"a": "2"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200 and patched["data"] == {"a": "2"}
    assert raw.json("GET", path + "/kept")[1]["data"] == {"a": "1"}
    code, status = raw.json("DELETE", path + "/kept?dryRun=All")
    assert code == 200 and status["status"] == "Success"
    assert raw.json("GET", path + "/kept")[0] == 200


def test_an_unknown_dry_run_value_is_422_as_kube_answers(raw: Raw) -> None:
    code, body = raw.json(
        "POST", "/api/v1/namespaces/default/configmaps?dryRun=foo", {"metadata": {"name": "x"}}
    )
    assert code == 422
    assert body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
        '[]string{"foo"}: supported values: "All"'
    )
    assert body["details"]["causes"][0]["reason"] == "FieldValueNotSupported"
