"""Connection settings from the official client: kubeconfig or in-cluster, no global state."""

from __future__ import annotations

import ssl
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config


def load_configuration(kubeconfig: str | None) -> k8s_client.Configuration:
    """An explicit Configuration from a kubeconfig file, or in-cluster when none is given."""
    configuration = k8s_client.Configuration()
    if kubeconfig:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=configuration, persist_config=False
        )
    else:
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
    return configuration


def ssl_context(configuration: k8s_client.Configuration) -> ssl.SSLContext | bool:
    """The TLS settings of a Configuration as an SSLContext (False for plain HTTP)."""
    if not configuration.host.startswith("https"):
        return False
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    return context


def auth_headers(configuration: k8s_client.Configuration) -> dict[str, str]:
    """The Authorization header the Configuration carries (refreshing tokens as it does)."""
    headers: dict[str, str] = {}
    settings: dict[str, Any] = dict(configuration.auth_settings())
    for values in settings.values():
        if values.get("in") == "header" and values.get("value"):
            # a kubeconfig tokenFile is read with its trailing newline, which no
            # header may carry
            headers[str(values["key"])] = str(values["value"]).strip()
    return headers
