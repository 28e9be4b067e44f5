"""HTTP front end: routes kube-apiserver paths to ApiServer verbs and writes Status errors."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from aiohttp import web

from muster_sim.access import impersonation
from muster_sim.access.authn import ANONYMOUS, ANONYMOUS_PATHS, Authenticator, UserInfo
from muster_sim.access.rbac import Attributes, RbacAuthorizer, forbidden_error, request_attributes
from muster_sim.access.tokens import ServiceAccountTokens
from muster_sim.apiserver.admission_plugins import taint_new_node
from muster_sim.apiserver.options import DeleteOptions, ListOptions, WriteOptions, dry_run_of
from muster_sim.apiserver.resources import Kind, as_version
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.errors import (
    ApiError,
    bad_request,
    method_not_allowed,
    path_not_found,
    unauthorized,
)
from muster_sim.http import audit, discovery
from muster_sim.http.faults import FaultInjector
from muster_sim.http.watch import WatchRequest, WatchStream
from muster_sim.selectors import both, parse_field_selector, parse_label_selector

Obj = dict[str, Any]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_JSON = "application/json"
_SUCCESS_201 = _encode(
    {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
)
# the request's authenticated UserInfo (absent when sim runs --insecure)
USER_KEY = web.RequestKey("muster.sim.user", UserInfo)
# the real server's default watch timeout is 30-60 minutes
_DEFAULT_WATCH_TIMEOUT = 1800.0
# kube-apiserver 1.26's readiness checks, in the order /readyz lists them
READYZ_CHECKS = (
    "ping",
    "log",
    "etcd",
    "etcd-readiness",
    "informer-sync",
    "poststarthook/start-kube-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/bootstrap-controller",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/start-legacy-token-tracking-controller",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-status-available-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapi-controller",
    "poststarthook/apiservice-openapiv3-controller",
    "shutdown",
)


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
    }
)


def json_response(obj: Any, status: int = 200) -> web.Response:
    """A JSON body encoded with msgspec."""
    return web.Response(body=_encode(obj), status=status, content_type=_JSON)


def error_response(error: ApiError) -> web.Response:
    """The Status body and code of an ApiError."""
    response = json_response(error.status(), error.code)
    response.headers.update(error.headers)
    return response


@dataclass
class Route:
    """A resource request's parts: /api(s)/<group>/<version>/[namespaces/<ns>/]<plural>/..."""

    kind: Kind
    namespace: str | None
    name: str | None
    subresource: str | None
    watch: bool


