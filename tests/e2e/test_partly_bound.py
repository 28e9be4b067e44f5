"""A gang left partly bound is finished or undone, never left in between.

Binding is one call per pod: a leader killed between the first and the last bind of a gang,
or a bind refused for good, leaves some members bound and the gang short. The next session,
of the same leader or a new one, completes it before any other gang is placed, holding the
room its missing members need meanwhile; past allocate's partly-bound-timeout it evicts the
bound members instead.

A gang's binds are stopped after exactly the members a test chooses: on sim, a fault that
answers 503 to the bindings of the others; on a real kube-apiserver, a
ValidatingAdmissionPolicy that refuses them (403). Both are failures that pass, which the
binder sends again to the same node: the leader is stuck between two binds of the gang for
as long as the test wants.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    BindingLog,
    Cluster,
    bound,
    condition,
    make_gang,
    make_pod,
    make_podgroup,
    node_names,
    wait_for,
)
from tests.e2e.test_leader import LEASE_SECONDS, two_replicas

Obj = dict[str, Any]
GANG = 16
PARTLY_BOUND = "PartlyBound"


@contextlib.contextmanager
def binds_stopped(cluster: Cluster, namespace: str, pods: Sequence[str]) -> Iterator[None]:
    """While in force, the bindings of `pods` (names in `namespace`) are refused with a
    failure the binder sends again (sim: 503; kube-apiserver: 403 from an admission
    policy); lifted on exit."""
    if cluster.sim is not None:
        rule = {"rate": 1.0, "code": 503, "verbs": ["create"], "resources": ["pods/binding"]}
        cluster.sim.set_faults({"errors": [{**rule, "names": list(pods)}]})
        try:
            yield
        finally:
            cluster.sim.set_faults({})
        return
    policy = _refuse_bindings(cluster, namespace, pods)
    try:
        yield
    finally:
        _lift(cluster, policy)


def _refuse_bindings(cluster: Cluster, namespace: str, pods: Sequence[str]) -> str:
    api = client.AdmissionregistrationV1Api(cluster.api)
    name = f"muster-e2e-hold-binds-{uuid.uuid4().hex[:8]}"
    names = json.dumps(list(pods))
    api.create_validating_admission_policy(
        {
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods/binding"],
                        }
                    ]
                },
                "validations": [
                    {
                        "expression": f"request.namespace != '{namespace}' || "
                        f"!(object.metadata.name in {names})",
                        "reason": "Forbidden",
                        "message": "held by the test",
                    }
                ],
            },
        }
    )
    api.create_validating_admission_policy_binding(
        {"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    )
    # The policy is in force once the API server's admission has loaded it: a dry-run
    # binding (checked before the pod is looked up) is refused then.
    probe = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pods[0]}}
    probe["target"] = {"apiVersion": "v1", "kind": "Node", "name": "nowhere"}

    def refused() -> bool:
        try:
            cluster.core.create_namespaced_pod_binding(
                pods[0], namespace, probe, dry_run="All", _preload_content=False
            )
        except ApiException as error:
            return error.status == 403
        return False

    try:
        wait_for(refused, 30, message="the admission policy holding the binds in force")
    except AssertionError:
        _lift(cluster, name)
        raise
    return name


def _lift(cluster: Cluster, policy: str) -> None:
    api = client.AdmissionregistrationV1Api(cluster.api)
    with contextlib.suppress(ApiException):
        api.delete_validating_admission_policy_binding(policy)
    with contextlib.suppress(ApiException):
        api.delete_validating_admission_policy(policy)


def bound_members(cluster: Cluster, namespace: str, name: str, size: int) -> list[str]:
    return bound(cluster.placements(namespace), [f"{name}-{i}" for i in range(size)])


def partly_bound_condition(cluster: Cluster, namespace: str, name: str) -> Obj | None:
    return condition(cluster.podgroup(namespace, name), PARTLY_BOUND)


def create_queue(cluster: Cluster, name: str) -> None:
    cluster.create_queue(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": 1},
        }
    )


@pytest.fixture
def urgent_class(cluster: Cluster) -> Iterator[str]:
    """A PriorityClass far above the gang's (0)."""
    name = f"muster-e2e-urgent-{uuid.uuid4().hex[:6]}"
    scheduling = client.SchedulingV1Api(cluster.api)
    scheduling.create_priority_class({"metadata": {"name": name}, "value": 100000})
    yield name
    with contextlib.suppress(ApiException):
        scheduling.delete_priority_class(name)


