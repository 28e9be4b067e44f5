"""RayCluster (ray.io/v1), also when a RayJob or RayService made it: the head and its workers.

KubeRay creates the head and every worker pod of a cluster, each owned by the RayCluster and
labelled `ray.io/cluster` and `ray.io/group` (`headgroup` for the head). The cluster is one
gang: 1 (the head) + the sum, over the worker groups not suspended (`suspend: true`), of
(minReplicas when above 0, else replicas) x numOfHosts. A RayJob or RayService owns the
RayCluster, but the cluster is the gang, so it names the group; a RayJob's submitter pod
(a Job of the RayJob) is a group of its own, as any Job's.

The head and each worker group are sub-groups (`spec.subGroupPolicy`): a single-host group
one sub-group of its minimum, whole; a multi-host group's replicas (numOfHosts pods each,
labelled `ray.io/worker-group-replica-name`) split by that label, minReplicas of them
whole. With KubeRay's batch-scheduler integration on, KubeRay writes the PodGroup and
names it on the pods, and muster makes none.
"""

from __future__ import annotations

from scheduler.controller.groupers.base import (
    GrouperBase,
    Grouping,
    Obj,
    Probe,
    Role,
    SubGroup,
    count_field,
    describe,
    nested,
    pod_template,
)

CLUSTER_LABEL = "ray.io/cluster"
GROUP_LABEL = "ray.io/group"
HEAD_GROUP = "headgroup"
REPLICA_NAME_LABEL = "ray.io/worker-group-replica-name"


class RayClusterGrouper(GrouperBase):
    """One group per RayCluster: the head and the worker groups' minimum."""

    api_group = "ray.io"
    kind = "RayCluster"

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """1 + sum of (minReplicas > 0 ? minReplicas : replicas) x numOfHosts."""
        cluster = str((owner.get("metadata") or {}).get("name", ""))
        head = pod_template(nested(owner, ("spec", "headGroupSpec", "template")))
        roles = [Role(HEAD_GROUP, 1, head)]
        sub_groups = [SubGroup(HEAD_GROUP, 1, 1, {CLUSTER_LABEL: cluster, GROUP_LABEL: HEAD_GROUP})]
        terms = ["head 1"]
        groups = nested(owner, ("spec", "workerGroupSpecs")) or []
        for index, group in enumerate(groups):
            if not isinstance(group, dict) or group.get("suspend") is True:
                continue
            at = ("spec", "workerGroupSpecs", index)
            replicas = count_field(owner, (*at, "replicas"), 0)
            minimum = count_field(owner, (*at, "minReplicas"), 0)
            hosts = max(1, count_field(owner, (*at, "numOfHosts"), 1))
            counted = minimum if minimum > 0 else replicas
            name = str(group.get("groupName") or f"worker-group-{index}")
            roles.append(Role(name, counted * hosts, pod_template(group.get("template"))))
            which = f"minReplicas {minimum}" if minimum > 0 else f"replicas {replicas}"
            terms.append(f"{name} {which} x numOfHosts {hosts}")
            if counted:
                selector = {CLUSTER_LABEL: cluster, GROUP_LABEL: name}
                if hosts > 1:
                    # Each replica (numOfHosts pods, one replica name) whole; minReplicas
                    # (or replicas) of them.
                    keys = (REPLICA_NAME_LABEL,)
                    sub_groups.append(
                        SubGroup(name, hosts, counted, selector, match_label_keys=keys)
                    )
                else:
                    # Single-host replicas: the group's minimum as one sub-group, whole (a
                    # policy with no matchLabelKeys makes one sub-group of all its pods).
                    sub_groups.append(SubGroup(name, counted, 1, selector))
        total = sum(role.count for role in roles)
        rule = (
            f"RayCluster {describe(owner)[1]}: 1 + sum over spec.workerGroupSpecs not "
            f"suspended of (minReplicas > 0 ? minReplicas : replicas) x numOfHosts: "
            f"{' + '.join(terms)} = {total}"
        )
        return Grouping(total, tuple(roles), rule, tuple(sub_groups))
