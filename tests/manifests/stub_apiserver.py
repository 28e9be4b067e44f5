"""A stand-in API server with discovery only, so `kubectl apply --dry-run=client` runs offline.

A client dry run still asks the server two things: discovery, to map each kind to its
resource, and a GET of each object, to choose between create and patch. This stub
answers discovery for the API groups a cluster running muster serves, and 404 for
every object, so kubectl prints what it would create. Kinds outside that table fail
as they would on a real cluster ("no matches for kind").
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Served:
    """One resource the stub lists in discovery."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool


# What kube-apiserver serves for the kinds in deploy/, plus what must be installed before
# deploy/ is applied: the CRDs in crds/ (README: `kubectl apply -f crds/` first), the
# Prometheus Operator's ServiceMonitor and PrometheusRule (the servicemonitor overlay's
# premise) and
# cert-manager (the webhooks component's). kopf.dev is deliberately absent: its CRD comes
# in the same apply as deploy/ (deploy/base/controller/peering.yaml), so on a fresh
# cluster no object of its kinds could be applied there, and none may be rendered.
SERVED = (
    Served("", "v1", "namespaces", "Namespace", False),
    Served("", "v1", "serviceaccounts", "ServiceAccount", True),
    Served("", "v1", "configmaps", "ConfigMap", True),
    Served("", "v1", "services", "Service", True),
    Served("apps", "v1", "deployments", "Deployment", True),
    Served(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        False,
    ),
    Served(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        False,
    ),
    Served("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    Served("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True),
    Served("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False),
    Served("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    Served("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    Served("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    Served("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
    Served(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
    ),
    Served("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True),
    Served("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False),
    Served("topology.volcano.sh", "v1alpha1", "hypernodes", "HyperNode", False),
    Served("monitoring.coreos.com", "v1", "servicemonitors", "ServiceMonitor", True),
    Served("monitoring.coreos.com", "v1", "prometheusrules", "PrometheusRule", True),
    Served("cert-manager.io", "v1", "issuers", "Issuer", True),
    Served("cert-manager.io", "v1", "certificates", "Certificate", True),
)


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _discovery(path: str) -> dict[str, Any] | None:
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if path == "/apis":
        groups: dict[str, list[str]] = {}
        for served in SERVED:
            if served.group and served.version not in groups.setdefault(served.group, []):
                groups[served.group].append(served.version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                {
                    "name": name,
                    "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in versions],
                    "preferredVersion": {
                        "groupVersion": f"{name}/{versions[0]}",
                        "version": versions[0],
                    },
                }
                for name, versions in groups.items()
            ],
        }
    for prefix in ("/api/", "/apis/"):
        if not path.startswith(prefix):
            continue
        group_version = path.removeprefix(prefix)
        resources = [
            {
                "name": s.plural,
                "singularName": s.kind.lower(),
                "namespaced": s.namespaced,
                "kind": s.kind,
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            }
            for s in SERVED
            if _group_version(s.group, s.version) == group_version
            and (prefix == "/api/") == (s.group == "")
        ]
        if resources:
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": group_version,
                "resources": resources,
            }
    return None


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        body = _discovery(path)
        if body is not None:
            self._send(200, body)
            return
        self._send(
            404,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
                "message": f"{path} not found (stub API server: every object is new)",
            },
        )

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: kubectl's requests are not the test's output."""


@contextmanager
def stub_apiserver(directory: Path) -> Iterator[Path]:
    """Serve discovery on a free loopback port; yield a kubeconfig that points at it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    kubeconfig = directory / "stub.kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "stub", "cluster": {"server": f"http://{host!s}:{port}"}}],
                "users": [{"name": "stub", "user": {}}],
                "contexts": [{"name": "stub", "context": {"cluster": "stub", "user": "stub"}}],
                "current-context": "stub",
            }
        )
    )
    try:
        yield kubeconfig
    finally:
        server.shutdown()
        server.server_close()
