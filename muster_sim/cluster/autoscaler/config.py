"""The stand-in autoscaler's configuration: its node groups and timings, from `muster sim`'s
--autoscaler-* flags, and the ProvisioningRequest CRD it serves."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from muster_sim.cluster.autoscaler.node_groups import NodeGroup, NodeGroupError, load_node_groups
from muster_sim.crd_files import crds_dir


@dataclass(frozen=True)
class AutoscalerConfig:
    """The stand-in's node groups and timings (seconds)."""

    groups: tuple[NodeGroup, ...]
    node_delay: float = 2.0
    ready_delay: float = 2.0
    booking_time: float = 600.0
    scan_interval: float = 1.0
    initial_backoff: float = 60.0
    max_backoff: float = 600.0
    new_pod_scale_up_delay: float = 0.0


def provisioning_request_crd() -> Path:
    """crds/autoscaler/provisioningrequest.yaml of a checkout, else of the environment."""
    return crds_dir() / "autoscaler" / "provisioningrequest.yaml"


_TIMINGS = (
    ("node_delay", "--autoscaler-node-delay", "seconds from a scale-up to the Node object"),
    ("ready_delay", "--autoscaler-ready-delay", "seconds from the Node object to Ready"),
    (
        "booking_time",
        "--autoscaler-booking-time",
        "seconds a Provisioned request's capacity stays booked (cluster-autoscaler: 600)",
    ),
    (
        "scan_interval",
        "--autoscaler-scan-interval",
        "seconds between scans (cluster-autoscaler: 10)",
    ),
    (
        "initial_backoff",
        "--autoscaler-initial-backoff",
        "seconds before a request found no capacity for is tried again, doubling each time",
    ),
    ("max_backoff", "--autoscaler-max-backoff", "the longest such wait, in seconds"),
    (
        "new_pod_scale_up_delay",
        "--autoscaler-new-pod-scale-up-delay",
        "seconds a pod must exist before it may trigger a scale-up",
    ),
)


def add_arguments(parser: Any) -> None:
    """The `muster sim` flags of the stand-in autoscaler."""
    parser.add_argument(
        "--autoscaler-node-groups",
        type=Path,
        help="run a stand-in cluster autoscaler with the node groups of this YAML file "
        "(a list of {name, minSize, maxSize, template: {cpu, memory, gpus, pods, labels, "
        "taints, draGpus, draModels}}): it answers ProvisioningRequests and scales up for "
        "unschedulable pods as cluster-autoscaler does",
    )
    defaults = AutoscalerConfig(groups=())
    for name, flag, what in _TIMINGS:
        parser.add_argument(
            flag, type=float, default=None, help=f"{what} (default {getattr(defaults, name):g})"
        )


def config_from_args(args: Any) -> AutoscalerConfig | None:
    """The stand-in's config from parsed flags, None without node groups; NodeGroupError for
    a bad file or a timing flag given without node groups (it would be ignored)."""
    given = {
        name: getattr(args, flag[2:].replace("-", "_"))
        for name, flag, _ in _TIMINGS
        if getattr(args, flag[2:].replace("-", "_")) is not None
    }
    if args.autoscaler_node_groups is None:
        if given:
            flags = ", ".join(flag for name, flag, _ in _TIMINGS if name in given)
            raise NodeGroupError(
                f"{flags} tune the stand-in autoscaler, which runs only with "
                "--autoscaler-node-groups; add it or drop them"
            )
        return None
    negative = [flag for name, flag, _ in _TIMINGS if given.get(name, 0) < 0]
    if negative:
        raise NodeGroupError(f"{', '.join(negative)}: seconds cannot be negative")
    if given.get("scan_interval") == 0:
        raise NodeGroupError("--autoscaler-scan-interval must be above 0")
    groups = tuple(load_node_groups(args.autoscaler_node_groups))
    return AutoscalerConfig(groups=groups, **given)
