"""pods/eviction honours PodDisruptionBudgets."""

from __future__ import annotations

from kubernetes import client

from tests.sim.conftest import Raw, bind, pod_body, unique, wait_for


def test_eviction_respects_the_disruption_budget(raw: Raw, api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    app = unique("app")
    names = [unique("e") for _ in range(3)]
    for index, name in enumerate(names):
        core.create_namespaced_pod("default", pod_body(name, labels={"app": app}))
        bind(core, "default", name, f"sim-node-000{index}")
    for name in names:
        wait_for(
            lambda name=name: core.read_namespaced_pod(name, "default").status.phase == "Running"
        )
    client.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        "default",
        {
            "metadata": {"name": app},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": app}}},
        },
    )
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": names[0], "namespace": "default"},
    }
    code, body = raw.json("POST", f"/api/v1/namespaces/default/pods/{names[0]}/eviction", eviction)
    assert code == 201 and body["status"] == "Success"
    eviction["metadata"]["name"] = names[1]
    code, body = raw.json("POST", f"/api/v1/namespaces/default/pods/{names[1]}/eviction", eviction)
    assert code == 429
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    pdb = client.PolicyV1Api(api_client).read_namespaced_pod_disruption_budget(app, "default")
    assert pdb.status.disruptions_allowed == 0


def test_evicting_a_missing_pod_is_404(raw: Raw) -> None:
    code, _ = raw.json(
        "POST", "/api/v1/namespaces/default/pods/ghost/eviction", {"metadata": {"name": "ghost"}}
    )
    assert code == 404
