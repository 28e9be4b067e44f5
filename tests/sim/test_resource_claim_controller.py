"""sim's stand-in for the resourceclaim controller and the kubelet's side of DRA: claims made
from templates, reserved for bound pods, released and deallocated when their pods go; a pod
that starts only once its claims are reserved for it.

What the controller does was watched on kube-controller-manager 1.36 doing the same (the claim's
name, annotations, labels, owner and spec, the pod's status, the event of a missing template,
reservation, deallocation, deletion) and is mirrored here."""

from __future__ import annotations

import time
from typing import Any

import pytest

from muster_sim.cluster.resource_claims import generate_name
from tests.sim.conftest import Raw, bind, create_namespace, unique, wait_for
from tests.sim.test_dra_claims import claims_path, templates_path

PROTECT = "resource.kubernetes.io/delete-protection"


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    namespace = create_namespace(raw, "claimctl")
    template = {
        "metadata": {"name": "gpu"},
        "spec": {
            "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "c"}}]}
            },
        },
    }
    code, body = raw.json("POST", templates_path(namespace), template)
    assert code == 201, body
    return namespace


def pod_claiming(name: str, claim_name: str = "gpu", **claim: Any) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "busybox",
        "resources": {"claims": [{"name": claim_name}]},
    }
    return {
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "nobody",
            "resourceClaims": [{"name": claim_name, **claim}],
            "containers": [container],
        },
    }


class Pods:
    """Pods of one namespace and their claims, through the API as the tests' client."""

    def __init__(self, raw: Raw, namespace: str) -> None:
        self.raw, self.namespace = raw, namespace

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        code, pod = self.raw.json("POST", f"/api/v1/namespaces/{self.namespace}/pods", body)
        assert code == 201, pod
        return dict(pod)

    def get(self, name: str) -> dict[str, Any]:
        return dict(self.raw.json("GET", f"/api/v1/namespaces/{self.namespace}/pods/{name}")[1])

    def claim_of(self, name: str) -> str:
        """The claim the controller recorded for the pod's (only) claim."""
        statuses = wait_for(lambda: self.get(name)["status"].get("resourceClaimStatuses"))
        return str(statuses[0]["resourceClaimName"])

    def claim(self, name: str) -> tuple[int, Any]:
        return self.raw.json("GET", f"{claims_path(self.namespace)}/{name}")

    def allocate(self, claim_name: str, device: str = "gpu-0", reserve_for: Any = None) -> None:
        """What a scheduler writes: the finalizer, then the allocation (and a consumer)."""
        path = f"{claims_path(self.namespace)}/{claim_name}"
        claim = self.claim(claim_name)[1]
        claim["metadata"]["finalizers"] = [PROTECT]
        code, claim = self.raw.json("PUT", path, claim)
        assert code == 200, claim
        result = {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": device}
        claim["status"] = {"allocation": {"devices": {"results": [result]}}}
        if reserve_for is not None:
            meta = reserve_for["metadata"]
            claim["status"]["reservedFor"] = [
                {"resource": "pods", "name": meta["name"], "uid": meta["uid"]}
            ]
        code, claim = self.raw.json("PUT", f"{path}/status", claim)
        assert code == 200, claim

    def finish(self, name: str) -> None:
        pod = self.get(name)
        pod["status"]["phase"] = "Succeeded"
        path = f"/api/v1/namespaces/{self.namespace}/pods/{name}/status"
        assert self.raw.json("PUT", path, pod)[0] == 200

    def events(self, name: str) -> list[tuple[str, str, str, str]]:
        items = self.raw.json("GET", f"/api/v1/namespaces/{self.namespace}/events")[1]["items"]
        return [
            (e["type"], e["reason"], e["message"], e["source"]["component"])
            for e in items
            if e["involvedObject"]["name"] == name
        ]


@pytest.fixture(scope="module")
def pods(raw: Raw, ns: str) -> Pods:
    return Pods(raw, ns)


def test_a_pod_s_template_becomes_its_own_claim_as_the_real_controller_makes_it(
    pods: Pods,
) -> None:
    pod = pods.create(pod_claiming("trainer", resourceClaimTemplateName="gpu"))
    name = pods.claim_of("trainer")
    assert name.startswith("trainer-gpu-") and len(name) == len("trainer-gpu-") + 5
    code, claim = pods.claim(name)
    assert code == 200, claim
    meta = claim["metadata"]
    assert meta["generateName"] == "trainer-gpu-"
    assert meta["labels"] == {"team": "a"}
    assert meta["annotations"] == {"note": "x", "resource.kubernetes.io/pod-claim-name": "gpu"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": pod["metadata"]["uid"],
            "controller": True,
        }
    ]
    assert "finalizers" not in meta
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "c"
    assert claim["status"] == {}
    assert pods.get("trainer")["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": name}
    ]


