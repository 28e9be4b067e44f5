"""The HTTP front end: one aiohttp application that audits writes, authenticates and
authorizes every request, then hands it to what serves its path: health and readiness,
sim's /sim/ endpoints (admin.py), discovery and resources (resource_requests.py)."""

from __future__ import annotations

import asyncio

from aiohttp import web

from muster_sim.access import impersonation
from muster_sim.access.authn import ANONYMOUS, ANONYMOUS_PATHS, Authenticator, UserInfo
from muster_sim.access.rbac import Attributes, RbacAuthorizer, forbidden_error, request_attributes
from muster_sim.access.tokens import ServiceAccountTokens
from muster_sim.apiserver.resources import as_version
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.errors import ApiError, unauthorized
from muster_sim.http import audit, discovery
from muster_sim.http.admin import SimEndpoints
from muster_sim.http.bodies import error_response, json_response
from muster_sim.http.faults import FaultInjector
from muster_sim.http.readiness import Readiness
from muster_sim.http.resource_requests import ResourceRequests
from muster_sim.http.routing import USER_KEY
from muster_sim.http.watch import WatchStream

_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


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
        # None for both: `--insecure`, every request is served unauthenticated
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.readiness = Readiness()
        self.admin = SimEndpoints(api.store, faults, audit_log)
        self.resources = ResourceRequests(
            api,
            faults,
            tokens or ServiceAccountTokens(api.store),
            WatchStream(api.store, bookmark_interval, as_version),
            self.readiness,
            server_address,
            authorizer,
        )

    def warm_up(self, authorizer_seconds: float, crd_seconds: float) -> None:
        """Serve as a kube-apiserver that just started: 403 to users outside system:masters
        for `authorizer_seconds` (its RBAC authorizer syncing), 404 on resources served from
        CRDs for `crd_seconds`, and /readyz 500 with its failing checks until both are over."""
        self.readiness.warm_up(authorizer_seconds, crd_seconds)

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
                    if self.readiness.authorizer_syncing():
                        # kube-apiserver's RBAC authorizer before its informers synced:
                        # no binding is known yet, so everything is denied
                        attrs = request_attributes(request.method, request.path, request.query)
                        raise forbidden_error(user, attrs)
                    self._authorize(request, user, self.authorizer)
            # clients differ on trailing slashes (the official client asks for /version/)
            path = request.path.rstrip("/") or "/"
            if path.startswith("/sim/"):
                return await self.admin.serve(request, path)
            if path == "/readyz":
                return self.readiness.readyz()
            if path in ("/healthz", "/livez"):
                return web.Response(text="ok", content_type="text/plain")
            if path == "/version":
                return json_response(discovery.VERSION_INFO)
            return await self.resources.serve(request, path)
        except ApiError as error:
            return error_response(error)

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
