"""What a PodGroup says of itself, read and checked before it becomes a JobInfo
(api/job.py): its phase, when it was admitted or sent back, the counts and fields muster
cannot use, and the spec fields it does not honour yet.

Volcano's PodGroups (wire.PodGroup) and Kubernetes' native ones (api/native.py) alike:
JobInfo's readers ask these and build the record from the answers.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from scheduler.api import wire
from scheduler.api.errors import FieldRefused, InvalidObject
from scheduler.api.names import INT32_MAX
from scheduler.api.native import NATIVE_KIND, REFUSED_FIELDS, NativePodGroup
from scheduler.api.network_topology import NETWORK_TOPOLOGY_FIELD
from scheduler.api.reasons import ADMITTED, INQUEUE_TIMEOUT
from scheduler.api.subgroups import SUB_GROUP_POLICY_FIELD, SubGroupPolicy
from scheduler.api.timestamps import parse_rfc3339


class PodGroupPhase(enum.Enum):
    """PodGroup status.phase, as Volcano defines it."""

    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


# Fields of a PodGroup spec muster accepts but does not honour yet, and what it does instead.
PRIORITY_CLASS_FIELD = "spec.priorityClassName"
SUBGROUP_TOPOLOGY_FIELD = f"{SUB_GROUP_POLICY_FIELD}[].networkTopology"
NOT_HONOURED: dict[str, str] = {
    # Honoured by the network-topology-aware plugin, which takes it off the list when the
    # scheduler config enables it (plugins/networktopology.py).
    NETWORK_TOPOLOGY_FIELD: "the network-topology-aware plugin is not enabled in the "
    "scheduler config, so the gang's pods go on any nodes that fit, whatever their network "
    "topology; add network-topology-aware to a tier of the config to honour it",
    SUBGROUP_TOPOLOGY_FIELD: "the network-topology-aware plugin is not enabled in the "
    "scheduler config, so each subgroup is placed whole but on any nodes that fit; add "
    "network-topology-aware to a tier of the config to honour it",
    PRIORITY_CLASS_FIELD: "it names no PriorityClass, so the PodGroup has the global default "
    "priority (0 without one); create the class or fix the name",
}


def read_phase(value: str) -> PodGroupPhase:
    """A Volcano PodGroup's status.phase as a PodGroupPhase."""
    try:
        return PodGroupPhase(value)
    except ValueError:
        # A PodGroup nobody has written a status for yet is Pending.
        return PodGroupPhase.PENDING


def native_phase(group: NativePodGroup) -> PodGroupPhase:
    """The phase of a native PodGroup, which has no status.phase: the one place it is
    derived from. From its conditions: Running once its scheduled condition is True (the
    gang was placed whole; never set back, as kube-scheduler's), Inqueue while muster's
    Admitted is True, else Pending. What its pods say (Completed, Unknown for a broken
    gang) a session derives as for any PodGroup (framework/job_status.phase_after)."""
    admitted = False
    for condition in group.conditions:
        if condition.status != "True":
            continue
        if condition.type == group.scheduled_condition:
            return PodGroupPhase.RUNNING
        if condition.type == ADMITTED:
            admitted = True
    return PodGroupPhase.INQUEUE if admitted else PodGroupPhase.PENDING


def admission_times(conditions: Iterable[wire.Condition]) -> tuple[float | None, float | None]:
    """When the PodGroup was admitted, and when it was sent back for not starting in time
    (epoch seconds, None for never), from its Admitted condition: survives a restart of
    the scheduler."""
    admitted_since: float | None = None
    timed_out_since: float | None = None
    for condition in conditions:
        if condition.type != ADMITTED:
            continue
        since = parse_rfc3339(condition.last_transition_time)
        if condition.status == "True":
            admitted_since = since
        elif condition.reason == INQUEUE_TIMEOUT:
            timed_out_since = since
    return admitted_since, timed_out_since


def check_counts(key: str, spec: wire.PodGroupSpec) -> None:
    """Raise InvalidObject when the PodGroup's minMember or a minTaskMember entry cannot be
    used."""
    if spec.min_member < 0:
        raise InvalidObject("PodGroup", key, "spec.minMember", spec.min_member, "must be 0 or more")
    # An int32 in Volcano's API: kube-apiserver before 1.36 stores larger values (it
    # did not check CRD integer formats), and such a gang could never be told apart
    # from one merely waiting.
    if spec.min_member > INT32_MAX:
        raise InvalidObject(
            "PodGroup", key, "spec.minMember", spec.min_member, f"must be at most {INT32_MAX}"
        )
    for role, count in spec.min_task_member.items():
        if count > INT32_MAX:
            raise InvalidObject(
                "PodGroup",
                key,
                f"spec.minTaskMember.{role}",
                count,
                f"must be at most {INT32_MAX}",
            )
        if count < 0:
            raise InvalidObject(
                "PodGroup", key, f"spec.minTaskMember.{role}", count, "must be 0 or more"
            )


def unhonoured_fields(
    spec: wire.PodGroupSpec, policies: tuple[SubGroupPolicy, ...]
) -> tuple[str, ...]:
    """The fields of NOT_HONOURED that the PodGroup sets (`policies`: its subGroupPolicy,
    read); the plugin that honours one takes it off the list."""
    return tuple(
        field
        for field, present in (
            (NETWORK_TOPOLOGY_FIELD, spec.network_topology is not None),
            (
                SUBGROUP_TOPOLOGY_FIELD,
                any(p.network_topology is not None for p in policies),
            ),
        )
        if present
    )


def check_native(group: NativePodGroup) -> None:
    """Raise InvalidObject when a native PodGroup's spec cannot be used, FieldRefused when
    it uses a field muster refuses."""
    key = f"{group.namespace}/{group.name}"
    if group.gang and group.min_count < 1:
        raise InvalidObject(
            NATIVE_KIND,
            key,
            "spec.schedulingPolicy.gang.minCount",
            group.min_count,
            "must be 1 or more",
        )
    if group.refused:
        field, value = group.refused[0]
        raise FieldRefused(NATIVE_KIND, key, field, value, REFUSED_FIELDS[field])
