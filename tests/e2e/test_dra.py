"""GPU gangs through Dynamic Resource Allocation end to end: each test publishes its own
driver's devices in ResourceSlices (as a DRA driver's kubelet plugin does) and a DeviceClass
for them; the pods claim devices from ResourceClaimTemplates, whose claims the resourceclaim
controller makes (sim's stand-in, or kube-controller-manager's on a real cluster). muster
places a gang only when every claim of every member gets a device where its pod lands,
chooses the devices for the whole gang at once, and writes each allocation before the bind."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    Cluster,
    Obj,
    bound,
    make_gang,
    make_pod,
    node_names,
    placement_verdict,
    wait_for,
)

RESOURCE_GROUP, RESOURCE_VERSION = "resource.k8s.io", "v1"
# kube-scheduler's words for a node where a pod's claims get no devices
ALLOCATE = "cannot allocate all claims"


@dataclass
class Devices:
    """This test's DRA driver: its DeviceClass, the ResourceSlices it publishes, and the
    cluster-scoped objects to delete when the test ends."""

    cluster: Cluster
    driver: str
    created: list[tuple[str, str]] = field(default_factory=list)

    def _create(self, plural: str, body: Obj, namespace: str | None = None) -> Obj:
        custom = self.cluster.custom
        if namespace is None:
            found = custom.create_cluster_custom_object(
                RESOURCE_GROUP, RESOURCE_VERSION, plural, body
            )
            self.created.append((plural, body["metadata"]["name"]))
        else:
            found = custom.create_namespaced_custom_object(
                RESOURCE_GROUP, RESOURCE_VERSION, namespace, plural, body
            )
        return dict(found)

    def device_class(self, name: str, expression: str = "") -> str:
        """A DeviceClass of this driver's devices (and `expression`'s), named for the test."""
        full = f"{name}-{self.driver.split('.')[0]}"
        selectors = [{"cel": {"expression": f'device.driver == "{self.driver}"'}}]
        if expression:
            selectors.append({"cel": {"expression": expression}})
        self._create(
            "deviceclasses", {"metadata": {"name": full}, "spec": {"selectors": selectors}}
        )
        return full

    def publish(self, node: str, models: list[str]) -> None:
        """One GPU per model on the node, in one ResourceSlice of a pool named for the node."""
        devices = [
            {"name": f"gpu-{index}", "attributes": {"model": {"string": model}}}
            for index, model in enumerate(models)
        ]
        self._create(
            "resourceslices",
            {
                "metadata": {"name": f"{node}-{self.driver}"},
                "spec": {
                    "driver": self.driver,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                    "nodeName": node,
                    "devices": devices,
                },
            },
        )

    def template(self, namespace: str, name: str, device_class: str) -> None:
        """A ResourceClaimTemplate of one device of the class."""
        request = {"name": "gpu", "exactly": {"deviceClassName": device_class}}
        self._create(
            "resourceclaimtemplates",
            {"metadata": {"name": name}, "spec": {"spec": {"devices": {"requests": [request]}}}},
            namespace,
        )

    def claims(self, namespace: str) -> list[Obj]:
        found: Any = self.cluster.custom.list_namespaced_custom_object(
            RESOURCE_GROUP, RESOURCE_VERSION, namespace, "resourceclaims"
        )
        return list(found.get("items", []))

    def allocated(self, namespace: str) -> dict[str, tuple[str, str, list[str]]]:
        """Pod name -> (pool, device, names of the pods it is reserved for), for each
        allocated claim made from a pod's template."""
        uids = {p["metadata"]["uid"]: p["metadata"]["name"] for p in self.cluster.pods(namespace)}
        found = {}
        for claim in self.claims(namespace):
            owners = claim["metadata"].get("ownerReferences", [])
            pod = next((o["name"] for o in owners if o["kind"] == "Pod"), None)
            status = claim.get("status") or {}
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results", [])
            reserved = [uids.get(r.get("uid", ""), "?") for r in status.get("reservedFor", [])]
            for result in results:
                if pod is not None:
                    found[pod] = (result["pool"], result["device"], reserved)
        return found

    def close(self) -> None:
        for plural, name in reversed(self.created):
            try:
                self.cluster.custom.delete_cluster_custom_object(
                    RESOURCE_GROUP, RESOURCE_VERSION, plural, name
                )
            except ApiException as error:
                if error.status != 404:
                    raise


