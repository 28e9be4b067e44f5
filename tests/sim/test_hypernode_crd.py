"""sim serves crds/hypernode.yaml as kube-apiserver would: cluster-scoped HyperNodes with a
status subresource, stored whole, and refused (422, the field named) where the schema
or its CEL rules say no."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.sim.conftest import Raw, unique

REPO = Path(__file__).resolve().parents[2]
SIM_CONFIG: dict[str, Any] = {"crds_dir": REPO / "crds", "nodes": 1}
GROUP = "topology.volcano.sh"
VERSION = "v1alpha1"
HYPERNODES = f"/apis/{GROUP}/{VERSION}/hypernodes"


def body(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


def node_member(**selector: Any) -> dict[str, Any]:
    return {"type": "Node", "selector": selector}


def refused(raw: Raw, spec: dict[str, Any]) -> tuple[str, str]:
    """The field and message of the one cause a refused create names."""
    code, status = raw.json("POST", HYPERNODES, body(unique("hn"), spec))
    assert code == 422, status
    assert status["reason"] == "Invalid" and status["details"]["kind"] == "HyperNode"
    (cause,) = status["details"]["causes"]
    return cause["field"], cause["message"]


@pytest.fixture(scope="module")
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def test_hypernodes_are_discovered_cluster_scoped_with_short_name_and_status(raw: Raw) -> None:
    code, doc = raw.json("GET", f"/apis/{GROUP}/{VERSION}")
    assert code == 200
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["hypernodes"]["kind"] == "HyperNode"
    assert by_name["hypernodes"]["namespaced"] is False
    assert by_name["hypernodes"]["shortNames"] == ["hn"]
    assert "hypernodes/status" in by_name


@pytest.mark.parametrize(
    "member",
    [
        pytest.param(node_member(exactMatch={"name": "node-0"}), id="exactMatch"),
        pytest.param(node_member(regexMatch={"pattern": "^node-[0-9]+$"}), id="regexMatch"),
        pytest.param(
            node_member(
                labelMatch={
                    "matchLabels": {"example.com/rack": "a"},
                    "matchExpressions": [{"key": "gpu", "operator": "Exists"}],
                }
            ),
            id="labelMatch",
        ),
        pytest.param(
            {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-a"}}},
            id="hypernode-member",
        ),
    ],
)
def test_a_hypernode_of_each_selector_is_created_and_stored_whole(
    custom: client.CustomObjectsApi, member: dict[str, Any]
) -> None:
    name = unique("rack")
    spec = {"tier": 1, "tierName": "rack", "members": [member]}
    created: Any = custom.create_cluster_custom_object(
        GROUP, VERSION, "hypernodes", body(name, spec)
    )
    assert created["spec"] == spec
    read: Any = custom.get_cluster_custom_object(GROUP, VERSION, "hypernodes", name)
    assert read["spec"] == spec and "namespace" not in read["metadata"]
    listed: Any = custom.list_cluster_custom_object(GROUP, VERSION, "hypernodes")
    assert listed["kind"] == "HyperNodeList"
    assert name in [item["metadata"]["name"] for item in listed["items"]]


def test_a_hypernode_is_not_served_under_a_namespace(raw: Raw) -> None:
    code, _ = raw.json("GET", f"/apis/{GROUP}/{VERSION}/namespaces/default/hypernodes")
    assert code == 404


def test_status_goes_through_the_status_subresource_only(custom: client.CustomObjectsApi) -> None:
    name = unique("rack")
    spec = {"tier": 1, "members": [node_member(exactMatch={"name": "node-0"})]}
    created: Any = custom.create_cluster_custom_object(
        GROUP, VERSION, "hypernodes", {**body(name, spec), "status": {"nodeCount": 9}}
    )
    assert "status" not in created
    patched: Any = custom.patch_cluster_custom_object_status(
        GROUP, VERSION, "hypernodes", name, {"status": {"nodeCount": 1}, "spec": {"tier": 3}}
    )
    assert patched["status"] == {"nodeCount": 1}
    assert patched["spec"]["tier"] == 1


@pytest.mark.parametrize(
    ("spec", "field", "says"),
    [
        pytest.param(
            {"members": [node_member(exactMatch={"name": "n"})]},
            "spec.tier",
            "Required value",
            id="no-tier",
        ),
        pytest.param({"tier": -1}, "spec.tier", "greater than or equal to 0", id="negative-tier"),
        pytest.param({"tier": "one"}, "spec.tier", "must be of type integer", id="string-tier"),
        pytest.param(
            {"tier": 1, "members": []}, "spec.members", "at least 1 items", id="no-members"
        ),
        pytest.param(
            {"tier": 1, "members": [{"type": "Rack", "selector": {"exactMatch": {"name": "n"}}}]},
            "spec.members[0].type",
            'Unsupported value: "Rack"',
            id="unknown-type",
        ),
        pytest.param(
            {"tier": 1, "members": [{"selector": {"exactMatch": {"name": "n"}}}]},
            "spec.members[0].type",
            "Required value",
            id="no-type",
        ),
        pytest.param(
            {"tier": 1, "members": [node_member(exactMatch={"name": "Node_0"})]},
            "spec.members[0].selector.exactMatch.name",
            "should match",
            id="exact-name-not-a-dns-subdomain",
        ),
        pytest.param(
            {"tier": 1, "members": [node_member(regexMatch={"pattern": ""})]},
            "spec.members[0].selector.regexMatch.pattern",
            "at least 1 chars long",
            id="empty-pattern",
        ),
        pytest.param(
            {"tier": 1, "tierName": "x" * 254},
            "spec.tierName",
            "Too long",
            id="tier-name-too-long",
        ),
    ],
)
def test_a_hypernode_outside_the_schema_is_refused_naming_the_field(
    raw: Raw, spec: dict[str, Any], field: str, says: str
) -> None:
    refused_field, message = refused(raw, spec)
    assert refused_field == field
    assert says in message


# kube-apiserver evaluates a CRD's x-kubernetes-validations (CEL) on create and update and
# refuses a failing rule with 422: field the object the rule is on, `Invalid value:
# "object": <the rule's message>`.


def test_a_member_selector_with_no_match_is_refused_by_the_cel_rule(raw: Raw) -> None:
    field, message = refused(raw, {"tier": 1, "members": [node_member()]})
    assert field == "spec.members[0].selector"
    assert "exactMatch, regexMatch and labelMatch" in message


def test_a_member_selector_with_two_matches_is_refused_by_the_cel_rule(raw: Raw) -> None:
    member = node_member(exactMatch={"name": "n"}, regexMatch={"pattern": "n"})
    field, message = refused(raw, {"tier": 1, "members": [member]})
    assert field == "spec.members[0].selector"
    assert "only one of" in message