def test_long_names_are_cut_in_proportion_with_no_trailing_dash(pods: Pods) -> None:
    pod_name, claim_name = "drasim-" + "p" * 43, "c" * 30
    pods.create(pod_claiming(pod_name, claim_name, resourceClaimTemplateName="gpu"))
    made = pods.claim_of(pod_name)
    # as kube-controller-manager 1.36 named it: 34 + "-" + 20 characters, then 5 random
    assert made[:-5] == "drasim-" + "p" * 27 + "-" + "c" * 20
    assert pods.claim(made)[1]["metadata"]["generateName"] == made[:-5]


@pytest.mark.parametrize(
    ("pod", "claim", "expected"),
    [
        ("p", "gpu", "p-gpu-"),
        ("a" * 39, "b" * 16, "a" * 39 + "-" + "b" * 16 + "-"),
        ("a" * 40, "b" * 16, "a" * 39 + "-" + "b" * 15),
    ],
    ids=["short", "57 characters", "58 characters"],
)
def test_generate_name_is_cut_only_past_57_characters(pod: str, claim: str, expected: str) -> None:
    assert generate_name(pod, claim) == expected


def test_a_missing_template_is_a_warning_event_on_the_pod(pods: Pods) -> None:
    pods.create(pod_claiming("orphan", resourceClaimTemplateName="missing"))
    events = wait_for(lambda: pods.events("orphan"))
    assert events == [
        (
            "Warning",
            "FailedResourceClaimCreation",
            'PodResourceClaim gpu: resource claim template "missing": '
            'resourceclaimtemplate.resource.k8s.io "missing" not found',
            "resource_claim",
        )
    ]
    assert pods.get("orphan")["status"].get("resourceClaimStatuses") is None


def test_a_template_that_appears_later_gets_the_pod_its_claim(raw: Raw, pods: Pods) -> None:
    pods.create(pod_claiming("late", resourceClaimTemplateName="later"))
    wait_for(lambda: pods.events("late"))
    template = {
        "metadata": {"name": "later"},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "c"}}]}
            }
        },
    }
    assert raw.json("POST", templates_path(pods.namespace), template)[0] == 201
    assert pods.claim_of("late").startswith("late-gpu-")


def test_a_bound_pod_s_allocated_claim_is_reserved_for_it_and_it_starts(
    core: Any, pods: Pods
) -> None:
    pods.create(pod_claiming("bound", resourceClaimTemplateName="gpu"))
    name = pods.claim_of("bound")
    pods.allocate(name)
    # not bound yet: the scheduler reserves, the controller does not
    assert pods.claim(name)[1]["status"].get("reservedFor") is None
    bind(core, pods.namespace, "bound", "sim-node-0000")
    reserved = wait_for(lambda: pods.claim(name)[1]["status"].get("reservedFor"))
    uid = pods.get("bound")["metadata"]["uid"]
    assert reserved == [{"resource": "pods", "name": "bound", "uid": uid}]
    assert wait_for(lambda: pods.get("bound")["status"]["phase"] == "Running")


def test_a_done_pod_s_claim_is_deallocated_and_deleted(core: Any, pods: Pods) -> None:
    pod = pods.create(pod_claiming("done", resourceClaimTemplateName="gpu"))
    name = pods.claim_of("done")
    pods.allocate(name, reserve_for=pod)
    bind(core, pods.namespace, "done", "sim-node-0000")
    wait_for(lambda: pods.get("done")["status"]["phase"] == "Running")
    pods.finish("done")
    assert wait_for(lambda: pods.claim(name)[0] == 404)
    # and it is not made again for a pod that will not run
    claims = pods.raw.json("GET", claims_path(pods.namespace))[1]["items"]
    assert not [c for c in claims if c["metadata"]["name"].startswith("done-gpu-")]


