"""The predicates plugin refuses nodes with kube-scheduler's codes and reason strings."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.framework.status import OK, Code, Status
from scheduler.plugins.predicates import PredicatesPlugin
from tests.unit.builders import node, task

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PORTS = "node(s) didn't have free ports for the requested pod ports"

plugin = PredicatesPlugin()


def admits(pod: TaskInfo, **node_options: Any) -> Status:
    return plugin.node_admits(pod, node("n1", **node_options))


def pod_with(**spec: Any) -> TaskInfo:
    return task("p", 1, spec=spec)


def toleration(key: str = "", operator: str = "Equal", value: str = "", effect: str = "") -> Any:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def affinity_pod(*terms: dict[str, Any]) -> TaskInfo:
    return pod_with(affinity=required(*terms))


# Unschedulable (cordoned) nodes


def test_plain_pod_is_admitted_by_plain_node() -> None:
    assert admits(task("p")) == OK


def test_cordoned_node_refuses_pod_as_unschedulable() -> None:
    status = admits(task("p"), unschedulable=True)
    assert status.code is Code.UNRESOLVABLE
    assert status.reasons == ("node(s) were unschedulable",)


def test_pod_tolerating_the_unschedulable_taint_is_admitted_by_cordoned_node() -> None:
    pod = pod_with(
        tolerations=[toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")]
    )
    assert admits(pod, unschedulable=True) == OK


def test_cordon_is_reported_before_taints_and_affinity() -> None:
    pod = pod_with(nodeSelector={"zone": "a"})
    status = admits(pod, unschedulable=True, taints=[("dedicated", "gpu", "NoSchedule")])
    assert status.reasons == ("node(s) were unschedulable",)


# Taints and tolerations


def test_pod_without_toleration_is_refused_by_tainted_node_naming_the_taint() -> None:
    status = admits(task("p"), taints=[("dedicated", "gpu", "NoSchedule")])
    assert status.code is Code.UNRESOLVABLE
    assert status.reasons == ("node(s) had untolerated taint {dedicated: gpu}",)


def test_no_execute_taint_refuses_like_no_schedule() -> None:
    status = admits(task("p"), taints=[("maintenance", "", "NoExecute")])
    assert status.reasons == ("node(s) had untolerated taint {maintenance: }",)


def test_prefer_no_schedule_taint_does_not_refuse() -> None:
    assert admits(task("p"), taints=[("spot", "true", "PreferNoSchedule")]) == OK


def test_first_untolerated_taint_is_the_one_named() -> None:
    pod = pod_with(tolerations=[toleration("a", "Exists")])
    taints = [("a", "1", "NoSchedule"), ("b", "2", "NoSchedule"), ("c", "3", "NoExecute")]
    assert admits(pod, taints=taints).reasons == ("node(s) had untolerated taint {b: 2}",)


# v1.Toleration.ToleratesTaint, case by case: the toleration, the node's taints, and the
# taint kube-scheduler names as untolerated (None: the node admits the pod).
TOLERATION_RULES = [
    pytest.param(
        toleration("dedicated", "Equal", "gpu", "NoSchedule"),
        [("dedicated", "gpu", "NoSchedule")],
        None,
        id="equal-tolerates-the-same-value",
    ),
    pytest.param(
        toleration("dedicated", "Equal", "cpu", "NoSchedule"),
        [("dedicated", "gpu", "NoSchedule")],
        "{dedicated: gpu}",
        id="equal-does-not-tolerate-another-value",
    ),
    pytest.param(
        {"key": "dedicated", "value": "gpu"},
        [("dedicated", "gpu", "NoSchedule")],
        None,
        id="no-operator-compares-values-like-equal",
    ),
    pytest.param(
        toleration("dedicated", "Exists"),
        [("dedicated", "anything", "NoExecute")],
        None,
        id="exists-tolerates-any-value-of-its-key",
    ),
    pytest.param(
        toleration("dedicated", "Equal", "gpu"),
        [("dedicated", "gpu", "NoSchedule"), ("dedicated", "gpu", "NoExecute")],
        None,
        id="empty-effect-matches-every-effect",
    ),
    pytest.param(
        toleration("dedicated", "Exists", effect="NoSchedule"),
        [("dedicated", "gpu", "NoExecute")],
        "{dedicated: gpu}",
        id="another-effect-does-not-tolerate",
    ),
]


@pytest.mark.parametrize(("tolerates", "taints", "untolerated"), TOLERATION_RULES)
def test_toleration_matches_a_taint_as_kubernetes_does(
    tolerates: dict[str, str], taints: list[tuple[str, str, str]], untolerated: str | None
) -> None:
    status = admits(pod_with(tolerations=[tolerates]), taints=taints)
    if untolerated is None:
        assert status == OK
    else:
        assert status.code is Code.UNRESOLVABLE
        assert status.reasons == (f"node(s) had untolerated taint {untolerated}",)


def test_exists_toleration_with_empty_key_tolerates_every_taint() -> None:
    pod = pod_with(tolerations=[toleration("", "Exists")])
    taints = [("a", "1", "NoSchedule"), ("b", "2", "NoExecute")]
    assert admits(pod, taints=taints, unschedulable=True) == OK


def test_not_ready_node_refuses_as_if_tainted_not_ready() -> None:
    status = admits(task("p"), ready=False)
    assert status.code is Code.UNRESOLVABLE
    assert status.reasons == ("node(s) had untolerated taint {node.kubernetes.io/not-ready: }",)


def test_pod_tolerating_not_ready_is_admitted_by_not_ready_node() -> None:
    pod = pod_with(tolerations=[toleration("node.kubernetes.io/not-ready", "Exists")])
    assert admits(pod, ready=False) == OK


def test_taints_are_reported_before_affinity_as_kube_scheduler_filters() -> None:
    # kube-scheduler runs TaintToleration before NodeAffinity and stops at the first refusal.
    pod = pod_with(nodeSelector={"zone": "a"})
    status = admits(pod, taints=[("dedicated", "gpu", "NoSchedule")])
    assert status.reasons == ("node(s) had untolerated taint {dedicated: gpu}",)


# nodeSelector


def test_node_selector_matching_every_label_admits() -> None:
    pod = pod_with(nodeSelector={"zone": "a", "disk": "ssd"})
    assert admits(pod, labels={"zone": "a", "disk": "ssd", "other": "x"}) == OK


def test_node_selector_with_a_different_value_refuses() -> None:
    status = admits(pod_with(nodeSelector={"zone": "a"}), labels={"zone": "b"})
    assert status.code is Code.UNRESOLVABLE
    assert status.reasons == (AFFINITY,)


def test_node_selector_with_a_missing_label_refuses() -> None:
    pod = pod_with(nodeSelector={"zone": "a", "disk": "ssd"})
    assert admits(pod, labels={"zone": "a"}).reasons == (AFFINITY,)


def test_node_selector_and_required_affinity_must_both_hold() -> None:
    pod = pod_with(nodeSelector={"zone": "a"}, affinity=required(expression("disk", "Exists")))
    assert admits(pod, labels={"zone": "a", "disk": "ssd"}) == OK
    assert admits(pod, labels={"zone": "b", "disk": "ssd"}).reasons == (AFFINITY,)
    assert admits(pod, labels={"zone": "a"}).reasons == (AFFINITY,)


# Required node affinity: operators


@pytest.mark.parametrize(
    ("operator", "values", "labels", "admitted"),
    [
        ("In", ("a", "b"), {"zone": "b"}, True),
        ("In", ("a", "b"), {"zone": "c"}, False),
        ("In", ("a",), {}, False),
        ("NotIn", ("a", "b"), {"zone": "c"}, True),
        ("NotIn", ("a", "b"), {"zone": "a"}, False),
        ("NotIn", ("a",), {}, True),
        ("Exists", (), {"zone": ""}, True),
        ("Exists", (), {}, False),
        ("DoesNotExist", (), {}, True),
        ("DoesNotExist", (), {"zone": "a"}, False),
        ("Gt", ("9",), {"zone": "10"}, True),
        ("Gt", ("10",), {"zone": "10"}, False),
        ("Lt", ("10",), {"zone": "9"}, True),
        ("Lt", ("10",), {"zone": "10"}, False),
        ("Gt", ("-5",), {"zone": "+3"}, True),
        ("Gt", ("1",), {}, False),
    ],
    ids=[
        "in-listed-value",
        "in-other-value",
        "in-missing-label",
        "notin-other-value",
        "notin-listed-value",
        "notin-missing-label",
        "exists-present",
        "exists-absent",
        "doesnotexist-absent",
        "doesnotexist-present",
        "gt-compares-integers-not-strings",
        "gt-equal-is-not-greater",
        "lt-smaller",
        "lt-equal-is-not-less",
        "gt-signed-integers",
        "gt-missing-label",
    ],
)
def test_required_affinity_operator_matches_as_kubernetes_does(
    operator: str, values: tuple[str, ...], labels: dict[str, str], admitted: bool
) -> None:
    status = admits(affinity_pod(expression("zone", operator, *values)), labels=labels)
    assert status == (OK if admitted else Status(Code.UNRESOLVABLE, (AFFINITY,)))


@pytest.mark.parametrize("label", ["ten", "1.5", " 7", "1_000", "99999999999999999999"])
def test_gt_and_lt_do_not_match_a_label_that_is_not_an_int64(label: str) -> None:
    for operator, bound in (("Gt", "0"), ("Lt", "100")):
        pod = affinity_pod(expression("rank", operator, bound))
        assert admits(pod, labels={"rank": label}).reasons == (AFFINITY,)


@pytest.mark.parametrize(
    ("operator", "values"),
    [("Gt", ("x",)), ("Gt", ("1", "2")), ("In", ()), ("NotIn", ()), ("Exists", ("a",)), ("Is", ())],
    ids=["gt-non-integer", "gt-two-values", "in-empty", "notin-empty", "exists-value", "unknown"],
)
def test_invalid_requirement_matches_no_node(operator: str, values: tuple[str, ...]) -> None:
    pod = affinity_pod(expression("zone", operator, *values))
    assert admits(pod, labels={"zone": "5"}).reasons == (AFFINITY,)


def test_requirements_of_a_term_must_all_hold() -> None:
    term = {
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]},
            {"key": "disk", "operator": "In", "values": ["ssd"]},
        ]
    }
    pod = affinity_pod(term)
    assert admits(pod, labels={"zone": "a", "disk": "ssd"}) == OK
    assert admits(pod, labels={"zone": "a", "disk": "hdd"}).reasons == (AFFINITY,)


def test_any_one_matching_term_admits() -> None:
    pod = affinity_pod(expression("zone", "In", "a"), expression("disk", "In", "ssd"))
    assert admits(pod, labels={"zone": "b", "disk": "ssd"}) == OK
    assert admits(pod, labels={"zone": "b", "disk": "hdd"}).reasons == (AFFINITY,)


def test_match_fields_on_node_name_admits_only_that_node() -> None:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    pod = affinity_pod(term)
    assert plugin.node_admits(pod, node("n1")) == OK
    assert plugin.node_admits(pod, node("n2")).reasons == (AFFINITY,)


def test_match_fields_not_in_node_name_refuses_only_that_node() -> None:
    term = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}
    pod = affinity_pod(term)
    assert plugin.node_admits(pod, node("n1")).reasons == (AFFINITY,)
    assert plugin.node_admits(pod, node("n2")) == OK


def test_match_fields_and_expressions_of_one_term_must_both_hold() -> None:
    term = {
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
    }
    pod = affinity_pod(term)
    assert plugin.node_admits(pod, node("n1", labels={"zone": "a"})) == OK
    assert plugin.node_admits(pod, node("n1", labels={"zone": "b"})).reasons == (AFFINITY,)
    assert plugin.node_admits(pod, node("n2", labels={"zone": "a"})).reasons == (AFFINITY,)


def test_match_fields_on_another_field_matches_no_node() -> None:
    term = {"matchFields": [{"key": "metadata.uid", "operator": "NotIn", "values": ["x"]}]}
    assert admits(affinity_pod(term)).reasons == (AFFINITY,)


def test_empty_term_matches_no_node() -> None:
    assert admits(affinity_pod({}), labels={"zone": "a"}).reasons == (AFFINITY,)


def test_empty_terms_list_matches_no_node() -> None:
    assert admits(affinity_pod(), labels={"zone": "a"}).reasons == (AFFINITY,)


def test_preferred_affinity_does_not_filter() -> None:
    preferred = [{"weight": 10, "preference": expression("zone", "In", "a")}]
    pod = pod_with(
        affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    )
    assert admits(pod, labels={"zone": "b"}) == OK


def test_static_verdict_ignores_what_is_placed_on_the_node() -> None:
    full = node("n1", cpu=1, max_pods=1)
    full.add_task(task("running", 1, status=TaskStatus.RUNNING, node_name="n1"))
    assert plugin.node_admits(task("p", 2), full) == OK


# Dynamic fit: pods, ports, resources


def placed(target: Any, name: str, cpu: float, memory: str | int = 0, **options: Any) -> None:
    status = options.pop("status", TaskStatus.RUNNING)
    target.add_task(task(name, cpu, memory, status=status, node_name=target.name, **options))


def test_task_that_fits_idle_resources_fits() -> None:
    target = node("n1", cpu=4, memory="8Gi")
    placed(target, "a", 3, "4Gi")
    assert plugin.node_fits(task("p", 1, "4Gi"), target) == OK


def test_node_at_max_pods_refuses_with_too_many_pods() -> None:
    target = node("n1", cpu=4, max_pods=1)
    placed(target, "a", 1)
    status = plugin.node_fits(task("p", 1), target)
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == ("Too many pods",)


def test_too_many_pods_is_reported_with_the_short_resources() -> None:
    target = node("n1", cpu=1, max_pods=1)
    placed(target, "a", 1)
    assert plugin.node_fits(task("p", 1), target).reasons == ("Too many pods", "Insufficient cpu")


def test_short_cpu_refuses_with_insufficient_cpu() -> None:
    target = node("n1", cpu=2)
    placed(target, "a", 1.5)
    status = plugin.node_fits(task("p", 1), target)
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == ("Insufficient cpu",)


def test_every_short_dimension_gets_its_own_reason() -> None:
    target = node("n1", cpu=1, memory="1Gi", gpu=1)
    status = plugin.node_fits(task("p", 2, "2Gi", gpu=2), target)
    assert status.reasons == (
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient nvidia.com/gpu",
    )


def test_extended_resource_the_node_lacks_refuses() -> None:
    status = plugin.node_fits(task("p", 1, gpu=1), node("n1", cpu=4))
    assert status.reasons == ("Insufficient nvidia.com/gpu",)


def test_task_fitting_only_once_releasing_pods_go_fits_for_pipelining() -> None:
    target = node("n1", cpu=4)
    placed(target, "a", 2)
    placed(target, "leaving", 2, status=TaskStatus.RELEASING)
    assert target.idle.cpu == 0
    assert plugin.node_fits(task("p", 2), target) == OK


def test_short_future_idle_is_reported_when_node_is_releasing() -> None:
    target = node("n1", cpu=4, memory="4Gi")
    placed(target, "a", 3, "1Gi")
    placed(target, "leaving", 1, status=TaskStatus.RELEASING)
    # Idle memory (3Gi) covers the request; future idle cpu (1) does not.
    assert plugin.node_fits(task("p", 2, "3Gi"), target).reasons == ("Insufficient cpu",)


def test_resources_already_promised_to_pipelined_tasks_are_not_offered_twice() -> None:
    target = node("n1", cpu=2)
    placed(target, "leaving", 2, status=TaskStatus.RELEASING)
    placed(target, "waiting", 2, status=TaskStatus.PIPELINED)
    assert plugin.node_fits(task("p", 1), target).reasons == ("Insufficient cpu",)


def ported(name: str, port: int, protocol: str = "TCP", host_ip: str = "") -> TaskInfo:
    container_port = {"containerPort": port, "hostPort": port, "protocol": protocol}
    if host_ip:
        container_port["hostIP"] = host_ip
    return task(name, 1, spec={"containers": [{"ports": [container_port]}]})


def node_using(*pods: TaskInfo) -> Any:
    target = node("n1", cpu=8)
    for pod in pods:
        pod.node_name = "n1"
        pod.status = TaskStatus.RUNNING
        target.add_task(pod)
    return target


def test_taken_host_port_refuses_with_free_ports_reason() -> None:
    status = plugin.node_fits(ported("p", 8080), node_using(ported("a", 8080)))
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == (PORTS,)


def test_host_port_on_another_port_or_protocol_fits() -> None:
    target = node_using(ported("a", 8080))
    assert plugin.node_fits(ported("p", 8081), target) == OK
    assert plugin.node_fits(ported("q", 8080, "UDP"), target) == OK


def test_host_port_on_distinct_host_ips_fits_but_wildcard_conflicts() -> None:
    target = node_using(ported("a", 8080, host_ip="10.0.0.1"))
    assert plugin.node_fits(ported("p", 8080, host_ip="10.0.0.2"), target) == OK
    assert plugin.node_fits(ported("q", 8080), target).reasons == (PORTS,)
    assert plugin.node_fits(ported("r", 8080, host_ip="10.0.0.1"), target).reasons == (PORTS,)


def test_port_conflict_is_reported_before_resources() -> None:
    target = node("n1", cpu=1, max_pods=1)
    occupant = ported("a", 8080)
    occupant.node_name = "n1"
    occupant.status = TaskStatus.RUNNING
    target.add_task(occupant)
    assert plugin.node_fits(ported("p", 8080), target).reasons == (PORTS,)


def test_port_freed_by_a_removed_pod_fits_again() -> None:
    occupant = ported("a", 8080)
    target = node_using(occupant)
    target.remove_task(occupant)
    assert plugin.node_fits(ported("p", 8080), target) == OK
