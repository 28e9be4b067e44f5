"""Admission webhooks: sim calls the stored configurations over HTTPS, as kube-apiserver does."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from muster_sim.server import SimServer
from tests.sim.conftest import Raw, unique
from tests.sim.test_crd import GANG_SCHEMA, crd

VALIDATING = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
MUTATING = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _self_signed(directory: Path) -> tuple[Path, Path, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(pem)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path, pem


class WebhookServer:
    """An HTTPS admission webhook: each path is one behaviour; it records what it was sent."""

    def __init__(self, directory: Path) -> None:
        cert, key, self.pem = _self_signed(directory)
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)
        self.reviews: list[tuple[str, dict[str, Any]]] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.pem).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> WebhookServer:
        self._thread.start()
        assert self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/{behaviour}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self.context)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._started.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    async def _handle(self, request: web.Request) -> web.Response:
        behaviour = request.match_info["behaviour"]
        review = await request.json()
        self.reviews.append((behaviour, review))
        req = review["request"]
        response: dict[str, Any] = {"uid": req["uid"], "allowed": True}
        obj = req.get("object") or {}
        if behaviour == "label":
            patch = [{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        elif behaviour == "negative":
            patch = [{"op": "replace", "path": "/spec/minMember", "value": -5}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        elif behaviour == "deny":
            response["allowed"] = False
            response["status"] = {"code": 403, "reason": "Forbidden", "message": "no thanks"}
        elif behaviour == "needs-label":
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if labels.get("mutated") != "yes":
                response["allowed"] = False
                response["status"] = {"message": "not mutated first"}
        elif behaviour == "slow":
            await asyncio.sleep(3)
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )


@pytest.fixture(scope="module")
def hook_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    with WebhookServer(tmp_path_factory.mktemp("webhook")) as server:
        yield server


def _config(
    raw: Raw,
    collection: str,
    hook_name: str,
    client_config: dict[str, Any],
    selector_value: str,
    resources: list[str] | None = None,
    groups: list[str] | None = None,
    **extra: Any,
) -> None:
    hook: dict[str, Any] = {
        "name": hook_name,
        "clientConfig": client_config,
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": groups if groups is not None else [""],
                "apiVersions": ["*"],
                "resources": resources or ["configmaps"],
            }
        ],
        # each test's webhooks see only its own objects
        "objectSelector": {"matchLabels": {"test": selector_value}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        **extra,
    }
    code, body = raw.json(
        "POST", collection, {"metadata": {"name": unique("cfg")}, "webhooks": [hook]}
    )
    assert code == 201, body


def _https(server: WebhookServer, path: str) -> dict[str, Any]:
    return {"url": server.url(path), "caBundle": server.ca_bundle}


def _configmap(test: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": unique("cm"), "labels": {"test": test, **labels}}}


def test_mutation_is_stored_and_visible_to_validating_webhooks(
    raw: Raw, hook_server: WebhookServer
) -> None:
    _config(raw, MUTATING, "label.example.com", _https(hook_server, "/label"), "order")
    _config(raw, VALIDATING, "check.example.com", _https(hook_server, "/needs-label"), "order")
    code, created = raw.json("POST", CONFIGMAPS, _configmap("order"))
    assert code == 201, created
    assert created["metadata"]["labels"]["mutated"] == "yes"
    _, review = next(r for r in hook_server.reviews if r[0] == "needs-label")
    request = review["request"]
    assert request["operation"] == "CREATE" and request["namespace"] == "default"
    assert request["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert request["kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert request["userInfo"]["username"]
    assert request["options"]["kind"] == "CreateOptions"
    assert request["oldObject"] is None


def test_denial_answers_with_the_webhooks_code_and_message(
    raw: Raw, hook_server: WebhookServer
) -> None:
    _config(raw, VALIDATING, "deny.example.com", _https(hook_server, "/deny"), "deny")
    code, body = raw.json("POST", CONFIGMAPS, _configmap("deny"))
    assert code == 403 and body["reason"] == "Forbidden"
    assert body["message"] == 'admission webhook "deny.example.com" denied the request: no thanks'


def test_unreachable_webhook_fails_closed_with_500(raw: Raw) -> None:
    _config(raw, VALIDATING, "down.example.com", {"url": "https://127.0.0.1:1/x"}, "down")
    code, body = raw.json("POST", CONFIGMAPS, _configmap("down"))
    assert code == 500 and body["reason"] == "InternalError"
    assert body["message"].startswith(
        'Internal error occurred: failed calling webhook "down.example.com": failed to call '
        'webhook: Post "https://127.0.0.1:1/x?timeout=10s": '
    )


def test_unreachable_webhook_with_failure_policy_ignore_is_skipped(raw: Raw) -> None:
    _config(
        raw,
        VALIDATING,
        "optional.example.com",
        {"url": "https://127.0.0.1:1/x"},
        "optional",
        failurePolicy="Ignore",
    )
    code, body = raw.json("POST", CONFIGMAPS, _configmap("optional"))
    assert code == 201, body


def test_slow_webhook_times_out_after_timeout_seconds(raw: Raw, hook_server: WebhookServer) -> None:
    _config(
        raw, VALIDATING, "slow.example.com", _https(hook_server, "/slow"), "slow", timeoutSeconds=1
    )
    code, body = raw.json("POST", CONFIGMAPS, _configmap("slow"))
    assert code == 500
    assert body["message"].endswith(": context deadline exceeded")
    assert "?timeout=1s" in body["message"]


def test_selectors_choose_which_objects_and_namespaces_are_sent(
    raw: Raw, hook_server: WebhookServer
) -> None:
    ns = unique("hooked")
    raw.json("POST", "/api/v1/namespaces", {"metadata": {"name": ns, "labels": {"hooks": "on"}}})
    _config(
        raw,
        VALIDATING,
        "ns.example.com",
        _https(hook_server, "/deny"),
        "ns",
        namespaceSelector={"matchLabels": {"hooks": "on"}},
    )
    # default has no hooks=on label: not sent
    assert raw.json("POST", CONFIGMAPS, _configmap("ns"))[0] == 201
    # another object selector value: not sent
    other = {"metadata": {"name": "x", "labels": {"test": "other"}}}
    assert raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", other)[0] == 201
    code, body = raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", _configmap("ns"))
    assert code == 403 and "ns.example.com" in body["message"]


def test_match_conditions_in_cel_skip_the_webhook_when_false(
    raw: Raw, hook_server: WebhookServer
) -> None:
    _config(
        raw,
        VALIDATING,
        "cel.example.com",
        _https(hook_server, "/deny"),
        "cel",
        matchConditions=[
            {"name": "only-strict", "expression": "object.metadata.labels['tier'] == 'strict'"}
        ],
    )
    assert raw.json("POST", CONFIGMAPS, _configmap("cel", tier="loose"))[0] == 201
    assert raw.json("POST", CONFIGMAPS, _configmap("cel", tier="strict"))[0] == 403


def test_configuration_with_an_invalid_cel_condition_is_refused(raw: Raw) -> None:
    hook = {
        "name": "bad.example.com",
        "clientConfig": {"url": "https://127.0.0.1:1/x"},
        "rules": [],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "matchConditions": [{"name": "broken", "expression": "object.("}],
    }
    code, body = raw.json("POST", VALIDATING, {"metadata": {"name": "bad"}, "webhooks": [hook]})
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "webhooks[0].matchConditions[0].expression"


def test_service_client_config_cannot_be_called_and_says_why(raw: Raw) -> None:
    _config(
        raw,
        VALIDATING,
        "svc.example.com",
        {"service": {"name": "hooks", "namespace": "default", "path": "/v"}},
        "svc",
    )
    code, body = raw.json("POST", CONFIGMAPS, _configmap("svc"))
    assert code == 500
    assert "clientConfig.url" in body["message"]


def test_schema_validation_runs_after_mutation(
    sim: SimServer, raw: Raw, hook_server: WebhookServer
) -> None:
    body = crd("gangs", "Gang", "Namespaced", True, GANG_SCHEMA, [])
    body["metadata"]["name"] = "gangs.example.com"
    body["spec"]["group"] = "example.com"
    assert raw.json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)[0] in (
        201,
        409,
    )
    _config(
        raw,
        MUTATING,
        "negative.example.com",
        _https(hook_server, "/negative"),
        "schema",
        resources=["gangs"],
        groups=["example.com"],
    )
    code, refused = raw.json(
        "POST",
        "/apis/example.com/v1beta1/namespaces/default/gangs",
        {"metadata": {"name": "g", "labels": {"test": "schema"}}, "spec": {"queue": "q"}},
    )
    assert code == 422
    assert refused["details"]["causes"][0]["message"] == (
        "Invalid value: -5: spec.minMember in body should be greater than or equal to 0"
    )


def test_a_create_reaches_mutating_webhooks_with_the_namespace_only_where_the_client_put_it(
    raw: Raw, hook_server: WebhookServer
) -> None:
    # kube-apiserver (checked on 1.24) sends a CREATE's object to mutating webhooks as the
    # client wrote it: naming the namespace in the URL alone leaves metadata.namespace out
    _config(raw, MUTATING, "ns.example.com", _https(hook_server, "/label"), "namespace")
    _config(raw, VALIDATING, "nscheck.example.com", _https(hook_server, "/allow"), "namespace")
    without, with_namespace = _configmap("namespace"), _configmap("namespace")
    with_namespace["metadata"]["namespace"] = "default"
    for body in (without, with_namespace):
        code, created = raw.json("POST", CONFIGMAPS, body)
        assert code == 201, created
        assert created["metadata"]["namespace"] == "default"

    def sent(behaviour: str, name: str) -> dict[str, Any]:
        return next(
            r["request"]["object"]["metadata"]
            for b, r in hook_server.reviews
            if b == behaviour and r["request"]["object"]["metadata"]["name"] == name
        )

    assert "namespace" not in sent("label", without["metadata"]["name"])
    assert sent("label", with_namespace["metadata"]["name"])["namespace"] == "default"
    # validation runs on the object as it will be stored
    assert sent("allow", without["metadata"]["name"])["namespace"] == "default"