def test_a_deleted_pod_s_claim_goes_with_it(core: Any, pods: Pods) -> None:
    pod = pods.create(pod_claiming("gone", resourceClaimTemplateName="gpu"))
    name = pods.claim_of("gone")
    pods.allocate(name, reserve_for=pod)
    bind(core, pods.namespace, "gone", "sim-node-0000")
    path = f"/api/v1/namespaces/{pods.namespace}/pods/gone"
    assert pods.raw.json("DELETE", path)[0] == 200
    assert wait_for(lambda: pods.claim(name)[0] == 404)


def shared_claim(raw: Raw, namespace: str, name: str) -> None:
    body = {
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "c"}}]}},
    }
    code, answer = raw.json("POST", claims_path(namespace), body)
    assert code == 201, answer


def test_an_allocated_claim_nobody_reserved_stays_allocated(raw: Raw, pods: Pods) -> None:
    name = unique("unused")
    shared_claim(raw, pods.namespace, name)
    pods.allocate(name)
    # the controller deallocates only when it removes the last consumer: give it time to err
    time.sleep(0.3)
    claim = pods.claim(name)[1]
    assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert claim["metadata"]["finalizers"] == [PROTECT]


def test_a_shared_claim_follows_its_pods_and_is_deallocated_with_the_last(
    core: Any, raw: Raw, pods: Pods
) -> None:
    name = unique("shared")
    shared_claim(raw, pods.namespace, name)
    pods.allocate(name, device="gpu-1")
    members = [unique("member"), unique("member")]
    for member in members:
        pods.create(pod_claiming(member, resourceClaimName=name))
        bind(core, pods.namespace, member, "sim-node-0001")
    wait_for(lambda: len(pods.claim(name)[1]["status"].get("reservedFor") or []) == 2)
    for member in members:
        assert wait_for(lambda m=member: pods.get(m)["status"]["phase"] == "Running")
    path = f"/api/v1/namespaces/{pods.namespace}/pods"
    raw.json("DELETE", f"{path}/{members[0]}?gracePeriodSeconds=0")
    remaining = wait_for(lambda: (pods.claim(name)[1]["status"].get("reservedFor") or [None])[0])
    assert remaining["name"] == members[1]
    assert pods.claim(name)[1]["status"]["allocation"]
    raw.json("DELETE", f"{path}/{members[1]}?gracePeriodSeconds=0")
    wait_for(lambda: not pods.claim(name)[1]["metadata"].get("finalizers"))
    claim = pods.claim(name)[1]
    # deallocated and unprotected, but kept: nobody generated it
    assert claim["status"] == {}


def test_an_unused_claim_deleted_while_allocated_is_deallocated_and_goes(
    raw: Raw, pods: Pods
) -> None:
    name = unique("deleted")
    shared_claim(raw, pods.namespace, name)
    pods.allocate(name)
    code, answer = raw.json("DELETE", f"{claims_path(pods.namespace)}/{name}")
    assert code == 200, answer
    assert wait_for(lambda: pods.claim(name)[0] == 404)


# -- the kubelet ------------------------------------------------------------------------


def test_a_pod_waits_until_its_claim_is_reserved_for_it_and_says_why(core: Any, pods: Pods) -> None:
    name = unique("waiter")
    pods.create(pod_claiming(name, resourceClaimName="not-yet"))
    bind(core, pods.namespace, name, "sim-node-0000")
    first = wait_for(lambda: pods.events(name))
    assert first == [
        (
            "Warning",
            "FailedPrepareDynamicResources",
            "Failed to prepare dynamic resources: fetch ResourceClaim not-yet: "
            'resourceclaims.resource.k8s.io "not-yet" not found',
            "kubelet",
        )
    ]
    pod = pods.get(name)
    assert pod["status"]["phase"] == "Pending"
    (container,) = pod["status"]["containerStatuses"]
    assert container["state"] == {"waiting": {"reason": "ContainerCreating"}}
    shared_claim(pods.raw, pods.namespace, "not-yet")
    claim = pods.claim("not-yet")[1]
    message = (
        f"Failed to prepare dynamic resources: pod {name} ({pod['metadata']['uid']}) is not "
        f"allowed to use ResourceClaim not-yet ({claim['metadata']['uid']})"
    )
    wait_for(lambda: any(e[2] == message for e in pods.events(name)))
    pods.allocate("not-yet", reserve_for=pod)
    assert wait_for(lambda: pods.get(name)["status"]["phase"] == "Running")
