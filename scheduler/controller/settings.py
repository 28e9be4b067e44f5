"""How kopf runs the controller: what it may write, how replicas take turns, how it serves.

- Persistence: every handler is an event, index or admission handler, none
  of which keeps progress or a diff base, so kopf writes nothing on users'
  objects: no `kopf.zalando.org/*` annotations and no finalizers. The
  storages below are pointed at the `controller.muster.dev/` prefix all the
  same, so that a change-detecting handler added later writes under a name
  we document rather than kopf's.
- One replica handles queues: kopf's peering. Replicas publish themselves in a
  `ClusterKopfPeering` (its CRD is deploy/base/controller/peering.yaml; the
  object is made at start, see `objects.ensure_peering`) with a random
  priority; only the highest works, the others pause their watches until it
  goes quiet (60 s). Without the peering CRD (a dev cluster, muster sim)
  kopf runs standalone. Both are safe, as is the grouping of pods, which runs
  beside kopf in every replica: every write is idempotent (deterministic
  PodGroup names, 409 AlreadyExists as success, merge patches of a value), so
  two active replicas duplicate work, never objects.
- Admission: kopf's webhook server over HTTPS, with the certificate of a
  mounted Secret, or a self-signed one made at start for development.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME

PREFIX = "controller.muster.dev"


@dataclass
class ControllerOptions:
    """Everything `muster controller` is told on its command line."""

    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER_NAME,)
    default_queue: str = DEFAULT_QUEUE
    webhook_port: int = 9443  # 0: no webhook server
    webhook_address: str = "0.0.0.0"
    webhook_host: str | None = None  # the name the API server calls us by
    webhook_cert_dir: Path | None = None  # tls.crt, tls.key (and ca.crt) of a mounted Secret
    webhook_cadump: Path | None = None  # where to write the CA bundle (development)
    health_address: str = ":8080"
    metrics_address: str = ":8081"
    peering: str = "muster-controller"
    standalone: bool = False
    priority: int = 0
    extra_sans: tuple[str, ...] = field(default_factory=tuple)

    @property
    def clusterwide(self) -> bool:
        """Whether the controller watches every namespace."""
        return not self.namespaces


class WebhookServer(kopf.WebhookServer):
    """kopf's HTTPS webhook server, making its self-signed certificate with `cryptography`.

    kopf's own generator needs `certbuilder` and `oscrypto`, unmaintained
    packages whose OpenSSL 3 detection breaks; `cryptography` is maintained
    and already what TLS in Python leans on.

    Each review's object also gets the request's namespace before kopf reads it:
    kube-apiserver sends a CREATE's object as the client wrote it, so a client that
    names the namespace only in the URL (the official Python client, kubectl with
    `-n`) sends an object without `metadata.namespace`, and kopf, which takes the
    namespace from the object, would hand handlers None.
    """

    async def __call__(self, fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        async def with_namespace(
            request: Any,
            *,
            webhook: str | None = None,
            headers: kopf.Headers | None = None,
            sslpeer: kopf.SSLPeer | None = None,
        ) -> Any:
            fill_namespace(request)
            return await fn(request, webhook=webhook, headers=headers, sslpeer=sslpeer)

        async for client_config in super().__call__(with_namespace):
            yield client_config

    @staticmethod
    def build_certificate(
        hostnames: Collection[str], password: str | None = None
    ) -> tuple[bytes, bytes]:
        """A self-signed CA-and-server certificate for the host names and IPs given."""
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        common_name = ""
        for host in dict.fromkeys(hostnames):
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                names.append(x509.DNSName(host))
                common_name = common_name or host
                continue
            if not address.is_unspecified:
                names.append(x509.IPAddress(address))
                common_name = common_name or host
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name or "muster")])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA256())
        )
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
        return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def fill_namespace(review: dict[str, Any]) -> None:
    """Put the request's namespace into its objects' metadata where the client left it out."""
    payload: dict[str, Any] = dict(review.get("request") or {})
    namespace = payload.get("namespace")
    if not namespace:
        return
    for key in ("object", "oldObject"):
        obj = payload.get(key)
        if isinstance(obj, dict):
            metadata = obj.setdefault("metadata", {})
            if isinstance(metadata, dict) and not metadata.get("namespace"):
                metadata["namespace"] = namespace


def webhook_server(options: ControllerOptions) -> WebhookServer:
    """The admission endpoint: the mounted certificate if given, else a self-signed one."""
    certfile = pkeyfile = cafile = None
    if options.webhook_cert_dir is not None:
        certfile = options.webhook_cert_dir / "tls.crt"
        pkeyfile = options.webhook_cert_dir / "tls.key"
        ca = options.webhook_cert_dir / "ca.crt"
        cafile = ca if ca.exists() else None
    return WebhookServer(
        addr=options.webhook_address,
        port=options.webhook_port,
        host=options.webhook_host,
        certfile=certfile,
        pkeyfile=pkeyfile,
        cafile=cafile,
        cadump=options.webhook_cadump,
        extra_sans=options.extra_sans,
    )


def configure(settings: kopf.OperatorSettings, options: ControllerOptions) -> None:
    """Put the controller's choices into kopf's settings."""
    persistence = settings.persistence
    persistence.finalizer = f"{PREFIX}/finalizer"
    persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    settings.peering.name = options.peering
    settings.peering.priority = options.priority
    settings.peering.standalone = options.standalone
    settings.peering.clusterwide = options.clusterwide
    settings.peering.mandatory = False
    # Events only for failures, under our name.
    settings.posting.level = logging.WARNING
    settings.posting.reporting_component = "muster-controller"
    settings.posting.event_name_prefix = "muster-controller-"
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.networking.request_timeout = 30
    settings.networking.connect_timeout = 10
    # We ship the webhook configurations ourselves (deploy/base/controller/webhooks/).
    settings.admission.managed = None
    settings.admission.server = webhook_server(options) if options.webhook_port else None
