"""Every PodSpec field of Kubernetes (up to 1.35, and the newer ones the official client
knows), classified by what muster does with it, and the one rule for a pod that uses a
field muster does not honour yet: refused (not placed) or placed with a warning.

The list is the one place this is decided: wire/decode.py's strict pod decoder names the same
top-level fields (a unit test holds them equal), README's table is written from it, and
TaskInfo.from_pod asks `unhonoured` what a pod gets.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from scheduler.api import wire


class Verdict(enum.Enum):
    """What muster does with a pod-spec field."""

    HONOURED = "honoured"
    NOT_RELEVANT = "not relevant to placement"
    REFUSED = "not honoured yet: the pod is not placed"
    WARNED = "not honoured yet: placed with a FieldNotHonoured warning"


@dataclass(frozen=True, slots=True)
class FieldRule:
    """One field's verdict and, for the not-honoured ones, what muster does instead."""

    verdict: Verdict
    note: str = ""


_AS_IF_ABSENT = "the pod is placed as if the field were absent"

_POD_AFFINITY = "spec.affinity.podAffinity"
_POD_ANTI_AFFINITY = "spec.affinity.podAntiAffinity"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_SPREAD = "spec.topologySpreadConstraints"

_HONOURED = Verdict.HONOURED
_IRRELEVANT = Verdict.NOT_RELEVANT

# Keys are field paths; a path with "=value" names the field when it holds that value.
POD_FIELDS: dict[str, FieldRule] = {
    # Honoured: what kube-scheduler's default plugins read and muster does too.
    "spec.affinity": FieldRule(_HONOURED, "nodeAffinity, and pod (anti-)affinity below"),
    "spec.affinity.nodeAffinity": FieldRule(
        _HONOURED, "required terms filter, preferred terms score"
    ),
    "spec.containers": FieldRule(_HONOURED, "resources.requests and ports[].hostPort"),
    "spec.initContainers": FieldRule(_HONOURED, "requests (sidecars with restartPolicy Always)"),
    "spec.nodeName": FieldRule(_HONOURED, "a pod with a node is bound: its room is counted"),
    "spec.nodeSelector": FieldRule(_HONOURED, "filters nodes by label"),
    "spec.overhead": FieldRule(_HONOURED, "added to the pod's request"),
    "spec.preemptionPolicy": FieldRule(_HONOURED, "Never: the pod does not preempt"),
    "spec.resourceClaims": FieldRule(
        _HONOURED,
        "DynamicResources: the devices of every claim of a gang's members allocated together "
        "and written into the claims before the bind; what muster does not honour of a claim "
        "or a device is refused by name in the pod's condition (docs/workloads.md, Devices)",
    ),
    "spec.priority": FieldRule(_HONOURED, "task order, preemption"),
    "spec.priorityClassName": FieldRule(_HONOURED, "resolved by admission into spec.priority"),
    "spec.resources": FieldRule(
        _HONOURED,
        "pod-level requests: each of cpu, memory and hugepages it names is the pod's request "
        "of it in place of its containers' sum (extended resources stay the containers')",
    ),
    "spec.schedulerName": FieldRule(_HONOURED, "muster places only pods naming it"),
    "spec.schedulingGates": FieldRule(_HONOURED, "a gated pod is not placed (SchedulingGated)"),
    "spec.schedulingGroup": FieldRule(
        _HONOURED,
        "the pod joins that native PodGroup (podgroups.scheduling.k8s.io); the annotation "
        "scheduling.k8s.io/group-name wins when the pod carries both",
    ),
    "spec.tolerations": FieldRule(_HONOURED, "NoSchedule and NoExecute taints"),
    # Not relevant to where a pod goes (or folded into other fields by admission).
    "spec.activeDeadlineSeconds": FieldRule(_IRRELEVANT),
    "spec.automountServiceAccountToken": FieldRule(_IRRELEVANT),
    "spec.dnsConfig": FieldRule(_IRRELEVANT),
    "spec.dnsPolicy": FieldRule(_IRRELEVANT),
    "spec.enableServiceLinks": FieldRule(_IRRELEVANT),
    "spec.ephemeralContainers": FieldRule(_IRRELEVANT, "added to running pods only"),
    "spec.hostAliases": FieldRule(_IRRELEVANT),
    "spec.hostIPC": FieldRule(_IRRELEVANT),
    "spec.hostNetwork": FieldRule(_IRRELEVANT, "defaulting makes its container ports host ports"),
    "spec.hostPID": FieldRule(_IRRELEVANT),
    "spec.hostUsers": FieldRule(_IRRELEVANT),
    "spec.hostname": FieldRule(_IRRELEVANT),
    "spec.hostnameOverride": FieldRule(_IRRELEVANT),
    "spec.imagePullSecrets": FieldRule(_IRRELEVANT),
    "spec.os": FieldRule(_IRRELEVANT, "nodes are chosen by their kubernetes.io/os label"),
    "spec.readinessGates": FieldRule(_IRRELEVANT),
    "spec.restartPolicy": FieldRule(_IRRELEVANT),
    "spec.runtimeClassName": FieldRule(
        _IRRELEVANT, "admission folds its overhead and scheduling in"
    ),
    "spec.securityContext": FieldRule(_IRRELEVANT),
    "spec.serviceAccount": FieldRule(_IRRELEVANT),
    "spec.serviceAccountName": FieldRule(_IRRELEVANT),
    "spec.setHostnameAsFQDN": FieldRule(_IRRELEVANT),
    "spec.shareProcessNamespace": FieldRule(_IRRELEVANT),
    "spec.subdomain": FieldRule(_IRRELEVANT),
    "spec.terminationGracePeriodSeconds": FieldRule(_IRRELEVANT),
    "spec.volumes": FieldRule(_IRRELEVANT, "sources other than claims; claims below"),
    # Claims: kube-scheduler's VolumeBinding and VolumeZone (nodefit/volumebinding.py).
    "spec.volumes.persistentVolumeClaim": FieldRule(
        _HONOURED,
        "VolumeBinding (bound volumes' node affinity; WaitForFirstConsumer claims to a node "
        "with a matching volume, which PreBind binds by claimRef, or that its class may "
        "provision on, which PreBind marks with selected-node), VolumeZone, "
        "VolumeRestrictions (ReadWriteOncePod) and NodeVolumeLimits (CSINode counts)",
    ),
    "spec.volumes.ephemeral": FieldRule(
        _HONOURED, "its claim <pod>-<volume>, as persistentVolumeClaim volumes"
    ),
    # Pod-to-pod: kube-scheduler's InterPodAffinity and PodTopologySpread
    # (nodefit/interpodaffinity.py, nodefit/podtopologyspread.py); gang members placed in
    # one session count for each other.
    f"{_POD_AFFINITY}.{_REQUIRED}": FieldRule(
        _HONOURED, "InterPodAffinity filter (namespaces, namespaceSelector, matchLabelKeys)"
    ),
    f"{_POD_ANTI_AFFINITY}.{_REQUIRED}": FieldRule(
        _HONOURED, "InterPodAffinity filter, both ways (placed pods' terms keep pods away)"
    ),
    f"{_POD_AFFINITY}.{_PREFERRED}": FieldRule(_HONOURED, "InterPodAffinity score"),
    f"{_POD_ANTI_AFFINITY}.{_PREFERRED}": FieldRule(_HONOURED, "InterPodAffinity score"),
    f"{_SPREAD}.whenUnsatisfiable=DoNotSchedule": FieldRule(
        _HONOURED,
        "PodTopologySpread filter (maxSkew, minDomains, nodeAffinityPolicy, nodeTaintsPolicy, "
        "matchLabelKeys)",
    ),
    f"{_SPREAD}.whenUnsatisfiable=ScheduleAnyway": FieldRule(_HONOURED, "PodTopologySpread score"),
    # Not honoured yet: placed with a warning.
    "spec.evictionResponders": FieldRule(
        Verdict.WARNED,
        "the pod is placed as if the field were absent: muster's preempt and reclaim "
        "evict without asking eviction responders",
    ),
}

