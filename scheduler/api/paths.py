"""Where the API server serves the objects muster reads and writes by name.

Plain strings made from the API groups and versions of api/: the cache, the effects, the
controller and the inspect commands all address the same objects, and none of them should
import another for it.
"""

from __future__ import annotations

from scheduler.api.hypernode import API_VERSION as HYPERNODE_API_VERSION
from scheduler.api.names import GROUP, VERSION
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import PODGROUPS as NATIVE_PODGROUPS

GROUP_PATH = f"/apis/{GROUP}/{VERSION}"


def pod(namespace: str, name: str) -> str:
    """A pod's path."""
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def podgroup(namespace: str, name: str) -> str:
    """A PodGroup's path."""
    return f"{GROUP_PATH}/namespaces/{namespace}/podgroups/{name}"


def queue(name: str) -> str:
    """A Queue's path."""
    return f"{GROUP_PATH}/queues/{name}"


def events(namespace: str) -> str:
    """The core/v1 Events collection of a namespace."""
    return f"/api/v1/namespaces/{namespace}/events"


def hypernode_status(name: str) -> str:
    """A HyperNode's status subresource."""
    return f"/apis/{HYPERNODE_API_VERSION}/hypernodes/{name}/status"


def native_collection(version: str, plural: str) -> str:
    """A scheduling.k8s.io collection (podgroups, workloads) at `version`, cluster-wide."""
    return f"/apis/{NATIVE_GROUP}/{version}/{plural}"


def native_namespaced(namespace: str, version: str, plural: str) -> str:
    """A native collection (podgroups, workloads) of one namespace at `version`."""
    return f"/apis/{NATIVE_GROUP}/{version}/namespaces/{namespace}/{plural}"


def native_object(namespace: str, name: str, version: str, plural: str) -> str:
    """A native object's path (a PodGroup's, a Workload's) at `version`."""
    return f"{native_namespaced(namespace, version, plural)}/{name}"


def native_podgroup(namespace: str, name: str, version: str) -> str:
    """A native PodGroup's path at `version`."""
    return native_object(namespace, name, version, NATIVE_PODGROUPS)


def native_podgroup_status(namespace: str, name: str, version: str) -> str:
    """A native PodGroup's status subresource at `version`."""
    return native_podgroup(namespace, name, version) + "/status"
