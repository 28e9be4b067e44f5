"""Fixtures for the sim conformance suite: one in-process sim per test module, on port 0.

Every sim here runs with its default: HTTPS with its own CA, authentication and RBAC; the
fixtures' clients use the admin kubeconfig (group system:masters) sim writes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, config

from muster_sim.access.tls import ClientCert
from muster_sim.server import SimConfig, SimServer


def wait_for(predicate: Callable[[], Any], timeout: float = 5.0, interval: float = 0.02) -> Any:
    """Poll until `predicate()` is truthy; return its value or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


class Raw:
    """Plain HTTP(S) against the sim, for details the official client hides."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        ca_certs: str | None = None,
        cert: ClientCert | None = None,
    ) -> None:
        self.url = url
        # over TLS, verify the server against sim's CA; a client certificate when given
        self.http = urllib3.PoolManager(
            ca_certs=ca_certs,
            cert_file=str(cert.cert_path) if cert is not None else None,
            key_file=str(cert.key_path) if cert is not None else None,
        )
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    @classmethod
    def admin(cls, sim: SimServer) -> Raw:
        """Raw with sim's CA and admin token."""
        return cls(sim.url, sim.admin_token, ca_of(sim))

    def as_token(self, token: str | None) -> Raw:
        """The same server and CA with another bearer token (None: no credential)."""
        return Raw(self.url, token, self.http.connection_pool_kw.get("ca_certs"))

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> urllib3.BaseHTTPResponse:
        headers = {**self.headers, **(headers or {})}
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            headers["Content-Type"] = content_type
        return self.http.request(
            method, self.url + path, body=data, headers=headers, retries=False, **kw
        )

    def json(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        response = self.request(method, path, body, **kw)
        return response.status, json.loads(response.data) if response.data else None

    def watch(self, path: str, timeout: float = 5.0) -> Iterator[dict[str, Any]]:
        """Yield decoded watch frames until the server closes the stream."""
        response = self.http.request(
            "GET",
            self.url + path,
            headers=self.headers,
            preload_content=False,
            retries=False,
            timeout=urllib3.Timeout(connect=2, read=timeout),
        )
        assert response.status == 200, response.data
        buffer = b""
        try:
            for chunk in response.stream(1024):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            response.release_conn()


def sim_config(**overrides: Any) -> SimConfig:
    """Fast timings for tests: pods start and terminate within tens of milliseconds."""
    defaults: dict[str, Any] = {
        "nodes": 3,
        "node_cpu": "8",
        "node_memory": "32Gi",
        "pod_start_delay": 0.03,
        "terminate_delay": 0.03,
        "bookmark_interval": 0.2,
    }
    defaults.update(overrides)
    return SimConfig(**defaults)


@pytest.fixture(scope="module")
def sim(request: pytest.FixtureRequest) -> Iterator[SimServer]:
    """A running sim; a module may set `SIM_CONFIG = {...}` to override the config."""
    overrides = getattr(request.module, "SIM_CONFIG", {})
    with SimServer(sim_config(**overrides)).running() as server:
        yield server


@pytest.fixture(scope="module")
def api_client(sim: SimServer) -> Iterator[client.ApiClient]:
    """The official client, configured from the kubeconfig sim wrote (no global state)."""
    api = config.new_client_from_config(str(sim.kubeconfig_path))
    yield api
    api.close()


@pytest.fixture(scope="module")
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    """CoreV1Api on the module's sim."""
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def raw(sim: SimServer) -> Raw:
    """Raw HTTPS on the module's sim, as its admin."""
    return Raw.admin(sim)


def ca_of(sim: SimServer) -> str | None:
    """The path of sim's CA certificate (None for an --insecure sim)."""
    return str(sim.cert.ca_path) if sim.cert is not None else None


_counter = iter(range(1_000_000))


def unique(prefix: str = "obj") -> str:
    """A fresh object name, so tests in one module never collide."""
    return f"{prefix}-{next(_counter)}"


def pod_body(name: str, cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    """A minimal pod manifest."""
    metadata: dict[str, Any] = {"name": name}
    for key in ("labels", "annotations", "finalizers", "ownerReferences"):
        if key in spec:
            metadata[key] = spec.pop(key)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": cpu}}}
            ],
            **spec,
        },
    }


def bind(core: client.CoreV1Api, namespace: str, name: str, node: str) -> None:
    """Bind a pod through pods/binding, reading and releasing the response."""
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=name),
        target=client.V1ObjectReference(kind="Node", name=node),
    )
    response = core.create_namespaced_binding(namespace, body, _preload_content=False)
    response.read()
    response.release_conn()


def service_account_token(raw: Raw, namespace: str, name: str, **spec: Any) -> str:
    """Create ServiceAccount `name` (as the admin `raw`) and mint a token for it (TokenRequest)."""
    code, body = raw.json(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts", {"metadata": {"name": name}}
    )
    assert code in (201, 409), body
    code, body = raw.json(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
    )
    assert code == 201, body
    return str(body["status"]["token"])


def create_namespace(raw: Raw, prefix: str = "ns") -> str:
    """A fresh namespace, created as the admin."""
    name = unique(prefix)
    code, body = raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert code == 201, body
    return name
