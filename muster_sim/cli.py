"""`muster sim`: command-line flags to SimConfig, then serve until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from muster_sim.access.authn import TokenFileError
from muster_sim.access.tls import TlsError
from muster_sim.apiserver.store import WatchWindow
from muster_sim.cluster.autoscaler import config as autoscaler
from muster_sim.cluster.autoscaler.node_groups import NodeGroupError
from muster_sim.cluster.nodes import PoolError, load_pools
from muster_sim.http.faults import ErrorRule, FaultConfig, LatencyRule
from muster_sim.server import SimConfig, SimServer
from muster_sim.validation.native_scheduling import VERSIONS as NATIVE_VERSIONS


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `sim` subcommand."""
    parser = subparsers.add_parser(
        "sim",
        help="run an emulated Kubernetes API server with simulated nodes",
        description="An emulated Kubernetes API server with simulated nodes and kubelets.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=6443, help="port (0 picks a free one)")
    parser.add_argument(
        "--kubeconfig-out",
        type=Path,
        default=Path("sim.kubeconfig"),
        help="where to write a kubeconfig for clients (sim's CA and the admin token)",
    )
    parser.add_argument(
        "--token",
        help="the admin bearer token (user muster-sim-admin, group system:masters); "
        "default: a fresh random one, written to --kubeconfig-out",
    )
    parser.add_argument(
        "--token-auth-file",
        type=Path,
        help='more bearer tokens, kube-apiserver\'s CSV format: token,user,uid,"group1,group2"',
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="serve plain HTTP with no authentication and no authorization "
        "(default: HTTPS with sim's own CA, authentication and RBAC, as kube-apiserver)",
    )
    parser.add_argument("--nodes", type=int, default=0, help="number of simulated nodes")
    parser.add_argument("--node-cpu", default="32", help="cpu of each --nodes node")
    parser.add_argument("--node-memory", default="128Gi", help="memory of each --nodes node")
    parser.add_argument("--node-gpus", type=int, default=0, help="nvidia.com/gpu per node")
    parser.add_argument(
        "--dra-gpus",
        type=_count,
        default=0,
        help="simulated GPUs per --nodes node, published through ResourceSlices by the DRA "
        "driver gpu.sim.muster.dev, with the DeviceClass gpu.sim.muster.dev (default 0: none)",
    )
    parser.add_argument(
        "--dra-gpu-models",
        type=_models,
        default=("a100",),
        help="comma-separated GPU models given to --nodes nodes in turn, as their GPUs' "
        "`model` attribute (default a100)",
    )
    parser.add_argument("--node-pools", type=Path, help="YAML file of node pools")
    parser.add_argument("--crds", type=Path, help="directory of CRD manifests to register")
    parser.add_argument(
        "--pod-start-delay", type=float, default=0.1, help="seconds from binding to Running"
    )
    parser.add_argument(
        "--terminate-delay",
        type=float,
        default=0.1,
        help="longest wait before a gracefully deleted pod goes",
    )
    parser.add_argument(
        "--no-provisioner",
        dest="provisioner",
        action="store_false",
        help="run no PV controller nor volume provisioner: claims stay Pending unless a client "
        "binds them (default: claims are bound and provisioned as StorageClasses say)",
    )
    parser.add_argument(
        "--no-resource-claim-controller",
        dest="resource_claim_controller",
        action="store_false",
        help="run no resourceclaim controller: claims of pods' ResourceClaimTemplates are never "
        "made nor reservations of gone pods dropped (default: as kube-controller-manager does)",
    )
    parser.add_argument(
        "--no-disruption-controller",
        dest="disruption_controller",
        action="store_false",
        help="compute no PodDisruptionBudget status, as a server without "
        "kube-controller-manager: the Eviction API then refuses every pod a budget covers "
        "(default: budgets are counted as the disruption controller counts them)",
    )
    parser.add_argument(
        "--native-api",
        choices=("none", *NATIVE_VERSIONS),
        default="none",
        help="serve Kubernetes' own gang API (scheduling.k8s.io Workloads and PodGroups, "
        "pods' spec.schedulingGroup) at this version, as a 1.36 (v1alpha2) or 1.37 (v1beta1) "
        "server with its feature gates on; a real server serves at most one (default none, "
        "as a server with the GenericWorkload gate off)",
    )
    parser.add_argument(
        "--history-size",
        type=int,
        default=50_000,
        help="etcd revisions kept for resourceVersionMatch=Exact lists and continue tokens",
    )
    parser.add_argument(
        "--watch-window",
        type=WatchWindow.parse,
        default=WatchWindow(),
        help="history each resource's watch cache keeps for resuming watches (older: 410 "
        "Expired): N events, or Ns seconds sized as kube-apiserver does (every event of the "
        "last N seconds, 100 to 102400 events); default 75s, kube-apiserver's",
    )
    parser.add_argument(
        "--bookmark-interval", type=float, default=1.0, help="seconds between watch bookmarks"
    )
    parser.add_argument(
        "--restart-warmup",
        type=_seconds,
        default=3.0,
        help="after POST /sim/restart, seconds during which users outside system:masters are "
        "answered 403, as kube-apiserver's RBAC authorizer until it has synced (default 3)",
    )
    parser.add_argument(
        "--restart-crd-delay",
        type=_seconds,
        default=4.0,
        help="after POST /sim/restart, seconds during which resources served from CRDs answer "
        "404, as before kube-apiserver serves its CRDs again (default 4)",
    )
    parser.add_argument(
        "--fault-latency-ms",
        type=float,
        default=0.0,
        help="delay every request by this many milliseconds",
    )
    parser.add_argument(
        "--fault-error-rate",
        type=float,
        default=0.0,
        help="fraction of requests answered with --fault-error-code",
    )
    parser.add_argument("--fault-error-code", type=int, default=500, help="500, 503, 504 or 429")
    parser.add_argument(
        "--fault-verbs", default="", help="comma-separated verbs the error/latency faults apply to"
    )
    parser.add_argument(
        "--fault-resources",
        default="",
        help="comma-separated resources (pods, pods/binding) they apply to",
    )
    parser.add_argument(
        "--fault-watch-drop",
        type=float,
        default=0.0,
        help="close every watch after this many seconds",
    )
    parser.add_argument(
        "--audit-log",
        type=Path,
        help="append every write as an audit.k8s.io/v1 Event, one JSON line each (as "
        "kube-apiserver's --audit-log-path); GET /sim/audit serves them from memory regardless",
    )
    parser.add_argument(
        "--audit-capacity",
        type=int,
        default=100_000,
        help="audit records kept in memory for GET /sim/audit (older ones: 410)",
    )
    autoscaler.add_arguments(parser)
    parser.add_argument("--log-level", default="INFO")
    parser.set_defaults(func=run)


class ConfigError(ValueError):
    """Flags that contradict each other."""


def config_from_args(args: argparse.Namespace) -> SimConfig:
    """SimConfig from parsed flags; raises PoolError for a bad pool file, NodeGroupError for a
    bad node-group file, ConfigError for flags."""
    verbs = [v for v in args.fault_verbs.split(",") if v]
    resources = [r for r in args.fault_resources.split(",") if r]
    faults = FaultConfig(watch_drop_seconds=args.fault_watch_drop)
    if args.fault_latency_ms > 0:
        faults.latency.append(
            LatencyRule(ms=args.fault_latency_ms, verbs=verbs, resources=resources)
        )
    if args.insecure and (args.token or args.token_auth_file):
        raise ConfigError(
            "--insecure serves without authentication: --token and --token-auth-file would be "
            "ignored; drop them or drop --insecure"
        )
    if args.audit_capacity < 1:
        raise ConfigError(
            f"--audit-capacity {args.audit_capacity}: sim keeps at least one audit record in "
            "memory; give 1 or more (the --audit-log file keeps every record regardless)"
        )
    if args.fault_error_rate > 0:
        faults.errors.append(
            ErrorRule(
                rate=args.fault_error_rate,
                code=args.fault_error_code,
                verbs=verbs,
                resources=resources,
            )
        )
    return SimConfig(
        host=args.host,
        port=args.port,
        token=args.token,
        insecure=args.insecure,
        token_auth_file=args.token_auth_file,
        kubeconfig_out=args.kubeconfig_out,
        nodes=args.nodes,
        node_cpu=args.node_cpu,
        node_memory=args.node_memory,
        node_gpus=args.node_gpus,
        dra_gpus=args.dra_gpus,
        dra_models=args.dra_gpu_models,
        node_pools=load_pools(args.node_pools) if args.node_pools else [],
        crds_dir=args.crds,
        pod_start_delay=args.pod_start_delay,
        terminate_delay=args.terminate_delay,
        history_size=args.history_size,
        watch_window=args.watch_window,
        bookmark_interval=args.bookmark_interval,
        restart_warmup=args.restart_warmup,
        restart_crd_delay=args.restart_crd_delay,
        faults=faults,
        provisioner=args.provisioner,
        resource_claim_controller=args.resource_claim_controller,
        disruption_controller=args.disruption_controller,
        native_api="" if args.native_api == "none" else args.native_api,
        audit_log_path=args.audit_log,
        audit_capacity=args.audit_capacity,
        autoscaler=autoscaler.config_from_args(args),
    )


def _count(text: str) -> int:
    """A count of 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count (0 or more)")
    return value


def _models(text: str) -> tuple[str, ...]:
    """GPU models, comma-separated, at least one."""
    models = tuple(m.strip() for m in text.split(",") if m.strip())
    if not models:
        raise argparse.ArgumentTypeError(f"{text!r} names no GPU model")
    return models


def _seconds(text: str) -> float:
    """Seconds from 0 to 60, for the restart's warm-up flags."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 60:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 60")
    return value


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM; exit 0 on a clean stop, 2 on bad input."""
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        config = config_from_args(args)
    except (PoolError, ConfigError, NodeGroupError, OSError) as error:
        print(f"muster sim: {error}", file=sys.stderr)
        return 2
    return asyncio.run(_serve(config))


async def _serve(config: SimConfig) -> int:
    server = SimServer(config)
    try:
        await server.start()
    except (TlsError, TokenFileError, OSError, RuntimeError) as error:
        print(f"muster sim: {error}", file=sys.stderr)
        await server.stop()
        return 2
    print(f"muster sim: serving {server.url}; kubeconfig at {server.kubeconfig_path}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()
    return 0
