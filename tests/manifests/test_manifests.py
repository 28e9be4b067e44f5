"""The manifests in crds/ and deploy/ parse, render, validate offline, and say what they mean."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from scheduler import __version__
from scheduler.engine import load_config
from scheduler.framework.config import DEFAULT_CONFIG_YAML
from tests.manifests.conftest import CRDS, DEPLOY, KUSTOMIZATIONS, REPO, find, need_kubectl, render
from tests.manifests.stub_apiserver import stub_apiserver

# Kinds that come from CRDs, for which kubernetes-validate ships no schema. PodGroup
# and Queue are ours (their CRDs carry the schema); ServiceMonitor is the Prometheus
# Operator's, whose CRD is not ours to vendor. They are checked by kubectl against
# the stub's discovery instead, and ServiceMonitor's fields by test_servicemonitor.
CRD_KINDS = {"ServiceMonitor", "PodGroup", "Queue"}
# The oldest Kubernetes muster supports and the newest kubernetes-validate knows.
KUBE_VERSIONS = ("1.29.0", "latest")

YAML_FILES = sorted(
    [*CRDS.glob("*.yaml"), CRDS / "Kustomization", *DEPLOY.rglob("*.yaml")],
    key=str,
)


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_manifest_parses_into_objects_with_a_kind(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert docs, f"{path} holds no document"
    for doc in docs:
        assert isinstance(doc, dict), f"{path}: a document is not a mapping"
        assert doc.get("apiVersion") and doc.get("kind"), f"{path}: apiVersion or kind missing"


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_rendered_manifests_match_the_kubernetes_schemas(kustomization: str) -> None:
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is not installed: run make manifests"
    )
    errors = []
    for doc in render(kustomization):
        if doc["kind"] in CRD_KINDS:
            continue
        for version in KUBE_VERSIONS:
            if version == "latest":
                version = kubernetes_validate.latest_version()
            try:
                # strict: an unknown field (a typo) is an error, not silently dropped.
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                # The message and where, not str(error): that dumps the whole schema.
                where = "/".join(str(p) for p in error.absolute_path)
                name = f"{doc['kind']}/{doc['metadata']['name']}"
                errors.append(f"{name} ({version}) at {where}: {error.message}")
    assert not errors, "\n".join(errors)


def test_the_base_installs_the_crds_and_everything_else_in_muster_system() -> None:
    docs = render("deploy")
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("CustomResourceDefinition", "podgroups.scheduling.volcano.sh") in kinds
    assert ("CustomResourceDefinition", "queues.scheduling.volcano.sh") in kinds
    assert ("Namespace", "muster-system") in kinds
    cluster_scoped = {
        "Namespace",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "PriorityClass",
    }
    for doc in docs:
        if doc["kind"] not in cluster_scoped:
            assert doc["metadata"].get("namespace") == "muster-system", doc["metadata"]["name"]


def test_the_crds_in_deploy_are_the_files_in_crds() -> None:
    rendered = [d for d in render("deploy") if d["kind"] == "CustomResourceDefinition"]
    on_disk = [yaml.safe_load(p.read_text()) for p in sorted(CRDS.glob("*.yaml"))]
    by_name = {d["metadata"]["name"]: d for d in rendered}
    assert sorted(by_name) == sorted(d["metadata"]["name"] for d in on_disk)
    for doc in on_disk:
        assert by_name[doc["metadata"]["name"]] == doc


def test_the_configmap_holds_the_built_in_default_config() -> None:
    config_map = find(render("deploy"), "ConfigMap", "muster-scheduler-config")
    text = config_map["data"]["scheduler.yaml"]
    assert yaml.safe_load(text) == yaml.safe_load(DEFAULT_CONFIG_YAML)
    load_config(text)  # the scheduler accepts it


def test_the_deployment_runs_two_electing_replicas_of_this_version_under_restricted_rules() -> None:
    deployment = find(render("deploy"), "Deployment", "muster-scheduler")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    assert spec["replicas"] == 2
    assert args[0] == "scheduler"
    assert "--leader-elect" in args and "--log-format=json" in args
    assert "--scheduler-conf=/etc/muster/scheduler.yaml" in args
    assert container["image"].endswith(f":{__version__}")
    assert pod["priorityClassName"] == "muster-critical"
    find(render("deploy"), "PriorityClass", "muster-critical")
    security = container["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] > 0
    assert security["readOnlyRootFilesystem"] and not security["allowPrivilegeEscalation"]
    assert security["capabilities"]["drop"] == ["ALL"]
    assert security["seccompProfile"]["type"] == "RuntimeDefault"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_the_dockerfile_user_and_version_match_the_deployment() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    deployment = find(render("deploy"), "Deployment", "muster-scheduler")
    uid = deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert re.search(rf"^USER {uid}:", dockerfile, re.MULTILINE)
    assert re.search(rf"^ARG VERSION={re.escape(__version__)}$", dockerfile, re.MULTILINE)


def test_volcano_compat_serves_volcano_besides_muster() -> None:
    deployment = find(render("deploy/overlays/volcano-compat"), "Deployment", "muster-scheduler")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--scheduler-name=muster" in args
    assert "--scheduler-name=volcano" in args


def test_servicemonitor_scrapes_the_metrics_service() -> None:
    docs = render("deploy/overlays/servicemonitor")
    monitor = find(docs, "ServiceMonitor", "muster-scheduler")
    service = find(docs, "Service", "muster-scheduler-metrics")
    labels = service["metadata"]["labels"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    for key, value in monitor["spec"]["selector"]["matchLabels"].items():
        assert labels[key] == value
    ports = {p["name"] for p in service["spec"]["ports"]}
    assert {e["port"] for e in monitor["spec"]["endpoints"]} <= ports
    assert service["metadata"]["annotations"]["prometheus.io/scrape"] == "true"


@pytest.mark.parametrize(
    "source",
    [["-f", "crds/"], *(["-k", k] for k in KUSTOMIZATIONS)],
    ids=lambda s: " ".join(s),
)
def test_kubectl_client_dry_run_apply_succeeds(source: list[str], tmp_path: Path) -> None:
    kubectl = need_kubectl()
    with stub_apiserver(tmp_path) as kubeconfig:
        result = subprocess.run(
            [
                kubectl,
                "--kubeconfig",
                str(kubeconfig),
                "--cache-dir",
                str(tmp_path / "cache"),
                "apply",
                "--dry-run=client",
                # The stub serves no OpenAPI document, so kubectl cannot validate against
                # the schemas here; test_rendered_manifests_match_the_kubernetes_schemas
                # does that offline, with kubernetes-validate.
                "--validate=false",
                *source,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    assert "(dry run)" in result.stdout
