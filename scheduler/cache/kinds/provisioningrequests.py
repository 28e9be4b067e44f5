"""muster's ProvisioningRequests (scale-up), read back for what became of them.

From cluster-autoscaler's CRD or muster's crds/provisioningrequest.yaml. Optional: a cluster
with no autoscaler has none. Another client's request is not kept; a change to one of
muster's unsettles every gang (framework/scaleup.py reads them).
"""

from __future__ import annotations

from scheduler.api import provisioning
from scheduler.api.provisioning import ProvisioningRequest, read_request
from scheduler.cache.kinds.base import Handler, namespaced
from scheduler.cache.world import World


def upsert(world: World, obj: ProvisioningRequest) -> None:
    """A ProvisioningRequest was added or changed."""
    key = namespaced(obj)
    request = read_request(obj)
    if request is None:
        delete(world, key)
        return
    if world.scale_up_requests.get(key) == request:
        return
    world.cluster_changed()
    world.scale_up_requests.put(key, request)


def delete(world: World, key: str) -> None:
    """A ProvisioningRequest ("namespace/name") is gone."""
    if not world.scale_up_requests.remove(key):
        return
    world.cluster_changed()


HANDLER = Handler(
    "provisioningrequest",
    provisioning.PATH,
    ProvisioningRequest,
    namespaced,
    upsert,
    delete,
    optional=True,
)
