"""VolumeZone: a pod whose claim is bound to a zonal PersistentVolume goes to that zone.

As kube-scheduler's VolumeZone filter: the volume's zone and region labels (the GA
topology.kubernetes.io ones and the beta failure-domain ones; a value may list several
zones joined by "__") must each hold the node's value for the same label. A node with
none of these labels is not constrained. Unbound claims are VolumeBinding's business.
"""

from __future__ import annotations

from scheduler.api.node import NodeInfo
from scheduler.api.snapshot import StorageView
from scheduler.framework.status import OK, Status, unresolvable

REASON_ZONE_CONFLICT = "node(s) had no available volume zone"

ZONE_LABELS = frozenset(
    {
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
    }
)
# kube's LabelZonesToSet: a multi-zone volume joins its zones with this.
_ZONE_SEPARATOR = "__"
_ZONE_CONFLICT = unresolvable(REASON_ZONE_CONFLICT)


def volume_zone_verdict(storage: StorageView, claims: tuple[str, ...], node: NodeInfo) -> Status:
    """Whether every bound volume of the claims (namespace/name) may be used in the node's zone."""
    node_zones = {key: value for key, value in node.labels.items() if key in ZONE_LABELS}
    if not node_zones:
        return OK
    for key in claims:
        claim = storage.claims.get(key)
        if claim is None or not claim.spec.volume_name:
            continue
        volume = storage.volumes.get(claim.spec.volume_name)
        if volume is None:
            continue
        for label, value in volume.metadata.labels.items():
            if label not in ZONE_LABELS:
                continue
            if node_zones.get(label) not in value.split(_ZONE_SEPARATOR):
                return _ZONE_CONFLICT
    return OK
