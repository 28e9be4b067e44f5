"""SimServer: wires store, API, kubelet and HTTP together; runs in a loop or a background thread."""

from __future__ import annotations

import asyncio
import logging
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml
from aiohttp import web

from scheduler.sim.apiserver import CRDS, ApiServer
from scheduler.sim.errors import ApiError
from scheduler.sim.faults import FaultConfig, FaultInjector
from scheduler.sim.http import HttpApi
from scheduler.sim.kubeconfig import write_kubeconfig
from scheduler.sim.kubelet import Kubelet
from scheduler.sim.nodes import NodePool, node_objects
from scheduler.sim.resources import Registry
from scheduler.sim.store import Store
from scheduler.sim.tls import ServingCert, self_signed

log = logging.getLogger("muster.sim")
T = TypeVar("T")


@dataclass
class SimConfig:
    """Everything `muster sim` can be told on its command line."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    tls: bool = False
    kubeconfig_out: Path | None = None
    nodes: int = 0
    node_cpu: str = "32"
    node_memory: str = "128Gi"
    node_gpus: int = 0
    node_pools: list[NodePool] = field(default_factory=list)
    crds_dir: Path | None = None
    pod_start_delay: float = 0.1
    terminate_delay: float = 0.1
    history_size: int = 50_000
    # real servers send a bookmark about once a minute; sooner makes clients resume cheaper
    bookmark_interval: float = 1.0
    faults: FaultConfig = field(default_factory=FaultConfig)
    work_dir: Path | None = None

    def pools(self) -> list[NodePool]:
        """The configured pools, with `--nodes` as a pool named `sim-node` in front."""
        pools = list(self.node_pools)
        if self.nodes > 0:
            pools.insert(
                0, NodePool("sim-node", self.nodes, self.node_cpu, self.node_memory, self.node_gpus)
            )
        return pools


class SimServer:
    """The emulated API server with its simulated nodes, serving HTTP(S) on one port."""

    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.store = Store(self.config.history_size)
        self.registry = Registry()
        self.api: ApiServer | None = None
        self.faults = FaultInjector(self.config.faults)
        self.kubelet: Kubelet | None = None
        self.port = 0
        self.url = ""
        self.kubeconfig_path: Path | None = None
        self.cert: ServingCert | None = None
        self._runner: web.AppRunner | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Create nodes and CRDs, bind the port, start serving and write the kubeconfig."""
        config = self.config
        self._loop = asyncio.get_running_loop()
        api = self.api = ApiServer(self.store, self.registry)
        self.kubelet = Kubelet(api, config.pod_start_delay, config.terminate_delay)
        self.kubelet.attach(self._loop)
        self._create_nodes(api)
        if config.crds_dir is not None:
            self._load_crds(api, config.crds_dir)
        work_dir = config.work_dir
        if work_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="muster-sim-")
            work_dir = Path(self._tmp.name)
        sock = socket.socket(socket.AF_INET6 if ":" in config.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((config.host, config.port))
        self.port = sock.getsockname()[1]
        ssl_context = None
        if config.tls:
            self.cert = self_signed(work_dir, config.host)
            ssl_context = self.cert.server_context()
        scheme = "https" if config.tls else "http"
        host = f"[{config.host}]" if ":" in config.host else config.host
        self.url = f"{scheme}://{host}:{self.port}"
        http = HttpApi(
            api, self.faults, config.token, config.bookmark_interval, f"{config.host}:{self.port}"
        )
        self._runner = web.AppRunner(
            http.application(), access_log=None, handle_signals=False, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.SockSite(self._runner, sock, ssl_context=ssl_context)
        await site.start()
        self.kubeconfig_path = config.kubeconfig_out or work_dir / "sim.kubeconfig"
        ca = self.cert.cert_path.read_bytes() if self.cert is not None else None
        write_kubeconfig(self.kubeconfig_path, self.url, config.token, ca)
        log.info(
            "muster sim serving %s (%d nodes), kubeconfig %s",
            self.url,
            self.store.count("nodes"),
            self.kubeconfig_path,
        )

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

    async def stop(self) -> None:
        """Close watches, stop serving, cancel kubelet timers."""
        self.store.close_watchers()
        if self.kubelet is not None:
            self.kubelet.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tmp is not None and self.config.kubeconfig_out is None:
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
