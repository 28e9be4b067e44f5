"""Scale-up: a gang that fits nowhere gets one ProvisioningRequest for all of its pods; what
the request's conditions say drives holds, retries and deletion (framework/scaleup.py)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from scheduler.api.annotations import group_settings
from scheduler.api.errors import ConfigError
from scheduler.api.job import JobInfo
from scheduler.api.podgroup import PodGroupPhase
from scheduler.api.provisioning import (
    BEST_EFFORT_ATOMIC,
    CHECK_CAPACITY,
    ProvisioningRequest,
    ScaleUpRequest,
    read_request,
    requests_by_podgroup,
)
from scheduler.api.snapshot import ClusterSnapshot
from scheduler.api.task import TaskStatus
from scheduler.api.timestamps import format_rfc3339
from scheduler.engine import load_config, schedule
from scheduler.framework.config import SchedulerConfig
from scheduler.framework.decisions import GroupCondition, SessionResult
from tests.unit.builders import (
    binds_per_job,
    gang,
    node,
    queue,
    resources,
    running_gang,
    snapshot,
)

NOW = 1_800_000_000.0
CREATED = format_rfc3339(NOW - 30)


def config(arguments: str = "{}", *, listed: bool = True) -> SchedulerConfig:
    plugin = f"- {{name: scaleup, arguments: {arguments}}}" if listed else ""
    return load_config(
        f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - {{name: priority}}
  - {{name: gang}}
  - {{name: conformance}}
  {plugin}
- plugins: [{{name: drf}}, {{name: predicates}}, {{name: proportion}}, {{name: nodeorder}}]
"""
    )


SCALE_UP = config()


def cluster(
    *jobs: JobInfo, nodes: int = 2, cpu: float = 8, ready: int | None = None
) -> ClusterSnapshot:
    """`nodes` nodes of `cpu` cpu (the first `ready` Ready), holding the jobs."""
    listed = [node(f"n{i}", cpu=cpu, ready=ready is None or i < ready) for i in range(nodes)]
    snap = snapshot(listed, list(jobs))
    snap.now = NOW
    return snap


def with_requests(snap: ClusterSnapshot, *requests: ScaleUpRequest) -> ClusterSnapshot:
    snap.scale_up_requests = requests_by_podgroup(requests)
    return snap


def request(
    job: JobInfo,
    attempt: int = 1,
    *conditions: tuple[str, str, str],
    at: float = NOW - 10,
    uid: str | None = None,
) -> ScaleUpRequest:
    """muster's request for the job, read from its wire form as the cache reads it; each
    condition is (type, status, reason), all changed at `at`."""
    raw: dict[str, Any] = {
        "metadata": {
            "namespace": job.namespace,
            "name": f"{job.name}-scaleup-{attempt}",
            "uid": f"req-{job.name}-{attempt}",
            "creationTimestamp": format_rfc3339(at - 5),
            "labels": {
                "app.kubernetes.io/managed-by": "muster",
                "scale-up.muster.dev/attempt": str(attempt),
            },
            "ownerReferences": [
                {"kind": "PodGroup", "name": job.name, "uid": uid or job.uid, "controller": True}
            ],
        },
        "spec": {
            "provisioningClassName": BEST_EFFORT_ATOMIC,
            "podSets": [
                {"podTemplateRef": {"name": f"{job.name}-scaleup-{attempt}-0"}, "count": 8}
            ],
        },
        "status": {
            "conditions": [
                {
                    "type": kind,
                    "status": status,
                    "reason": reason,
                    "message": f"{reason} says the autoscaler",
                    "lastTransitionTime": format_rfc3339(at),
                }
                for kind, status, reason in conditions
            ]
        },
    }
    found = read_request(msgspec.convert(raw, ProvisioningRequest))
    assert found is not None
    return found


ACCEPTED = ("Accepted", "True", "Accepted")
PROVISIONED = ("Provisioned", "True", "CapacityIsProvisioned")
NOT_FOUND = ("Provisioned", "False", "CapacityIsNotFound")
FAILED = ("Failed", "True", "CapacityIsNotFound")
EXPIRED = ("BookingExpired", "True", "CapacityReservationTimeExpired")
REVOKED = ("CapacityRevoked", "True", "CapacityRevoked")