class HttpApi:
    """The aiohttp application in front of an ApiServer."""

    def __init__(
        self,
        api: ApiServer,
        faults: FaultInjector,
        *,
        authenticator: Authenticator | None = None,
        authorizer: RbacAuthorizer | None = None,
        tokens: ServiceAccountTokens | None = None,
        bookmark_interval: float = 1.0,
        server_address: str = "",
        audit_log: audit.AuditLog | None = None,
    ) -> None:
        self.api = api
        self.audit = audit_log
        # POST /sim/restart: the server's restart (serving stops, the store stays)
        self.on_restart: Callable[[float], Awaitable[None]] | None = None
        self._restarts: set[asyncio.Task[None]] = set()
        self.faults = faults
        # None for both: `--insecure`, every request is served unauthenticated
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.tokens = tokens or ServiceAccountTokens(api.store)
        self.server_address = server_address
        self.watches = WatchStream(api.store, bookmark_interval, as_version)
        # After a restart (monotonic times): until `_authorizer_warm` users outside
        # system:masters get 403, until `_crds_served` resources from CRDs get 404.
        self._authorizer_warm = 0.0
        self._crds_served = 0.0

    def warm_up(self, authorizer_seconds: float, crd_seconds: float) -> None:
        """Serve as a kube-apiserver that just started: 403 to users outside system:masters
        for `authorizer_seconds` (its RBAC authorizer syncing), 404 on resources served from
        CRDs for `crd_seconds`, and /readyz 500 with its failing checks until both are over."""
        now = time.monotonic()
        self._authorizer_warm = now + authorizer_seconds
        self._crds_served = now + crd_seconds

    def application(self) -> web.Application:
        """The aiohttp Application: one catch-all route; paths are parsed by hand (faster)."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Audit writes; authenticate, authorize, then serve health, admin, discovery, resources."""
        if (
            self.audit is None
            or request.method not in _WRITE_METHODS
            or request.path.startswith("/sim/")
        ):
            return await self._handle(request)
        pending = self.audit.begin(
            request.method, request.path_qs, None, request.headers.get("User-Agent", "")
        )
        code = 500
        try:
            response = await self._handle(request)
            code = response.status
            return response
        except asyncio.CancelledError:
            # the client went away while its request waited (for its body, a webhook);
            # nginx's 499 says so, and a write committed before it still counts as done
            code = 200 if pending.primary is not None else 499
            raise
        finally:
            self.audit.finish(pending, code)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            if self.authenticator is not None:
                user = self._authenticate(request, self.authenticator)
                if impersonation.requested(request.headers):
                    user = impersonation.impersonate(user, request.headers, self.authorizer)
                # for the write path: admission reviews carry the user as userInfo
                request[USER_KEY] = user
                pending = audit.current()
                if pending is not None:
                    pending.user = user
                if self.authorizer is not None and not user.is_master:
                    if time.monotonic() < self._authorizer_warm:
                        # kube-apiserver's RBAC authorizer before its informers synced:
                        # no binding is known yet, so everything is denied
                        attrs = request_attributes(request.method, request.path, request.query)
                        raise forbidden_error(user, attrs)
                    self._authorize(request, user, self.authorizer)
            # clients differ on trailing slashes (the official client asks for /version/)
            path = request.path.rstrip("/") or "/"
            if path.startswith("/sim/"):
                return await self._admin(request, path)
            if path == "/readyz":
                return self._readyz()
            if path in ("/healthz", "/livez"):
                return web.Response(text="ok", content_type="text/plain")
            if path == "/version":
                return json_response(discovery.VERSION_INFO)
            return await self._api(request, path)
        except ApiError as error:
            return error_response(error)

    def _readyz(self) -> web.Response:
        """200 "ok"; while warming up after a restart, kube-apiserver's 500 with its checks."""
        now = time.monotonic()
        failing = set()
        if now < self._authorizer_warm:
            failing |= {"informer-sync", "poststarthook/rbac/bootstrap-roles"}
        if now < self._crds_served:
            failing |= {
                "poststarthook/crd-informer-synced",
                "poststarthook/start-apiextensions-controllers",
            }
        if not failing:
            return web.Response(text="ok", content_type="text/plain")
        lines = [
            f"[-]{check} failed: reason withheld" if check in failing else f"[+]{check} ok"
            for check in READYZ_CHECKS
        ]
        response = web.Response(
            text="\n".join(lines) + "\nreadyz check failed\n",
            status=500,
            content_type="text/plain",
            charset="utf-8",
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    def _crds_not_served(self) -> bool:
        return time.monotonic() < self._crds_served

    @staticmethod
    def _authenticate(request: web.Request, authenticator: Authenticator) -> UserInfo:
        """The request's user; 401 when a credential is wrong or missing (but on health paths)."""
        transport = request.transport
        # asyncio keeps the verified client certificate from the handshake
        peercert = transport.get_extra_info("peercert") if transport is not None else None
        user = authenticator.authenticate(request.headers, peercert)
        if user is None and request.path in ANONYMOUS_PATHS:
            return ANONYMOUS
        if not isinstance(user, UserInfo):
            raise unauthorized()
        return user

    @staticmethod
    def _authorize(request: web.Request, user: UserInfo, authorizer: RbacAuthorizer) -> None:
        """403 unless RBAC allows the request; sim's own /sim/ endpoints are for masters only."""
        if request.path.startswith("/sim/"):
            raise forbidden_error(user, Attributes(request.method.lower(), request.path))
        attrs = request_attributes(request.method, request.path, request.query)
        pending = audit.current()
        if pending is not None and attrs.resource_request:
            # what the audit says of a refused request: kube resolves it before authorizing
            pending.verb, pending.api_group = attrs.verb, attrs.api_group
            pending.api_version, pending.resource = attrs.api_version, attrs.resource
            pending.subresource, pending.namespace = attrs.subresource, attrs.namespace
            pending.name = attrs.name
        allowed, reason = authorizer.authorize(user, attrs)
        if not allowed:
            raise forbidden_error(user, attrs, reason)

    async def _admin(self, request: web.Request, path: str) -> web.StreamResponse:
        if path == "/sim/faults":
            if request.method == "PUT":
                self.faults.replace(FaultInjector.parse(await request.read()))
            elif request.method != "GET":
                raise method_not_allowed()
            return web.Response(body=self.faults.to_json(), content_type=_JSON)
        if path == "/sim/compact" and request.method == "POST":
            self.api.store.compact()
            return json_response({"compactedResourceVersion": self.api.store.compacted_rv})
        if path == "/sim/restart" and request.method == "POST":
            return self._restart(request)
        if path == "/sim/audit" and request.method == "GET":
            return self._audit_records(request)
        if path == "/sim/drop-watches" and request.method == "POST":
            self.api.store.close_watchers()
            return json_response({"dropped": True})
        raise path_not_found()

    def _restart(self, request: web.Request) -> web.Response:
        """POST /sim/restart?downtime=S: answer, then go down for S seconds and come back."""
        if self.on_restart is None:
            raise path_not_found()
        text = request.query.get("downtime", "1")
        try:
            downtime = float(text)
        except ValueError:
            downtime = -1.0
        if not 0 <= downtime <= 60:
            raise bad_request(
                f"/sim/restart: downtime={text!r} is not a number of seconds from 0 to 60"
            )
        # after this answer is sent: the restart cuts every connection, this one too
        task = asyncio.get_running_loop().create_task(self._restart_soon(downtime))
        self._restarts.add(task)
        task.add_done_callback(self._restarts.discard)
        return json_response({"restarting": True, "downtime": downtime}, 202)

    async def _restart_soon(self, downtime: float) -> None:
        assert self.on_restart is not None
        await asyncio.sleep(0.05)
        await self.on_restart(downtime)

    def _audit_records(self, request: web.Request) -> web.Response:
        """GET /sim/audit?since=N&limit=M: the audit records after N as JSON lines."""
        if self.audit is None:
            raise path_not_found()
        numbers: dict[str, int] = {}
        for param in ("since", "limit"):
            text = request.query.get(param, "0")
            try:
                numbers[param] = int(text)
            except ValueError:
                raise bad_request(
                    f"/sim/audit: {param}={text!r} is not an integer; give the seq of the last "
                    "record read (0 for all) and the most records wanted (0 for no limit)"
                ) from None
        lines = self.audit.since(numbers["since"], numbers["limit"])
        body = b"".join(line + b"\n" for line in lines)
        response = web.Response(body=body, content_type="application/jsonl")
        response.headers["X-Sim-Audit-Seq"] = str(self.audit.seq)
        return response

    async def _api(self, request: web.Request, path: str) -> web.StreamResponse:
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
            if doc is None or (crd_only and self._crds_not_served()):
                raise path_not_found()
            return json_response(doc)
        if (not group and rest[-1] == "bindings") or (
            not group and len(rest) == 3 and rest[0] == "namespaces" and rest[2] == "bindings"
        ):
            return await self._legacy_binding(request, rest)
        if not group and len(rest) == 5 and rest[0] == "namespaces" and rest[4] == "token":
            return await self._token_request(request, rest)
        route = self._route(group, version, rest)
        if route.kind.from_crd and self._crds_not_served():
            raise path_not_found()
        verb = self._verb(request.method, route)
        pending = audit.current()
        if pending is not None:
            _describe(pending, route, verb)
        if self.faults.active:
            resource = route.kind.plural + (f"/{route.subresource}" if route.subresource else "")
            await self.faults.before(verb, resource)
        return await self._dispatch(request, route, verb)

    def _route(self, group: str, version: str, rest: list[str]) -> Route:
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
        kind = self.api.registry.lookup(group, version, rest[0])
        if kind is None or (namespace is not None and not kind.namespaced):
            raise path_not_found()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in kind.subresources:
            raise path_not_found()
        if kind.namespaced and name is not None and namespace is None:
            raise path_not_found()
        return Route(kind, namespace, name, sub, watch)

    @staticmethod
    def _verb(method: str, route: Route) -> str:
        if method == "GET":
            if route.watch or route.name is None:
                return "watch" if route.watch else "list"
            return "get"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if route.name is not None else "deletecollection"
        raise method_not_allowed()

    async def _dispatch(self, request: web.Request, route: Route, verb: str) -> web.StreamResponse:
        api, kind, ns, name = self.api, route.kind, route.namespace, route.name
        query = request.query
        if verb == "get" and query.get("watch") not in ("true", "1"):
            return json_response(api.get(kind, ns, name or ""))
        if verb in ("list", "get", "watch"):
            if verb == "watch" or query.get("watch") in ("true", "1"):
                return await self._watch(request, route)
            return json_response(api.list(kind, ns, self._list_options(kind, query)))
        user = request.get(USER_KEY)
        if verb == "create":
            body = await _body(request)
            pending = audit.current()
            if pending is not None and name is None and isinstance(body, dict):
                # as kube's audit does, the created object's name comes from the request
                pending.name = str((body.get("metadata") or {}).get("name") or "")
            if name is None:
                if kind.key == "nodes" and isinstance(body, dict):
                    taint_new_node(body)
                write = WriteOptions.from_query(query, "CreateOptions", user)
                created = await api.create_admitted(kind, ns, body, write)
                return _with_warnings(json_response(created, 201), write)
            if pending is not None and route.subresource in ("binding", "eviction"):
                pending.request_object = body
            if route.subresource == "binding":
                await self._admit_subresource(route, body, user, ("", "v1", "Binding"))
                api.bind(ns or "", name, body)
                return web.Response(body=_SUCCESS_201, status=201, content_type=_JSON)
            if route.subresource == "eviction":
                await self._admit_subresource(route, body, user, ("policy", "v1", "Eviction"))
                api.evict(ns or "", name, body, dry_run=dry_run_of(query, "CreateOptions"))
                return web.Response(body=_SUCCESS_201, status=201, content_type=_JSON)
            raise method_not_allowed()
        if name is None and verb != "deletecollection":
            raise method_not_allowed()
        if verb in ("update", "patch") and route.subresource not in (None, "status", "finalize"):
            raise method_not_allowed()
        sub = "status" if route.subresource == "status" else None
        if verb == "update":
            write = WriteOptions.from_query(query, "UpdateOptions", user)
            updated = await api.update_admitted(
                kind, ns, name or "", await _body(request), sub, write
            )
            return _with_warnings(json_response(updated), write)
        if verb == "patch":
            content_type = request.headers.get("Content-Type", "")
            # kube admits a patch as an UPDATE carrying UpdateOptions
            write = WriteOptions.from_query(query, "UpdateOptions", user)
            patched = await api.patch_admitted(
                kind, ns, name or "", content_type, await _body(request), sub, write
            )
            return _with_warnings(json_response(patched), write)
        raw = await request.read()
        body = _decode(raw) if raw else None
        options = DeleteOptions.from_body(body if isinstance(body, dict) else None, dict(query))
        dry_run = dry_run_of(query, "DeleteOptions")
        if verb == "deletecollection":
            list_options = self._list_options(kind, query)
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

    def _list_options(self, kind: Kind, query: Any) -> ListOptions:
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
        answer = self.tokens.request(rest[1], rest[3], await _body(request))
        return json_response(answer, 201)

    async def _legacy_binding(self, request: web.Request, rest: list[str]) -> web.StreamResponse:
        # POST /api/v1/namespaces/<ns>/bindings with the pod's name in the Binding's metadata
        if request.method != "POST" or len(rest) != 3:
            raise method_not_allowed()
        body = await _body(request)
        name = str(((body or {}).get("metadata") or {}).get("name", ""))
        pending = audit.current()
        if pending is not None:
            pending.verb, pending.resource, pending.key = "create", "pods", "pods"
            pending.subresource, pending.api_version = "binding", "v1"
            pending.namespace, pending.name, pending.request_object = rest[1], name, body
        self.api.bind(rest[1], name, body)
        return web.Response(body=_SUCCESS_201, status=201, content_type=_JSON)


_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _describe(pending: audit.PendingRequest, route: Route, verb: str) -> None:
    """Fill the audit record's objectRef from the parsed route."""
    kind = route.kind
    pending.verb = verb
    pending.api_group, pending.api_version = kind.group, kind.version
    pending.resource, pending.key = kind.plural, kind.key
    pending.subresource = route.subresource or ""
    pending.namespace, pending.name = route.namespace or "", route.name or ""


def _with_warnings(response: web.Response, options: WriteOptions) -> web.Response:
    """One RFC 7234 `Warning: 299 - "..."` header per warning, as kube-apiserver sends them."""
    for text in options.warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')
    return response


async def _body(request: web.Request) -> Any:
    raw = await request.read()
    try:
        return _decode(raw)
    except msgspec.DecodeError as error:
        body = _decode_as_go(raw)
        if body is _MALFORMED:
            raise bad_request(f"couldn't get version/kind; json parse error: {error}") from None
        return body


_MALFORMED = object()
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _decode_as_go(raw: bytes) -> Any:
    """What kube-apiserver's decoder (Go's encoding/json) makes of a body msgspec refuses
    for its strings alone: invalid UTF-8 and lone UTF-16 surrogate escapes ("\\udb53") are
    not errors there but U+FFFD. _MALFORMED when the JSON is malformed for Go too."""

    def refuse_constant(name: str) -> Any:
        raise ValueError(f"invalid character {name!r}")  # NaN, Infinity: not JSON to Go

    try:
        body = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=refuse_constant)
    except ValueError:
        return _MALFORMED
    return _replace_surrogates(body)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value
