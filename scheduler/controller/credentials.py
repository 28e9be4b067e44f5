"""kopf's credentials from the official client's Configuration, for every kind of kubeconfig user.

The official client keeps what it loaded in several places: a bearer token (from a
kubeconfig token, a token file, an exec plugin, an auth provider, or the in-cluster
ServiceAccount file) or basic credentials sit behind `auth_settings()` as a ready
`Authorization` header value, under a key whose name changed between releases
("authorization" before v30, "BearerToken" since); client certificates (given inline
or as files, or returned by an exec plugin) are written to files named by
`cert_file`/`key_file`. Reading the header through `auth_settings()` rather than a
key of `api_key` is what keeps this working across releases, and it runs the
client's refresh hook, so an expired exec or in-cluster token is reloaded.
"""

from __future__ import annotations

from collections.abc import Callable

import kopf
from kubernetes import client as k8s_client

from scheduler.api.errors import ConfigError
from scheduler.kube.config import auth_headers


def connection_info(configuration: k8s_client.Configuration) -> kopf.ConnectionInfo:
    """The ConnectionInfo kopf logs in with; ConfigError if the user has no usable credential.

    Without a credential kopf would send anonymous requests, and a server with
    anonymous authentication off (the usual case) answers every one with 401 until
    kopf gives up: refusing here says what is wrong before that loop starts.
    """
    authorization = auth_headers(configuration).get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    if not token and not configuration.cert_file:
        raise ConfigError(
            f"no credential for {configuration.host}: the kubeconfig user (or the in-cluster "
            "ServiceAccount) has neither a token nor a client certificate that the official "
            "client could load; give the user a token, tokenFile, client-certificate, exec or "
            "auth-provider entry, or run in a pod with a mounted ServiceAccount token"
        )
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        scheme=scheme if token else None,
        token=token or None,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


def login_handler(
    load: Callable[[], k8s_client.Configuration],
) -> Callable[..., kopf.ConnectionInfo]:
    """A kopf login handler that loads the credentials anew each time kopf asks.

    kopf asks again after a 401. The client's own refresh hook re-reads a rotated
    in-cluster token only once a minute, and kopf gives up if a new login returns the
    credential it just saw refused: loading the configuration again reads the
    projected token file (or runs the exec plugin) at once.
    """

    def login(**_: object) -> kopf.ConnectionInfo:
        return connection_info(load())

    return login
