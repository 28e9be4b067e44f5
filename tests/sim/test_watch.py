"""Watch: resuming from a resourceVersion, event types, bookmarks, timeouts and 410 Expired."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes import client, watch

from muster_sim.apiserver.store import WatchWindow
from muster_sim.server import SimServer
from tests.sim.conftest import Raw, bind, pod_body, sim_config, unique, wait_for


def _make_history(raw: Raw, ns: str) -> tuple[str, list[tuple[str, str, str]]]:
    """Create/update/delete a few config maps; return the rv before them and what happened."""
    raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    _, listed = raw.json("GET", f"/api/v1/namespaces/{ns}/configmaps")
    start = listed["metadata"]["resourceVersion"]
    raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "a"}})
    raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "b"}})
    raw.request(
        "PATCH",
        f"/api/v1/namespaces/{ns}/configmaps/a",
        {"data": {"x": "1"}},
        content_type="application/merge-patch+json",
    )
    raw.json("DELETE", f"/api/v1/namespaces/{ns}/configmaps/b")
    return start, [
        ("ADDED", "a", ""),
        ("ADDED", "b", ""),
        ("MODIFIED", "a", "1"),
        ("DELETED", "b", ""),
    ]


def test_watch_from_resource_version_replays_every_later_event_in_order(raw: Raw) -> None:
    ns = unique("w")
    start, expected = _make_history(raw, ns)
    frames = list(
        raw.watch(
            f"/api/v1/namespaces/{ns}/configmaps?watch=true"
            f"&resourceVersion={start}&timeoutSeconds=1"
        )
    )
    seen = [
        (f["type"], f["object"]["metadata"]["name"], (f["object"].get("data") or {}).get("x", ""))
        for f in frames
    ]
    assert seen == expected
    rvs = [int(f["object"]["metadata"]["resourceVersion"]) for f in frames]
    assert rvs == sorted(rvs) and rvs[0] > int(start)
    assert all(f["object"]["kind"] == "ConfigMap" for f in frames)


def test_watch_path_form_and_live_events(raw: Raw) -> None:
    ns = unique("wl")
    raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    _, listed = raw.json("GET", f"/api/v1/namespaces/{ns}/configmaps")
    frames: list[dict[str, Any]] = []

    def consume() -> None:
        frames.extend(
            raw.watch(
                f"/api/v1/watch/namespaces/{ns}/configmaps?timeoutSeconds=2"
                f"&resourceVersion={listed['metadata']['resourceVersion']}"
            )
        )

    thread = threading.Thread(target=consume)
    thread.start()
    raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "live"}})
    wait_for(lambda: frames, timeout=3)
    thread.join()
    assert [(f["type"], f["object"]["metadata"]["name"]) for f in frames] == [("ADDED", "live")]


def test_watch_without_resource_version_starts_with_synthetic_added(raw: Raw) -> None:
    ns = unique("w0")
    raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    for name in ("x", "y"):
        raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": name}})
    for rv in ("0", ""):
        frames = list(
            raw.watch(
                f"/api/v1/namespaces/{ns}/configmaps?watch=1"
                f"&resourceVersion={rv}&timeoutSeconds=0.3"
            )
        )
        assert [(f["type"], f["object"]["metadata"]["name"]) for f in frames] == [
            ("ADDED", "x"),
            ("ADDED", "y"),
        ]


def test_watch_from_zero_sends_its_added_in_etcds_key_order(raw: Raw) -> None:
    # etcd's order is the bytes of "namespace/name": "ns-b/a" before "ns/z", as '-' < '/'.
    ns = unique("w-order")
    label = ns.replace("-", "")
    for namespace, name in ((ns, "z"), (f"{ns}-b", "a")):
        raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
        raw.json(
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"metadata": {"name": name, "labels": {"order": label}}},
        )
    frames = list(
        raw.watch(
            "/api/v1/configmaps?watch=1&resourceVersion=0&timeoutSeconds=0.3"
            f"&labelSelector=order%3D{label}"
        )
    )
    assert [(f["object"]["metadata"]["namespace"], f["type"]) for f in frames] == [
        (f"{ns}-b", "ADDED"),
        (ns, "ADDED"),
    ]


def test_bookmarks_carry_only_kind_api_version_and_resource_version(raw: Raw) -> None:
    frames = list(
        raw.watch(
            "/api/v1/namespaces/default/pods?watch=true&allowWatchBookmarks=true"
            "&resourceVersion=0&timeoutSeconds=0.6&labelSelector=none%3Dhere"
        )
    )
    bookmarks = [f for f in frames if f["type"] == "BOOKMARK"]
    assert bookmarks
    obj = bookmarks[0]["object"]
    assert set(obj) == {"kind", "apiVersion", "metadata"}
    assert obj["kind"] == "Pod" and obj["apiVersion"] == "v1"
    assert set(obj["metadata"]) == {"resourceVersion"}


def test_no_bookmarks_unless_asked(raw: Raw) -> None:
    frames = list(
        raw.watch(
            "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0"
            "&timeoutSeconds=0.5&labelSelector=none%3Dhere"
        )
    )
    assert not any(f["type"] == "BOOKMARK" for f in frames)


def test_timeout_seconds_ends_the_stream(raw: Raw) -> None:
    import time

    began = time.monotonic()
    list(raw.watch("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=0.3"))
    assert time.monotonic() - began < 2


def test_expired_resource_version_gets_one_error_event_with_410(sim: SimServer, raw: Raw) -> None:
    _, listed = raw.json("GET", "/api/v1/namespaces/default/configmaps")
    old = listed["metadata"]["resourceVersion"]
    raw.json("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("e")}})
    raw.json("POST", "/sim/compact")
    frames = list(
        raw.watch(f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={old}")
    )
    assert len(frames) == 1
    assert frames[0]["type"] == "ERROR"
    status = frames[0]["object"]
    assert status["kind"] == "Status" and status["apiVersion"] == "v1"
    assert status["status"] == "Failure" and status["reason"] == "Expired"
    assert status["code"] == 410
    assert status["message"].startswith(f"too old resource version: {old} (")


def test_label_selector_watch_sees_objects_enter_and_leave(raw: Raw) -> None:
    ns = unique("wsel")
    raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    _, listed = raw.json("GET", f"/api/v1/namespaces/{ns}/configmaps")
    raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "m"}})
    for labels in ({"pick": "yes"}, {"pick": "yes", "more": "1"}, {"pick": "no"}):
        raw.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/configmaps/m",
            {"metadata": {"labels": labels}},
            content_type="application/merge-patch+json",
        )
    frames = list(
        raw.watch(
            f"/api/v1/namespaces/{ns}/configmaps?watch=true&labelSelector=pick"
            f"%3Dyes&resourceVersion={listed['metadata']['resourceVersion']}"
            "&timeoutSeconds=0.3"
        )
    )
    assert [f["type"] for f in frames] == ["ADDED", "MODIFIED", "DELETED"]


def test_official_client_watch_sees_binding_and_kubelet(core: client.CoreV1Api) -> None:
    ns = unique("wk")
    core.create_namespace({"metadata": {"name": ns}})
    listed = core.list_namespaced_pod(ns)
    core.create_namespaced_pod(ns, pod_body("p"))
    bind(core, ns, "p", "sim-node-0001")
    phases: list[tuple[str, str | None, str]] = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod,
        ns,
        timeout_seconds=2,
        resource_version=listed.metadata.resource_version,
    ):
        pod = event["object"]
        phases.append((event["type"], pod.spec.node_name, pod.status.phase))
        if pod.status.phase == "Running":
            break
    assert phases[0] == ("ADDED", None, "Pending")
    assert phases[1] == ("MODIFIED", "sim-node-0001", "Pending")
    assert phases[-1] == ("MODIFIED", "sim-node-0001", "Running")


def test_watch_on_one_name(raw: Raw) -> None:
    ns = unique("wn")
    raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    for name in ("one", "two"):
        raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": name}})
    frames = list(raw.watch(f"/api/v1/watch/namespaces/{ns}/configmaps/two?timeoutSeconds=0.3"))
    assert [f["object"]["metadata"]["name"] for f in frames] == ["two"]


def test_watch_from_resource_version_1_on_a_fresh_server_is_410(raw: Raw) -> None:
    # the watch cache starts after the server's own bootstrap objects, as a real cacher
    # starts from its first list: RV 1 is older than anything it holds
    frames = list(raw.watch("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1"))
    assert len(frames) == 1 and frames[0]["type"] == "ERROR"
    status = frames[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version: 1 (")


def test_watch_older_than_a_small_window_is_410_and_newer_replays() -> None:
    server = SimServer(sim_config(nodes=0))
    server.store.watch_window = WatchWindow(events=3)
    with server.running():
        raw = Raw.admin(server)
        ns = unique("win")
        raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        _, listed = raw.json("GET", f"/api/v1/namespaces/{ns}/configmaps")
        start = int(listed["metadata"]["resourceVersion"])
        rvs = []
        for i in range(5):
            _, cm = raw.json(
                "POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": f"c{i}"}}
            )
            rvs.append(int(cm["metadata"]["resourceVersion"]))
        # the window holds the last 3 configmap events: c2, c3, c4
        frames = list(
            raw.watch(f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={start}")
        )
        assert [f["type"] for f in frames] == ["ERROR"]
        assert frames[0]["object"]["message"] == (
            f"too old resource version: {start} ({rvs[2] - 1})"
        )
        frames = list(
            raw.watch(
                f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rvs[2] - 1}"
                "&timeoutSeconds=0.5"
            )
        )
        assert [f["object"]["metadata"]["name"] for f in frames] == ["c2", "c3", "c4"]


def test_watch_window_parses_events_and_seconds() -> None:
    assert WatchWindow.parse("500") == WatchWindow(events=500)
    assert WatchWindow.parse("30s") == WatchWindow(fresh_seconds=30.0)
    with pytest.raises(ValueError, match="--watch-window"):
        WatchWindow.parse("soon")