def scale_up_condition(result: SessionResult, job: JobInfo) -> GroupCondition | None:
    for update in result.podgroups:
        if update.name == job.name:
            return next((c for c in update.conditions if c.type == "ScaleUp"), None)
    return None


def created(result: SessionResult) -> list[str]:
    return [c.name for c in result.provisioning_requests]


def deleted(result: SessionResult) -> list[str]:
    return [d.name for d in result.provisioning_deletions]


# Asking ------------------------------------------------------------------------------


def test_a_gang_that_fits_nowhere_gets_one_request_for_all_its_pods_and_its_pods_name_it() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    result = schedule(cluster(big), SCALE_UP)
    assert binds_per_job(result) == {}
    (asked,) = result.provisioning_requests
    assert asked.name == "big-scaleup-1"
    assert (asked.podgroup, asked.podgroup_uid, asked.attempt) == ("big", big.uid, 1)
    assert asked.class_name == BEST_EFFORT_ATOMIC
    ((template, count, body),) = [(p.name, p.count, p.template) for p in asked.pod_sets]
    assert (template, count) == ("big-scaleup-1-0", 8)
    assert body["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "4"}}
    annotated = {(a.name, a.request, a.class_name) for a in result.pod_annotations}
    assert annotated == {(f"big-{i}", "big-scaleup-1", BEST_EFFORT_ATOMIC) for i in range(8)}
    condition = scale_up_condition(result, big)
    assert condition is not None
    assert (condition.status, condition.reason) == ("True", "CapacityRequested")
    assert "ProvisioningRequest big-scaleup-1" in condition.message
    assert "8 x cpu 4" in condition.message


def test_each_distinct_pod_shape_gets_a_template_with_what_decides_where_it_may_go() -> None:
    spec = {
        "nodeSelector": {"pool": "gpu"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
    }
    head = gang("ray", 1, cpu=2, roles={"head": 1}, created=CREATED)
    workers = gang("workers", 4, cpu=8, gpu=1, spec=spec, created=CREATED)
    # One gang of two shapes: the head's and the workers'.
    for member in list(workers.tasks.values()):
        member.job = head.key
        head.add_task(member)
    head.min_member = 5
    result = schedule(cluster(head), SCALE_UP)
    (asked,) = result.provisioning_requests
    by_count = {p.count: p.template for p in asked.pod_sets}
    assert sorted(by_count) == [1, 4]
    assert by_count[1] == {
        "spec": {
            "containers": [
                {
                    "name": "member",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "2"}},
                }
            ]
        }
    }
    gpu_spec = by_count[4]["spec"]
    assert gpu_spec["containers"][0]["resources"] == {
        "requests": {"cpu": "8", "nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    assert gpu_spec["nodeSelector"] == {"pool": "gpu"}
    assert gpu_spec["tolerations"] == [{"operator": "Exists", "key": "gpu", "effect": "NoSchedule"}]
    assert gpu_spec["affinity"] == spec["affinity"]


def test_a_gang_that_fits_is_placed_and_nothing_is_asked() -> None:
    small = gang("small", 4, cpu=4, created=CREATED)
    result = schedule(cluster(small), SCALE_UP)
    assert binds_per_job(result) == {small.key: 4}
    assert result.provisioning_requests == []
    assert result.pod_annotations == []
    assert scale_up_condition(result, small) is None


@pytest.mark.parametrize(
    ("scale_up", "annotations", "queue_name"),
    [
        (config(listed=False), {}, "default"),
        (SCALE_UP, {"muster.dev/scale-up": "false"}, "default"),
        (config("{queues: [elastic]}"), {}, "default"),
    ],
    ids=["plugin-not-listed", "podgroup-annotation-false", "queue-not-listed"],
)
def test_nothing_is_asked_where_scale_up_is_off(
    scale_up: SchedulerConfig, annotations: dict[str, str], queue_name: str
) -> None:
    big = gang("big", 8, cpu=4, created=CREATED, queue=queue_name)
    big.settings = group_settings({}, annotations)
    result = schedule(cluster(big), scale_up)
    assert result.provisioning_requests == []
    assert result.pod_annotations == []
    assert scale_up_condition(result, big) is None


def test_scale_up_for_listed_queues_asks_for_their_gangs() -> None:
    big = gang("big", 8, cpu=4, created=CREATED, queue="elastic")
    snap = cluster(big)
    snap.queues["elastic"] = queue("elastic")
    result = schedule(snap, config("{queues: [elastic]}"))
    assert created(result) == ["big-scaleup-1"]


def test_a_gang_its_queue_does_not_admit_is_not_asked_for_but_its_pods_name_its_request() -> None:
    big = gang("big", 8, cpu=4, created=CREATED, queue="small", phase=PodGroupPhase.PENDING)
    big.min_resources = resources(cpu=32)
    snap = cluster(big)
    snap.queues["small"] = queue("small", capability=resources(cpu=8))
    result = schedule(snap, SCALE_UP)
    assert result.provisioning_requests == []
    # Named in advance: cluster-autoscaler then adds no node for any of them on its own.
    assert {a.request for a in result.pod_annotations} == {"big-scaleup-1"}
    assert len(result.pod_annotations) == 8
    assert scale_up_condition(result, big) is None


def test_a_gang_bigger_than_the_whole_cluster_is_asked_for_before_it_is_admitted() -> None:
    # Its minResources exceed what the nodes could ever hold: no admission would come.
    big = gang("big", 8, cpu=4, created=CREATED, phase=PodGroupPhase.PENDING)
    big.min_resources = resources(cpu=32)
    result = schedule(cluster(big), SCALE_UP)
    (waiting,) = [u for u in result.podgroups if u.name == "big"]
    assert waiting.phase is PodGroupPhase.PENDING
    assert created(result) == ["big-scaleup-1"]


def test_a_gang_is_asked_for_from_an_empty_cluster() -> None:
    # No node: every queue's share of the cluster is nothing.
    big = gang("big", 8, cpu=4, created=CREATED)
    result = schedule(cluster(big, nodes=0), SCALE_UP)
    assert created(result) == ["big-scaleup-1"]


def test_a_gang_that_waits_its_queues_turn_in_a_cluster_that_could_hold_it_is_not_asked_for() -> (
    None
):
    running = running_gang("running", 4, cpu=4, on=["n0", "n1"], created=CREATED)
    small = gang("small", 2, cpu=4, created=CREATED)
    result = schedule(cluster(running, small), SCALE_UP)
    (waiting,) = [u for u in result.podgroups if u.name == "small"]
    assert any(c.reason == "QueueShareExceeded" for c in waiting.conditions)
    assert result.provisioning_requests == []


def test_capacity_provisioned_for_a_gang_not_yet_admitted_is_held_but_nothing_placed() -> None:
    big = gang("big", 8, cpu=4, created=CREATED, phase=PodGroupPhase.PENDING)
    big.min_resources = resources(cpu=48)
    other = gang("other", 2, cpu=4, created=CREATED)
    snap = with_requests(cluster(big, other, nodes=4, ready=2), request(big, 1, PROVISIONED))
    result = schedule(snap, SCALE_UP)
    assert binds_per_job(result) == {}
    (waiting,) = [u for u in result.podgroups if u.name == "big"]
    assert waiting.phase is PodGroupPhase.PENDING
    (room,) = result.holds
    assert (room.job, room.kind) == (big.key, "provisioned")


def test_a_gang_whose_pods_are_not_all_there_yet_names_its_request_in_advance() -> None:
    early = gang("early", 3, cpu=4, created=CREATED, min_member=8)
    result = schedule(cluster(early), SCALE_UP)
    assert result.provisioning_requests == []
    assert {a.request for a in result.pod_annotations} == {"early-scaleup-1"}


def test_a_gang_with_more_pod_shapes_than_a_request_holds_is_not_asked_for_and_says_so() -> None:
    big = gang("big", 33, cpu=4, created=CREATED)
    for index, member in enumerate(sorted(big.tasks.values(), key=lambda t: t.name)):
        member.set_request(resources(cpu=4 + index / 1000))
    result = schedule(cluster(big), SCALE_UP)
    assert result.provisioning_requests == []
    condition = scale_up_condition(result, big)
    assert condition is not None
    assert (condition.status, condition.reason) == ("False", "ScaleUpFailed")
    assert "33 distinct shapes" in condition.message


# A request standing ------------------------------------------------------------------


def test_a_gang_waiting_on_its_accepted_request_asks_nothing_more_and_says_so() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    snap = with_requests(cluster(big), request(big, 1, ACCEPTED))
    result = schedule(snap, SCALE_UP)
    assert result.provisioning_requests == []
    assert result.provisioning_deletions == []
    condition = scale_up_condition(result, big)
    assert condition is not None
    assert condition.reason == "CapacityRequested"
    assert "accepted" in condition.message
    # Its pods do not name the request yet (a restart between the two writes): they do now.
    assert {a.request for a in result.pod_annotations} == {"big-scaleup-1"}


def test_pods_that_name_the_request_already_are_not_written_again() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    for member in big.tasks.values():
        member.scale_up_request = "big-scaleup-1"
    snap = with_requests(cluster(big), request(big, 1, ACCEPTED))
    assert schedule(snap, SCALE_UP).pod_annotations == []


def test_capacity_not_found_yet_is_waited_for_since_the_autoscaler_tries_again() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    snap = with_requests(cluster(big), request(big, 1, ACCEPTED, NOT_FOUND, at=NOW - 3600))
    result = schedule(snap, SCALE_UP)
    assert result.provisioning_requests == []
    condition = scale_up_condition(result, big)
    assert condition is not None
    assert (condition.status, condition.reason) == ("True", "CapacityNotFound")
    assert "CapacityIsNotFound" in condition.message


# Provisioned capacity is held ------------------------------------------------------


def test_provisioned_capacity_is_held_against_every_other_gang_until_the_new_nodes_are_ready() -> (
    None
):
    # 2 Ready nodes of 8 cpu and 2 added for the gang, not Ready yet.
    big = gang("big", 8, cpu=4, created=CREATED)
    urgent = gang("urgent", 2, cpu=4, created=CREATED, priority=1000)
    snap = with_requests(
        cluster(big, urgent, nodes=4, ready=2), request(big, 1, ACCEPTED, PROVISIONED)
    )
    result = schedule(snap, SCALE_UP)
    assert binds_per_job(result) == {}
    (room,) = result.holds
    assert (room.job, room.kind) == (big.key, "provisioned")
    assert room.nodes == {"n0": resources(cpu=8), "n1": resources(cpu=8)}
    condition = scale_up_condition(result, big)
    assert condition is not None
    assert condition.reason == "CapacityProvisioned"
    assert "4 of them fit on no node there is yet" in condition.message


def test_a_starving_gang_yields_its_room_to_higher_priority_where_a_provisioned_one_does_not() -> (
    None
):
    # The same cluster and rival, the holder only starving: the urgent gang takes the room.
    big = gang("big", 8, cpu=4, created=format_rfc3339(NOW - 600))
    urgent = gang("urgent", 2, cpu=4, created=CREATED, priority=1000)
    result = schedule(cluster(big, urgent, nodes=4, ready=2), config(listed=False))
    assert binds_per_job(result) == {urgent.key: 2}


def test_a_provisioned_gang_is_placed_first_once_its_nodes_are_ready() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    # Older and of higher priority: without the request it would go first and break the fit.
    rival = gang("rival", 2, cpu=4, created=format_rfc3339(NOW - 100), priority=1000)
    snap = with_requests(cluster(rival, big, nodes=4), request(big, 1, ACCEPTED, PROVISIONED))
    result = schedule(snap, SCALE_UP)
    assert binds_per_job(result) == {big.key: 8}
    # Placed: its request goes, and its condition with it.
    assert deleted(result) == ["big-scaleup-1"]
    (deletion,) = result.provisioning_deletions
    assert deletion.templates == ("big-scaleup-1-0",)
    assert scale_up_condition(result, big) is None


def test_a_provisioned_gang_is_placed_whatever_its_queues_share_of_the_swollen_cluster() -> None:
    # Queues of equal weight: "default" deserves 16 of the 32 cpu, the gang asks all 32
    # (the nodes were added for it), and "other" wants 32 too.
    big = gang("big", 8, cpu=4, created=CREATED)
    other = gang("other", 8, cpu=4, created=CREATED, queue="other")
    snap = with_requests(cluster(big, other, nodes=4), request(big, 1, PROVISIONED))
    snap.queues["other"] = queue("other")
    result = schedule(snap, SCALE_UP)
    assert binds_per_job(result) == {big.key: 8}


def test_without_its_provisioned_capacity_the_same_gang_waits_for_its_queues_share() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    other = gang("other", 8, cpu=4, created=CREATED, queue="other")
    snap = cluster(big, other, nodes=4)
    snap.queues["other"] = queue("other")
    assert binds_per_job(schedule(snap, SCALE_UP)).get(big.key) is None


def test_revoked_capacity_is_not_held() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    urgent = gang("urgent", 2, cpu=4, created=CREATED)
    snap = with_requests(
        cluster(big, urgent, nodes=4, ready=2), request(big, 1, ACCEPTED, PROVISIONED, REVOKED)
    )
    result = schedule(snap, SCALE_UP)
    assert result.holds == []
    assert binds_per_job(result) == {urgent.key: 2}


# Ended requests are retried --------------------------------------------------------


@pytest.mark.parametrize("ended", [FAILED, EXPIRED, REVOKED], ids=["failed", "expired", "revoked"])
def test_an_ended_request_is_made_again_after_kueues_backoff(ended: tuple[str, str, str]) -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    early = schedule(with_requests(cluster(big), request(big, 1, ended, at=NOW - 59)), SCALE_UP)
    assert early.provisioning_requests == []
    condition = scale_up_condition(early, big)
    assert condition is not None
    assert condition.reason == "ScaleUpRetrying"
    assert f"attempt 2 of 4 is asked at {format_rfc3339(NOW + 1)}" in condition.message
    due = schedule(with_requests(cluster(big), request(big, 1, ended, at=NOW - 60)), SCALE_UP)
    assert created(due) == ["big-scaleup-2"]
    assert due.provisioning_requests[0].attempt == 2
    # The failed attempt stays until the next one is seen: the count is read back from them.
    assert deleted(due) == []
    assert {a.request for a in due.pod_annotations} == {"big-scaleup-2"}


def test_the_backoff_doubles_with_each_attempt() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    third = request(big, 3, FAILED, at=NOW - 239)
    assert schedule(with_requests(cluster(big), third), SCALE_UP).provisioning_requests == []
    third = request(big, 3, FAILED, at=NOW - 240)
    assert created(schedule(with_requests(cluster(big), third), SCALE_UP)) == ["big-scaleup-4"]


def test_the_older_attempt_is_deleted_once_the_newer_one_is_seen() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    snap = with_requests(cluster(big), request(big, 1, FAILED, at=NOW - 90), request(big, 2))
    result = schedule(snap, SCALE_UP)
    assert deleted(result) == ["big-scaleup-1"]
    assert result.provisioning_requests == []


def test_after_the_last_retry_the_scale_up_failed_and_the_podgroup_says_why() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    snap = with_requests(cluster(big), request(big, 4, FAILED, at=NOW - 86400))
    result = schedule(snap, SCALE_UP)
    assert result.provisioning_requests == []
    assert result.provisioning_deletions == []
    condition = scale_up_condition(result, big)
    assert condition is not None
    assert (condition.status, condition.reason) == ("False", "ScaleUpFailed")
    assert "after 4 attempts" in condition.message
    assert "CapacityIsNotFound: CapacityIsNotFound says the autoscaler" in condition.message


def test_the_retry_strategy_is_configurable() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    strategy = config("{retryStrategy: {backoffLimitCount: 0, backoffBaseSeconds: 5}}")
    once = schedule(with_requests(cluster(big), request(big, 1, FAILED, at=NOW - 600)), strategy)
    assert once.provisioning_requests == []
    condition = scale_up_condition(once, big)
    assert condition is not None and condition.reason == "ScaleUpFailed"
    quick = config("{retryStrategy: {backoffBaseSeconds: 5}}")
    result = schedule(with_requests(cluster(big), request(big, 1, FAILED, at=NOW - 5)), quick)
    assert created(result) == ["big-scaleup-2"]


def test_check_capacity_and_parameters_are_asked_as_configured() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    result = schedule(
        cluster(big),
        config(f"{{provisioningClassName: {CHECK_CAPACITY}, parameters: {{noRetry: 'true'}}}}"),
    )
    (asked,) = result.provisioning_requests
    assert asked.class_name == CHECK_CAPACITY
    assert asked.parameters == (("noRetry", "true"),)
    assert {a.class_name for a in result.pod_annotations} == {CHECK_CAPACITY}


# Requests that are no longer needed ------------------------------------------------


def test_a_request_whose_podgroup_is_gone_or_recreated_is_deleted() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    gone = gang("gone", 2, cpu=4, created=CREATED)
    snap = with_requests(
        cluster(big), request(big, 1, ACCEPTED, uid="an-older-podgroup"), request(gone, 1)
    )
    result = schedule(snap, SCALE_UP)
    assert sorted(deleted(result)) == ["big-scaleup-1", "gone-scaleup-1"]
    # The recreated PodGroup gets a request of its own.
    assert created(result) == ["big-scaleup-1"]


def test_turning_scale_up_off_deletes_the_requests_and_clears_the_pods() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    for member in big.tasks.values():
        member.scale_up_request = "big-scaleup-1"
    snap = with_requests(cluster(big), request(big, 1, ACCEPTED))
    result = schedule(snap, config(listed=False))
    assert deleted(result) == ["big-scaleup-1"]
    assert {(a.request, a.class_name) for a in result.pod_annotations} == {("", "")}
    assert len(result.pod_annotations) == 8


def test_another_clients_annotation_is_not_removed() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    for member in big.tasks.values():
        member.scale_up_request = "kueue-made-this-1"
    assert schedule(cluster(big), config(listed=False)).pod_annotations == []


def test_a_running_gang_keeps_no_request() -> None:
    done = running_gang("done", 2, cpu=4, on=["n0"], created=CREATED)
    result = schedule(with_requests(cluster(done), request(done, 1, PROVISIONED)), SCALE_UP)
    assert deleted(result) == ["done-scaleup-1"]


# Reading requests and configuration ------------------------------------------------


def test_requests_of_other_clients_are_not_read() -> None:
    raw = {
        "metadata": {
            "name": "wl-check-1",
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/managed": "true"},
        },
        "spec": {"provisioningClassName": CHECK_CAPACITY, "podSets": []},
    }
    assert read_request(msgspec.convert(raw, ProvisioningRequest)) is None


def test_conditions_are_read_in_kueues_order() -> None:
    big = gang("big", 8, cpu=4, created=CREATED)
    assert request(big, 1, ACCEPTED, PROVISIONED, EXPIRED).state.value == "BookingExpired"
    assert request(big, 1, ACCEPTED, PROVISIONED, FAILED).state.value == "Failed"
    assert request(big, 1, ACCEPTED, NOT_FOUND).state.value == "CapacityNotFound"
    assert request(big, 1).state.value == "Waiting"


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ("{provisioningClassName: Not_A_Name}", "is not a class name"),
        (
            "{retryStrategy: {backoffBaseSeconds: 60, backoffMaxSeconds: 10}}",
            "backoffMaxSeconds (10) is below backoffBaseSeconds (60)",
        ),
        ("{retryStrategy: {backoffLimitCount: -1}}", "backoffLimitCount"),
        ("{queues: []}", "names no queue"),
        ("{parameters: {a: " + "x" * 256 + "}}", "at most 255"),
        ("{retry: 3}", "is not an argument of plugin scaleup"),
    ],
    ids=["class", "max-below-base", "negative-limit", "no-queue", "long-parameter", "unknown"],
)
def test_a_scale_up_config_that_cannot_work_is_refused_when_loaded(
    arguments: str, words: str
) -> None:
    with pytest.raises(ConfigError, match="scaleup") as refused:
        config(arguments)
    assert words in str(refused.value)


def test_members_beyond_a_placed_gang_are_no_longer_kept_from_the_autoscaler() -> None:
    elastic = gang(
        "elastic",
        4,
        cpu=4,
        min_member=2,
        created=CREATED,
        statuses=[TaskStatus.RUNNING, TaskStatus.RUNNING],
        on=["n0"],
        phase=PodGroupPhase.RUNNING,
    )
    for member in elastic.tasks.values():
        member.scale_up_request = "elastic-scaleup-1"
    result = schedule(cluster(elastic, nodes=1), SCALE_UP)
    assert {(a.name, a.request) for a in result.pod_annotations} == {
        ("elastic-2", ""),
        ("elastic-3", ""),
    }
