"""Where the API server serves the objects muster reads and writes by name.

Plain strings made from the API groups and versions of api/: the cache, the effects, the
controller and the inspect commands all address the same objects, and none of them should
import another for it.
"""

from __future__ import annotations

from scheduler.api.hypernode import API_VERSION as HYPERNODE_API_VERSION
from scheduler.api.names import GROUP, VERSION

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
