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


def token_kubeconfig(base: dict[str, Any], token: str, name: str) -> dict[str, Any]:
    """A copy of `base` (any kubeconfig) whose current context's user is `token`.

    The cluster entry (server, CA) is kept as it is, so this works for sim's kubeconfig and for
    a real cluster's; the user is replaced, so exec plugins and client certificates are dropped.
    """
    current = base.get("current-context")
    contexts = {c["name"]: c["context"] for c in base.get("contexts") or []}
    if current not in contexts:
        raise ValueError(f"the kubeconfig has no current context (current-context: {current!r})")
    context = dict(contexts[current])
    clusters = {c["name"]: c["cluster"] for c in base.get("clusters") or []}
    if context.get("cluster") not in clusters:
        raise ValueError(f"the kubeconfig's context {current!r} names no cluster it defines")
    cluster = clusters[context["cluster"]]
    context["user"] = name
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context["cluster"], "cluster": dict(cluster)}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": context}],
        "current-context": name,
        "preferences": {},
    }


def write_token_kubeconfig(path: Path, base: Path, token: str, name: str) -> Path:
    """Write `base`'s cluster with `token` as the user (e.g. a ServiceAccount's) to `path`."""
    doc = token_kubeconfig(yaml.safe_load(base.read_text()), token, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(doc, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path
