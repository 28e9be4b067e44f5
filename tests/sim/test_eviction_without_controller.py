"""A server without kube-controller-manager never computes PodDisruptionBudget status, so
the Eviction API refuses every pod a budget covers ("still being processed")."""

from __future__ import annotations

from kubernetes import client

from tests.sim.conftest import Raw, bind, pod_body, unique, wait_for

SIM_CONFIG = {"disruption_controller": False}


def test_an_unprocessed_budget_refuses_every_eviction(
    raw: Raw, api_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    app = unique("unprocessed")
    name = unique("e")
    core.create_namespaced_pod("default", pod_body(name, labels={"app": app}))
    bind(core, "default", name, "sim-node-0000")
    wait_for(lambda: core.read_namespaced_pod(name, "default").status.phase == "Running")
    client.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        "default",
        {
            "metadata": {"name": app},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
        },
    )
    code, body = raw.json(
        "POST",
        f"/api/v1/namespaces/default/pods/{name}/eviction",
        {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}},
    )
    assert code == 429
    assert body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": f"The disruption budget {app} is still being processed by the server.",
        }
    ]
    assert core.read_namespaced_pod(name, "default").metadata.deletion_timestamp is None
