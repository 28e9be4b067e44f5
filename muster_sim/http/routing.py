"""Which resource a request names and what it does to it: kube-apiserver's paths parsed into
a route (kind, namespace, name, subresource, watch) and the API verb of its method."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from muster_sim.access.authn import UserInfo
from muster_sim.apiserver.resources import Kind, Registry
from muster_sim.errors import method_not_allowed, path_not_found
from muster_sim.http import audit

# the request's authenticated UserInfo (absent when sim runs --insecure)
USER_KEY = web.RequestKey("muster.sim.user", UserInfo)


@dataclass
class Route:
    """A resource request's parts: /api(s)/<group>/<version>/[namespaces/<ns>/]<plural>/..."""

    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str | None
    watch: bool


def route_of(registry: Registry, group: str, version: str, rest: list[str]) -> Route:
    """The route of a resource path: `rest` is what follows /api(s)/<group>/<version>; 404
    for a path that names no served resource, namespace scope or subresource."""
    watch = False
    if rest[0] == "watch":
        watch, rest = True, rest[1:]
    namespace: str | None = None
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise path_not_found()
    kind = registry.lookup(group, version, rest[0])
    if kind is None or (namespace is not None and not kind.namespaced):
        raise path_not_found()
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if sub is not None and sub not in kind.subresources:
        raise path_not_found()
    if kind.namespaced and name is not None and namespace is None:
        raise path_not_found()
    return Route(kind, namespace, name, sub, watch)


def verb_of(method: str, route: Route, watch: bool = False) -> str:
    """The API verb an HTTP method on a route is (get, list, watch, create, ...); 405 else.
    `watch`: the query asks to watch (`watch=true`), which makes a GET a watch, as
    kube-apiserver's request info says (and its audit log and fault rules see it)."""
    if method == "GET":
        if route.watch or watch:
            return "watch"
        return "list" if route.name is None else "get"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if route.name is not None else "deletecollection"
    raise method_not_allowed()


def describe(pending: audit.PendingRequest, route: Route, verb: str) -> None:
    """Fill the audit record's objectRef from the parsed route."""
    kind = route.kind
    pending.verb = verb
    pending.api_group, pending.api_version = kind.group, kind.version
    pending.resource, pending.key = kind.plural, kind.key
    pending.subresource = route.subresource or ""
    pending.namespace, pending.name = route.namespace or "", route.name or ""
