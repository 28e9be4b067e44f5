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


# What the disruption controller needs of pods counted by maxUnavailable or a percentage:
# a controller (it reads the expected count from the controller's scale).
CONTROLLED = [
    {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "rs",
        "uid": "rs-uid",
        "controller": True,
    }
]


def running_pods(
    core: client.CoreV1Api, app: str, count: int, owners: list[dict[str, object]] | None = None
) -> list[str]:
    """`count` pods labelled app=<app>, bound and Running."""
    names = [unique("e") for _ in range(count)]
    for index, name in enumerate(names):
        extra = {"ownerReferences": owners} if owners else {}
        core.create_namespaced_pod("default", pod_body(name, labels={"app": app}, **extra))
        bind(core, "default", name, f"sim-node-000{index % 3}")
    for name in names:
        wait_for(
            lambda name=name: core.read_namespaced_pod(name, "default").status.phase == "Running"
        )
    return names


def budget(api_client: client.ApiClient, app: str, **spec: object) -> None:
    client.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        "default",
        {"metadata": {"name": app}, "spec": {"selector": {"matchLabels": {"app": app}}, **spec}},
    )


def eviction_of(name: str, **options: object) -> dict[str, object]:
    body: dict[str, object] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"},
    }
    if options:
        body["deleteOptions"] = options
    return body


def test_an_eviction_charges_the_budget_at_once_and_marks_the_pod(
    raw: Raw, api_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    app = unique("charged")
    names = running_pods(core, app, 3, CONTROLLED)
    budget(api_client, app, maxUnavailable="50%")
    policy = client.PolicyV1Api(api_client)
    wait_for(
        lambda: (
            policy.read_namespaced_pod_disruption_budget(app, "default").status.disruptions_allowed
            == 2
        )
    )
    code, _ = raw.json(
        "POST", f"/api/v1/namespaces/default/pods/{names[0]}/eviction", eviction_of(names[0])
    )
    assert code == 201
    status = policy.read_namespaced_pod_disruption_budget(app, "default").status
    # 50% of 3 rounded up may be unavailable: 2, less the one evicted.
    assert status.disruptions_allowed == 1
    pod = core.read_namespaced_pod(names[0], "default")
    assert pod.metadata.deletion_timestamp is not None
    target = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert (target.status, target.reason) == ("True", "EvictionByEvictionAPI")


def test_a_dry_run_eviction_is_answered_as_the_real_one_and_changes_nothing(
    raw: Raw, api_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(api_client)
    app = unique("dry")
    names = running_pods(core, app, 2)
    budget(api_client, app, minAvailable=1)
    policy = client.PolicyV1Api(api_client)
    wait_for(
        lambda: (
            policy.read_namespaced_pod_disruption_budget(app, "default").status.disruptions_allowed
            == 1
        )
    )
    path = f"/api/v1/namespaces/default/pods/{names[0]}/eviction"
    code, _ = raw.json("POST", path + "?dryRun=All", eviction_of(names[0], dryRun=["All"]))
    assert code == 201
    assert core.read_namespaced_pod(names[0], "default").metadata.deletion_timestamp is None
    assert (
        policy.read_namespaced_pod_disruption_budget(app, "default").status.disruptions_allowed == 1
    )
    # A dry run that the budget would refuse is refused the same way.
    assert raw.json("POST", path, eviction_of(names[0]))[0] == 201
    wait_for(
        lambda: (
            policy.read_namespaced_pod_disruption_budget(app, "default").status.disruptions_allowed
            == 0
        )
    )
    other = f"/api/v1/namespaces/default/pods/{names[1]}/eviction?dryRun=All"
    code, body = raw.json("POST", other, eviction_of(names[1], dryRun=["All"]))
    assert code == 429
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert core.read_namespaced_pod(names[1], "default").metadata.deletion_timestamp is None


def test_a_budget_by_max_unavailable_expects_no_pod_without_a_controller(
    raw: Raw, api_client: client.ApiClient
) -> None:
    # As kube-controller-manager 1.26 answers (checked on a real server): a bare pod is
    # healthy but not expected, and a budget that expects no pod allows nothing.
    core = client.CoreV1Api(api_client)
    app = unique("bare")
    (name,) = running_pods(core, app, 1)
    budget(api_client, app, maxUnavailable=1)
    policy = client.PolicyV1Api(api_client)
    wait_for(
        lambda: (
            policy.read_namespaced_pod_disruption_budget(app, "default").status.current_healthy == 1
        )
    )
    status = policy.read_namespaced_pod_disruption_budget(app, "default").status
    assert (status.expected_pods, status.desired_healthy, status.disruptions_allowed) == (0, 0, 0)
    code, body = raw.json(
        "POST", f"/api/v1/namespaces/default/pods/{name}/eviction", eviction_of(name)
    )
    assert code == 429
    assert body["details"]["causes"][0]["message"] == (
        f"The disruption budget {app} needs 0 healthy pods and has 1 currently"
    )


def test_a_pod_two_budgets_cover_cannot_be_evicted(raw: Raw, api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    app = unique("twice")
    (name,) = running_pods(core, app, 1)
    budget(api_client, app, minAvailable=0)
    client.PolicyV1Api(api_client).create_namespaced_pod_disruption_budget(
        "default",
        {
            "metadata": {"name": app + "-b"},
            "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": app}}},
        },
    )
    code, body = raw.json(
        "POST", f"/api/v1/namespaces/default/pods/{name}/eviction", eviction_of(name)
    )
    assert code == 500
    assert "more than one PodDisruptionBudget" in body["message"]
