"""SimServer: wires store, API, kubelet and HTTP together; runs in a loop or a background thread."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml
from aiohttp import web

from muster_sim.access.authn import Authenticator, load_token_file
from muster_sim.access.kubeconfig import write_kubeconfig
from muster_sim.access.rbac import RbacAuthorizer, bootstrap_policy
from muster_sim.access.tls import ClientCert, ServingCert, make_ca
from muster_sim.access.tokens import ServiceAccountTokens
from muster_sim.apiserver.resources import CRDS, Registry, native_kinds
from muster_sim.apiserver.store import Store, WatchWindow
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.cluster.autoscaler.config import AutoscalerConfig, provisioning_request_crd
from muster_sim.cluster.autoscaler.scaler import CRD_NAME, Autoscaler
from muster_sim.cluster.devices import DevicePublisher
from muster_sim.cluster.disruption import DisruptionController
from muster_sim.cluster.kubelet import Kubelet
from muster_sim.cluster.nodes import NodePool, node_objects
from muster_sim.cluster.podgroup_protection import PodGroupProtection
from muster_sim.cluster.provisioner import Provisioner
from muster_sim.cluster.resource_claims import ResourceClaimController
from muster_sim.errors import ApiError
from muster_sim.http.app import HttpApi
from muster_sim.http.audit import AuditLog
from muster_sim.http.faults import FaultConfig, FaultInjector
from muster_sim.timestamps import now_rfc3339

log = logging.getLogger("muster.sim")
T = TypeVar("T")


@dataclass
class SimConfig:
    """Everything `muster sim` can be told on its command line."""

    host: str = "127.0.0.1"
    port: int = 0
    # the admin token (user muster-sim-admin, group system:masters); None: sim makes one
    token: str | None = None
    # plain HTTP, no authentication, no authorization: only when asked for
    insecure: bool = False
    # kube-apiserver's --token-auth-file: token,user,uid,"group1,group2"
    token_auth_file: Path | None = None
    kubeconfig_out: Path | None = None
    nodes: int = 0
    node_cpu: str = "32"
    node_memory: str = "128Gi"
    node_gpus: int = 0
    # GPUs published through DRA on each --nodes node, their models node by node
    dra_gpus: int = 0
    dra_models: tuple[str, ...] = ("a100",)
    node_pools: list[NodePool] = field(default_factory=list)
    crds_dir: Path | None = None
    pod_start_delay: float = 0.1
    terminate_delay: float = 0.1
    history_size: int = 50_000
    # how far back each resource's watch cache reaches (older: 410 Expired)
    watch_window: WatchWindow = field(default_factory=WatchWindow)
    # real servers send a bookmark about once a minute; sooner makes clients resume cheaper
    bookmark_interval: float = 1.0
    # after a restart (POST /sim/restart), as kube-apiserver after its own: this many seconds
    # of 403 to users outside system:masters (its RBAC authorizer syncing), and of 404 on
    # resources served from CRDs (its CRDs not served yet); /readyz answers 500 meanwhile
    restart_warmup: float = 3.0
    restart_crd_delay: float = 4.0
    faults: FaultConfig = field(default_factory=FaultConfig)
    work_dir: Path | None = None
    # the PV controller and an external provisioner for every StorageClass (--no-provisioner:
    # claims stay Pending unless a client binds them, as on a cluster without provisioners)
    provisioner: bool = True
    # kube-controller-manager's resourceclaim controller: claims from templates, reservations
    # kept to live pods, deallocation (--no-resource-claim-controller: claims from templates
    # are never made, as on a server without kube-controller-manager)
    resource_claim_controller: bool = True
    # kube-controller-manager's disruption controller, which computes PodDisruptionBudget
    # status (--no-disruption-controller: budgets stay unprocessed, and the Eviction API
    # refuses every pod they cover, as on a server without the controller)
    disruption_controller: bool = True
    # Kubernetes' own gang API at this version ("v1alpha2", "v1beta1"; "" serves none), and
    # the podgroup-protection controller that lets its deleted PodGroups go (--native-api)
    native_api: str = ""
    # every write as an audit.k8s.io/v1 Event: the newest `audit_capacity` in memory (GET
    # /sim/audit), all of them appended to `audit_log_path` when set (--audit-log)
    audit_log_path: Path | None = None
    audit_capacity: int = 100_000
    # a stand-in cluster autoscaler and its node groups (--autoscaler-node-groups)
    autoscaler: AutoscalerConfig | None = None

    def pools(self) -> list[NodePool]:
        """The configured pools, with `--nodes` as a pool named `sim-node` in front."""
        pools = list(self.node_pools)
        if self.nodes > 0:
            pools.insert(
                0,
                NodePool(
                    "sim-node",
                    self.nodes,
                    self.node_cpu,
                    self.node_memory,
                    self.node_gpus,
                    dra_gpus=self.dra_gpus,
                    dra_models=self.dra_models,
                ),
            )
        return pools


class SimServer:
    """The emulated API server with its simulated nodes, serving HTTP(S) on one port."""

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.store = Store(self.config.history_size, self.config.watch_window)
        self.registry = Registry()
        if self.config.native_api:
            for kind in native_kinds(self.config.native_api):
                self.registry.add(kind)
        self.api: ApiServer | None = None
        self.faults = FaultInjector(self.config.faults)
        self.kubelet: Kubelet | None = None
        self.provisioner: Provisioner | None = None
        self.claim_controller: ResourceClaimController | None = None
        self.devices: DevicePublisher | None = None
        self.autoscaler: Autoscaler | None = None
        self.port = 0
        self.url = ""
        self.kubeconfig_path: Path | None = None
        self.cert: ServingCert | None = None
        self.admin_token: str | None = None
        self.tokens: ServiceAccountTokens | None = None
        self.audit: AuditLog | None = None
        self._audit_flusher: asyncio.TimerHandle | None = None
        self._http: HttpApi | None = None
        self._ssl_context: ssl.SSLContext | None = None
        self._runner: web.AppRunner | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Create nodes and CRDs, bind the port, start serving and write the kubeconfig."""
        config = self.config
        if config.insecure and (config.token or config.token_auth_file):
            raise ValueError(
                "SimConfig(insecure=True) serves without authentication: token and "
                "token_auth_file would be ignored; drop them or drop insecure"
            )
        self._loop = asyncio.get_running_loop()
        self.audit = AuditLog(config.audit_capacity, config.audit_log_path)
        self.store.on_write = self.audit.observe
        if config.audit_log_path is not None:
            self._flush_audit()
        api = self.api = ApiServer(self.store, self.registry)
        self.kubelet = Kubelet(api, config.pod_start_delay, config.terminate_delay)
        self.kubelet.attach(self._loop)
        if config.provisioner:
            self.provisioner = Provisioner(api)
            self.provisioner.attach(self._loop)
        if config.disruption_controller:
            DisruptionController(self.store)
        if config.native_api:
            PodGroupProtection(api).attach(self._loop)
        if config.resource_claim_controller:
            self.claim_controller = ResourceClaimController(api)
            self.claim_controller.attach(self._loop)
        self._create_nodes(api)
        self.devices = DevicePublisher(api)
        self.devices.attach(self._loop)
        if config.crds_dir is not None:
            self._load_crds(api, config.crds_dir)
        if config.autoscaler is not None:
            self._start_autoscaler(api, config.autoscaler)
        work_dir = config.work_dir
        if work_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="muster-sim-")
            work_dir = Path(self._tmp.name)
        static_tokens = load_token_file(config.token_auth_file) if config.token_auth_file else {}
        sock = socket.socket(socket.AF_INET6 if ":" in config.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((config.host, config.port))
        self.port = sock.getsockname()[1]
        self.tokens = ServiceAccountTokens(self.store)
        authenticator: Authenticator | None = None
        authorizer: RbacAuthorizer | None = None
        ssl_context = None
        if not config.insecure:
            self.cert = make_ca(work_dir, config.host)
            ssl_context = self.cert.server_context()
            self.admin_token, admin = Authenticator.admin_token(config.token)
            authenticator = Authenticator(
                {**static_tokens, self.admin_token: admin}, [self.tokens.authenticate]
            )
            authorizer = RbacAuthorizer(self.store)
        self._create_bootstrap_policy()
        scheme = "http" if config.insecure else "https"
        host = f"[{config.host}]" if ":" in config.host else config.host
        self.url = f"{scheme}://{host}:{self.port}"
        http = HttpApi(
            api,
            self.faults,
            authenticator=authenticator,
            authorizer=authorizer,
            tokens=self.tokens,
            bookmark_interval=config.bookmark_interval,
            server_address=f"{config.host}:{self.port}",
            audit_log=self.audit,
        )
        http.admin.on_restart = self.restart
        self._http, self._ssl_context = http, ssl_context
        await self._listen(sock)
        self.kubeconfig_path = config.kubeconfig_out or work_dir / "sim.kubeconfig"
        write_kubeconfig(self.kubeconfig_path, self.url, self.admin_token, self.ca_pem)
        log.info(
            "muster sim serving %s (%d nodes), kubeconfig %s",
            self.url,
            self.store.count("nodes"),
            self.kubeconfig_path,
        )

    @property
    def ca_pem(self) -> bytes | None:
        """sim's CA certificate (PEM), which clients verify the server against; None if insecure."""
        return self.cert.ca_path.read_bytes() if self.cert is not None else None

    def write_kubeconfig(self, path: Path, token: str | None) -> Path:
        """Write a kubeconfig for this server that authenticates with `token`."""
        write_kubeconfig(path, self.url, token, self.ca_pem)
        return path

    def client_certificate(self, user: str, groups: tuple[str, ...] = ()) -> ClientCert:
        """A client certificate signed by sim's CA, authenticating as `user` in `groups`."""
        if self.cert is None:
            raise RuntimeError("muster sim runs --insecure: it has no CA to sign certificates")
        directory = self.cert.ca_path.parent
        return self.cert.client_cert(directory, user, groups)

    def _create_bootstrap_policy(self) -> None:
        # the default ClusterRoles and bindings; stored directly, as the server's own
        # bootstrap does, since their `system:` names are not DNS names
        for key, obj in bootstrap_policy():
            if self.store.get(key, "", obj["metadata"]["name"]) is None:
                obj["metadata"]["uid"] = str(uuid.uuid4())
                obj["metadata"]["creationTimestamp"] = now_rfc3339()
                self.store.put(key, obj, "ADDED")

    def _create_nodes(self, api: ApiServer) -> None:
        node_kind = api.kind("", "v1", "nodes")
        lease_kind = api.kind("coordination.k8s.io", "v1", "leases")
        for node in node_objects(self.config.pools()):
            created = api.create(node_kind, None, node)
            name = created["metadata"]["name"]
            owner = {
                "apiVersion": "v1",
                "kind": "Node",
                "name": name,
                "uid": created["metadata"]["uid"],
            }
            api.create(
                lease_kind,
                "kube-node-lease",
                {
                    "metadata": {"name": name, "ownerReferences": [owner]},
                    "spec": {
                        "holderIdentity": name,
                        "leaseDurationSeconds": 40,
                        "renewTime": created["metadata"]["creationTimestamp"].replace(
                            "Z", ".000000Z"
                        ),
                    },
                },
            )

    def _start_autoscaler(self, api: ApiServer, config: AutoscalerConfig) -> None:
        # A cluster running cluster-autoscaler has its ProvisioningRequest CRD.
        if self.store.get(CRDS, "", CRD_NAME) is None:
            self._load_crds(api, provisioning_request_crd().parent)
        assert self._loop is not None
        self.autoscaler = Autoscaler(api, config)
        self.autoscaler.attach(self._loop)

    def _load_crds(self, api: ApiServer, directory: Path) -> None:
        kind = api.kind("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
        for path in files:
            for doc in yaml.safe_load_all(path.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    try:
                        api.create(kind, None, doc)
                    except ApiError as error:
                        raise RuntimeError(
                            f"{path}: CRD {doc.get('metadata', {}).get('name')}"
                            f" was refused: {error.message}"
                        ) from None
        log.info("loaded %d CRDs from %s", self.store.count(CRDS), directory)

    async def _listen(self, sock: socket.socket) -> None:
        assert self._http is not None
        self._runner = web.AppRunner(
            self._http.application(), access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.SockSite(self._runner, sock, ssl_context=self._ssl_context)
        await site.start()

    async def restart(self, downtime: float) -> None:
        """An API server restart that keeps etcd: stop serving (every connection and watch
        cut, connections refused) for `downtime` seconds, then serve the same store again.

        As a restarted kube-apiserver's watch cache starts from a fresh list, every watch
        resuming from before the restart gets 410 Expired; resourceVersions go on from
        before. As it warms up, users outside system:masters are answered 403 for
        `restart_warmup` seconds, resources served from CRDs 404 for `restart_crd_delay`
        seconds, and /readyz 500 with its check list until both are over. (The process
        itself goes on: sim's CA, tokens and kubelet timers are those of before.)
        """
        self.store.close_watchers()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.store.start_watch_cache()
        await asyncio.sleep(downtime)
        config = self.config
        sock = socket.socket(socket.AF_INET6 if ":" in config.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((config.host, self.port))
        assert self._http is not None
        self._http.warm_up(config.restart_warmup, config.restart_crd_delay)
        await self._listen(sock)
        log.info("muster sim restarted after %.1fs down, store kept", downtime)

    def _flush_audit(self) -> None:
        # the file is written through a buffer: push it out twice a second, as kube's
        # batching audit backend does, so that a reader tailing it lags little
        if self.audit is not None and self._loop is not None:
            self.audit.flush()
            self._audit_flusher = self._loop.call_later(0.5, self._flush_audit)

    async def stop(self) -> None:
        """Close watches, stop serving, cancel kubelet timers, close the audit file."""
        self.store.close_watchers()
        if self._audit_flusher is not None:
            self._audit_flusher.cancel()
            self._audit_flusher = None
        if self.kubelet is not None:
            self.kubelet.stop()
        if self.provisioner is not None:
            self.provisioner.stop()
        if self.claim_controller is not None:
            self.claim_controller.stop()
        if self.devices is not None:
            self.devices.stop()
        if self.autoscaler is not None:
            self.autoscaler.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.audit is not None:
            self.audit.close()
        if self._tmp is not None:
            # the kubeconfigs embed the CA: nothing outside needs the CA's key once sim stops
            self._tmp.cleanup()
            self._tmp = None

    def call(self, func: Callable[[], T]) -> T:
        """Run `func` on the server's loop thread and return its result (for tests, the demo)."""
        loop = self._loop
        assert loop is not None, "the server is not running"

        async def run() -> T:
            return func()

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=30)

    @contextmanager
    def running(self) -> Iterator[SimServer]:
        """Serve on a background thread for the duration of the `with` block."""
        loop = asyncio.new_event_loop()
        started = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as error:  # handed to the caller's thread below
                failure.append(error)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        thread = threading.Thread(target=serve, name="muster-sim", daemon=True)
        thread.start()
        started.wait()
        if failure:
            thread.join()
            raise failure[0]
        try:
            yield self
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)

    def api_server(self) -> ApiServer:
        """The running ApiServer (only valid after start)."""
        assert self.api is not None
        return self.api

    def __repr__(self) -> str:
        return f"SimServer(url={self.url!r})"
