"""PodGroups for pods that name none: the plan, and the handler against a fake API."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.api.errors import InvalidObject
from scheduler.controller.objects import ApiObjects, Obj, OwnerForbidden
from scheduler.controller.podgroups import (
    OWNER_FORBIDDEN,
    controlling_owner,
    ensure_podgroup,
    plan_podgroup,
)
from scheduler.kube.errors import StatusError

NAMES = frozenset({"muster"})


def pod(
    name: str = "p",
    *,
    cpu: str = "500m",
    owner: str | None = "rs-1",
    annotations: dict[str, str] | None = None,
    scheduler: str = "muster",
    priority_class: str = "",
) -> Obj:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "annotations": dict(annotations or {}),
    }
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Other", "name": "x", "uid": "not-controller"},
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": owner,
                "controller": True,
            },
        ]
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"metadata": meta, "spec": spec}


def owner_with(min_member: str | None) -> Obj:
    annotations = (
        {} if min_member is None else {"scheduling.volcano.sh/group-min-member": min_member}
    )
    return {
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ns", "annotations": annotations},
    }


class FakeObjects:
    """ClusterObjects in memory: PodGroups by name, pod annotations, the owner and ns queue."""

    def __init__(
        self,
        owner: Obj | None = None,
        namespace_queue: str = "",
        forbidden: OwnerForbidden | None = None,
    ) -> None:
        self.owner_doc = owner
        self.forbidden = forbidden
        self.ns_queue = namespace_queue
        self.podgroups: dict[str, Obj] = {}
        self.annotations: dict[str, dict[str, str]] = {}
        self.creates = 0

    async def owner(self, namespace: str, reference: Obj) -> Obj | None:
        if self.forbidden is not None:
            raise self.forbidden
        return self.owner_doc

    async def namespace_queue(self, namespace: str) -> str:
        return self.ns_queue

    async def create_podgroup(self, namespace: str, body: Obj) -> bool:
        self.creates += 1
        name = body["metadata"]["name"]
        if name in self.podgroups:
            return False  # 409 AlreadyExists
        self.podgroups[name] = body
        return True

    async def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        self.annotations.setdefault(name, {}).update(annotations)

    async def set_queue_state(self, name: str, state: str) -> None:
        raise AssertionError("not used")

    async def ensure_queue(self, name: str) -> None:
        raise AssertionError("not used")

    async def ensure_peering(self, name: str) -> None:
        raise AssertionError("not used")


def test_minresources_are_the_pod_request_times_the_owners_min_member() -> None:
    plan = plan_podgroup(pod(cpu="500m"), owner_with("4"), "")
    assert plan.name == "podgroup-rs-1"
    assert plan.manifest["spec"] == {"minMember": 4, "minResources": {"cpu": "2", "memory": "4Gi"}}


def test_an_owner_without_the_annotation_means_a_gang_of_one() -> None:
    assert plan_podgroup(pod(), owner_with(None), "").manifest["spec"]["minMember"] == 1
    assert plan_podgroup(pod(), None, "").manifest["spec"]["minMember"] == 1


def test_the_podgroup_is_owned_by_the_pods_controller_for_garbage_collection() -> None:
    references = plan_podgroup(pod(), None, "").manifest["metadata"]["ownerReferences"]
    assert references == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "web",
            "uid": "rs-1",
            "controller": True,
        }
    ]


def test_a_pod_without_owner_gets_a_group_of_its_own_owned_by_itself() -> None:
    plan = plan_podgroup(pod("solo", owner=None), None, "")
    assert plan.name == "podgroup-uid-solo"
    assert plan.manifest["metadata"]["ownerReferences"][0]["kind"] == "Pod"


def test_queue_comes_from_the_pod_then_the_namespace() -> None:
    annotated = pod(annotations={"scheduling.volcano.sh/queue-name": "team"})
    assert plan_podgroup(annotated, None, "ns-queue").manifest["spec"]["queue"] == "team"
    assert plan_podgroup(pod(), None, "ns-queue").manifest["spec"]["queue"] == "ns-queue"
    assert "queue" not in plan_podgroup(pod(), None, "").manifest["spec"]


def test_priority_class_is_copied_from_the_pod() -> None:
    plan = plan_podgroup(pod(priority_class="high"), None, "")
    assert plan.manifest["spec"]["priorityClassName"] == "high"


@pytest.mark.parametrize("value", ["four", "0", "-2"])
def test_an_unusable_min_member_annotation_names_the_owner_and_the_field(value: str) -> None:
    with pytest.raises(InvalidObject) as caught:
        plan_podgroup(pod(), owner_with(value), "")
    assert "Job ns/train" in str(caught.value)
    assert "group-min-member" in str(caught.value)


def test_replays_make_one_podgroup_per_owner_and_annotate_every_pod() -> None:
    objects = FakeObjects(owner=owner_with("3"))
    created: list[str] = []
    for name in ("a", "b", "c", "a", "b"):  # a restart replays every event
        made = asyncio.run(ensure_podgroup(objects, pod(name), NAMES, on_created=created.append))
        assert made == "podgroup-rs-1"
    assert list(objects.podgroups) == ["podgroup-rs-1"]
    assert created == ["podgroup-rs-1"], "counted once, when it was made"
    assert objects.annotations == {
        name: {"scheduling.k8s.io/group-name": "podgroup-rs-1"} for name in ("a", "b", "c")
    }


def test_pods_that_are_not_ours_or_already_grouped_or_finished_are_left_alone() -> None:
    objects = FakeObjects()
    grouped = pod(annotations={"scheduling.k8s.io/group-name": "mine"})
    finished = pod()
    finished["status"] = {"phase": "Succeeded"}
    for candidate in (pod(scheduler="default-scheduler"), grouped, finished):
        assert asyncio.run(ensure_podgroup(objects, candidate, NAMES)) is None
    assert objects.creates == 0 and objects.annotations == {}


class ForbiddingClient:
    """A KubeClient whose API server serves apps/v1 but answers 403 on any object."""

    async def get_json(self, path: str) -> Any:
        if path == "/apis/apps/v1":
            return {
                "resources": [{"name": "replicasets", "kind": "ReplicaSet", "namespaced": True}]
            }
        raise StatusError(403, "Forbidden", "replicasets.apps is forbidden", "GET", path)


def test_an_owner_kind_rbac_does_not_grant_is_reported_with_the_rule_to_add() -> None:
    objects = ApiObjects(ForbiddingClient())  # type: ignore[arg-type]
    reference = controlling_owner(pod())
    assert reference is not None
    with pytest.raises(OwnerForbidden) as caught:
        asyncio.run(objects.owner("ns", reference))
    message = str(caught.value)
    assert "ReplicaSet ns/web" in message
    assert "ClusterRole muster-controller" in message
    assert '{apiGroups: ["apps"], resources: [replicasets], verbs: [get]}' in message
    assert "deploy/base/controller/rbac.yaml" in message


def test_a_forbidden_owner_still_gets_a_podgroup_of_one_and_one_warning_naming_the_rule() -> None:
    forbidden = OwnerForbidden("RayCluster", "ns/raycluster", "ray.io", "rayclusters")
    objects = FakeObjects(owner=owner_with("4"), forbidden=forbidden)
    warnings: list[tuple[str, str]] = []

    def warn(reason: str, message: str) -> None:
        warnings.append((reason, message))

    for name in ("a", "b"):
        assert asyncio.run(ensure_podgroup(objects, pod(name), NAMES, warn)) == "podgroup-rs-1"
    group = objects.podgroups["podgroup-rs-1"]
    assert group["spec"]["minMember"] == 1
    assert group["metadata"]["ownerReferences"][0]["uid"] == "rs-1"
    assert set(objects.annotations) == {"a", "b"}
    (reason, message), *more = warnings
    assert not more, "one warning per PodGroup, not one per pod"
    assert reason == OWNER_FORBIDDEN
    assert '{apiGroups: ["ray.io"], resources: [rayclusters], verbs: [get]}' in message
    assert "minMember 1" in message and "podgroup-rs-1" in message