@pytest.mark.timeout(90)
@pytest.mark.nodes(4, "4")
@pytest.mark.parametrize("after", [1, 8, 15])
def test_a_gang_whose_leader_dies_after_some_binds_ends_whole_and_nobody_takes_its_room(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    urgent_class: str,
    after: int,
) -> None:
    # Four nodes of 4 cpu: the gang of 16 one-cpu pods takes all of them. While it is cut, a
    # pod no scheduler placed sits on one cpu of its room, so the new leader cannot complete
    # it at once; another queue's gang of higher priority comes meanwhile: any room it took,
    # the gang could never complete in.
    leader, standby, _ = two_replicas(cluster, start_scheduler)
    other = f"q-{uuid.uuid4().hex[:6]}"
    create_queue(cluster, other)
    held = [f"cut-{i}" for i in range(after, GANG)]

    with BindingLog(cluster, namespace) as log:
        with binds_stopped(cluster, namespace, held):
            cluster.submit(namespace, *make_gang("cut", GANG, cpu="1"))
            wait_for(
                lambda: len(bound_members(cluster, namespace, "cut", GANG)) == after,
                timeout=20,
                interval=0.05,
                message=lambda: f"{after} of the gang bound\n{cluster.describe(namespace)}",
            )
            leader.process.kill()
            assert len(bound_members(cluster, namespace, "cut", GANG)) == after
        squat_on_a_cpu_of_its_room(cluster, namespace)
        eager = [make_pod(f"eager-{i}", group="eager", cpu="1") for i in range(2)]
        for pod in eager:
            pod["spec"]["priorityClassName"] = urgent_class
        group = make_podgroup("eager", 2, queue=other, priority_class=urgent_class)
        cluster.submit(namespace, group, eager)

        # The new leader holds what is free of the gang's room, and says so.
        wait_for(
            lambda: (
                (partly_bound_condition(cluster, namespace, "cut") or {}).get("reason")
                == "PartlyBoundHolding"
            ),
            timeout=LEASE_SECONDS + 15,
            message=lambda: f"the new leader holding for the gang\n{cluster.describe(namespace)}",
        )
        assert standby.is_leader()
        standby.wait_sessions(3)
        assert len(bound_members(cluster, namespace, "cut", GANG)) == after
        cluster.core.delete_namespaced_pod("squatter", namespace, grace_period_seconds=0)

        wait_for(
            lambda: len(bound_members(cluster, namespace, "cut", GANG)) == GANG,
            timeout=20,
            interval=0.1,
            message=lambda: f"the gang completed by the new leader\n{cluster.describe(namespace)}",
        )
        assert bound_members(cluster, namespace, "eager", 2) == []
        assert log.double_binds() == {}
        assert not any(pod.startswith("eager-") for pod in log.nodes), log.nodes

    completed = wait_for(
        lambda: (
            found
            if (found := partly_bound_condition(cluster, namespace, "cut")) is not None
            and found["status"] == "False"
            else None
        ),
        timeout=10,
        message=lambda: f"the PodGroup's PartlyBound condition\n{cluster.describe(namespace)}",
    )
    assert completed["reason"] == "PartlyBoundCompleted"


def squat_on_a_cpu_of_its_room(cluster: Cluster, namespace: str) -> None:
    """A pod no scheduler placed (spec.nodeName set by its creator), of one cpu, on a node
    with room left."""
    used: dict[str, int] = {}
    for node in cluster.placements(namespace).values():
        if node:
            used[node] = used.get(node, 0) + 1
    room = next(node for node in node_names(cluster) if used.get(node, 0) < 4)
    squatter = make_pod("squatter", cpu="1", scheduler_name="default-scheduler")
    squatter["spec"]["nodeName"] = room
    cluster.create_pod(namespace, squatter)


