"""`muster scheduler` and `muster controller` in containers of the image, as their pods run them.

Each container gets what the kubelet gives the Deployment's pod in deploy/base: the manifest's
args, env and securityContext, its volumes, the in-cluster configuration (KUBERNETES_SERVICE_HOST
and _PORT, and a ServiceAccount token with ca.crt and namespace at
/var/run/secrets/kubernetes.io/serviceaccount/). The API server is a `muster sim` on the host,
strict as kube-apiserver (TLS, authentication, RBAC), with deploy/'s ServiceAccounts and RBAC
applied, and the tokens come from its TokenRequest API.

What differs from a cluster: the containers share the host's network (sim listens on loopback),
so the ports of deploy/ (both processes listen on 8080) become free host ports, in the args and
for the probes alike.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.e2e.harness import (
    Cluster,
    Sim,
    apply_manifest,
    free_port,
    http_get,
    make_gang,
    make_pod,
    wait_for,
)
from tests.image.engine import (
    Engine,
    PodContainer,
    container_logs,
    remove_containers,
    write_service_account,
)

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "base"
NAMESPACE = "muster-system"
WORKLOADS = "image-test"
GROUP = "scheduling.volcano.sh"
VERSION = "v1beta1"
GROUP_NAME = "scheduling.k8s.io/group-name"
Obj = dict[str, Any]


def manifests(component: str, file: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((DEPLOY / component / file).read_text()) if d]


@dataclass
class Running:
    """A container started from a deploy/ Deployment, and where its probes answer."""

    name: str
    spec: PodContainer
    engine: Engine

    def probe_url(self, probe: Obj) -> tuple[str, int, str | None]:
        """(kind, host port, path) of a probe, its named or numbered port resolved."""
        kind = "httpGet" if "httpGet" in probe else "tcpSocket"
        port = probe[kind]["port"]
        if isinstance(port, str):
            (port,) = (
                p["containerPort"] for p in self.spec.container["ports"] if p["name"] == port
            )
        return kind, self.spec.ports[int(port)], probe[kind].get("path")

    def probe_passes(self, probe: Obj) -> bool:
        """What the kubelet counts as success: HTTP 200-399, or a TCP connection accepted."""
        kind, port, path = self.probe_url(probe)
        if kind == "httpGet":
            status, _ = http_get(f"http://127.0.0.1:{port}{path}")
            return 200 <= status < 400
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return True
        except OSError:
            return False

    def alive(self) -> bool:
        result = self.engine.run("inspect", "--format={{.State.Running}}", self.name)
        return result.stdout.strip() == "true"

    def logs(self) -> str:
        return container_logs(self.engine, self.name)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    """A strict `muster sim` on the host, with deploy/'s namespace and CRDs."""
    started = Sim.start(tmp_path_factory.mktemp("sim"), nodes=4, node_cpu="8", node_memory="32Gi")
    try:
        yield started
    finally:
        started.process.stop()


@pytest.fixture(scope="module")
def cluster(sim: Sim) -> Iterator[Cluster]:
    admin = Cluster(sim.kubeconfig, sim)
    admin.ensure_namespace(NAMESPACE)
    admin.ensure_namespace(WORKLOADS)
    # kopf's peering CRD ships with the controller (deploy/base/controller/peering.yaml)
    extensions = client.ApiextensionsV1Api(admin.api)
    for doc in manifests("controller", "peering.yaml"):
        extensions.create_custom_resource_definition(doc)
    try:
        yield admin
    finally:
        admin.close()


def service_account_files(cluster: Cluster, component: str, directory: Path) -> Path:
    """deploy/'s ServiceAccount and RBAC of `component` applied; its token (TokenRequest)."""
    account = ""
    for file in ("serviceaccount.yaml", "rbac.yaml"):
        for doc in manifests(component, file):
            apply_manifest(cluster.api, doc)
            if doc["kind"] == "ServiceAccount":
                account = doc["metadata"]["name"]
    answer = cluster.core.create_namespaced_service_account_token(
        account,
        NAMESPACE,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    kubeconfig = yaml.safe_load(cluster.kubeconfig.read_text())
    ca_pem = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"])
    return write_service_account(directory, answer.status.token, ca_pem.decode(), NAMESPACE, 65532)


def start(
    engine: Engine, image: str, sim: Sim, cluster: Cluster, component: str, work: Path
) -> Running:
    """The Deployment of `component` as one container, on the host's network."""
    deployment = manifests(component, "deployment.yaml")[0]
    pod_spec = deployment["spec"]["template"]["spec"]
    (container,) = pod_spec["containers"]
    config_dirs = {}
    for volume in pod_spec.get("volumes", []):
        if "configMap" in volume:
            name = volume["configMap"]["name"]
            (config_map,) = (
                d for d in manifests(component, "configmap.yaml") if d["metadata"]["name"] == name
            )
            directory = work / f"configmap-{name}"
            directory.mkdir()
            for key, text in config_map["data"].items():
                (directory / key).write_text(text)
                os.chmod(directory / key, 0o644)
            config_dirs[name] = directory
    api_port = int(sim.url.rsplit(":", 1)[1])
    spec = PodContainer(
        pod_spec=pod_spec,
        container=container,
        pod_name=f"{deployment['metadata']['name']}-{uuid.uuid4().hex[:5]}",
        namespace=NAMESPACE,
        config_dirs=config_dirs,
        service_account_dir=service_account_files(cluster, component, work / f"sa-{component}"),
        api_host="127.0.0.1",
        api_port=api_port,
        ports={p["containerPort"]: free_port() for p in container.get("ports", [])},
    )
    name = f"muster-image-test-{os.getpid()}-{component}"
    engine.run("rm", "--force", name)
    result = engine.run(*spec.run_flags(engine, name, image))
    assert result.returncode == 0, f"{component}: {result.stderr}"
    return Running(name, spec, engine)


@pytest.fixture(scope="module")
def pods(
    engine: Engine, image: str, sim: Sim, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Running]]:
    """The scheduler's and the controller's containers, both Ready."""
    work = tmp_path_factory.mktemp("pods")
    running: dict[str, Running] = {}
    try:
        for component in ("controller", "scheduler"):
            running[component] = start(engine, image, sim, cluster, component, work)
        for pod in running.values():
            readiness = pod.spec.container["readinessProbe"]

            def ready(pod: Running = pod, readiness: Obj = readiness) -> bool:
                if not pod.alive():
                    raise AssertionError(f"{pod.name} exited:\n{pod.logs()}")
                return pod.probe_passes(readiness)

            wait_for(ready, 90, 0.2, lambda pod=pod: f"{pod.name} Ready\n{pod.logs()}")
        yield running
    finally:
        remove_containers(engine, [pod.name for pod in running.values()])


@pytest.mark.parametrize("component", ["scheduler", "controller"])
@pytest.mark.parametrize("probe", ["livenessProbe", "readinessProbe"])
def test_deploy_probes_pass_on_the_container_ports(
    pods: dict[str, Running], component: str, probe: str
) -> None:
    pod = pods[component]
    definition = pod.spec.container[probe]
    wait_for(
        lambda: pod.probe_passes(definition),
        30,
        0.2,
        lambda: f"{probe} of {pod.name}\n{pod.logs()}",
    )


def test_scheduler_answers_healthz_and_readyz(pods: dict[str, Running]) -> None:
    pod = pods["scheduler"]
    port = pod.spec.ports[8080]
    for path in ("/healthz", "/readyz"):
        status, body = http_get(f"http://127.0.0.1:{port}{path}")
        assert status == 200, f"{path}: {status} {body}\n{pod.logs()}"


def test_controller_answers_healthz(pods: dict[str, Running]) -> None:
    pod = pods["controller"]
    status, body = http_get(f"http://127.0.0.1:{pod.spec.ports[8080]}/healthz")
    assert status == 200, f"{status} {body}\n{pod.logs()}"


def test_scheduler_in_a_container_places_a_gang(pods: dict[str, Running], cluster: Cluster) -> None:
    podgroup, members = make_gang("trainer", 3, cpu="2")
    cluster.submit(WORKLOADS, podgroup, members)
    names = [m["metadata"]["name"] for m in members]

    def placed() -> bool:
        placements = cluster.placements(WORKLOADS)
        return all(placements.get(name) for name in names)

    wait_for(
        placed,
        60,
        0.2,
        lambda: f"gang placed\n{cluster.describe(WORKLOADS)}\n{pods['scheduler'].logs()}",
    )


def test_controller_in_a_container_gives_a_bare_pod_its_podgroup(
    pods: dict[str, Running], cluster: Cluster
) -> None:
    cluster.create_pod(WORKLOADS, make_pod("loner", cpu="1"))

    def group_of_loner() -> str | None:
        pod = cluster.core.read_namespaced_pod("loner", WORKLOADS, _preload_content=False)
        annotations = json.loads(pod.data)["metadata"].get("annotations") or {}
        return annotations.get(GROUP_NAME)

    group = wait_for(
        group_of_loner, 60, 0.2, lambda: f"loner annotated\n{pods['controller'].logs()}"
    )
    podgroup = cluster.podgroup(WORKLOADS, group)
    assert podgroup["spec"]["minMember"] == 1
    # and the scheduler places it, as one of its own gangs
    wait_for(
        lambda: cluster.placements(WORKLOADS).get("loner"),
        60,
        0.2,
        lambda: f"loner placed\n{cluster.describe(WORKLOADS)}\n{pods['scheduler'].logs()}",
    )


def test_scheduler_leads_through_the_lease_of_deploy(
    pods: dict[str, Running], cluster: Cluster
) -> None:
    # --lock-namespace/--lock-name of deploy/; the identity starts with the pod's host name
    holder = wait_for(lambda: cluster.lease_holder(NAMESPACE), 30, 0.2, "a lease holder")
    scheduler = pods["scheduler"]
    host = scheduler.spec.pod_name if scheduler.engine.is_podman else socket.gethostname()
    assert holder.startswith(host + "_")
