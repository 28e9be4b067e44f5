"""The chaos campaign's invariants over audit records: each finds its violation and only that."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from chaos.invariants import (
    double_binds,
    eviction_ping_pong,
    group_of,
    half_placed_gangs,
    lease_exclusive,
    longest_bind_after_renewal,
    node_overcommit,
    slim,
    stale_podgroup_status,
    stuck_inqueue,
    unexplained_pending,
)

Record = dict[str, Any]
SCHED_A = "system:serviceaccount:muster-system:muster-scheduler[JTI=a]"
SCHED_B = "system:serviceaccount:muster-system:muster-scheduler[JTI=b]"


def user(who: str) -> dict[str, Any]:
    name, _, cred = who.partition("[")
    doc: dict[str, Any] = {"username": name, "groups": []}
    if cred:
        doc["extra"] = {"authentication.kubernetes.io/credential-id": [cred.rstrip("]")]}
    return doc


@dataclass
class Log:
    """Builds audit records as sim writes them, numbered and timed in order."""

    records: list[Record] = field(default_factory=list)
    clock: float = 1000.0

    def add(
        self,
        resource: str,
        name: str,
        obj: dict[str, Any] | None,
        *,
        verb: str = "update",
        sub: str | None = None,
        who: str = "admin",
        code: int = 200,
        event: str = "MODIFIED",
        namespace: str = "ns",
        group: str = "",
        request: dict[str, Any] | None = None,
        after: float = 0.1,
        uri: str = "/x",
    ) -> Record:
        self.clock += after
        ref: dict[str, Any] = {"resource": resource, "name": name, "namespace": namespace}
        if group:
            ref["apiGroup"] = group
        if sub:
            ref["subresource"] = sub
        if obj is not None:
            ref["uid"] = obj["metadata"].get("uid")
        record: Record = {
            "seq": len(self.records) + 1,
            "time": self.clock,
            "verb": verb,
            "requestURI": uri,
            "user": user(who),
            "objectRef": ref,
            "responseStatus": {"code": code},
            "annotations": {"sim.muster.dev/event-type": event} if code < 300 else {},
        }
        if obj is not None and code < 300:
            record["responseObject"] = obj
        if request is not None:
            record["requestObject"] = request
        self.records.append(record)
        return record

    def node(self, name: str, cpu: str = "4", event: str = "ADDED") -> None:
        obj = {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": "110"}}}
        self.add("nodes", name, obj, verb="create", event=event, namespace="")

    def pod(self, name: str, cpu: str = "1", gang: str | None = None, **status: Any) -> None:
        self.add("pods", name, pod(name, cpu, gang, **status), verb="create", event="ADDED")

    def bind(self, name: str, node: str, who: str = SCHED_A, cpu: str = "1", **kw: Any) -> None:
        obj = pod(name, cpu, kw.pop("gang", None), node=node)
        target = {"target": {"kind": "Node", "name": node}}
        self.add("pods", name, obj, verb="create", sub="binding", who=who, request=target, **kw)

    def delete_pod(self, name: str, who: str, node: str | None = None, gang: str | None = None):
        obj = pod(name, "1", gang, node=node)
        self.add("pods", name, obj, verb="delete", who=who, event="DELETED")

    def lease(self, holder: str, who: str, duration: int = 15, after: float = 0.1) -> None:
        obj = {
            "metadata": {"name": "muster-scheduler", "namespace": "muster-system"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration},
        }
        self.add(
            "leases",
            "muster-scheduler",
            obj,
            who=who,
            namespace="muster-system",
            group="coordination.k8s.io",
            after=after,
        )

    def podgroup(self, name: str, min_member: int, phase: str = "Pending", after: float = 0.1):
        obj = {
            "metadata": {"name": name, "namespace": "ns", "uid": f"pg-{name}"},
            "spec": {"minMember": min_member},
            "status": {"phase": phase},
        }
        self.add("podgroups", name, obj, group="scheduling.volcano.sh", after=after)


def pod(
    name: str, cpu: str, gang: str | None, node: str | None = None, phase: str = "Pending"
) -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": gang} if gang else {}
    spec: dict[str, Any] = {
        "schedulerName": "muster",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "annotations": annotations,
        },
        "spec": spec,
        "status": {"phase": phase},
    }


# ---------------------------------------------------------------- double binds


def test_a_pod_bound_twice_is_one_violation_naming_both_nodes_and_records() -> None:
    log = Log()
    log.pod("p")
    log.bind("p", "n1")
    log.bind("p", "n2", who=SCHED_B)
    (found,) = double_binds(log.records)
    assert found.invariant == "pod bound twice"
    assert "n1, n2" in found.message
    assert found.seqs == (2, 3)


@pytest.mark.parametrize(
    ("codes", "violations"),
    [
        ((201,), 0),  # one bind
        ((201, 409), 0),  # a second attempt the server refused
        ((500, 201), 0),  # a failed attempt, then the bind
        ((201, 201), 1),  # bound twice
    ],
)
def test_only_committed_binds_count_towards_double_binds(
    codes: tuple[int, ...], violations: int
) -> None:
    log = Log()
    for code in codes:
        log.bind("p", "n1", code=code)
    assert len(double_binds(log.records)) == violations


def test_a_recreated_pod_of_the_same_name_may_be_bound_again() -> None:
    log = Log()
    log.bind("p", "n1")
    record = log.records[-1]
    record["responseObject"]["metadata"]["uid"] = "second-life"
    log.bind("p", "n1")
    assert double_binds(log.records) == []


# ---------------------------------------------------------------- allocatable


@pytest.mark.parametrize(
    ("cpus", "violations"),
    [
        (("2", "2"), 0),  # exactly full
        (("2", "2500m"), 1),  # over by half a core
        (("4",), 0),
        (("5",), 1),
    ],
)
def test_binding_beyond_a_nodes_allocatable_cpu_is_a_violation(
    cpus: tuple[str, ...], violations: int
) -> None:
    log = Log()
    log.node("n1", cpu="4")
    for index, cpu in enumerate(cpus):
        log.pod(f"p{index}", cpu=cpu)
        log.bind(f"p{index}", "n1", cpu=cpu)
    found = node_overcommit(log.records)
    assert len(found) == violations
    if found:
        assert "node n1" in found[0].message and "cpu" in found[0].message


def test_a_pods_pod_level_request_is_what_it_holds_on_its_node() -> None:
    # 100m by their containers, 3 cpu each by their pod level: two overcommit a 4-cpu node
    log = Log()
    log.node("n1", cpu="4")
    for name in ("a", "b"):
        bound = pod(name, "100m", None, node="n1")
        bound["spec"]["resources"] = {"requests": {"cpu": "3"}}
        log.add("pods", name, bound, verb="create", sub="binding", who=SCHED_A,
                request={"target": {"kind": "Node", "name": "n1"}})  # fmt: skip
    (found,) = node_overcommit(log.records)
    assert "node n1" in found.message and "cpu" in found.message


def test_finished_and_deleted_pods_free_their_room() -> None:
    log = Log()
    log.node("n1", cpu="2")
    log.bind("a", "n1", cpu="2")
    log.add("pods", "a", pod("a", "2", None, node="n1", phase="Succeeded"), who="kubelet")
    log.bind("b", "n1", cpu="2")
    log.delete_pod("b", "admin", node="n1")
    log.bind("c", "n1", cpu="2")
    assert node_overcommit(log.records) == []


# ---------------------------------------------------------------- lease terms


def test_binds_by_the_lease_holder_within_its_term_are_fine() -> None:
    log = Log()
    log.lease("a", SCHED_A)
    log.bind("p", "n1", who=SCHED_A)
    log.lease("a", SCHED_A, after=2)
    log.bind("q", "n1", who=SCHED_A)
    assert lease_exclusive(log.records, "muster-system", "muster-scheduler") == []


@pytest.mark.parametrize(
    ("story", "message"),
    [
        ("other holds", "while system:serviceaccount:muster-system:muster-scheduler[JTI=b]"),
        ("expired", "after its last renewal"),
        ("released", "while nobody held"),
    ],
)
def test_a_bind_outside_the_binders_lease_term_is_a_violation(story: str, message: str) -> None:
    log = Log()
    log.lease("a", SCHED_A)
    if story == "other holds":
        # a paused leader resumes after the other replica took the lease over
        log.lease("b", SCHED_B, after=16)
        log.bind("p", "n1", who=SCHED_A)
    elif story == "expired":
        log.bind("p", "n1", who=SCHED_A, after=20)
    else:
        log.lease("", SCHED_A)
        log.bind("p", "n1", who=SCHED_A)
    (found,) = lease_exclusive(log.records, "muster-system", "muster-scheduler")
    assert found.invariant == "bind outside lease term"
    assert message in found.message


def test_a_handover_lets_the_new_holder_bind_at_once() -> None:
    log = Log()
    log.lease("a", SCHED_A)
    log.bind("p", "n1", who=SCHED_A)
    log.lease("", SCHED_A)
    log.lease("b", SCHED_B)
    log.bind("q", "n1", who=SCHED_B)
    assert lease_exclusive(log.records, "muster-system", "muster-scheduler") == []


CONTROLLER = "system:serviceaccount:muster-system:muster-controller"
# Each write of the leader's role as the audit records it: (resource, subresource, verb,
# group), and the kind of write the violation names.
LEADER_WRITES = {
    "eviction": ("pods", "eviction", "create", ""),
    "pod condition": ("pods", "status", "patch", ""),
    "pod annotation": ("pods", None, "patch", ""),
    "podgroup status": ("podgroups", None, "patch", "scheduling.volcano.sh"),
    "queue status": ("queues", "status", "patch", "scheduling.volcano.sh"),
    "event": ("events", None, "create", ""),
    "scale-up request": ("provisioningrequests", None, "create", "autoscaling.x-k8s.io"),
    "pre-bind write": ("persistentvolumeclaims", None, "patch", ""),
}


def leader_write(log: Log, kind: str, who: str = SCHED_A, name: str = "x", **kw: Any) -> None:
    resource, sub, verb, group = LEADER_WRITES[kind]
    obj = {"metadata": {"name": name, "namespace": "ns"}, "status": kw.pop("status", {})}
    # events are recorded without their object (Metadata level)
    stored = None if resource == "events" else obj
    log.add(resource, name, stored, verb=verb, sub=sub, who=who, group=group, **kw)


@pytest.mark.parametrize("kind", sorted(LEADER_WRITES))
def test_a_paused_leaders_write_after_its_successor_took_over_is_a_violation(kind: str) -> None:
    log = Log()
    log.lease("a", SCHED_A)
    leader_write(log, kind)  # within its term: fine
    log.lease("b", SCHED_B, after=16)
    leader_write(log, kind)  # resumed after the successor took the lease
    (found,) = lease_exclusive(log.records, "muster-system", "muster-scheduler")
    assert found.invariant == f"{kind} outside lease term"
    assert "while system:serviceaccount:muster-system:muster-scheduler[JTI=b]" in found.message


def test_a_write_sent_after_the_writer_released_the_lease_is_a_violation() -> None:
    # The shutdown sends what it queued before it releases the lease, not after.
    log = Log()
    log.lease("a", SCHED_A)
    leader_write(log, "podgroup status")
    log.lease("", SCHED_A)
    leader_write(log, "event")
    (found,) = lease_exclusive(log.records, "muster-system", "muster-scheduler")
    assert found.invariant == "event outside lease term"
    assert "while nobody held lease muster-system/muster-scheduler" in found.message


def test_writes_of_others_dry_runs_and_sims_own_are_no_leaders_writes() -> None:
    log = Log()
    log.lease("a", SCHED_A)
    leader_write(log, "podgroup status", who=CONTROLLER)  # the controller's own
    leader_write(log, "event", who="admin")
    leader_write(log, "eviction", who=SCHED_B, uri="/api/v1/x/eviction?dryRun=All")
    leader_write(log, "pod condition", who=SCHED_B, uri="")  # a cascade or sim's own
    leader_write(log, "podgroup status", who=SCHED_B, code=409)  # refused: nothing written
    assert lease_exclusive(log.records, "muster-system", "muster-scheduler", [SCHED_B]) == []


def test_a_replica_that_never_held_the_lease_counts_when_it_is_expected() -> None:
    log = Log()
    log.lease("a", SCHED_A)
    leader_write(log, "queue status", who=SCHED_B)
    assert lease_exclusive(log.records, "muster-system", "muster-scheduler") == []
    (found,) = lease_exclusive(log.records, "muster-system", "muster-scheduler", [SCHED_B])
    assert found.invariant == "queue status outside lease term"


def test_the_default_queue_made_at_a_replicas_start_is_no_leaders_write() -> None:
    # Every replica creates the default queue if it is missing and sets its state if it has
    # none, leading or not; setting a state where there was none overwrites nobody's.
    log = Log()
    log.add("queues", "default", {"metadata": {"name": "default"}}, verb="create", who=SCHED_B)
    leader_write(log, "queue status", SCHED_B, "default", status={"state": "Open"})
    assert lease_exclusive(log.records, "muster-system", "muster-scheduler", [SCHED_B]) == []
    # Once it has a state, a status write is the leader's.
    leader_write(log, "queue status", SCHED_B, "default", status={"state": "Open", "running": 1})
    (found,) = lease_exclusive(log.records, "muster-system", "muster-scheduler", [SCHED_B])
    assert found.invariant == "queue status outside lease term"


def test_the_longest_bind_after_a_renewal_is_measured_per_binder() -> None:
    log = Log()
    log.lease("a", SCHED_A)
    log.bind("p", "n1", who=SCHED_A, after=9.0)  # 9 s after A's renewal
    log.lease("b", SCHED_B, after=7.0)
    log.bind("q", "n1", who=SCHED_B, after=1.0)  # 1 s after B's, 17 s after A's
    assert longest_bind_after_renewal(
        log.records, "muster-system", "muster-scheduler"
    ) == pytest.approx(9.0)


# ---------------------------------------------------------------- gangs


def gang_log(bound: int, min_member: int = 3) -> Log:
    log = Log()
    log.podgroup("g", min_member)
    for index in range(min_member):
        log.pod(f"g-{index}", gang="g")
    for index in range(bound):
        log.bind(f"g-{index}", "n1", gang="g")
    return log


@pytest.mark.parametrize(("bound", "violations"), [(0, 0), (1, 1), (2, 1), (3, 0)])
def test_a_gang_half_placed_at_a_quiescent_moment_is_a_violation(
    bound: int, violations: int
) -> None:
    log = gang_log(bound)
    found = half_placed_gangs(log.records, [log.clock + 1], [SCHED_A])
    assert len(found) == violations
    if found:
        assert f"{bound} of minMember 3" in found[0].message


def test_a_gang_half_placed_only_between_quiescent_moments_is_fine() -> None:
    log = gang_log(1)
    moment_before = log.records[0]["time"] - 0.05
    for index in (1, 2):
        log.bind(f"g-{index}", "n1", gang="g")
    assert half_placed_gangs(log.records, [moment_before, log.clock + 1], [SCHED_A]) == []


@pytest.mark.parametrize(
    ("who", "violations"),
    [(SCHED_A, 1), ("admin", 0)],  # the scheduler's eviction counts; the user's delete does not
)
def test_a_gang_member_deleted_by_the_scheduler_counts_and_by_a_user_does_not(
    who: str, violations: int
) -> None:
    log = gang_log(3)
    log.delete_pod("g-0", who, node="n1", gang="g")
    assert len(half_placed_gangs(log.records, [log.clock + 1], [SCHED_A])) == violations


def test_a_gang_whose_min_member_was_raised_after_placement_is_left_out() -> None:
    log = gang_log(3)
    log.podgroup("g", 5)
    assert half_placed_gangs(log.records, [log.clock + 1], [SCHED_A]) == []


@pytest.mark.parametrize(
    ("raised_before", "violations"),
    [(0.5, 0), (5.0, 1)],
    ids=["raised-while-the-session-decided", "raised-long-before"],
)
def test_a_min_member_raised_just_before_the_binds_raced_with_the_decision(
    raised_before: float, violations: int
) -> None:
    log = Log()
    log.podgroup("g", 3)
    for index in range(3):
        log.pod(f"g-{index}", gang="g")
    log.podgroup("g", 4)
    for index in range(3):
        log.bind(f"g-{index}", "n1", gang="g", after=raised_before if index == 0 else 0.01)
    assert len(half_placed_gangs(log.records, [log.clock + 1], [SCHED_A])) == violations


# ---------------------------------------------------------------- pending pods


def test_an_unbound_pod_without_a_reason_is_a_violation_and_with_one_is_not() -> None:
    silent = pod("silent", "1", None)
    told = pod("told", "1", None)
    told["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "full"}
    ]
    bound = pod("bound", "1", None, node="n1")
    other = pod("other", "1", None)
    other["spec"]["schedulerName"] = "default-scheduler"
    (found,) = unexplained_pending([silent, told, bound, other])
    assert "ns/silent" in found.message


# ---------------------------------------------------------------- Inqueue


@pytest.mark.parametrize(("waited", "violations"), [(5.0, 0), (31.0, 1)])
def test_a_podgroup_inqueue_past_its_timeout_is_a_violation(waited: float, violations: int) -> None:
    log = Log()
    log.podgroup("g", 2, "Inqueue")
    log.podgroup("g", 2, "Running", after=waited)
    found = stuck_inqueue(log.records, log.clock + 1, timeout=30)
    assert len(found) == violations


@pytest.mark.parametrize(("pause", "violations"), [(5.0, 1), (15.0, 0)])
def test_time_without_a_leader_does_not_count_towards_the_inqueue_timeout(
    pause: float, violations: int
) -> None:
    log = Log()
    log.podgroup("g", 2, "Inqueue")
    began = log.clock
    log.podgroup("g", 2, "Pending", after=40)
    pauses = [(began + 10, began + 10 + pause)]
    assert len(stuck_inqueue(log.records, log.clock, timeout=30, pauses=pauses)) == violations


def test_a_podgroup_still_inqueue_at_the_end_counts_until_the_end() -> None:
    log = Log()
    log.podgroup("g", 2, "Inqueue")
    assert stuck_inqueue(log.records, log.clock + 10, timeout=30) == []
    assert len(stuck_inqueue(log.records, log.clock + 40, timeout=30)) == 1


def test_a_started_podgroup_may_stay_inqueue_past_the_timeout() -> None:
    log = Log()
    log.podgroup("g", 3, "Inqueue")
    log.bind("g-0", "n1", gang="g")
    # minMember raised past its pods: it may never run, but it holds what it uses
    log.podgroup("g", 5, "Inqueue", after=40)
    assert stuck_inqueue(log.records, log.clock + 40, timeout=30) == []


def test_a_podgroup_whose_pods_all_went_is_timed_from_then() -> None:
    log = Log()
    log.podgroup("g", 1, "Inqueue")
    log.bind("g-0", "n1", gang="g")
    log.delete_pod("g-0", "admin", node="n1", gang="g")
    gone = log.clock
    (found,) = stuck_inqueue(log.records, gone + 31, timeout=30)
    assert "for 31.0s" in found.message


@pytest.mark.parametrize(
    ("phase", "after", "violations"),
    [
        ("Running", 1.0, 0),  # said Running a second later: a session's lag
        ("Running", 9.0, 1),  # said it only after 9 s
        ("Completed", 9.0, 1),  # said Completed with its pods Running
    ],
)
def test_a_podgroup_with_min_member_pods_running_must_say_running_soon(
    phase: str, after: float, violations: int
) -> None:
    log = Log()
    log.podgroup("g", 2, "Inqueue")
    for index in range(2):
        log.add("pods", f"g-{index}", pod(f"g-{index}", "1", "g", node="n1", phase="Running"))
    log.podgroup("g", 2, phase, after=after)
    found = stale_podgroup_status(log.records, log.clock + 0.1, lag=5.0)
    assert len(found) == violations


def test_a_podgroup_still_stale_at_the_end_counts_until_the_end() -> None:
    log = Log()
    log.podgroup("g", 1, "Inqueue")
    log.add("pods", "g-0", pod("g-0", "1", "g", node="n1", phase="Running"))
    assert stale_podgroup_status(log.records, log.clock + 1, lag=5.0) == []
    (found,) = stale_podgroup_status(log.records, log.clock + 6, lag=5.0)
    assert "said phase 'Inqueue'" in found.message


def test_pods_that_finished_leave_a_podgroup_nothing_to_say() -> None:
    log = Log()
    log.podgroup("g", 1, "Running")
    log.add("pods", "g-0", pod("g-0", "1", "g", node="n1", phase="Running"))
    log.add("pods", "g-0", pod("g-0", "1", "g", node="n1", phase="Succeeded"))
    log.podgroup("g", 1, "Completed")
    assert stale_podgroup_status(log.records, log.clock + 60, lag=5.0) == []


# ---------------------------------------------------------------- ping-pong


def test_two_gangs_evicting_each_other_back_and_forth_is_ping_pong() -> None:
    log = Log()
    log.bind("x-0", "n1", gang="x")
    log.delete_pod("x-0", SCHED_A, node="n1", gang="x")
    log.bind("y-0", "n1", gang="y")
    log.delete_pod("y-0", SCHED_A, node="n1", gang="y")
    log.bind("x-1", "n1", gang="x")
    (found,) = eviction_ping_pong(log.records, [SCHED_A])
    assert found.invariant == "eviction ping-pong"
    assert "ns/x evicted for y" in found.message


def test_an_eviction_one_way_is_no_ping_pong() -> None:
    log = Log()
    log.bind("x-0", "n1", gang="x")
    log.delete_pod("x-0", SCHED_A, node="n1", gang="x")
    log.bind("y-0", "n1", gang="y")
    log.bind("x-1", "n2", gang="x")
    assert eviction_ping_pong(log.records, [SCHED_A]) == []


# ---------------------------------------------------------------- slim records


def test_slim_records_find_the_same_violations_as_whole_ones() -> None:
    log = Log()
    log.node("n1", cpu="2")
    log.podgroup("g", 2)
    log.lease("a", SCHED_A)
    log.bind("g-0", "n1", gang="g", cpu="2")
    log.bind("g-1", "n1", gang="g", cpu="2")
    log.bind("g-1", "n1", gang="g", who=SCHED_B)
    for record in log.records:
        if "responseObject" in record:
            meta = record["responseObject"]["metadata"]
            meta.setdefault("annotations", {})["noise"] = "x" * 1000
    slimmed = [slim(r) for r in log.records]
    assert "noise" not in str(slimmed)
    for check in (double_binds, node_overcommit):
        assert check(slimmed) == check(log.records) != []
    lease = lease_exclusive(slimmed, "muster-system", "muster-scheduler")
    assert lease == lease_exclusive(log.records, "muster-system", "muster-scheduler") != []


def test_a_pod_without_a_group_annotation_counts_in_its_owners_podgroup() -> None:
    # muster reads a controlled pod's group as podgroup-<owner uid> when it has no
    # annotation (a Job's pod bound before muster's controller annotated it)
    log = Log()
    log.podgroup("podgroup-job", 2)
    annotated = pod("a", "1", "podgroup-job", node="n1")
    owned = pod("b", "1", None, node="n1")
    owned["metadata"]["ownerReferences"] = [{"uid": "job", "controller": True, "kind": "Job"}]
    for obj in (annotated, owned):
        name = obj["metadata"]["name"]
        log.add("pods", name, obj, verb="create", sub="binding", who=SCHED_A)
    assert group_of(owned) == "podgroup-job"
    assert half_placed_gangs(log.records, [log.clock + 5], [SCHED_A]) == []


def test_time_under_overlapping_pauses_counts_once() -> None:
    # a leader loss and an API server restart at the same time: 10 s paused, not 14
    log = Log()
    log.podgroup("g", 1, phase="Inqueue", after=0.0)
    start = log.clock
    pauses = [(start, start + 8), (start + 4, start + 10)]
    assert stuck_inqueue(log.records, start + 15, 6.0, pauses) == []
    assert len(stuck_inqueue(log.records, start + 17, 6.0, pauses)) == 1
