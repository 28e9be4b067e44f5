"""sim's stand-in cluster autoscaler (muster_sim/cluster/autoscaler/): it answers
ProvisioningRequests as cluster-autoscaler's classes do, and scales up pod by pod for
unschedulable pods, on an in-process API server, scan by scan at given times."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from muster_sim.apiserver.patch import MERGE_PATCH
from muster_sim.apiserver.resources import CRDS, Registry
from muster_sim.apiserver.store import Store
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.cli import add_parser, config_from_args
from muster_sim.cluster.autoscaler.config import AutoscalerConfig, provisioning_request_crd
from muster_sim.cluster.autoscaler.node_groups import (
    GROUP_LABEL,
    NodeGroup,
    NodeGroupError,
    load_node_groups,
)
from muster_sim.cluster.autoscaler.scaler import Autoscaler
from muster_sim.cluster.nodes import NodePool

Obj = dict[str, Any]
NS = "default"
BEST_EFFORT = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK = "check-capacity.autoscaling.x-k8s.io"


def group(name: str = "big", max_size: int = 3, cpu: str = "8", **template: Any) -> NodeGroup:
    return NodeGroup(name, 0, max_size, NodePool(name, 0, cpu, "32Gi", **template))


class Cluster:
    """An API server with the ProvisioningRequest CRD and a stand-in autoscaler, scanned by
    hand: `scan(at)` runs one scan `at` seconds after the start."""

    def __init__(self, *groups: NodeGroup, **timings: float) -> None:
        self.api = ApiServer(Store(10_000), Registry())
        crd = yaml.safe_load(provisioning_request_crd().read_text())
        self.api.create(
            self.api.kind("apiextensions.k8s.io", "v1", "customresourcedefinitions"), None, crd
        )
        settings = {"node_delay": 2.0, "ready_delay": 2.0, "scan_interval": 1.0, **timings}
        self.autoscaler = Autoscaler(self.api, AutoscalerConfig(groups=groups, **settings))
        self.autoscaler.start_groups()
        # Set at the first scan: past the (whole-second) creation times of what the test
        # made before it, however long making it took.
        self.start: float | None = None

    def scan(self, at: float) -> None:
        if self.start is None:
            self.start = time.time() + 1
        self.autoscaler.tick(self.start + at)

    def nodes(self) -> dict[str, Obj]:
        return {n["metadata"]["name"]: n for n in self.api.store.iter_all("nodes")}

    def pods(self, name: str, count: int, cpu: str = "4", **annotations: str) -> list[str]:
        """Pending pods a scheduler found unschedulable (PodScheduled=False, Unschedulable)."""
        kind = self.api.kind("", "v1", "pods")
        names = []
        for index in range(count):
            body = {
                "metadata": {"name": f"{name}-{index}", "annotations": dict(annotations)},
                "spec": {
                    "schedulerName": "muster",
                    "containers": [
                        {"name": "m", "image": "pause", "resources": {"requests": {"cpu": cpu}}}
                    ],
                },
            }
            created = self.api.create(kind, NS, body)
            condition = {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/0 nodes are available",
            }
            self.api.patch(
                kind,
                NS,
                created["metadata"]["name"],
                MERGE_PATCH,
                {"status": {"conditions": [condition]}},
                "status",
            )
            names.append(created["metadata"]["name"])
        return names

    def bind(self, pod: str, node: str) -> None:
        self.api.bind(NS, pod, {"target": {"kind": "Node", "name": node}})

    def request(
        self, name: str, count: int, cpu: str = "4", class_name: str = BEST_EFFORT, **spec: Any
    ) -> None:
        if "no_template" not in spec:
            self.api.create(
                self.api.kind("", "v1", "podtemplates"),
                NS,
                {
                    "metadata": {"name": f"{name}-0"},
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "m",
                                    "image": "pause",
                                    "resources": {"requests": {"cpu": cpu}},
                                }
                            ]
                        }
                    },
                },
            )
        body = {
            "metadata": {"name": name},
            "spec": {
                "provisioningClassName": class_name,
                "podSets": [{"podTemplateRef": {"name": f"{name}-0"}, "count": count}],
                **({"parameters": spec["parameters"]} if "parameters" in spec else {}),
            },
        }
        self.api.create(
            self.api.kind("autoscaling.x-k8s.io", "v1", "provisioningrequests"), NS, body
        )

    def conditions(self, name: str) -> dict[str, tuple[str, str]]:
        found = self.api.store.get("provisioningrequests.autoscaling.x-k8s.io", NS, name)
        assert found is not None
        return {
            c["type"]: (c["status"], c["reason"])
            for c in (found.get("status") or {}).get("conditions") or []
        }


def ready(node: Obj) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])


def tainted_not_ready(node: Obj) -> bool:
    taints = (node.get("spec") or {}).get("taints") or []
    return any(t["key"] == "node.kubernetes.io/not-ready" for t in taints)


# Plain pods: scale-up pod by pod -----------------------------------------------------


def test_for_a_gang_of_plain_pods_it_adds_the_nodes_of_part_of_the_gang_up_to_the_maximum() -> None:
    cluster = Cluster(group(max_size=3))
    cluster.pods("gang", 8)
    cluster.scan(0)
    assert cluster.nodes() == {}  # on their way
    assert cluster.autoscaler.group_size(cluster.autoscaler.config.groups[0]) == 3
    cluster.scan(2)
    nodes = cluster.nodes()
    assert sorted(nodes) == ["big-0000", "big-0001", "big-0002"]
    assert all(not ready(n) and tainted_not_ready(n) for n in nodes.values())
    cluster.scan(4)
    nodes = cluster.nodes()
    assert all(ready(n) and not tainted_not_ready(n) for n in nodes.values())
    assert all(n["metadata"]["labels"][GROUP_LABEL] == "big" for n in nodes.values())
    # 6 of the 8 pods' worth, and no more: the group is at its maximum.
    cluster.scan(10)
    assert len(cluster.nodes()) == 3
    events = [e for e in cluster.api.store.iter_all("events") if e["reason"] == "TriggeredScaleUp"]
    assert {e["message"] for e in events} == {"pod triggered scale-up: [big 0->3 (max: 3)]"}
    assert len(events) == 6


def test_pods_that_wait_for_a_request_trigger_no_scale_up_of_their_own() -> None:
    cluster = Cluster(group(max_size=3))
    cluster.pods("gang", 8, **{"autoscaling.x-k8s.io/consume-provisioning-request": "gang-1"})
    cluster.scan(0)
    cluster.scan(5)
    assert cluster.nodes() == {}


def test_pods_that_fit_on_nodes_on_their_way_trigger_no_more_nodes() -> None:
    cluster = Cluster(group(max_size=10))
    cluster.pods("first", 1)
    cluster.scan(0)
    cluster.pods("second", 1, cpu="1")
    cluster.scan(1)
    cluster.scan(5)
    assert len(cluster.nodes()) == 1


def test_a_pod_no_group_can_hold_triggers_nothing() -> None:
    cluster = Cluster(group(max_size=3, cpu="8"))
    cluster.pods("huge", 1, cpu="16")
    cluster.scan(0)
    cluster.scan(5)
    assert cluster.nodes() == {}


def test_tainted_groups_take_only_the_pods_that_tolerate_them() -> None:
    taint = {"key": "dedicated", "value": "big", "effect": "NoSchedule"}
    cluster = Cluster(group("tainted", max_size=3, taints=(taint,)))
    cluster.pods("plain", 2)
    cluster.scan(0)
    cluster.scan(5)
    assert cluster.nodes() == {}


# ProvisioningRequests ------------------------------------------------------------------


def test_a_request_no_group_can_hold_whole_adds_no_node_and_is_not_provisioned() -> None:
    cluster = Cluster(group(max_size=3))
    cluster.request("gang-1", 8)
    cluster.scan(0)
    assert cluster.conditions("gang-1") == {
        "Accepted": ("True", "Accepted"),
        "Provisioned": ("False", "CapacityIsNotFound"),
    }
    cluster.scan(5)
    assert cluster.nodes() == {}


def test_a_request_a_group_can_hold_whole_is_provisioned_at_once_and_its_nodes_come() -> None:
    cluster = Cluster(group(max_size=4))
    cluster.request("gang-1", 8)
    cluster.scan(0)
    assert cluster.conditions("gang-1")["Provisioned"] == ("True", "CapacityIsProvisioned")
    assert cluster.nodes() == {}
    cluster.scan(4)
    assert len(cluster.nodes()) == 4
    assert all(ready(n) for n in cluster.nodes().values())


def test_the_group_needing_fewest_nodes_is_chosen_among_those_that_hold_the_whole_request() -> None:
    cluster = Cluster(group("small", max_size=8, cpu="4"), group("large", max_size=2, cpu="16"))
    cluster.request("gang-1", 8)
    cluster.scan(0)
    cluster.scan(4)
    assert sorted(cluster.nodes()) == ["large-0000", "large-0001"]


def test_pods_that_fit_the_nodes_there_are_need_no_new_node() -> None:
    cluster = Cluster(NodeGroup("base", 1, 1, NodePool("base", 0, "16", "32Gi")), group(max_size=4))
    cluster.request("gang-1", 6)
    cluster.scan(0)
    cluster.scan(4)
    # 4 of the pods fit on the base node: 2 new nodes for the other 2.
    assert sorted(cluster.nodes()) == ["base-0000", "big-0000"]


def test_booked_capacity_is_not_given_to_plain_pods() -> None:
    cluster = Cluster(group(max_size=4))
    cluster.request("gang-1", 2)
    cluster.scan(0)
    cluster.scan(4)
    assert len(cluster.nodes()) == 1
    cluster.pods("other", 1)
    cluster.scan(5)
    cluster.scan(9)
    # The booked node holds the request's 2 pods: the other pod gets a node of its own.
    assert len(cluster.nodes()) == 2


def test_the_booking_expires_after_the_booking_time_or_once_the_pods_run() -> None:
    cluster = Cluster(group(max_size=4), booking_time=30)
    cluster.request("gang-1", 2)
    cluster.request("gang-2", 2)
    cluster.scan(0)
    cluster.scan(1)
    cluster.scan(5)
    assert cluster.conditions("gang-2")["Provisioned"] == ("True", "CapacityIsProvisioned")
    for index, node in enumerate(["big-0000", "big-0000"]):
        cluster.pods(
            f"p{index}", 1, **{"autoscaling.x-k8s.io/consume-provisioning-request": "gang-1"}
        )
        cluster.bind(f"p{index}-0", node)
    cluster.scan(6)
    assert cluster.conditions("gang-1")["BookingExpired"] == ("True", "CapacityBookingConsumed")
    assert "BookingExpired" not in cluster.conditions("gang-2")
    cluster.scan(40)
    assert cluster.conditions("gang-2")["BookingExpired"] == (
        "True",
        "CapacityReservationTimeExpired",
    )


def test_a_request_not_found_is_tried_again_after_its_backoff() -> None:
    cluster = Cluster(group(max_size=3), initial_backoff=20)
    cluster.request("gang-1", 8)
    cluster.scan(0)
    # Another node group's worth frees up: the group may grow by one more.
    groups = (group(max_size=4),)
    cluster.autoscaler.config = AutoscalerConfig(groups=groups, initial_backoff=20)
    cluster.scan(10)
    assert cluster.conditions("gang-1")["Provisioned"] == ("False", "CapacityIsNotFound")
    cluster.scan(21)
    assert cluster.conditions("gang-1")["Provisioned"] == ("True", "CapacityIsProvisioned")


def test_a_request_whose_template_is_missing_fails() -> None:
    cluster = Cluster(group(max_size=4))
    cluster.request("gang-1", 2, no_template=True)
    cluster.scan(0)
    assert cluster.conditions("gang-1")["Failed"] == ("True", "FailedToCreatePods")


@pytest.mark.parametrize(
    ("nodes", "parameters", "expected"),
    [
        (1, {}, ("Provisioned", "True", "CapacityIsFound")),
        (0, {}, ("Provisioned", "False", "CapacityIsNotFound")),
        (0, {"noRetry": "true"}, ("Failed", "True", "CapacityIsNotFound")),
    ],
    ids=["fits", "does-not-fit", "does-not-fit-no-retry"],
)
def test_check_capacity_answers_from_the_nodes_there_are(
    nodes: int, parameters: dict[str, str], expected: tuple[str, str, str]
) -> None:
    cluster = Cluster(NodeGroup("base", nodes, 4, NodePool("base", 0, "8", "32Gi")))
    cluster.request("check-1", 2, class_name=CHECK, parameters=parameters)
    cluster.scan(0)
    kind, status, reason = expected
    assert cluster.conditions("check-1")[kind] == (status, reason)
    cluster.scan(5)
    assert len(cluster.nodes()) == nodes  # it never adds nodes


def test_requests_of_other_classes_are_left_alone() -> None:
    cluster = Cluster(group(max_size=4))
    cluster.request("queued-1", 2, class_name="queued-provisioning.gke.io")
    cluster.scan(0)
    assert cluster.conditions("queued-1") == {}


def test_requests_and_plain_pods_take_turns() -> None:
    cluster = Cluster(group(max_size=10))
    cluster.pods("plain", 1)
    cluster.request("gang-1", 2)
    cluster.scan(0)
    assert cluster.conditions("gang-1")["Provisioned"][0] == "True"
    cluster.scan(1)
    cluster.scan(5)
    # One node for the request, one for the plain pod.
    assert len(cluster.nodes()) == 2


# Configuration -------------------------------------------------------------------------


def test_the_minimum_of_each_group_is_there_from_the_start_and_ready() -> None:
    cluster = Cluster(NodeGroup("base", 2, 4, NodePool("base", 0, "8", "32Gi")))
    assert sorted(cluster.nodes()) == ["base-0000", "base-0001"]
    assert all(ready(n) for n in cluster.nodes().values())


def test_node_groups_are_read_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "groups.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "nodeGroups": [
                    {
                        "name": "gpu",
                        "minSize": 0,
                        "maxSize": 4,
                        "template": {
                            "cpu": "16",
                            "gpus": 2,
                            "labels": {"pool": "gpu"},
                            "taints": [{"key": "gpu", "effect": "NoSchedule"}],
                        },
                    }
                ]
            }
        )
    )
    (found,) = load_node_groups(path)
    node = found.node(0, 1)
    assert (found.min_size, found.max_size) == (0, 4)
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert node["metadata"]["labels"]["pool"] == "gpu"
    assert node["spec"]["taints"] == [{"key": "gpu", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    ("groups", "words"),
    [
        ([{"name": "a"}], "needs maxSize"),
        ([{"name": "a", "minSize": 3, "maxSize": 2}], "0 <= minSize <= maxSize"),
        ([{"name": "a", "maxSize": 2, "size": 2}], "size is not a field"),
        ([{"name": "a", "maxSize": 2, "template": {"cpus": 2}}], "template.cpus is not a field"),
        ([{"name": "a", "maxSize": 2, "template": {"cpu": "lots"}}], "is not a quantity"),
        ([{"name": "a", "maxSize": 1}, {"name": "a", "maxSize": 1}], "names repeat"),
        ([], "expected a list of node groups"),
    ],
    ids=[
        "no-max",
        "min-above-max",
        "unknown-field",
        "unknown-template-field",
        "bad-cpu",
        "repeat",
        "empty",
    ],
)
def test_a_node_group_file_that_cannot_work_is_refused_naming_the_problem(
    tmp_path: Path, groups: list[Obj], words: str
) -> None:
    path = tmp_path / "groups.yaml"
    path.write_text(yaml.safe_dump({"nodeGroups": groups}))
    with pytest.raises(NodeGroupError, match=r"groups\.yaml") as refused:
        load_node_groups(path)
    assert words in str(refused.value)


def sim_flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["sim", *argv])


def test_the_timing_flags_without_node_groups_are_refused() -> None:
    with pytest.raises(NodeGroupError, match="--autoscaler-booking-time"):
        config_from_args(sim_flags("--autoscaler-booking-time", "30"))


def test_the_flags_make_the_stand_ins_config(tmp_path: Path) -> None:
    path = tmp_path / "groups.yaml"
    path.write_text(yaml.safe_dump([{"name": "a", "maxSize": 2}]))
    config = config_from_args(
        sim_flags("--autoscaler-node-groups", str(path), "--autoscaler-booking-time", "30")
    )
    assert config.autoscaler is not None
    assert config.autoscaler.booking_time == 30
    assert config.autoscaler.node_delay == 2.0
    assert [g.name for g in config.autoscaler.groups] == ["a"]


def test_the_crd_is_the_one_in_crds_autoscaler() -> None:
    assert provisioning_request_crd().parts[-2:] == ("autoscaler", "provisioningrequest.yaml")
    assert provisioning_request_crd().is_file()
    assert CRDS.startswith("customresourcedefinitions")
