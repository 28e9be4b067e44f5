"""POST /sim/restart: an API server restart that keeps its store, as kube-apiserver over etcd."""

from __future__ import annotations

import urllib3

from scheduler.sim import SimServer
from tests.sim.conftest import Raw, pod_body, service_account_token, sim_config, unique, wait_for


def refused(raw: Raw) -> bool:
    try:
        raw.request("GET", "/readyz", timeout=0.5)
    except urllib3.exceptions.HTTPError:
        return True
    return False


def ready(raw: Raw) -> bool:
    try:
        return raw.request("GET", "/readyz", timeout=0.5).status == 200
    except urllib3.exceptions.HTTPError:
        return False


def test_a_restart_keeps_every_object_and_resource_version_and_expires_old_watches() -> None:
    with SimServer(sim_config(nodes=1)).running() as server:
        raw = Raw.admin(server)
        name = unique("kept")
        code, created = raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(name))
        assert code == 201
        before = created["metadata"]["resourceVersion"]
        # a write after it: the restart's fresh watch cache starts past `before`
        assert raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(unique("x")))[0] == 201

        response = raw.request("POST", "/sim/restart?downtime=2")
        assert response.status == 202
        wait_for(lambda: refused(raw), timeout=3)
        wait_for(lambda: ready(raw), timeout=10)

        code, kept = raw.json("GET", f"/api/v1/namespaces/default/pods/{name}")
        assert code == 200
        assert kept["metadata"]["resourceVersion"] == before
        assert kept["metadata"]["uid"] == created["metadata"]["uid"]
        # the watch cache starts afresh: resuming from before the restart is a 410
        frames = list(
            raw.watch(f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={before}")
        )
        assert frames[0]["type"] == "ERROR" and frames[0]["object"]["code"] == 410
        code, later = raw.json("POST", "/api/v1/namespaces/default/pods", pod_body(unique("new")))
        assert code == 201
        assert int(later["metadata"]["resourceVersion"]) > int(before)


def test_a_restart_is_for_the_admin_only_and_takes_seconds_from_0_to_60(raw: Raw) -> None:
    token = service_account_token(raw, "default", unique("restarter"))
    assert raw.as_token(token).request("POST", "/sim/restart").status == 403
    code, body = raw.json("POST", "/sim/restart?downtime=forever")
    assert code == 400
    assert "downtime='forever'" in body["message"]
    assert raw.json("POST", "/sim/restart?downtime=61")[0] == 400
