"""sim's PV controller and provisioner: claims bound, volumes provisioned as on a real cluster."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from muster_sim.cli import add_parser, config_from_args
from muster_sim.cluster.nodes import NodePool
from tests.sim.conftest import Raw, create_namespace, unique, wait_for

ZONE = "topology.kubernetes.io/zone"
SIM_CONFIG = {
    "nodes": 0,
    "node_pools": [
        NodePool("zone-a", 1, "8", "32Gi", labels={ZONE: "a"}),
        NodePool("zone-b", 1, "8", "32Gi", labels={ZONE: "b"}),
    ],
}
SC_PATH = "/apis/storage.k8s.io/v1/storageclasses"
PV_PATH = "/api/v1/persistentvolumes"


def pvc_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    return create_namespace(raw, "prov")


@pytest.fixture(scope="module")
def nodes(raw: Raw) -> dict[str, str]:
    """zone -> node name."""
    code, listed = raw.json("GET", "/api/v1/nodes")
    assert code == 200
    return {n["metadata"]["labels"][ZONE]: n["metadata"]["name"] for n in listed["items"]}


def storage_class(raw: Raw, mode: str = "Immediate", **fields: Any) -> str:
    name = unique("sc")
    body = {
        "metadata": {"name": name},
        "provisioner": "disk.example.com",
        "volumeBindingMode": mode,
        **fields,
    }
    code, created = raw.json("POST", SC_PATH, body)
    assert code == 201, created
    return name


def make_claim(
    raw: Raw, ns: str, class_name: str, size: str = "1Gi", **meta: Any
) -> dict[str, Any]:
    body = {
        "metadata": {"name": unique("pvc"), **meta},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": class_name,
        },
    }
    code, created = raw.json("POST", pvc_path(ns), body)
    assert code == 201, created
    return dict(created)


def get_claim(raw: Raw, ns: str, name: str) -> dict[str, Any]:
    code, body = raw.json("GET", f"{pvc_path(ns)}/{name}")
    assert code == 200, body
    return dict(body)


def bound_claim(raw: Raw, ns: str, name: str) -> dict[str, Any]:
    def bound() -> dict[str, Any] | None:
        current = get_claim(raw, ns, name)
        return current if current["status"].get("phase") == "Bound" else None

    return dict(wait_for(bound))


def events_about(raw: Raw, ns: str, name: str) -> list[tuple[str, str]]:
    code, listed = raw.json(
        "GET", f"/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3D{name}"
    )
    assert code == 200
    return [(e["reason"], e["message"]) for e in listed["items"]]


def static_volume(raw: Raw, class_name: str, size: str) -> str:
    name = unique("pv")
    body = {
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": size},
            "storageClassName": class_name,
            "csi": {"driver": "disk.example.com", "volumeHandle": name},
        },
    }
    code, created = raw.json("POST", PV_PATH, body)
    assert code == 201, created
    return name


def test_wait_for_first_consumer_claim_waits_until_a_node_is_selected(
    raw: Raw, ns: str, nodes: dict[str, str]
) -> None:
    class_name = storage_class(raw, "WaitForFirstConsumer")
    claim = make_claim(raw, ns, class_name)
    name = claim["metadata"]["name"]
    wait_for(
        lambda: (
            ("WaitForFirstConsumer", "waiting for first consumer to be created before binding")
            in events_about(raw, ns, name)
        )
    )
    assert get_claim(raw, ns, name)["status"]["phase"] == "Pending"
    assert raw.json("GET", f"{PV_PATH}/pvc-{claim['metadata']['uid']}")[0] == 404


def test_selected_node_provisions_a_volume_pinned_to_that_node_and_binds_both(
    raw: Raw, ns: str, nodes: dict[str, str]
) -> None:
    class_name = storage_class(raw, "WaitForFirstConsumer")
    claim = make_claim(raw, ns, class_name, "3Gi")
    name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
    code, body = raw.json(
        "PATCH",
        f"{pvc_path(ns)}/{name}",
        {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": nodes["b"]}}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, body
    bound = bound_claim(raw, ns, name)
    assert bound["spec"]["volumeName"] == f"pvc-{uid}"
    assert bound["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert bound["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert bound["status"]["capacity"] == {"storage": "3Gi"}
    assert bound["status"]["accessModes"] == ["ReadWriteOnce"]
    code, volume = raw.json("GET", f"{PV_PATH}/pvc-{uid}")
    assert code == 200
    assert volume["status"]["phase"] == "Bound"
    assert volume["spec"]["claimRef"]["uid"] == uid
    assert volume["spec"]["storageClassName"] == class_name
    assert volume["spec"]["csi"]["driver"] == "disk.example.com"
    assert (
        volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "disk.example.com"
    )
    terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [nodes["b"]]}
            ]
        }
    ]
    reasons = [r for r, _ in events_about(raw, ns, name)]
    assert "ProvisioningSucceeded" in reasons


def test_allowed_topology_keys_pin_the_volume_to_the_selected_nodes_zone(
    raw: Raw, ns: str, nodes: dict[str, str]
) -> None:
    topologies = [{"matchLabelExpressions": [{"key": ZONE, "values": ["a", "b"]}]}]
    class_name = storage_class(raw, "WaitForFirstConsumer", allowedTopologies=topologies)
    claim = make_claim(
        raw,
        ns,
        class_name,
        annotations={"volume.kubernetes.io/selected-node": nodes["a"]},
    )
    bound = bound_claim(raw, ns, claim["metadata"]["name"])
    code, volume = raw.json("GET", f"{PV_PATH}/{bound['spec']['volumeName']}")
    assert code == 200
    assert volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]}
    ]


def test_immediate_claim_binds_the_smallest_available_volume_that_fits(raw: Raw, ns: str) -> None:
    class_name = storage_class(raw, provisioner="kubernetes.io/no-provisioner")
    big = static_volume(raw, class_name, "20Gi")
    small = static_volume(raw, class_name, "5Gi")
    static_volume(raw, class_name, "2Gi")
    wait_for(lambda: raw.json("GET", f"{PV_PATH}/{big}")[1]["status"]["phase"] == "Available")
    claim = make_claim(raw, ns, class_name, "3Gi")
    bound = bound_claim(raw, ns, claim["metadata"]["name"])
    assert bound["spec"]["volumeName"] == small
    volume = raw.json("GET", f"{PV_PATH}/{small}")[1]
    assert volume["spec"]["claimRef"]["name"] == claim["metadata"]["name"]
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert wait_for(lambda: raw.json("GET", f"{PV_PATH}/{small}")[1]["status"]["phase"] == "Bound")
    assert raw.json("GET", f"{PV_PATH}/{big}")[1]["status"]["phase"] == "Available"


def test_immediate_claim_without_a_volume_is_provisioned_without_node_affinity(
    raw: Raw, ns: str
) -> None:
    class_name = storage_class(raw)
    claim = make_claim(raw, ns, class_name)
    bound = bound_claim(raw, ns, claim["metadata"]["name"])
    volume = raw.json("GET", f"{PV_PATH}/{bound['spec']['volumeName']}")[1]
    assert "nodeAffinity" not in volume["spec"]
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"


def test_claim_of_an_unknown_class_stays_pending_and_is_never_provisioned(
    raw: Raw, ns: str
) -> None:
    claim = make_claim(raw, ns, "no-such-class")
    name = claim["metadata"]["name"]
    wait_for(
        lambda: (
            (
                "ProvisioningFailed",
                'storageclass.storage.k8s.io "no-such-class" not found',
            )
            in events_about(raw, ns, name)
        )
    )
    assert get_claim(raw, ns, name)["status"]["phase"] == "Pending"
    assert raw.json("GET", f"{PV_PATH}/pvc-{claim['metadata']['uid']}")[0] == 404


def test_deleting_the_claim_deletes_its_provisioned_volume(raw: Raw, ns: str) -> None:
    class_name = storage_class(raw)
    claim = make_claim(raw, ns, class_name)
    name = claim["metadata"]["name"]
    volume_name = bound_claim(raw, ns, name)["spec"]["volumeName"]
    assert raw.json("DELETE", f"{pvc_path(ns)}/{name}")[0] == 200
    wait_for(lambda: raw.json("GET", f"{PV_PATH}/{volume_name}")[0] == 404)


def test_deleting_the_claim_of_a_retained_volume_releases_it(raw: Raw, ns: str) -> None:
    class_name = storage_class(raw, reclaimPolicy="Retain")
    claim = make_claim(raw, ns, class_name)
    name = claim["metadata"]["name"]
    volume_name = bound_claim(raw, ns, name)["spec"]["volumeName"]
    assert raw.json("DELETE", f"{pvc_path(ns)}/{name}")[0] == 200
    wait_for(
        lambda: raw.json("GET", f"{PV_PATH}/{volume_name}")[1]["status"]["phase"] == "Released"
    )


@pytest.mark.parametrize(("argv", "expected"), [([], True), (["--no-provisioner"], False)])
def test_provisioner_is_on_unless_no_provisioner_is_given(argv: list[str], expected: bool) -> None:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert config_from_args(parser.parse_args(["sim", *argv])).provisioner is expected