def _pinned(pod: Obj, required: Sequence[str], preferred: str | None = None) -> Obj:
    """The pod, allowed only on the `required` nodes and preferring `preferred`."""
    terms = [
        {
            "matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": list(required)}
            ]
        }
    ]
    affinity: Obj = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }
    if preferred is not None:
        affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": 100,
                "preference": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": [preferred]}
                    ]
                },
            }
        ]
    return {**pod, "spec": {**pod["spec"], "affinity": affinity}}


def errors(scheduler: Any) -> float:
    return float(scheduler.metrics().value("muster_binds_total", result="error"))


@pytest.mark.timeout(90)
@pytest.mark.nodes(4, "4")
@pytest.mark.parametrize("room_elsewhere", [True, False], ids=["completed", "undone"])
def test_a_member_whose_node_is_deleted_before_its_bind_goes_elsewhere_or_the_gang_is_undone(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, room_elsewhere: bool
) -> None:
    # Three members may go only on the first two nodes; the fourth prefers the third node,
    # and may go on the fourth too (room_elsewhere) or nowhere else. Its bind is held while
    # the third node is deleted: the binder gives it up, for good.
    scheduler = start_scheduler(
        configurations=[{"name": "allocate", "arguments": {"partly-bound-timeout": "5s"}}]
    )
    n0, n1, n2, n3 = sorted(node_names(cluster))[:4]
    podgroup, pods = make_gang("cut", 4, cpu="1")
    pods = [_pinned(pod, [n0, n1]) for pod in pods[:3]] + [
        _pinned(pods[3], [n2, n3] if room_elsewhere else [n2], preferred=n2)
    ]

    with binds_stopped(cluster, namespace, ["cut-3"]):
        cluster.submit(namespace, podgroup, pods)
        wait_for(
            lambda: len(bound_members(cluster, namespace, "cut", 4)) == 3,
            timeout=20,
            interval=0.05,
            message=lambda: f"three of the gang bound\n{cluster.describe(namespace)}",
        )
        failed = errors(scheduler)
        cluster.core.delete_node(n2)
        wait_for(
            lambda: errors(scheduler) > failed,
            timeout=20,
            message=lambda: f"the bind to {n2} given up\n{cluster.describe(namespace)}",
        )

    if room_elsewhere:
        wait_for(
            lambda: cluster.placements(namespace).get("cut-3") == n3,
            timeout=20,
            message=lambda: f"cut-3 bound on {n3}\n{cluster.describe(namespace)}",
        )
        assert len(bound_members(cluster, namespace, "cut", 4)) == 4
        verdict = wait_for(
            lambda: partly_bound_condition(cluster, namespace, "cut"),
            timeout=10,
            message="the PodGroup's PartlyBound condition",
        )
        assert (verdict["status"], verdict["reason"]) == ("False", "PartlyBoundCompleted")
        return

    # No room anywhere: past its 5 s the gang is undone, its bound members evicted (bare
    # pods, which nobody recreates), and no member is left bound.
    wait_for(
        lambda: bound_members(cluster, namespace, "cut", 4) == [],
        timeout=30,
        message=lambda: f"the gang undone\n{cluster.describe(namespace)}",
    )
    assert sorted(cluster.placements(namespace)) == ["cut-3"]
    verdict = wait_for(
        lambda: (
            found
            if (found := partly_bound_condition(cluster, namespace, "cut")) is not None
            and found["reason"] == "PartlyBoundUndone"
            else None
        ),
        timeout=15,
        message=lambda: f"the PodGroup says it was undone\n{cluster.describe(namespace)}",
    )
    assert verdict["status"] == "False"
    reasons = {e["reason"] for e in cluster.events(namespace, "PodGroup", "cut")}
    # (Held for first, or undone at once: its time may be up by when the bind is given up.)
    assert {"PartlyBoundUndoing", "PartlyBoundUndone"} <= reasons
