"""Requests under /api and /apis: the discovery documents, and each resource request routed
to its ApiServer verb (get, list, watch, create, update, patch, delete, deletecollection,
pods/binding, pods/eviction, serviceaccounts/token), with its query read as kube-apiserver
reads it and its answer written as kube-apiserver writes it."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from muster_sim.access.rbac import RbacAuthorizer
from muster_sim.access.tokens import ServiceAccountTokens
from muster_sim.apiserver.admission_plugins import taint_new_node
from muster_sim.apiserver.options import DeleteOptions, ListOptions, WriteOptions, dry_run_of
from muster_sim.apiserver.resources import Kind
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.errors import bad_request, method_not_allowed, path_not_found
from muster_sim.http import audit, discovery
from muster_sim.http.bodies import created_status, decoded, json_response, read_body, with_warnings
from muster_sim.http.faults import FaultInjector
from muster_sim.http.readiness import Readiness
from muster_sim.http.routing import USER_KEY, Route, describe, route_of, verb_of
from muster_sim.http.watch import WatchRequest, WatchStream
from muster_sim.selectors import both, parse_field_selector, parse_label_selector
from muster_sim.validation.strategy import Denied

Obj = dict[str, Any]

# the real server's default watch timeout is 30-60 minutes
_DEFAULT_WATCH_TIMEOUT = 1800.0


# The built-in registries that answer a finished DELETE with the deleted object rather than
# a Status (kube-apiserver's ReturnDeletedObject: true), by storage key.
RETURNS_DELETED_OBJECT = frozenset(
    {
        "pods",
        "namespaces",
        "persistentvolumes",
        "persistentvolumeclaims",
        "podtemplates",
        "resourcequotas",
        "services",
        "serviceaccounts",
        "csidrivers.storage.k8s.io",
        "csinodes.storage.k8s.io",
        "storageclasses.storage.k8s.io",
        "volumeattachments.storage.k8s.io",
        "deviceclasses.resource.k8s.io",
        "resourceclaims.resource.k8s.io",
        "resourceclaimtemplates.resource.k8s.io",
        "resourceslices.resource.k8s.io",
    }
)


class ResourceRequests:
    """Serves /api and /apis through an ApiServer."""

    def __init__(
        self,
        api: ApiServer,
        faults: FaultInjector,
        tokens: ServiceAccountTokens,
        watches: WatchStream,
        readiness: Readiness,
        server_address: str,
        authorizer: RbacAuthorizer | None = None,
    ) -> None:
        self.api = api
        # asked again inside writes whose rules need another permission (None: --insecure)
        self.authorizer = authorizer
        self.faults = faults
        self.tokens = tokens
        self.watches = watches
        self.readiness = readiness
        self.server_address = server_address

    async def serve(self, request: web.Request, path: str) -> web.StreamResponse:
        """Answer a request under /api or /apis: a discovery document, or a resource's verb."""
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            raise path_not_found()
        if parts[0] == "api":
            if len(parts) == 1:
                return json_response(discovery.api_versions(self.server_address))
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return json_response(discovery.api_group_list(self.api.registry))
            if len(parts) == 2:
                doc = discovery.api_group(self.api.registry, parts[1])
                if doc is None:
                    raise path_not_found()
                return json_response(doc)
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            doc = discovery.api_resource_list(self.api.registry, group, version)
            crd_only = all(k.from_crd for k in self.api.registry.kinds_in(group, version))
            if doc is None or (crd_only and self.readiness.crds_not_served()):
                raise path_not_found()
            return json_response(doc)
        if (not group and rest[-1] == "bindings") or (
            not group and len(rest) == 3 and rest[0] == "namespaces" and rest[2] == "bindings"
        ):
            return await self._legacy_binding(request, rest)
        if not group and len(rest) == 5 and rest[0] == "namespaces" and rest[4] == "token":
            return await self._token_request(request, rest)
        route = route_of(self.api.registry, group, version, rest)
        if route.kind.from_crd and self.readiness.crds_not_served():
            raise path_not_found()
        verb = verb_of(request.method, route, request.query.get("watch") in ("true", "1"))
        pending = audit.current()
        if pending is not None:
            describe(pending, route, verb)
        if self.faults.active:
            resource = route.kind.plural + (f"/{route.subresource}" if route.subresource else "")
            await self.faults.before(verb, resource, route.name or "")
        return await self._dispatch(request, route, verb)

    async def _dispatch(self, request: web.Request, route: Route, verb: str) -> web.StreamResponse:
        if verb in ("list", "get", "watch"):
            return await self._read(request, route, verb)
        if verb == "create":
            return await self._create(request, route)
        if route.name is None and verb != "deletecollection":
            raise method_not_allowed()
        if verb in ("update", "patch"):
            return await self._replace(request, route, verb)
        return await self._delete(request, route, verb)

    async def _read(self, request: web.Request, route: Route, verb: str) -> web.StreamResponse:
        api, kind, ns, name = self.api, route.kind, route.namespace, route.name
        query = request.query
        if verb == "get" and query.get("watch") not in ("true", "1"):
            return json_response(api.get(kind, ns, name or ""))
        if verb == "watch" or query.get("watch") in ("true", "1"):
            return await self._watch(request, route)
        return json_response(api.list(kind, ns, _list_options(kind, query)))

    async def _create(self, request: web.Request, route: Route) -> web.StreamResponse:
        api, kind, ns, name = self.api, route.kind, route.namespace, route.name
        query = request.query
        user = request.get(USER_KEY)
        body = await read_body(request)
        pending = audit.current()
        if pending is not None and name is None and isinstance(body, dict):
            # as kube's audit does, the created object's name comes from the request
            pending.name = str((body.get("metadata") or {}).get("name") or "")
        if name is None:
            if kind.key == "nodes" and isinstance(body, dict):
                taint_new_node(body)
            write = WriteOptions.from_query(
                query, "CreateOptions", user, "create", self._denied(user)
            )
            created = await api.create_admitted(kind, ns, body, write)
            return with_warnings(json_response(created, 201), write)
        if pending is not None and route.subresource in ("binding", "eviction"):
            pending.request_object = body
        if route.subresource == "binding":
            await self._admit_subresource(route, body, user, ("", "v1", "Binding"))
            api.bind(ns or "", name, body)
            return created_status()
        if route.subresource == "eviction":
            await self._admit_subresource(route, body, user, ("policy", "v1", "Eviction"))
            api.evict(ns or "", name, body, dry_run=dry_run_of(query, "CreateOptions"))
            return created_status()
        raise method_not_allowed()

    async def _replace(self, request: web.Request, route: Route, verb: str) -> web.StreamResponse:
        api, kind, ns, name = self.api, route.kind, route.namespace, route.name
        query = request.query
        user = request.get(USER_KEY)
        if route.subresource not in (None, "status", "finalize"):
            raise method_not_allowed()
        sub = "status" if route.subresource == "status" else None
        if verb == "update":
            write = WriteOptions.from_query(
                query, "UpdateOptions", user, "update", self._denied(user)
            )
            updated = await api.update_admitted(
                kind, ns, name or "", await read_body(request), sub, write
            )
            return with_warnings(json_response(updated), write)
        content_type = request.headers.get("Content-Type", "")
        # kube admits a patch as an UPDATE carrying UpdateOptions
        write = WriteOptions.from_query(query, "UpdateOptions", user, "patch", self._denied(user))
        patched = await api.patch_admitted(
            kind, ns, name or "", content_type, await read_body(request), sub, write
        )
        return with_warnings(json_response(patched), write)

    def _denied(self, user: Any) -> Denied | None:
        if self.authorizer is None or user is None:
            return None
        return self.authorizer.denial(user)

    async def _delete(self, request: web.Request, route: Route, verb: str) -> web.StreamResponse:
        api, kind, ns, name = self.api, route.kind, route.namespace, route.name
        query = request.query
        user = request.get(USER_KEY)
        body = decoded(await request.read())
        options = DeleteOptions.from_body(body if isinstance(body, dict) else None, dict(query))
        dry_run = dry_run_of(query, "DeleteOptions")
        if verb == "deletecollection":
            list_options = _list_options(kind, query)
            if api.webhooks.active():
                # kube admits each object of a collection delete as its own DELETE
                for item in api.list(kind, ns, list_options)["items"]:
                    item_ns = (item.get("metadata") or {}).get("namespace") or None
                    await api.admit_other(
                        kind,
                        "DELETE",
                        item_ns,
                        item["metadata"]["name"],
                        None,
                        None,
                        WriteOptions(user=user),
                    )
            if dry_run:
                return json_response(api.list(kind, ns, list_options))
            return json_response(api.delete_collection(kind, ns, list_options, options))
        if api.webhooks.active():
            await api.admit_other(
                kind, "DELETE", ns, name or "", None, None, WriteOptions(user=user)
            )
        if dry_run:
            # what the delete would answer, with nothing deleted
            obj, gone = api.get(kind, ns, name or ""), True
        else:
            obj, gone = api.delete(kind, ns, name or "", options)
        if gone and kind.key not in RETURNS_DELETED_OBJECT:
            # most registries answer a finished delete with a Status; some with the object
            details: Obj = {"name": name}
            if kind.group:
                details["group"] = kind.group
            details["kind"] = kind.plural
            details["uid"] = obj["metadata"].get("uid")
            return json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            )
        return json_response(obj)

    async def _admit_subresource(
        self, route: Route, body: Any, user: Any, object_kind: tuple[str, str, str]
    ) -> None:
        # pods/binding and pods/eviction are CREATEs of their own kinds on the pod's path
        if not self.api.webhooks.active():
            return
        obj = body if isinstance(body, dict) else None
        await self.api.admit_other(
            route.kind,
            "CREATE",
            route.namespace,
            route.name or "",
            route.subresource,
            obj,
            WriteOptions(user=user),
            object_kind,
        )

    async def _watch(self, request: web.Request, route: Route) -> web.StreamResponse:
        query = request.query
        predicate = both(
            parse_label_selector(query.get("labelSelector")),
            parse_field_selector(query.get("fieldSelector"), route.kind.plural),
        )
        if route.name is not None:
            wanted = route.name
            predicate = both(predicate, lambda obj: obj["metadata"]["name"] == wanted)
        timeout_text = query.get("timeoutSeconds", "")
        try:
            timeout = float(timeout_text) if timeout_text else _DEFAULT_WATCH_TIMEOUT
        except ValueError:
            raise bad_request(f"invalid timeoutSeconds: {timeout_text!r}") from None
        req = WatchRequest(
            kind=route.kind,
            namespace=route.namespace,
            resource_version=query.get("resourceVersion", ""),
            predicate=predicate,
            bookmarks=query.get("allowWatchBookmarks") in ("true", "1"),
            timeout=timeout,
            send_initial_events=query.get("sendInitialEvents") in ("true", "1"),
        )
        return await self.watches.serve(request, req, self.faults.config.watch_drop_seconds)

    async def _token_request(self, request: web.Request, rest: list[str]) -> web.StreamResponse:
        # POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token: a TokenRequest
        if rest[2] != "serviceaccounts":
            raise path_not_found()
        if request.method != "POST":
            raise method_not_allowed()
        pending = audit.current()
        if pending is not None:
            pending.verb, pending.resource, pending.subresource = (
                "create",
                "serviceaccounts",
                "token",
            )
            pending.api_version, pending.namespace, pending.name = "v1", rest[1], rest[3]
        answer = self.tokens.request(rest[1], rest[3], await read_body(request))
        return json_response(answer, 201)

    async def _legacy_binding(self, request: web.Request, rest: list[str]) -> web.StreamResponse:
        # POST /api/v1/namespaces/<ns>/bindings with the pod's name in the Binding's metadata
        if request.method != "POST" or len(rest) != 3:
            raise method_not_allowed()
        body = await read_body(request)
        name = str(((body or {}).get("metadata") or {}).get("name", ""))
        pending = audit.current()
        if pending is not None:
            pending.verb, pending.resource, pending.key = "create", "pods", "pods"
            pending.subresource, pending.api_version = "binding", "v1"
            pending.namespace, pending.name, pending.request_object = rest[1], name, body
        self.api.bind(rest[1], name, body)
        return created_status()


def _list_options(kind: Kind, query: Any) -> ListOptions:
    """A list request's selectors, page and resourceVersion, from its query string."""
    limit_text = query.get("limit", "")
    try:
        limit = int(limit_text) if limit_text else 0
    except ValueError:
        raise bad_request(f"invalid limit: {limit_text!r}") from None
    return ListOptions(
        label=parse_label_selector(query.get("labelSelector")),
        field=parse_field_selector(query.get("fieldSelector"), kind.plural),
        limit=limit,
        continue_token=query.get("continue", ""),
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
    )
