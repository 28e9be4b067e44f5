"""/readyz, and how a restarted server warms up: kube-apiserver's readiness checks, failing
while its RBAC authorizer syncs (users outside system:masters get 403 meanwhile) and while its
CRDs are not served yet (404 on their resources)."""

from __future__ import annotations

import time

from aiohttp import web

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


class Readiness:
    """What /readyz answers, and when, after a restart, the authorizer is synced and CRDs are
    served (monotonic times)."""

    def __init__(self) -> None:
        self._authorizer_warm = 0.0
        self._crds_served = 0.0

    def warm_up(self, authorizer_seconds: float, crd_seconds: float) -> None:
        """Warm up from now: the authorizer for `authorizer_seconds`, CRDs for `crd_seconds`."""
        now = time.monotonic()
        self._authorizer_warm = now + authorizer_seconds
        self._crds_served = now + crd_seconds

    def authorizer_syncing(self) -> bool:
        """Whether RBAC knows no binding yet, so every user outside system:masters is denied."""
        return time.monotonic() < self._authorizer_warm

    def crds_not_served(self) -> bool:
        """Whether resources served from CRDs still answer 404."""
        return time.monotonic() < self._crds_served

    def readyz(self) -> web.Response:
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
