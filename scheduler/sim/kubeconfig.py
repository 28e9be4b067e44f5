"""The kubeconfig file clients (the `kubernetes` package, kubectl, muster) use to reach sim."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

CONTEXT = "muster-sim"


def kubeconfig(server: str, token: str | None, ca_pem: bytes | None) -> dict[str, Any]:
    """A one-context kubeconfig for `server`."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    user: dict[str, Any] = {"token": token} if token else {}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: Path, server: str, token: str | None, ca_pem: bytes | None) -> None:
    """Write the kubeconfig atomically, readable only by its owner (it may hold a token)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig(server, token, ca_pem), sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
