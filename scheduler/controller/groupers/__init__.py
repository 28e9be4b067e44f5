"""The gang rules of workload kinds, one module per kind, and which one groups a pod.

A pod's owners are walked by their controller references to the top (a pod of a JobSet:
Job, then JobSet; a worker of a LeaderWorkerSet: worker StatefulSet, leader pod, leader
StatefulSet, LeaderWorkerSet). The topmost owner whose kind has a rule names the group and
sizes it; kinds without one are passed through (a TrainJob is grouped through the JobSet it
creates, a RayJob or RayService through its RayCluster, a CronJob through its Job). A Spark
pod with no such owner is grouped by its application; anything else is one group per
controlling owner, or per bare pod (groupers/default.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.controller.groupers.base import Grouper, Obj
from scheduler.controller.groupers.default import DefaultGrouper
from scheduler.controller.groupers.job import JobGrouper
from scheduler.controller.groupers.jobset import JobSetGrouper
from scheduler.controller.groupers.kubeflow import JAXJOB, PADDLEJOB, TFJOB, XGBOOSTJOB
from scheduler.controller.groupers.leaderworkerset import LeaderWorkerSetGrouper
from scheduler.controller.groupers.mpijob import MPIJOB
from scheduler.controller.groupers.pytorchjob import PYTORCHJOB
from scheduler.controller.groupers.raycluster import RayClusterGrouper
from scheduler.controller.groupers.spark import SparkGrouper, is_spark_pod

SPARK = SparkGrouper()
DEFAULT = DefaultGrouper()

GROUPERS: dict[tuple[str, str], Grouper] = {
    (grouper.api_group, grouper.kind): grouper
    for grouper in (
        JobSetGrouper(),
        LeaderWorkerSetGrouper(),
        TFJOB,
        PYTORCHJOB,
        XGBOOSTJOB,
        JAXJOB,
        PADDLEJOB,
        MPIJOB,
        RayClusterGrouper(),
        SPARK,
        JobGrouper(),
    )
}


def grouper_of(obj: Obj) -> Grouper | None:
    """The rule of an object's kind, if there is one."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return GROUPERS.get((group, str(obj.get("kind", ""))))


def choose(pod: Obj, owners: Sequence[Obj]) -> tuple[Grouper, Obj]:
    """The rule that groups a pod and the object it names the group after.

    `owners` are the pod's controlling owners as read, nearest first.
    """
    for owner in reversed(owners):
        grouper = grouper_of(owner)
        if grouper is not None:
            return grouper, owner
    if is_spark_pod(pod):
        return SPARK, owners[-1] if owners else pod
    return DEFAULT, owners[0] if owners else pod
