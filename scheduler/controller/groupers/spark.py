"""Spark: the driver and the executors of one application share a group.

Spark labels its driver and executor pods `spark-app-selector: <application id>` and
`spark-role: driver|executor`; the executors are owned by the driver pod, the driver by the
SparkApplication when the Spark operator submitted it. The driver asks for its executors
once it runs, so a gang of more than the driver would wait for pods that cannot exist yet:
minMember is 1 (an annotation can ask for more, at that risk), and the executors join the
running group as they come. The group is keyed by the application id, so each run of a
SparkApplication has its own.
"""

from __future__ import annotations

from scheduler.controller.groupers.base import (
    GrouperBase,
    Grouping,
    Obj,
    Probe,
    Role,
    describe,
    required_label,
)

APP_LABEL = "spark-app-selector"
ROLE_LABEL = "spark-role"


class SparkGrouper(GrouperBase):
    """One group per Spark application: the driver, joined by its executors."""

    api_group = "sparkoperator.k8s.io"
    kind = "SparkApplication"

    def key_of(self, owner: Obj, pod: Obj) -> str:
        """The application id."""
        return required_label(pod, APP_LABEL, "Spark labels its pods with their application id")

    def keys(self, owner: Obj) -> tuple[str, ...]:
        """None: the application ids are the pods', not the spec's."""
        return ()

    def grouping(
        self, owner: Obj, key: str, pod: Obj | None, present: frozenset[Probe]
    ) -> Grouping:
        """The driver alone at first."""
        rule = (
            f"Spark application {key} of {describe(owner)[0]} {describe(owner)[1]} (pod label "
            f"{APP_LABEL}): the driver starts its executors once it runs, so minMember 1"
        )
        return Grouping(1, (Role("driver", 1, None),), rule)


def is_spark_pod(pod: Obj) -> bool:
    """A pod Spark made: it carries its application id."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(APP_LABEL))
