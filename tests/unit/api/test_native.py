"""Both versions of Kubernetes' own PodGroup read into one record, and that record into a gang."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from scheduler.api.errors import FieldRefused, InvalidObject
from scheduler.api.job import JobInfo
from scheduler.api.native import (
    V1ALPHA2,
    V1BETA1,
    NativeWorkload,
    PodGroupApi,
    QueueSource,
    decode_podgroup,
    describe_group,
    native_key,
    native_queue,
    read_podgroup,
    read_workload,
)
from scheduler.api.podgroup import PodGroupPhase, native_phase
from scheduler.api.task import TaskInfo
from tests.unit.native_objects import member, native_podgroup, native_podgroup_body, workload

BOTH = pytest.mark.parametrize("version", [V1ALPHA2, V1BETA1])


@BOTH
def test_both_versions_map_every_field_muster_reads_onto_one_record(version: str) -> None:
    group = read_podgroup(
        native_podgroup(
            "g",
            4,
            version=version,
            workload="w",
            template="workers",
            whole=True,
            priority=100,
            priority_class="high",
            topology_key="topology.kubernetes.io/zone",
        ),
        version,
    )
    assert group.key == "scheduling.k8s.io/ns/g"
    assert (group.workload, group.template) == ("w", "workers")
    assert (group.gang, group.min_count) == (True, 4)
    assert group.disruption_whole
    assert (group.priority, group.priority_class_name) == (100, "high")
    assert group.topology_keys == ("topology.kubernetes.io/zone",)
    assert group.refused == ()
    assert group.version == version


@BOTH
def test_the_default_disruption_mode_of_either_version_is_pod_by_pod(version: str) -> None:
    group = read_podgroup(native_podgroup("g", 2, version=version), version)
    assert not group.disruption_whole


def test_v1alpha2s_explicit_nulls_read_as_absent() -> None:
    # podGroupTemplateRef and a template's schedulingConstraints have no omitempty.
    body = native_podgroup_body("g", 2)
    body["spec"]["podGroupTemplateRef"] = None
    body["spec"]["schedulingConstraints"] = None
    body["spec"]["resourceClaims"] = None
    body["status"] = {"conditions": None}
    group = read_podgroup(decode_podgroup(msgspec.json.encode(body)), V1ALPHA2)
    assert (group.workload, group.topology_keys, group.refused) == ("", (), ())
    assert group.conditions == ()


def test_a_template_reference_whose_workload_is_null_names_none() -> None:
    body = native_podgroup_body("g", 2)
    body["spec"]["podGroupTemplateRef"] = {"workload": None}
    group = read_podgroup(decode_podgroup(msgspec.json.encode(body)), V1ALPHA2)
    assert group.workload == ""


@BOTH
def test_basic_is_a_gang_of_one(version: str) -> None:
    group = read_podgroup(native_podgroup("g", None, version=version), version)
    job = JobInfo.from_native(group, 0, "default", QueueSource.DEFAULT)
    assert (group.gang, job.min_member) == (False, 1)


@BOTH
def test_a_gangs_min_count_is_its_min_member_and_its_key_is_apart_from_volcanos(
    version: str,
) -> None:
    group = read_podgroup(native_podgroup("train", 3, version=version), version)
    job = JobInfo.from_native(group, 5, "team-a", QueueSource.PODGROUP)
    assert job.min_member == 3
    assert job.key == "scheduling.k8s.io/ns/train" != JobInfo(namespace="ns", name="train").key
    assert job.api is PodGroupApi.NATIVE and job.native
    assert (job.queue, job.priority, job.native_version) == ("team-a", 5, version)


def test_v1beta1s_preemption_policy_is_read() -> None:
    group = read_podgroup(
        native_podgroup("g", 2, version=V1BETA1, preemption_policy="Never"), V1BETA1
    )
    job = JobInfo.from_native(group, 0, "default", QueueSource.DEFAULT)
    assert job.preemption_policy == "Never"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        pytest.param(
            {"claims": [{"name": "gpus", "resourceClaimTemplateName": "t"}]},
            "spec.resourceClaims",
            id="podgroup-resource-claims",
        ),
        pytest.param(
            {"version": V1BETA1, "parent": "root"},
            "spec.parentCompositePodGroupName",
            id="composite-parent",
        ),
    ],
)
def test_a_field_muster_refuses_is_named_and_the_gang_never_placed(
    options: dict[str, Any], field: str
) -> None:
    version = options.get("version", V1ALPHA2)
    group = read_podgroup(native_podgroup("g", 2, **options), version)
    with pytest.raises(FieldRefused) as refused:
        JobInfo.from_native(group, 0, "default", QueueSource.DEFAULT)
    assert refused.value.field == field
    assert "muster does not" in str(refused.value)
    kept = JobInfo.read_native(group, 0, "default", QueueSource.DEFAULT)
    assert isinstance(kept.invalid, FieldRefused) and kept.native


def test_a_min_count_below_one_cannot_be_used() -> None:
    group = read_podgroup(native_podgroup("g", 0), V1ALPHA2)
    with pytest.raises(InvalidObject, match="minCount"):
        JobInfo.from_native(group, 0, "default", QueueSource.DEFAULT)


@pytest.mark.parametrize(
    ("version", "conditions", "phase"),
    [
        pytest.param(V1ALPHA2, [], PodGroupPhase.PENDING, id="no-condition-pending"),
        pytest.param(
            V1ALPHA2,
            [{"type": "Admitted", "status": "True", "reason": "Enqueued"}],
            PodGroupPhase.INQUEUE,
            id="admitted-inqueue",
        ),
        pytest.param(
            V1ALPHA2,
            [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
            PodGroupPhase.RUNNING,
            id="v1alpha2-scheduled-running",
        ),
        pytest.param(
            V1ALPHA2,
            [{"type": "PodGroupScheduled", "status": "False", "reason": "Unschedulable"}],
            PodGroupPhase.PENDING,
            id="unschedulable-pending",
        ),
        pytest.param(
            V1BETA1,
            [{"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"}],
            PodGroupPhase.RUNNING,
            id="v1beta1-initially-scheduled-running",
        ),
        pytest.param(
            V1BETA1,
            [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
            PodGroupPhase.PENDING,
            id="v1beta1-ignores-the-old-type",
        ),
    ],
)
def test_a_native_podgroups_phase_comes_from_its_conditions(
    version: str, conditions: list[dict[str, Any]], phase: PodGroupPhase
) -> None:
    group = read_podgroup(native_podgroup("g", 2, version=version, conditions=conditions), version)
    assert native_phase(group) is phase
    job = JobInfo.from_native(group, 0, "default", QueueSource.DEFAULT)
    assert job.phase is job.observed_phase is phase


def test_the_admission_time_survives_a_restart_on_a_native_podgroup_too() -> None:
    admitted = {
        "type": "Admitted",
        "status": "True",
        "reason": "Enqueued",
        "lastTransitionTime": "2026-01-01T00:01:00Z",
    }
    group = read_podgroup(native_podgroup("g", 2, conditions=[admitted]), V1ALPHA2)
    job = JobInfo.from_native(group, 0, "default", QueueSource.DEFAULT)
    assert job.admitted_since is not None and job.admitted_since > 0


@pytest.mark.parametrize(
    ("own", "of_workload", "pods", "namespace", "expected"),
    [
        pytest.param("a", "b", ["c"], "d", ("a", QueueSource.PODGROUP), id="podgroup-first"),
        pytest.param("", "b", ["c"], "d", ("b", QueueSource.WORKLOAD), id="then-workload"),
        pytest.param("", "", ["c", ""], "d", ("c", QueueSource.PODS), id="then-pods"),
        pytest.param("", "", ["z", "c"], "", ("c", QueueSource.PODS), id="pods-first-by-name"),
        pytest.param("", "", [], "d", ("d", QueueSource.NAMESPACE), id="then-namespace"),
        pytest.param("", "", [], "", ("default", QueueSource.DEFAULT), id="else-default"),
    ],
)
def test_a_native_podgroups_queue_is_the_first_its_chain_names(
    own: str,
    of_workload: str,
    pods: list[str],
    namespace: str,
    expected: tuple[str, QueueSource],
) -> None:
    annotations = {"scheduling.volcano.sh/queue-name": own} if own else None
    group = read_podgroup(native_podgroup("g", 2, annotations=annotations), V1ALPHA2)
    found = native_queue(group, NativeWorkload("ns", "w", of_workload), pods, namespace, "default")
    assert found == expected


def test_a_queue_label_counts_as_the_annotation_does() -> None:
    group = read_podgroup(
        native_podgroup("g", 2, labels={"scheduling.volcano.sh/queue-name": "team-a"}), V1ALPHA2
    )
    assert native_queue(group, None, [], "", "default") == ("team-a", QueueSource.PODGROUP)
    assert read_workload(workload("w", queue="team-b", queue_as_label=True)).queue == "team-b"


def test_a_pod_joins_its_native_podgroup_by_spec_scheduling_group() -> None:
    task = TaskInfo.from_pod(member("g-0", group="g"))
    assert task.job == native_key("ns", "g") == "scheduling.k8s.io/ns/g"
    assert task.ignored_group == ""


def test_a_pod_naming_both_joins_the_volcano_podgroup_and_keeps_the_other_name() -> None:
    task = TaskInfo.from_pod(member("g-0", group="native", volcano_group="volcano"))
    assert task.job == "ns/volcano"
    assert task.ignored_group == "native"


def test_an_orphans_message_names_which_api_its_podgroup_is_of() -> None:
    assert describe_group("scheduling.k8s.io/ns/g") == "podgroups.scheduling.k8s.io ns/g"
    assert describe_group("ns/g") == "PodGroup ns/g"