@pytest.fixture
def devices(cluster: Cluster, namespace: str) -> Iterator[Devices]:
    # a driver of its own per test (a name of at most 63 bytes): no other test's devices
    found = Devices(cluster, f"gpu-{hashlib.sha1(namespace.encode()).hexdigest()[:8]}.muster.dev")
    try:
        yield found
    finally:
        found.close()


def claiming(pod: Obj, template: str) -> Obj:
    """The pod, claiming one device from the ResourceClaimTemplate for its container."""
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return pod


def all_bound(cluster: Cluster, namespace: str, names: list[str]) -> bool:
    return len(bound(cluster.placements(namespace), names)) == len(names)


@pytest.mark.nodes(2, "8")
def test_a_gang_whose_pods_each_claim_a_gpu_runs_whole_with_a_device_of_its_node_each(
    cluster: Cluster, namespace: str, devices: Devices, start_scheduler: StartScheduler
) -> None:
    first, second = node_names(cluster)
    gpu = devices.device_class("gpu")
    devices.publish(first, ["a100", "a100"])
    devices.publish(second, ["a100", "a100"])
    devices.template(namespace, "one-gpu", gpu)
    start_scheduler(period=0.5)
    podgroup, pods = make_gang("train", 4)
    cluster.submit(namespace, podgroup, [claiming(p, "one-gpu") for p in pods])
    names = [p["metadata"]["name"] for p in pods]

    wait_for(
        lambda: all_bound(cluster, namespace, names),
        timeout=30,
        message=lambda: f"train bound whole\n{cluster.describe(namespace)}",
    )
    placements = cluster.placements(namespace)
    allocated = devices.allocated(namespace)
    assert sorted(allocated) == names, allocated
    for pod, (pool, _, reserved) in allocated.items():
        assert pool == placements[pod], f"{pod} on {placements[pod]}, its device in {pool}"
        assert reserved == [pod], f"{pod}'s claim is reserved for {reserved}"
    assert len({(pool, device) for pool, device, _ in allocated.values()}) == 4


@pytest.mark.nodes(1, "8")
def test_a_gang_gets_the_assignment_where_every_member_fits_though_the_first_could_take_any(
    cluster: Cluster, namespace: str, devices: Devices, start_scheduler: StartScheduler
) -> None:
    # One node with an a100 and an h100. Pod x (created first) takes any GPU, pod y only an
    # a100: pod by pod, x could take the a100 and y never run. The gang's x gets the h100.
    (node,) = node_names(cluster)
    driver = devices.driver
    any_gpu = devices.device_class("any")
    a100 = devices.device_class("a100", f'device.attributes["{driver}"].model == "a100"')
    devices.publish(node, ["a100", "h100"])
    devices.template(namespace, "any-gpu", any_gpu)
    devices.template(namespace, "an-a100", a100)
    podgroup, (x, y) = make_gang("pair", 2)
    cluster.create_podgroup(namespace, podgroup)
    cluster.create_pod(namespace, claiming(x, "any-gpu"))
    cluster.create_pod(namespace, claiming(y, "an-a100"))
    start_scheduler(period=0.5)

    wait_for(
        lambda: all_bound(cluster, namespace, ["pair-0", "pair-1"]),
        timeout=30,
        message=lambda: f"pair bound whole\n{cluster.describe(namespace)}",
    )
    allocated = devices.allocated(namespace)
    assert allocated["pair-1"][:2] == (node, "gpu-0"), allocated  # the a100
    assert allocated["pair-0"][:2] == (node, "gpu-1"), allocated  # the h100


