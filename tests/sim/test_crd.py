"""CRDs: registration from a directory and at run time, scopes, status subresource, defaults."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from muster_sim.server import SimServer
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


GANG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["queue"],
            "properties": {
                "minMember": {"type": "integer", "minimum": 0, "default": 1},
                "queue": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
                "mode": {"type": "string", "enum": ["Gang", "Elastic"]},
                "budget": {"x-kubernetes-int-or-string": True},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {
            "type": "object",
            "properties": {"running": {"type": "integer", "minimum": 0}},
        },
    },
}
GANGS = "/apis/example.com/v1beta1/namespaces/default/gangs"


@pytest.fixture(scope="module")
def gangs(raw: Raw) -> str:
    body = crd("gangs", "Gang", "Namespaced", True, GANG_SCHEMA, [])
    body["metadata"]["name"] = "gangs.example.com"
    body["spec"]["group"] = "example.com"
    code, created = raw.json(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body
    )
    assert code == 201, created
    return GANGS


def _gang(raw: Raw, gangs: str, spec: dict[str, Any]) -> str:
    name = unique("gang")
    code, body = raw.json("POST", gangs, {"metadata": {"name": name}, "spec": spec})
    assert code == 201, body
    return name


def test_patch_below_the_schema_minimum_is_422_in_kubes_words(raw: Raw, gangs: str) -> None:
    name = _gang(raw, gangs, {"queue": "q"})
    response = raw.request(
        "PATCH",
        f"{gangs}/{name}",
        {"spec": {"minMember": -1}},
        content_type="application/merge-patch+json",
    )
    body = json.loads(response.data)
    assert response.status == 422 and body["reason"] == "Invalid"
    assert body["message"] == (
        f'Gang.example.com "{name}" is invalid: spec.minMember: Invalid value: -1: '
        "spec.minMember in body should be greater than or equal to 0"
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: -1: spec.minMember in body should be greater than or "
            "equal to 0",
            "field": "spec.minMember",
        }
    ]
    assert body["details"]["kind"] == "Gang" and body["details"]["group"] == "example.com"


def test_create_lists_every_schema_violation_with_its_reason(raw: Raw, gangs: str) -> None:
    code, body = raw.json(
        "POST",
        gangs,
        {
            "metadata": {"name": "bad"},
            "spec": {"mode": "Solo", "budget": [1], "labels": {"a": 1}},
        },
    )
    assert code == 422
    causes = {c["field"]: (c["reason"], c["message"]) for c in body["details"]["causes"]}
    assert causes == {
        "spec.queue": ("FieldValueRequired", "Required value"),
        "spec.mode": (
            "FieldValueNotSupported",
            'Unsupported value: "Solo": supported values: "Gang", "Elastic"',
        ),
        "spec.budget": (
            "FieldValueTypeInvalid",
            'Invalid value: "array": spec.budget in body must be of type integer,string: "array"',
        ),
        "spec.labels.a": (
            "FieldValueTypeInvalid",
            'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
        ),
    }
    assert body["message"].startswith('Gang.example.com "bad" is invalid: [')


def test_too_long_and_unmatched_strings_are_refused(raw: Raw, gangs: str) -> None:
    code, body = raw.json(
        "POST", gangs, {"metadata": {"name": "long"}, "spec": {"queue": "Abcdefghij"}}
    )
    assert code == 422
    assert [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec.queue", "FieldValueTooLong", "Too long: may not be longer than 8"),
        (
            "spec.queue",
            "FieldValueInvalid",
            "Invalid value: \"Abcdefghij\": spec.queue in body should match '^[a-z]+$'",
        ),
    ]


def test_status_writes_are_validated_against_the_schema(raw: Raw, gangs: str) -> None:
    name = _gang(raw, gangs, {"queue": "q"})
    response = raw.request(
        "PATCH",
        f"{gangs}/{name}/status",
        {"status": {"running": -2}},
        content_type="application/merge-patch+json",
    )
    assert response.status == 422
    assert json.loads(response.data)["details"]["causes"][0]["field"] == "status.running"


def test_unknown_fields_are_pruned_with_a_warning_by_default(raw: Raw, gangs: str) -> None:
    name = unique("gang")
    response = raw.request(
        "POST",
        gangs,
        {
            "metadata": {"name": name},
            "spec": {"queue": "q", "foo": 1, "extra": {"kept": True}},
            "top": "x",
        },
    )
    assert response.status == 201
    created = json.loads(response.data)
    assert created["spec"] == {"queue": "q", "minMember": 1, "extra": {"kept": True}}
    assert "top" not in created
    assert response.headers.getlist("Warning") == [
        '299 - "unknown field \\"spec.foo\\""',
        '299 - "unknown field \\"top\\""',
    ]


def test_strict_field_validation_refuses_unknown_fields_with_400(raw: Raw, gangs: str) -> None:
    code, body = raw.json(
        "POST",
        f"{gangs}?fieldValidation=Strict",
        {"metadata": {"name": unique("gang")}, "spec": {"queue": "q", "foo": 1}},
    )
    assert code == 400 and body["reason"] == "BadRequest"
    assert body["message"] == 'strict decoding error: unknown field "spec.foo"'
    name = _gang(raw, gangs, {"queue": "q"})
    response = raw.request(
        "PATCH",
        f"{gangs}/{name}?fieldValidation=Strict",
        {"spec": {"bar": 2}},
        content_type="application/merge-patch+json",
    )
    assert response.status == 400
    assert json.loads(response.data)["message"] == (
        'strict decoding error: unknown field "spec.bar"'
    )


def test_ignore_field_validation_prunes_silently(raw: Raw, gangs: str) -> None:
    response = raw.request(
        "POST",
        f"{gangs}?fieldValidation=Ignore",
        {"metadata": {"name": unique("gang")}, "spec": {"queue": "q", "foo": 1}},
    )
    assert response.status == 201
    assert "foo" not in json.loads(response.data)["spec"]
    assert response.headers.getlist("Warning") == []


def test_unsupported_field_validation_value_is_422(raw: Raw, gangs: str) -> None:
    code, body = raw.json(
        "POST", f"{gangs}?fieldValidation=Loose", {"metadata": {"name": "x"}, "spec": {}}
    )
    assert code == 422
    assert body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": '
        'supported values: "Ignore", "Strict", "Warn"'
    )


def test_update_may_keep_an_invalid_value_it_does_not_change(
    sim: SimServer, raw: Raw, gangs: str
) -> None:
    # CRD validation ratcheting (on by default since 1.30)
    name = _gang(raw, gangs, {"queue": "q"})
    key = "gangs.example.com"

    def corrupt() -> None:
        stored = sim.store.get(key, "default", name)
        assert stored is not None
        stored["spec"]["mode"] = "Legacy"

    sim.call(corrupt)
    response = raw.request(
        "PATCH",
        f"{gangs}/{name}",
        {"spec": {"minMember": 2}},
        content_type="application/merge-patch+json",
    )
    assert response.status == 200, response.data
    response = raw.request(
        "PATCH",
        f"{gangs}/{name}",
        {"spec": {"mode": "Other"}},
        content_type="application/merge-patch+json",
    )
    assert response.status == 422


def test_crd_with_an_untyped_property_is_not_structural(raw: Raw) -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {}}}}}
    body = crd("blobs", "Blob", "Namespaced", False, schema, [])
    body["metadata"]["name"] = "blobs.example.com"
    body["spec"]["group"] = "example.com"
    code, refused = raw.json(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body
    )
    assert code == 422
    assert refused["message"] == (
        'CustomResourceDefinition.apiextensions.k8s.io "blobs.example.com" is invalid: '
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].type: "
        "Required value: must not be empty for specified object fields"
    )
