"""POST /sim/restart: an API server restart that keeps its store, as kube-apiserver over etcd."""

from __future__ import annotations

from pathlib import Path

import urllib3

from muster_sim.server import SimServer
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


CRDS = Path(__file__).resolve().parents[2] / "crds"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"


def cluster_admin_token(raw: Raw) -> str:
    """A ServiceAccount's token, bound to cluster-admin: RBAC allows it everything."""
    name = unique("operator")
    token = service_account_token(raw, "default", name)
    binding = {
        "metadata": {"name": name},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "cluster-admin",
        },
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}],
    }
    code, _ = raw.json("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
    assert code == 201
    return token


def test_after_a_restart_the_server_warms_up_as_kube_apiserver_does() -> None:
    config = sim_config(nodes=1, crds_dir=CRDS, restart_warmup=1.0, restart_crd_delay=2.0)
    with SimServer(config).running() as server:
        admin = Raw.admin(server)
        operator = admin.as_token(cluster_admin_token(admin))
        assert operator.json("GET", PODGROUPS)[0] == 200

        assert admin.request("POST", "/sim/restart?downtime=0.2").status == 202
        wait_for(lambda: refused(admin), timeout=3)
        wait_for(lambda: not refused(admin), timeout=5)

        # the RBAC authorizer is not synced: everyone outside system:masters is refused
        code, body = operator.json("GET", "/api/v1/pods")
        assert code == 403
        assert body["reason"] == "Forbidden"
        assert body["message"].startswith(
            'pods is forbidden: User "system:serviceaccount:default:operator'
        )
        assert (
            'cannot list resource "pods" in API group "" at the cluster scope' in (body["message"])
        )
        # the CRDs are not served yet: 404 for everyone, masters too; built-ins are there
        assert admin.json("GET", "/api/v1/pods")[0] == 200
        code, body = admin.json("GET", PODGROUPS)
        assert (code, body["message"]) == (404, "the server could not find the requested resource")
        # /readyz says why, as kube-apiserver's check list
        response = admin.request("GET", "/readyz")
        text = response.data.decode()
        assert response.status == 500
        assert "[-]poststarthook/rbac/bootstrap-roles failed: reason withheld" in text
        assert "[-]poststarthook/crd-informer-synced failed: reason withheld" in text
        assert "[+]etcd ok" in text and text.endswith("readyz check failed\n")

        wait_for(lambda: operator.json("GET", "/api/v1/pods")[0] == 200, timeout=5)
        wait_for(lambda: operator.json("GET", PODGROUPS)[0] == 200, timeout=5)
        assert ready(admin)