@pytest.mark.nodes(2, "8")
def test_a_gang_short_of_devices_waits_whole_saying_so_and_runs_once_they_are_published(
    cluster: Cluster, namespace: str, devices: Devices, start_scheduler: StartScheduler
) -> None:
    first, second = node_names(cluster)
    gpu = devices.device_class("gpu")
    devices.publish(first, ["a100", "a100", "a100"])
    devices.template(namespace, "one-gpu", gpu)
    scheduler = start_scheduler(period=0.5)
    podgroup, pods = make_gang("train", 4)
    cluster.submit(namespace, podgroup, [claiming(p, "one-gpu") for p in pods])
    names = [p["metadata"]["name"] for p in pods]

    def says_why() -> str | None:
        found = cluster.podgroup(namespace, "train")
        for item in (found.get("status") or {}).get("conditions") or []:
            if item.get("type") == "Unschedulable" and ALLOCATE in item.get("message", ""):
                return str(item["message"])
        return None

    message = wait_for(
        says_why,
        timeout=30,
        message=lambda: f"train says its claims get no devices\n{cluster.describe(namespace)}",
    )
    scheduler.wait_sessions(scheduler.sessions() + 2)
    assert bound(cluster.placements(namespace), names) == [], message
    assert all(
        not (claim.get("status") or {}).get("allocation") for claim in devices.claims(namespace)
    ), "a claim of a waiting gang was allocated"

    devices.publish(second, ["a100"])
    wait_for(
        lambda: all_bound(cluster, namespace, names),
        timeout=30,
        message=lambda: f"train bound once a 4th GPU is published\n{cluster.describe(namespace)}",
    )
    assert len(devices.allocated(namespace)) == 4


@pytest.mark.nodes(1, "8")
def test_a_restarted_scheduler_never_gives_an_allocated_device_again(
    cluster: Cluster, namespace: str, devices: Devices, start_scheduler: StartScheduler
) -> None:
    (node,) = node_names(cluster)
    gpu = devices.device_class("gpu")
    devices.publish(node, ["a100"] * 3)
    devices.template(namespace, "one-gpu", gpu)
    scheduler = start_scheduler(period=0.5)
    podgroup, pods = make_gang("first", 2)
    cluster.submit(namespace, podgroup, [claiming(p, "one-gpu") for p in pods])
    wait_for(
        lambda: all_bound(cluster, namespace, ["first-0", "first-1"]),
        timeout=30,
        message=lambda: f"first bound\n{cluster.describe(namespace)}",
    )
    scheduler.process.stop()

    # Everything the next scheduler knows of the devices in use is on the API server.
    scheduler = start_scheduler(period=0.5)
    podgroup, pods = make_gang("second", 2)
    cluster.submit(namespace, podgroup, [claiming(p, "one-gpu") for p in pods])
    podgroup, pods = make_gang("third", 1)
    cluster.submit(namespace, podgroup, [claiming(p, "one-gpu") for p in pods])
    wait_for(
        lambda: all_bound(cluster, namespace, ["third-0"]),
        timeout=30,
        message=lambda: f"third bound on the one GPU left\n{cluster.describe(namespace)}",
    )
    scheduler.wait_sessions(scheduler.sessions() + 3)
    assert bound(cluster.placements(namespace), ["second-0", "second-1"]) == []
    allocated = devices.allocated(namespace)
    assert sorted(allocated) == ["first-0", "first-1", "third-0"], allocated
    assert len({device for _, device, _ in allocated.values()}) == 3, allocated


