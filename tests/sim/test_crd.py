"""CRDs: registration from a directory and at run time, scopes, status subresource, defaults."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from scheduler.sim import SimServer
from tests.sim.conftest import Raw, sim_config, unique

GROUP = "scheduling.volcano.sh"


def crd(
    plural: str, kind: str, scope: str, status: bool, schema: dict[str, Any], short: list[str]
) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1beta1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema},
    }
    if status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": scope,
            "versions": [version],
            "names": {
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "listKind": f"{kind}List",
                "shortNames": short,
            },
        },
    }


QUEUE_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "weight": {"type": "integer", "default": 1},
                "reclaimable": {"type": "boolean", "default": True},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
PG_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "minMember": {"type": "integer", "default": 1},
                "queue": {"type": "string", "default": "default"},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimServer]:
    crds = tmp_path_factory.mktemp("crds")
    (crds / "queues.yaml").write_text(
        yaml.safe_dump(crd("queues", "Queue", "Cluster", True, QUEUE_SCHEMA, ["q"]))
    )
    (crds / "podgroups.yaml").write_text(
        yaml.safe_dump(crd("podgroups", "PodGroup", "Namespaced", False, PG_SCHEMA, ["pg"]))
    )
    with SimServer(sim_config(crds_dir=crds)).running() as server:
        yield server


@pytest.fixture(scope="module")
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def test_crds_from_the_directory_are_served_and_established(
    api_client: client.ApiClient, raw: Raw
) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    names = {c.metadata.name for c in ext.list_custom_resource_definition().items}
    assert {"queues.scheduling.volcano.sh", "podgroups.scheduling.volcano.sh"} <= names
    established = ext.read_custom_resource_definition("queues.scheduling.volcano.sh")
    assert {c.type: c.status for c in established.status.conditions}["Established"] == "True"
    code, doc = raw.json("GET", f"/apis/{GROUP}/v1beta1")
    assert code == 200
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["queues"]["namespaced"] is False
    assert by_name["queues"]["shortNames"] == ["q"]
    assert "queues/status" in by_name
    assert by_name["podgroups"]["namespaced"] is True
    assert "podgroups/status" not in by_name


def test_namespaced_custom_resource_gets_schema_defaults(custom: client.CustomObjectsApi) -> None:
    name = unique("pg")
    created = custom.create_namespaced_custom_object(
        GROUP,
        "v1beta1",
        "default",
        "podgroups",
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": 3},
        },
    )
    assert created["spec"] == {"minMember": 3, "queue": "default"}
    assert created["metadata"]["generation"] == 1
    listed = custom.list_namespaced_custom_object(GROUP, "v1beta1", "default", "podgroups")
    assert name in [i["metadata"]["name"] for i in listed["items"]]
    assert listed["kind"] == "PodGroupList"


def test_cluster_scoped_status_subresource_separates_spec_and_status(
    custom: client.CustomObjectsApi,
) -> None:
    name = unique("queue")
    created = custom.create_cluster_custom_object(
        GROUP,
        "v1beta1",
        "queues",
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {},
            "status": {"state": "ignored-on-create"},
        },
    )
    assert created["spec"] == {"weight": 1, "reclaimable": True}
    assert "status" not in created
    with_status = custom.patch_cluster_custom_object_status(
        GROUP, "v1beta1", "queues", name, {"status": {"state": "Open"}, "spec": {"weight": 9}}
    )
    assert with_status["status"] == {"state": "Open"}
    assert with_status["spec"]["weight"] == 1
    assert with_status["metadata"]["generation"] == 1
    spec = custom.patch_cluster_custom_object(
        GROUP, "v1beta1", "queues", name, {"spec": {"weight": 4}, "status": {"state": "Closed"}}
    )
    assert spec["spec"]["weight"] == 4
    assert spec["status"] == {"state": "Open"}
    assert spec["metadata"]["generation"] == 2


def test_strategic_merge_patch_on_custom_resource_is_415(raw: Raw) -> None:
    name = unique("q415")
    raw.json("POST", f"/apis/{GROUP}/v1beta1/queues", {"metadata": {"name": name}, "spec": {}})
    response = raw.request(
        "PATCH",
        f"/apis/{GROUP}/v1beta1/queues/{name}",
        {"spec": {}},
        content_type="application/strategic-merge-patch+json",
    )
    assert response.status == 415


def test_crd_created_at_run_time_serves_and_deleting_it_stops(
    api_client: client.ApiClient, raw: Raw
) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    body = crd("widgets", "Widget", "Namespaced", True, schema, [])
    body["metadata"]["name"] = "widgets.example.com"
    body["spec"]["group"] = "example.com"
    assert raw.json("GET", "/apis/example.com/v1beta1/namespaces/default/widgets")[0] == 404
    ext.create_custom_resource_definition(body)
    code, _ = raw.json(
        "POST",
        "/apis/example.com/v1beta1/namespaces/default/widgets",
        {"metadata": {"name": "w"}, "spec": {"size": 1}},
    )
    assert code == 201
    code, got = raw.json("GET", "/apis/example.com/v1beta1/namespaces/default/widgets/w")
    assert code == 200 and got["apiVersion"] == "example.com/v1beta1" and got["kind"] == "Widget"
    code, groups = raw.json("GET", "/apis")
    assert "example.com" in [g["name"] for g in groups["groups"]]
    ext.delete_custom_resource_definition("widgets.example.com")
    assert raw.json("GET", "/apis/example.com/v1beta1/namespaces/default/widgets/w")[0] == 404


def test_custom_resource_update_without_resource_version_is_422(raw: Raw) -> None:
    name = unique("norv")
    raw.json("POST", f"/apis/{GROUP}/v1beta1/queues", {"metadata": {"name": name}, "spec": {}})
    code, body = raw.json(
        "PUT",
        f"/apis/{GROUP}/v1beta1/queues/{name}",
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 2},
        },
    )
    assert code == 422 and body["reason"] == "Invalid"
