"""Discovery documents (/api, /apis, APIResourceLists) and /version for kubectl and kopf."""

from __future__ import annotations

from typing import Any

from muster_sim.apiserver.resources import ALL_VERBS, Kind, Registry
from scheduler import __version__

Obj = dict[str, Any]

# (kind.key, subresource) -> (kind of the subresource, verbs, group/version if different)
_SUBRESOURCES: dict[str, tuple[str, tuple[str, ...], tuple[str, str] | None]] = {
    "status": ("", ("get", "patch", "update"), None),
    "binding": ("Binding", ("create",), None),
    "eviction": ("Eviction", ("create",), ("policy", "v1")),
    "finalize": ("", ("update",), None),
    "scale": ("Scale", ("get", "patch", "update"), ("autoscaling", "v1")),
    "token": ("TokenRequest", ("create",), ("authentication.k8s.io", "v1")),
}

VERSION_INFO: Obj = {
    "major": "1",
    "minor": "30",
    "gitVersion": "v1.30.0-muster-sim",
    "gitCommit": f"muster-{__version__}",
    "gitTreeState": "clean",
    "buildDate": "2024-04-17T00:00:00Z",
    "goVersion": "go1.22.2",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> Obj:
    """GET /api."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> Obj:
    """GET /apis."""
    groups = [_group(g, v) for g, v in registry.groups().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, name: str) -> Obj | None:
    """GET /apis/<group>."""
    versions = registry.groups().get(name)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _resource(kind: Kind) -> Obj:
    entry: Obj = {
        "name": kind.plural,
        "singularName": kind.singular,
        "namespaced": kind.namespaced,
        "kind": kind.kind,
        "verbs": list(ALL_VERBS),
    }
    if kind.short_names:
        entry["shortNames"] = list(kind.short_names)
    if kind.categories:
        entry["categories"] = list(kind.categories)
    return entry


def _subresource(kind: Kind, sub: str) -> Obj:
    sub_kind, verbs, group_version = _SUBRESOURCES[sub]
    entry: Obj = {
        "name": f"{kind.plural}/{sub}",
        "singularName": "",
        "namespaced": kind.namespaced,
        "kind": sub_kind or kind.kind,
        "verbs": list(verbs),
    }
    if group_version is not None:
        entry["group"], entry["version"] = group_version
    return entry


def api_resource_list(registry: Registry, group: str, version: str) -> Obj | None:
    """GET /api/v1 or /apis/<group>/<version>."""
    kinds = sorted(registry.kinds_in(group, version), key=lambda k: k.plural)
    if not kinds:
        return None
    resources: list[Obj] = []
    for kind in kinds:
        resources.append(_resource(kind))
        resources.extend(_subresource(kind, sub) for sub in kind.subresources)
    group_version = version if not group else f"{group}/{version}"
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }
