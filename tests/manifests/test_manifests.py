"""The manifests in crds/ and deploy/ parse, render, validate offline, and say what they mean."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from scheduler import __version__
from scheduler.engine import load_config
from scheduler.framework.config import DEFAULT_CONFIG_YAML
from tests.manifests.conftest import (
    CRDS,
    DEPLOY,
    KUSTOMIZATIONS,
    REPO,
    VOLCANO_COMPAT_WEBHOOKS,
    WEBHOOKS,
    find,
    need_kubectl,
    render,
)
from tests.manifests.stub_apiserver import stub_apiserver

# Kinds that come from CRDs, for which kubernetes-validate ships no schema, and why each
# is skipped. They are checked by kubectl against the stub's discovery instead.
CRD_KINDS = {
    # Ours: their CRDs in crds/ carry the schema.
    "PodGroup": "muster's own CRD (crds/)",
    "Queue": "muster's own CRD (crds/)",
    "HyperNode": "muster's own CRD (crds/)",
    # Not ours to vendor; the fields that matter are checked by tests here.
    "ServiceMonitor": "the Prometheus Operator's CRD (test_servicemonitor checks it)",
    "PrometheusRule": "the Prometheus Operator's CRD (tests/monitoring runs its rules)",
    "ClusterKopfPeering": "kopf's CRD (deploy/base/controller/peering.yaml)",
    "Issuer": "cert-manager's CRD (test_the_webhooks_serve_the_cert_manager_certificate)",
    "Certificate": "cert-manager's CRD (test_the_webhooks_serve_the_cert_manager_certificate)",
}
# CRDs in deploy/ that are not muster's API, so not in crds/: each is installed with the
# process that needs it, from the file named. kopf's peering CRD belongs to the controller
# (crds/ is the Volcano-compatible API that `kubectl apply -f crds/` installs alone, and
# that muster sim registers).
THIRD_PARTY_CRDS = {
    "clusterkopfpeerings.kopf.dev": DEPLOY / "base" / "controller" / "peering.yaml",
}
# The oldest Kubernetes muster supports and the newest kubernetes-validate knows.
KUBE_VERSIONS = ("1.29.0", "latest")

YAML_FILES = sorted(
    [
        *CRDS.glob("*.yaml"),
        CRDS / "Kustomization",
        *DEPLOY.rglob("*.yaml"),
        REPO / WEBHOOKS / "kustomization.yaml",
        REPO / VOLCANO_COMPAT_WEBHOOKS / "kustomization.yaml",
    ],
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


def test_the_base_installs_the_crds_the_scheduler_and_the_controller() -> None:
    docs = render("deploy")
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("CustomResourceDefinition", "podgroups.scheduling.volcano.sh") in kinds
    assert ("CustomResourceDefinition", "queues.scheduling.volcano.sh") in kinds
    assert ("CustomResourceDefinition", "hypernodes.topology.volcano.sh") in kinds
    assert ("Namespace", "muster-system") in kinds
    assert ("CustomResourceDefinition", "clusterkopfpeerings.kopf.dev") in kinds
    assert ("Deployment", "muster-controller") in kinds


CLUSTER_SCOPED = {
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "PriorityClass",
    "ClusterKopfPeering",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_namespaced_object_lives_in_muster_system(kustomization: str) -> None:
    for doc in render(kustomization):
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"].get("namespace") == "muster-system", doc["metadata"]["name"]


def test_the_crds_in_deploy_are_the_files_in_crds_and_the_third_party_ones_listed() -> None:
    rendered = [d for d in render("deploy") if d["kind"] == "CustomResourceDefinition"]
    on_disk = [yaml.safe_load(p.read_text()) for p in sorted(CRDS.glob("*.yaml"))]
    for name, path in THIRD_PARTY_CRDS.items():
        (crd,) = [
            d
            for d in yaml.safe_load_all(path.read_text())
            if d and d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] == name
        ]
        on_disk.append(crd)
    by_name = {d["metadata"]["name"]: d for d in rendered}
    assert sorted(by_name) == sorted(d["metadata"]["name"] for d in on_disk)
    for doc in on_disk:
        assert by_name[doc["metadata"]["name"]] == doc
    ours = {d["spec"]["group"] for d in on_disk if d["metadata"]["name"] not in THIRD_PARTY_CRDS}
    assert ours == {"scheduling.volcano.sh", "topology.volcano.sh"}, (
        "a CRD of muster's API belongs in crds/"
    )


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_no_object_needs_a_crd_applied_in_the_same_run(kustomization: str) -> None:
    # `kubectl apply` maps every kind before it creates anything, so an object whose CRD
    # comes in the same apply fails on a fresh cluster ("ensure CRDs are installed
    # first"). crds/ is applied first (README); a third-party CRD must not have objects.
    docs = render(kustomization)
    same_run = {
        (d["spec"]["group"], d["spec"]["names"]["kind"])
        for d in docs
        if d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] in THIRD_PARTY_CRDS
    }
    used = {(d["apiVersion"].rpartition("/")[0], d["kind"]) for d in docs}
    assert not used & same_run


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


def test_the_controller_runs_two_peering_replicas_of_this_version_under_restricted_rules() -> None:
    docs = render("deploy")
    deployment = find(docs, "Deployment", "muster-controller")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    assert spec["replicas"] == 2
    assert args[0] == "controller"
    assert "--peering=muster-controller" in args and "--log-format=json" in args
    assert "--standalone" not in args
    assert container["image"].endswith(f":{__version__}")
    assert pod["priorityClassName"] == "muster-critical"
    security = container["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["runAsUser"] > 0
    assert security["readOnlyRootFilesystem"] and not security["allowPrivilegeEscalation"]
    assert security["capabilities"]["drop"] == ["ALL"]
    assert security["seccompProfile"]["type"] == "RuntimeDefault"
    # kopf writes its self-signed certificate to a temporary file.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert "readinessProbe" in container
    assert {"cpu", "memory"} <= set(container["resources"]["limits"])
    budget = find(docs, "PodDisruptionBudget", "muster-controller")
    assert budget["spec"]["minAvailable"] == 1
    labels = spec["selector"]["matchLabels"]
    assert budget["spec"]["selector"]["matchLabels"] == labels


def test_the_controller_accepts_connections_only_on_its_health_webhook_and_metrics_ports() -> None:
    docs = render("deploy")
    policy = find(docs, "NetworkPolicy", "muster-controller")
    deployment = find(docs, "Deployment", "muster-controller")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert (
        policy["spec"]["podSelector"]["matchLabels"]
        == deployment["spec"]["selector"]["matchLabels"]
    )
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert "from" not in rule
    assert {p["port"] for p in rule["ports"]} == {"health", "webhooks", "metrics"}
    assert {p["name"] for p in container["ports"]} == {"health", "webhooks", "metrics"}
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    args = container["args"]
    assert f"--metrics-address=:{ports['metrics']}" in args
    assert f"--health-address=:{ports['health']}" in args


def test_the_webhooks_serve_the_cert_manager_certificate() -> None:
    docs = render(WEBHOOKS)
    certificate = find(docs, "Certificate", "muster-controller-webhook")
    service = find(docs, "Service", "muster-controller")
    deployment = find(docs, "Deployment", "muster-controller")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert f"{service['metadata']['name']}.muster-system.svc" in certificate["spec"]["dnsNames"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    (volume,) = [n for n, s in secrets.items() if s == certificate["spec"]["secretName"]]
    assert f"--webhook-cert-dir={mounts[volume]}" in container["args"]
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        configuration = find(docs, kind, "muster-controller")
        injected = configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
        assert injected == f"muster-system/{certificate['metadata']['name']}"
        for webhook in configuration["webhooks"]:
            assert webhook["clientConfig"]["service"]["name"] == service["metadata"]["name"]


def test_the_dockerfile_user_and_version_match_the_deployments() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    for name in ("muster-scheduler", "muster-controller"):
        deployment = find(render("deploy"), "Deployment", name)
        uid = deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
        assert re.search(rf"^USER {uid}:", dockerfile, re.MULTILINE), name
    assert re.search(rf"^ARG VERSION={re.escape(__version__)}$", dockerfile, re.MULTILINE)


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


def test_the_servicemonitor_overlay_brings_the_alerts_and_the_dashboard() -> None:
    docs = render("deploy/overlays/servicemonitor")
    rule = find(docs, "PrometheusRule", "muster")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["namespace"] == "muster-system"
    dashboards = [
        d
        for d in docs
        if d["kind"] == "ConfigMap" and d["metadata"].get("labels", {}).get("grafana_dashboard")
    ]
    (dashboard,) = dashboards
    (text,) = dashboard["data"].values()
    panels = json.loads(text)["panels"]
    queried = " ".join(t["expr"] for p in panels for t in p.get("targets", []))
    for metric in ("muster_placeable_gangs", "muster_is_leader", "muster_watch_broken_seconds"):
        assert metric in queried, f"the dashboard shows no {metric}"


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
