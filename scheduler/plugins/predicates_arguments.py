"""predicates' arguments, apart from predicates.py because predicates is compiled with mypyc
in the image (setup.py), and a compiled module keeps only the plain types of a class's
fields: pydantic would lose the aliases and bounds it validates with."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from scheduler.framework.arguments import Count
from scheduler.nodefit.storagefilters import VolumePredicateArguments

_PROPORTIONAL = (
    "was removed from predicates in Volcano 1.13: the cpu and memory it kept per GPU are "
    "now the resource-strategy-fit plugin's `proportional` policy, which muster does not "
    "have; remove it"
)
_DEVICES = (
    "was moved from predicates to Volcano's deviceshare plugin, which muster does not "
    "have (muster schedules whole devices as extended resources); remove it"
)


class PredicatesArguments(VolumePredicateArguments):
    """predicates' arguments, in Volcano's spelling: each filter's switch (on by default;
    off turns that filter off), the volume binding's timeout, weight and shape."""

    node_affinity_enable: bool = Field(True, alias="predicate.NodeAffinityEnable")
    node_ports_enable: bool = Field(True, alias="predicate.NodePortsEnable")
    taint_toleration_enable: bool = Field(True, alias="predicate.TaintTolerationEnable")
    pod_affinity_enable: bool = Field(True, alias="predicate.PodAffinityEnable")
    pod_topology_spread_enable: bool = Field(True, alias="predicate.PodTopologySpreadEnable")
    # Volcano's cache of filter verdicts per pod template: muster always caches the static
    # filters' verdicts per placement spec and node, so the switch changes nothing.
    cache_enable: bool | None = Field(None, alias="predicate.CacheEnable")
    # Volcano 1.15 no longer reads it: DRA is on whenever its feature gate is (GA, locked).
    dynamic_resource_allocation_enable: bool | None = Field(
        None, alias="predicate.DynamicResourceAllocationEnable"
    )
    dra_filter_timeout_seconds: Count | None = Field(
        None, alias="dynamicresources.filterTimeoutSeconds", ge=0
    )

    removed: ClassVar[dict[str, str]] = {
        "predicate.ProportionalEnable": _PROPORTIONAL,
        "predicate.resources": _PROPORTIONAL,
        "predicate.resources.": _PROPORTIONAL,
        "predicate.GPUSharingEnable": _DEVICES,
        "predicate.GPUNumberEnable": _DEVICES,
    }

    def load_notes(self) -> list[str]:
        """predicate.CacheEnable, the DRA switch and the DRA timeout change nothing."""
        notes = []
        if self.cache_enable is not None:
            notes.append(
                f"predicate.CacheEnable: {str(self.cache_enable).lower()} changes nothing: "
                f"muster always caches the static filters' verdicts (taints, node affinity, "
                f"volumes) per pod spec and node for the session"
            )
        if self.dynamic_resource_allocation_enable is not None:
            notes.append(
                "predicate.DynamicResourceAllocationEnable changes nothing: Volcano 1.15 no "
                "longer reads it, and neither does muster: pods' ResourceClaims are always "
                "allocated (DynamicResourceAllocation is GA)"
            )
        if self.dra_filter_timeout_seconds is not None:
            notes.append(
                "dynamicresources.filterTimeoutSeconds changes nothing: muster bounds each "
                "device search by the devices it tries (20,000 steps an answer, 1,000,000 a "
                "session), not by time, so a session decides alike however fast it runs"
            )
        return notes