# What a field outside the list (newer than muster) gets: placed with a warning.
UNKNOWN_FIELD_NOTE = f"{_AS_IF_ABSENT} (a Kubernetes field newer than muster's list)"


def top_level_fields() -> frozenset[str]:
    """The PodSpec field names the list classifies (wire/decode.py's strict decoder names them)."""
    return frozenset(path.removeprefix("spec.").split(".")[0] for path in POD_FIELDS)


def not_honoured() -> dict[str, FieldRule]:
    """The fields muster refuses or warns about, in the list's order (README's table)."""
    return {
        path: rule
        for path, rule in POD_FIELDS.items()
        if rule.verdict in (Verdict.REFUSED, Verdict.WARNED)
    }


def message(path: str) -> str:
    """The words a pod gets for one not-honoured field (its condition or its event)."""
    rule = POD_FIELDS[path]
    if rule.note.startswith("muster "):
        return f"{path}: {rule.note}"
    return f"muster does not honour {path} yet: {rule.note}"


def unknown_field_message(name: str) -> str:
    """The warning for a spec field outside the list."""
    return f"muster does not know spec.{name} yet: {UNKNOWN_FIELD_NOTE}"


@dataclass(frozen=True, slots=True)
class Unhonoured:
    """What a pod asks that muster does not honour: refusals keep it from being placed,
    warnings go on an event once it is."""

    refusals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def unhonoured(spec: wire.PodSpec, unknown: tuple[str, ...] = ()) -> Unhonoured | None:
    """The refusals and warnings of a pod spec, or None for a pod that uses none of the
    not-honoured fields (the common pod: a few attribute reads)."""
    affinity = spec.affinity
    pod_terms = affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    )
    if not (pod_terms or spec.topology_spread_constraints or spec.eviction_responders or unknown):
        return None  # the common pod: nothing below applies
    paths: list[str] = []
    if affinity is not None:
        for prefix, terms in (
            (_POD_AFFINITY, affinity.pod_affinity),
            (_POD_ANTI_AFFINITY, affinity.pod_anti_affinity),
        ):
            if terms is None:
                continue
            if terms.required_during_scheduling_ignored_during_execution:
                paths.append(f"{prefix}.{_REQUIRED}")
            if terms.preferred_during_scheduling_ignored_during_execution:
                paths.append(f"{prefix}.{_PREFERRED}")
    for when in sorted({c.when_unsatisfiable for c in spec.topology_spread_constraints}):
        path = f"{_SPREAD}.whenUnsatisfiable={when}"
        # An unknown value (the API refuses it today) is not ignored either: it filters.
        paths.append(path if path in POD_FIELDS else f"{_SPREAD}.whenUnsatisfiable=DoNotSchedule")
    if spec.eviction_responders:
        paths.append("spec.evictionResponders")
    if not paths and not unknown:
        return None  # e.g. empty affinity terms
    unique = list(dict.fromkeys(paths))
    refusals = tuple(message(p) for p in unique if POD_FIELDS[p].verdict is Verdict.REFUSED)
    warnings = tuple(message(p) for p in unique if POD_FIELDS[p].verdict is Verdict.WARNED)
    warnings += tuple(unknown_field_message(n) for n in unknown)
    if not refusals and not warnings:
        return None  # only honoured fields (pod affinity, spread)
    return Unhonoured(refusals, warnings)