@pytest.mark.nodes(2, "8")
def test_a_gang_with_a_claim_feature_muster_refuses_binds_nothing_and_names_the_feature(
    cluster: Cluster, namespace: str, devices: Devices, start_scheduler: StartScheduler
) -> None:
    first, _ = node_names(cluster)
    gpu = devices.device_class("gpu")
    devices.publish(first, ["a100", "a100", "a100"])
    devices.template(namespace, "one-gpu", gpu)
    request = {
        "name": "gpu",
        "exactly": {"deviceClassName": gpu, "capacity": {"requests": {"memory": "10Gi"}}},
    }
    devices._create(
        "resourceclaimtemplates",
        {
            "metadata": {"name": "some-memory"},
            "spec": {"spec": {"devices": {"requests": [request]}}},
        },
        namespace,
    )
    template: Any = cluster.custom.get_namespaced_custom_object(
        RESOURCE_GROUP, RESOURCE_VERSION, namespace, "resourceclaimtemplates", "some-memory"
    )
    if "capacity" not in template["spec"]["spec"]["devices"]["requests"][0]["exactly"]:
        pytest.skip("this API server does not serve capacity requests (DRAConsumableCapacity)")
    scheduler = start_scheduler(period=0.5)
    podgroup, pods = make_gang("db", 3)
    cluster.submit(
        namespace,
        podgroup,
        [
            claiming(pods[0], "one-gpu"),
            claiming(pods[1], "one-gpu"),
            claiming(pods[2], "some-memory"),
        ],
    )

    def verdict() -> Obj | None:
        found = placement_verdict(cluster.podgroup(namespace, "db"))
        return found if found and "capacity" in found.get("message", "") else None

    found = wait_for(
        verdict,
        timeout=30,
        message=lambda: f"podgroup db names the capacity request\n{cluster.describe(namespace)}",
    )
    assert f"pod {namespace}/db-2" in found["message"], found
    assert "is not honoured yet" in found["message"], found
    scheduler.wait_sessions(scheduler.sessions() + 2)
    assert bound(cluster.placements(namespace)) == []
    assert all(not (c.get("status") or {}).get("allocation") for c in devices.claims(namespace))


@pytest.fixture
def priority_classes(cluster: Cluster, namespace: str) -> Iterator[tuple[str, str]]:
    api = client.SchedulingV1Api(cluster.api)
    names = (f"low-{namespace[-5:]}", f"high-{namespace[-5:]}")
    for name, value in zip(names, (10, 1000), strict=True):
        api.create_priority_class({"metadata": {"name": name}, "value": value})
    yield names
    for name in names:
        api.delete_priority_class(name)


@pytest.mark.nodes(1, "8")
def test_a_high_priority_gang_preempts_the_pods_whose_devices_it_needs_though_cpu_is_free(
    cluster: Cluster,
    namespace: str,
    devices: Devices,
    start_scheduler: StartScheduler,
    priority_classes: tuple[str, str],
) -> None:
    low, high = priority_classes
    (node,) = node_names(cluster)
    gpu = devices.device_class("gpu")
    devices.publish(node, ["a100", "a100"])
    devices.template(namespace, "one-gpu", gpu)
    start_scheduler(actions="enqueue, allocate, preempt, backfill", period=0.2)
    for index in range(2):
        pod = claiming(make_pod(f"low-{index}"), "one-gpu")
        pod["spec"]["priorityClassName"] = low
        cluster.create_pod(namespace, pod)
    wait_for(
        lambda: all_bound(cluster, namespace, ["low-0", "low-1"]),
        timeout=30,
        message=lambda: f"the low pods bound\n{cluster.describe(namespace)}",
    )

    podgroup, pods = make_gang("high", 2)
    podgroup["spec"]["priorityClassName"] = high
    for pod in pods:
        pod["spec"]["priorityClassName"] = high
    cluster.submit(namespace, podgroup, [claiming(p, "one-gpu") for p in pods])
    wait_for(
        lambda: all_bound(cluster, namespace, ["high-0", "high-1"]),
        timeout=60,
        message=lambda: f"the high gang bound on the freed GPUs\n{cluster.describe(namespace)}",
    )
    names = {p["metadata"]["name"] for p in cluster.pods(namespace)}
    assert not {"low-0", "low-1"} & names, names
    preempted = [
        e
        for n in ("low-0", "low-1")
        for e in cluster.events(namespace, "Pod", n)
        if e.get("reason") == "Preempted"
    ]
    assert len(preempted) == 2, preempted
    allocated = devices.allocated(namespace)
    assert {pod for pod in allocated if pod.startswith("high-")} == {"high-0", "high-1"}
    assert len({allocated[p][1] for p in ("high-0", "high-1")}) == 2, allocated
