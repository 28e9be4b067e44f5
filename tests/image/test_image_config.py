"""The built image's config agrees with deploy/ and pyproject.toml: user, entry point, ports,
labels, and the securityContext the Deployments run it under."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENTS = sorted((REPO / "deploy" / "base").glob("*/deployment.yaml"))
NON_ROOT_UID = 65532
STAND_IN_LABEL = "org.muster.base-stand-in"
# The size the image may take on the stand-in base (tests/image/base.sh), whose own layers are
# most of it; the rest is the trimmed venv (tests/image/trim_venv.py). The figures of the last
# build are in docs/performance.md.
MAX_BYTES_ON_STAND_IN = 200_000_000
Obj = dict[str, Any]


def project() -> Obj:
    data: Obj = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return data


def deployments() -> list[Obj]:
    return [yaml.safe_load(path.read_text()) for path in DEPLOYMENTS]


def containers() -> list[tuple[str, Obj, Obj]]:
    """(deployment name, pod spec, container) for every container of deploy/base."""
    return [
        (d["metadata"]["name"], d["spec"]["template"]["spec"], c)
        for d in deployments()
        for c in d["spec"]["template"]["spec"]["containers"]
    ]


def effective_security(pod_spec: Obj, container: Obj) -> Obj:
    """The securityContext in force: the container's fields over the pod's."""
    return {**pod_spec.get("securityContext", {}), **container.get("securityContext", {})}


def ids(items: list[tuple[str, Obj, Obj]]) -> list[str]:
    return [f"{name}/{container['name']}" for name, _, container in items]


def test_deploy_base_has_the_scheduler_and_controller_deployments() -> None:
    names = {d["metadata"]["name"] for d in deployments()}
    assert names == {"muster-scheduler", "muster-controller"}


def test_image_runs_as_the_numeric_non_root_user(image_config: Obj) -> None:
    # numeric, so that the kubelet can check runAsNonRoot against the image alone
    assert image_config["User"] == f"{NON_ROOT_UID}:{NON_ROOT_UID}"


def test_image_entrypoint_is_muster_with_the_scheduler_by_default(image_config: Obj) -> None:
    assert image_config["Entrypoint"] == ["muster"]
    assert image_config["Cmd"] == ["scheduler"]


def test_image_labels_carry_the_project_metadata(image_config: Obj) -> None:
    labels = image_config["Labels"]
    meta = project()
    assert labels["org.opencontainers.image.title"] == meta["name"]
    assert labels["org.opencontainers.image.version"] == meta["version"]
    assert labels["org.opencontainers.image.description"] == meta["description"]
    assert labels["org.opencontainers.image.licenses"] == meta["license"]["text"]
    assert labels["org.opencontainers.image.source"].startswith("https://")


def test_image_home_is_the_writable_tmp(image_config: Obj) -> None:
    # the root is read-only in deploy/: whatever a library writes under $HOME lands on /tmp,
    # which every Deployment mounts as an emptyDir (checked below)
    env = dict(item.split("=", 1) for item in image_config["Env"])
    assert env["HOME"] == "/tmp"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


@pytest.mark.parametrize(
    ("deployment", "pod_spec", "container"), containers(), ids=ids(containers())
)
def test_deploy_runs_the_image_entrypoint_with_a_muster_subcommand(
    deployment: str, pod_spec: Obj, container: Obj
) -> None:
    # no `command`: the image's ENTRYPOINT runs, and args start with the subcommand
    assert "command" not in container, f"{deployment} overrides the image's entry point"
    assert container["args"][0] in {"scheduler", "controller"}


@pytest.mark.parametrize(
    ("deployment", "pod_spec", "container"), containers(), ids=ids(containers())
)
def test_deploy_security_context_matches_the_image_user(
    deployment: str, pod_spec: Obj, container: Obj, image_config: Obj
) -> None:
    security = effective_security(pod_spec, container)
    image_uid, image_gid = (int(part) for part in image_config["User"].split(":"))
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == image_uid
    assert security["runAsGroup"] == image_gid
    assert pod_spec["securityContext"]["fsGroup"] == image_gid
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]


@pytest.mark.parametrize(
    ("deployment", "pod_spec", "container"), containers(), ids=ids(containers())
)
def test_deploy_mounts_a_writable_tmp_for_the_read_only_root(
    deployment: str, pod_spec: Obj, container: Obj
) -> None:
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    tmp = [m for m in container.get("volumeMounts", []) if m["mountPath"] == "/tmp"]
    assert len(tmp) == 1, f"{deployment}: no volume on /tmp"
    assert "emptyDir" in volumes[tmp[0]["name"]]
    assert not tmp[0].get("readOnly", False)


@pytest.mark.parametrize(
    ("deployment", "pod_spec", "container"), containers(), ids=ids(containers())
)
def test_deploy_image_tag_is_the_project_version(
    deployment: str, pod_spec: Obj, container: Obj
) -> None:
    assert container["image"].rsplit(":", 1)[1] == project()["version"]


@pytest.mark.parametrize(
    ("deployment", "pod_spec", "container"), containers(), ids=ids(containers())
)
def test_every_container_port_of_deploy_is_exposed_by_the_image(
    deployment: str, pod_spec: Obj, container: Obj, image_config: Obj
) -> None:
    exposed = set(image_config.get("ExposedPorts") or {})
    for port in container.get("ports", []):
        assert f"{port['containerPort']}/{port.get('protocol', 'TCP').lower()}" in exposed


def test_image_on_the_stand_in_base_is_at_most_200_mb(engine: Any, image: str) -> None:
    document = engine.inspect_image(image)
    if STAND_IN_LABEL not in (document["Config"].get("Labels") or {}):
        pytest.skip("built on the real base image: the 200 MB budget is for the stand-in's")
    assert document["Size"] <= MAX_BYTES_ON_STAND_IN, f"{document['Size'] / 1e6:.1f} MB"
