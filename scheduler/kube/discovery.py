"""Which version of a built-in API group's resource the API server serves, from discovery.

Kubernetes' own gang API moves between versions from one release to the next (v1alpha2 in
1.36, v1beta1 from 1.37, which drops v1alpha2), and a server serves a version only with
its feature gate and runtime config on; so muster asks the server rather than assume one.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from scheduler.kube.client import KubeClient
from scheduler.kube.errors import NotFound


class _Resource(msgspec.Struct):
    name: str = ""


class _ResourceList(msgspec.Struct):
    resources: list[_Resource] = msgspec.field(default_factory=list)


_resources = msgspec.json.Decoder(_ResourceList)


async def served_version(
    client: KubeClient, group: str, plural: str, versions: Sequence[str]
) -> str | None:
    """The first of `versions` at which the server serves `plural` of `group`, or None when
    it serves none of them. A version served without the resource (its storage turned off
    by a feature gate) does not count. Other failures than 404 are raised."""
    for version in versions:
        try:
            body = await client.request("GET", f"/apis/{group}/{version}")
        except NotFound:
            continue
        if any(resource.name == plural for resource in _resources.decode(body).resources):
            return version
    return None
