"""Lists: label and field selectors, limit and continue, the list's resourceVersion, 410s."""

from __future__ import annotations

import pytest
from kubernetes import client

from muster_sim.server import SimServer
from tests.sim.conftest import Raw, bind, pod_body, unique, wait_for


@pytest.fixture(scope="module")
def labelled(core: client.CoreV1Api) -> str:
    ns = unique("sel")
    core.create_namespace({"metadata": {"name": ns}})
    for name, labels in {
        "a": {"app": "web", "tier": "front"},
        "b": {"app": "web", "tier": "back"},
        "c": {"app": "db"},
        "d": {},
    }.items():
        core.create_namespaced_config_map(ns, {"metadata": {"name": name, "labels": labels}})
    return ns


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("app in (web,db)", ["a", "b", "c"]),
        ("app notin (web)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("app=web,tier!=back", ["a"]),
        ("app in (web), !tier", []),
    ],
)
def test_label_selector_operators(
    core: client.CoreV1Api, labelled: str, selector: str, expected: list[str]
) -> None:
    listed = core.list_namespaced_config_map(labelled, label_selector=selector)
    assert [c.metadata.name for c in listed.items] == expected


def test_malformed_label_selector_is_400(raw: Raw) -> None:
    code, body = raw.json("GET", "/api/v1/configmaps?labelSelector=a%20in%20b")
    assert code == 400 and body["reason"] == "BadRequest"


def test_field_selectors_on_pods(core: client.CoreV1Api) -> None:
    ns = unique("fs")
    core.create_namespace({"metadata": {"name": ns}})
    core.create_namespaced_pod(ns, pod_body("bound", schedulerName="muster"))
    core.create_namespaced_pod(ns, pod_body("pending", schedulerName="muster"))
    core.create_namespaced_pod(ns, pod_body("other"))
    bind(core, ns, "bound", "sim-node-0000")

    def names(selector: str) -> list[str]:
        return [
            p.metadata.name for p in core.list_namespaced_pod(ns, field_selector=selector).items
        ]

    assert names("spec.nodeName=sim-node-0000") == ["bound"]
    assert names("spec.nodeName=") == ["other", "pending"]
    assert names("spec.nodeName!=") == ["bound"]
    assert names("spec.schedulerName=muster") == ["bound", "pending"]
    assert names("spec.schedulerName!=muster") == ["other"]
    assert names("metadata.name=other") == ["other"]
    assert names("metadata.name!=other,spec.schedulerName=muster") == ["bound", "pending"]
    assert names(f"metadata.namespace={ns}") == ["bound", "other", "pending"]
    wait_for(lambda: names("status.phase=Running") == ["bound"])
    assert names("status.phase=Pending") == ["other", "pending"]
    assert names("status.phase!=Failed") == ["bound", "other", "pending"]


def test_unknown_field_selector_is_400(raw: Raw) -> None:
    code, body = raw.json("GET", "/api/v1/pods?fieldSelector=spec.bogus%3Dx")
    assert code == 400
    assert body["message"] == "field label not supported: spec.bogus"


def test_limit_and_continue_page_through_a_consistent_snapshot(core: client.CoreV1Api) -> None:
    ns = unique("page")
    core.create_namespace({"metadata": {"name": ns}})
    for index in range(7):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"cm-{index}"}})
    first = core.list_namespaced_config_map(ns, limit=3)
    assert [c.metadata.name for c in first.items] == ["cm-0", "cm-1", "cm-2"]
    assert first.metadata.remaining_item_count == 4
    # a change after the first page does not show up in later pages of the same list
    core.create_namespaced_config_map(ns, {"metadata": {"name": "cm-3a"}})
    core.delete_namespaced_config_map("cm-5", ns)
    second = core.list_namespaced_config_map(ns, limit=3, _continue=first.metadata._continue)
    assert [c.metadata.name for c in second.items] == ["cm-3", "cm-4", "cm-5"]
    third = core.list_namespaced_config_map(ns, limit=3, _continue=second.metadata._continue)
    assert [c.metadata.name for c in third.items] == ["cm-6"]
    assert not third.metadata._continue
    assert first.metadata.resource_version == third.metadata.resource_version


def test_pages_follow_etcds_key_order_across_namespaces(core: client.CoreV1Api) -> None:
    # etcd orders keys by their bytes: "ns-b/a" comes before "ns/z" ("-" < "/"), so a
    # namespace that prefixes another must not lose objects between pages.
    ns = unique("order")
    for namespace, name in ((ns, "z"), (f"{ns}-b", "a")):
        core.create_namespace({"metadata": {"name": namespace}})
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    whole = [
        (c.metadata.namespace, c.metadata.name)
        for c in core.list_config_map_for_all_namespaces().items
    ]
    paged: list[tuple[str, str]] = []
    token = None
    while True:
        page = core.list_config_map_for_all_namespaces(limit=2, _continue=token)
        paged += [(c.metadata.namespace, c.metadata.name) for c in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert paged == whole
    assert paged == sorted(paged, key=lambda key: f"{key[0]}/{key[1]}")
    assert (f"{ns}-b", "a") in paged and (ns, "z") in paged


def test_list_resource_version_is_the_latest_write(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": unique("lrv")}})
    listed = core.list_namespaced_config_map("default")
    assert int(listed.metadata.resource_version) >= int(cm.metadata.resource_version)


def test_exact_list_at_an_old_resource_version_shows_the_past(raw: Raw) -> None:
    name = unique("past")
    _, cm = raw.json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"metadata": {"name": name}, "data": {"v": "old"}},
    )
    old_rv = cm["metadata"]["resourceVersion"]
    cm["data"] = {"v": "new"}
    raw.json("PUT", f"/api/v1/namespaces/default/configmaps/{name}", cm)
    code, listed = raw.json(
        "GET",
        f"/api/v1/namespaces/default/configmaps?resourceVersion={old_rv}"
        f"&resourceVersionMatch=Exact&fieldSelector=metadata.name%3D{name}",
    )
    assert code == 200
    assert listed["metadata"]["resourceVersion"] == old_rv
    assert [c["data"]["v"] for c in listed["items"]] == ["old"]


def test_list_with_compacted_resource_version_is_410(sim: SimServer, raw: Raw) -> None:
    _, cm = raw.json(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("gone")}}
    )
    old_rv = cm["metadata"]["resourceVersion"]
    _, page = raw.json("GET", "/api/v1/namespaces/default/configmaps?limit=1")
    raw.json("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("g")}})
    assert raw.json("POST", "/sim/compact")[0] == 200
    code, body = raw.json(
        "GET", f"/api/v1/configmaps?resourceVersion={old_rv}&resourceVersionMatch=Exact"
    )
    assert code == 410
    assert body["reason"] == "Expired" and body["code"] == 410
    assert body["message"].startswith(f"too old resource version: {old_rv} (")
    code, body = raw.json(
        "GET",
        f"/api/v1/namespaces/default/configmaps?limit=1&continue={page['metadata']['continue']}",
    )
    assert code == 410 and body["reason"] == "Expired"
    assert body["message"].startswith("The provided continue parameter is too old")
