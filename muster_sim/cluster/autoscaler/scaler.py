"""sim's stand-in cluster autoscaler: node groups that grow as cluster-autoscaler grows them,
for ProvisioningRequests and for unschedulable pods.

Node groups come from a file (`muster sim --autoscaler-node-groups FILE`): each a node
template (capacity, labels, taints) and a minimum and maximum size. The minimum is there
from the start. Every scan (`--autoscaler-scan-interval`, cluster-autoscaler's
`--scan-interval`), as cluster-autoscaler (--enable-provisioning-requests) does:

- **Bookings.** A request Provisioned=True more than the booking time ago
  (`--autoscaler-booking-time`, 10 minutes as cluster-autoscaler's) gets BookingExpired
  (CapacityReservationTimeExpired); one whose pods all run (counted by their
  consume-provisioning-request annotation) gets BookingExpired (CapacityBookingConsumed).
  A request never provisioned 7 days after its creation gets Failed (Expired). Until then,
  what a provisioned request asked for is booked: the simulation below places its pods
  first, so no other request or pod is given that room.
- **One ProvisioningRequest** not yet answered (or Provisioned=False and past its backoff,
  1 minute doubling to 10, `--autoscaler-initial-backoff` and `--autoscaler-max-backoff`)
  gets Accepted and its pods (its PodTemplates times their counts; a missing template fails
  it with FailedToCreatePods) are simulated:
  - `best-effort-atomic-scale-up.autoscaling.x-k8s.io`: the pods that fit on the nodes
    there are (and those on their way) are left out; the others must all fit on new nodes
    of one node group within its maximum, else Provisioned=False (CapacityIsNotFound,
    "Capacity is not found, CA will try to find it later."). Fitting: the group (fewest new
    nodes, then name) grows and the request is Provisioned=True (CapacityIsProvisioned) at
    once, before the nodes exist; all pods fitting already: Provisioned=True
    (CapacityIsFound).
  - `check-capacity.autoscaling.x-k8s.io`: whether every pod fits on the nodes there are
    (Provisioned=True, CapacityIsFound), else Provisioned=False (CapacityIsNotFound), or
    Failed (CapacityIsNotFound) with the parameter `noRetry: "true"`.
  Other classes are left alone, as cluster-autoscaler leaves them.
- **Unschedulable pods** (PodScheduled=False with reason Unschedulable, older than
  `--autoscaler-new-pod-scale-up-delay`), those that carry no consume-provisioning-request
  annotation, that fit nowhere in the simulation: the node group that helps the most of them
  (then fewest nodes, then name) grows by as many nodes as they need, up to its maximum,
  and each helped pod gets a TriggeredScaleUp event. This is pod-by-pod scale-up: a gang
  that needs more nodes than a group can add gets the nodes for part of its pods.
  cluster-autoscaler turns between requests and plain pods from one scan to the next when
  both wait; so does the stand-in.

A node the stand-in adds appears after `--autoscaler-node-delay` seconds, NotReady and
tainted `node.kubernetes.io/not-ready:NoSchedule` as a registering kubelet's node is, and
turns Ready (the taint gone) `--autoscaler-ready-delay` seconds later. The simulation fits
pods by requests (and pod count), nodeSelector, required node affinity and taints; pod
(anti-)affinity, topology spread and host ports are not simulated. Nodes are never removed
(no scale-down).
"""

from __future__ import annotations

import asyncio
import calendar
import logging
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from muster_sim.apiserver.admission_plugins import NOT_READY_TAINT
from muster_sim.apiserver.patch import MERGE_PATCH
from muster_sim.apiserver.resources import NODES, PODS
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.cluster.nodes import NodePool, PoolError, node_object
from muster_sim.cluster.recorder import record_event
from muster_sim.crd_files import crds_dir
from muster_sim.errors import ApiError
from muster_sim.selectors import node_selector_matches
from muster_sim.validation.quantities import quantity

Obj = dict[str, Any]
Amounts = dict[str, Fraction]

log = logging.getLogger("muster.sim.autoscaler")

GROUP_LABEL = "sim.muster.dev/node-group"
REQUESTS = "provisioningrequests.autoscaling.x-k8s.io"
TEMPLATES = "podtemplates"
CRD_NAME = "provisioningrequests.autoscaling.x-k8s.io"
BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
CONSUME_DEPRECATED = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
COMPONENT = "cluster-autoscaler"
# cluster-autoscaler's: a request never provisioned fails a week after its creation.
EXPIRATION = 7 * 24 * 3600.0
# The taints of a node on its way, which cluster-autoscaler's simulation leaves out.
_STARTUP_TAINTS = frozenset({NOT_READY_TAINT, "node.kubernetes.io/unreachable"})


class NodeGroupError(ValueError):
    """A node-group file that cannot be used; the message names the group and the field."""


@dataclass(frozen=True)
class NodeGroup:
    """Nodes made from one template, between `min_size` and `max_size` of them."""

    name: str
    min_size: int
    max_size: int
    template: NodePool

    def node(self, index: int, serial: int) -> Obj:
        """The group's node number `index` (`serial` numbers its address)."""
        obj = node_object(self.template, f"{self.name}-{index:04d}", serial)
        obj["metadata"]["labels"][GROUP_LABEL] = self.name
        return obj


def load_node_groups(path: str | Path) -> list[NodeGroup]:
    """Node groups from YAML: a list, or a mapping with a `nodeGroups` list; each
    `{name, minSize, maxSize, template: {cpu, memory, gpus, pods, labels, taints}}`."""
    data = yaml.safe_load(Path(path).read_text())
    if isinstance(data, dict):
        data = data.get("nodeGroups")
    if not isinstance(data, list) or not data:
        raise NodeGroupError(f"{path}: expected a list of node groups (or `nodeGroups: [...]`)")
    groups: list[NodeGroup] = []
    for index, raw in enumerate(data):
        if not isinstance(raw, dict) or not raw.get("name"):
            raise NodeGroupError(f"{path}: node group #{index} needs a name")
        name = str(raw["name"])
        unknown = sorted(set(raw) - {"name", "minSize", "maxSize", "template"})
        if unknown:
            raise NodeGroupError(
                f"{path}: node group {name!r}: {unknown[0]} is not a field (name, minSize, "
                "maxSize, template)"
            )
        template = raw.get("template") or {}
        if not isinstance(template, dict):
            raise NodeGroupError(f"{path}: node group {name!r}: template must be a mapping")
        unknown = sorted(set(template) - {"cpu", "memory", "gpus", "pods", "labels", "taints"})
        if unknown:
            raise NodeGroupError(
                f"{path}: node group {name!r}: template.{unknown[0]} is not a field (cpu, "
                "memory, gpus, pods, labels, taints)"
            )
        try:
            minimum, maximum = int(raw.get("minSize", 0)), int(raw["maxSize"])
            pool = NodePool(
                name=name,
                count=0,
                cpu=str(template.get("cpu", "32")),
                memory=str(template.get("memory", "128Gi")),
                gpus=int(template.get("gpus", 0)),
                pods=int(template.get("pods", 110)),
                labels={str(k): str(v) for k, v in (template.get("labels") or {}).items()},
                taints=tuple(dict(t) for t in template.get("taints") or []),
            )
        except KeyError:
            raise NodeGroupError(f"{path}: node group {name!r} needs maxSize") from None
        except (TypeError, ValueError, PoolError) as error:
            raise NodeGroupError(f"{path}: node group {name!r}: {error}") from None
        if not 0 <= minimum <= maximum:
            raise NodeGroupError(
                f"{path}: node group {name!r}: minSize {minimum} and maxSize {maximum} must "
                "satisfy 0 <= minSize <= maxSize"
            )
        groups.append(NodeGroup(name, minimum, maximum, pool))
    names = [g.name for g in groups]
    if len(set(names)) != len(names):
        raise NodeGroupError(f"{path}: node group names repeat: {names}")
    return groups


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


# The simulation ----------------------------------------------------------------------


@dataclass
class _SimNode:
    """A node as the simulation fills it: its labels, taints and free room."""

    name: str
    labels: dict[str, str]
    taints: list[Obj]
    free: Amounts

    def admits(self, spec: Obj) -> bool:
        """Whether the node's labels and taints let a pod of this spec on."""
        selector = spec.get("nodeSelector") or {}
        if any(self.labels.get(k) != v for k, v in selector.items()):
            return False
        affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        view = {"metadata": {"name": self.name, "labels": self.labels}}
        if affinity is not None and not node_selector_matches(affinity, view):
            return False
        tolerations = spec.get("tolerations") or []
        return all(
            _tolerated(taint, tolerations)
            for taint in self.taints
            if taint.get("effect") in ("NoSchedule", "NoExecute")
            and taint.get("key") not in _STARTUP_TAINTS
        )

    def fits(self, need: Amounts) -> bool:
        return all(self.free.get(name, Fraction(0)) >= value for name, value in need.items())

    def take(self, need: Amounts) -> None:
        for name, value in need.items():
            self.free[name] = self.free.get(name, Fraction(0)) - value


@dataclass(frozen=True)
class _SimPod:
    """A pod to place: its spec (for labels and taints) and what it takes."""

    spec: Obj
    need: Amounts


class _Simulation:
    """The nodes there are and those on their way, to place pods on, first fit."""

    def __init__(self, nodes: list[_SimNode]) -> None:
        self.nodes = nodes

    def place(self, pod: _SimPod) -> bool:
        for node in self.nodes:
            if node.fits(pod.need) and node.admits(pod.spec):
                node.take(pod.need)
                return True
        return False


def _tolerated(taint: Obj, tolerations: list[Obj]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        operator = toleration.get("operator") or "Equal"
        key = toleration.get("key") or ""
        if operator == "Exists" and (not key or key == taint.get("key")):
            return True
        if key == taint.get("key") and toleration.get("value", "") == taint.get("value", ""):
            return True
    return False


def _amounts(values: Obj | None) -> Amounts:
    found: Amounts = {}
    for name, raw in (values or {}).items():
        parsed = quantity(raw)
        if parsed is not None:
            found[str(name)] = parsed
    return found


def pod_need(spec: Obj) -> Amounts:
    """What a pod takes on its node: its effective request (containers, the largest init
    container, overhead) and one pod slot."""
    total: Amounts = {}
    for container in spec.get("containers") or []:
        for name, value in _amounts((container.get("resources") or {}).get("requests")).items():
            total[name] = total.get(name, Fraction(0)) + value
    for container in spec.get("initContainers") or []:
        for name, value in _amounts((container.get("resources") or {}).get("requests")).items():
            total[name] = max(total.get(name, Fraction(0)), value)
    for name, value in _amounts(spec.get("overhead")).items():
        total[name] = total.get(name, Fraction(0)) + value
    total["pods"] = Fraction(1)
    return total


def _template_node(group: NodeGroup, name: str) -> _SimNode:
    obj = group.node(0, 0)
    return _SimNode(
        name,
        dict(obj["metadata"]["labels"]),
        list(obj["spec"].get("taints") or []),
        _amounts(obj["status"]["allocatable"]),
    )


def _nodes_for(group: NodeGroup, pods: list[_SimPod], limit: int) -> tuple[int, int]:
    """How many new nodes of the group the pods take, at most `limit`, and how many of the
    pods they hold (first fit, a new node when none of the new ones has room)."""
    added: list[_SimNode] = []
    helped = 0
    for pod in pods:
        if any(node.fits(pod.need) and node.admits(pod.spec) for node in added):
            next(n for n in added if n.fits(pod.need) and n.admits(pod.spec)).take(pod.need)
            helped += 1
            continue
        if len(added) >= limit:
            continue
        fresh = _template_node(group, f"{group.name}-template-{len(added)}")
        if fresh.fits(pod.need) and fresh.admits(pod.spec):
            fresh.take(pod.need)
            added.append(fresh)
            helped += 1
    return len(added), helped


def _condition(obj: Obj, kind: str) -> Obj | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _true(obj: Obj, kind: str) -> bool:
    found = _condition(obj, kind)
    return found is not None and found.get("status") == "True"


def _epoch(stamp: Any) -> float:
    try:
        return float(calendar.timegm(time.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return 0.0


# The autoscaler ------------------------------------------------------------------------


@dataclass
class _Coming:
    """A node asked for: when its object appears, and when it turns Ready."""

    group: NodeGroup
    name: str
    appears: float
    ready: float
    created: bool = False


@dataclass
class _State:
    coming: list[_Coming] = field(default_factory=list)
    # Per request (namespace/name): how long its next retry waits after Provisioned=False.
    backoff: dict[str, float] = field(default_factory=dict)
    next_index: dict[str, int] = field(default_factory=dict)
    serial: int = 50_000
    # Whether the last scan served requests (the next serves plain pods when both wait).
    served_requests: bool = False


class Autoscaler:
    """The stand-in cluster autoscaler, driven by a timer on the server's loop."""

    def __init__(self, api: ApiServer, config: AutoscalerConfig) -> None:
        self.api = api
        self.config = config
        self._state = _State()
        self._next_scan = 0.0
        # The time of the scan running: conditions are stamped with it.
        self._now = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    # Lifecycle -------------------------------------------------------------------
    def start_groups(self) -> None:
        """Create every group's minimum number of nodes, Ready."""
        for group in self.config.groups:
            for _ in range(group.min_size):
                self._create_node(group, self._next_name(group), ready=True)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the minimum nodes, then scan on `loop` (the server's loop)."""
        self._loop = loop
        self.start_groups()
        self._schedule()

    def stop(self) -> None:
        """Cancel the next scan."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        if self._loop is None:
            return
        # Node lifecycles are followed more often than scans, so delays stay near their flags.
        step = min(self.config.scan_interval, 0.2)
        self._timer = self._loop.call_later(step, self._tick)

    def _tick(self) -> None:
        try:
            self.tick(time.time())
        except Exception:
            # A stand-in bug must not stop the timer: log it whole, scan again next time.
            log.exception("stand-in autoscaler scan failed")
        self._schedule()

    def tick(self, now: float) -> None:
        """Bring the nodes on their way along; scan when a scan is due."""
        self._now = now
        self._bring_up(now)
        if now < self._next_scan:
            return
        self._next_scan = now + self.config.scan_interval
        requests = self._requests()
        self._refresh_bookings(requests, now)
        waiting = [r for r in requests if self._due(r, now)]
        pods = self._unschedulable(now)
        serve_requests = bool(waiting) and (not pods or not self._state.served_requests)
        self._state.served_requests = serve_requests
        if serve_requests:
            self._provision(waiting[0], requests, now)
        elif pods:
            self._scale_for_pods(pods, requests, now)

    # Nodes -----------------------------------------------------------------------
    def group_size(self, group: NodeGroup) -> int:
        """Nodes of the group there are and on their way."""
        there = sum(
            1
            for node in self.api.store.iter_all(NODES)
            if (node["metadata"].get("labels") or {}).get(GROUP_LABEL) == group.name
        )
        return there + sum(1 for c in self._state.coming if c.group is group and not c.created)

    def _next_name(self, group: NodeGroup) -> str:
        index = self._state.next_index.get(group.name, 0)
        self._state.next_index[group.name] = index + 1
        return f"{group.name}-{index:04d}"

    def _grow(self, group: NodeGroup, count: int, now: float) -> None:
        delay, ready = self.config.node_delay, self.config.ready_delay
        for _ in range(count):
            name = self._next_name(group)
            self._state.coming.append(_Coming(group, name, now + delay, now + delay + ready))
        log.info("node group %s: %d more nodes", group.name, count)
        self._bring_up(now)

    def _bring_up(self, now: float) -> None:
        for coming in list(self._state.coming):
            if not coming.created and now >= coming.appears:
                self._create_node(coming.group, coming.name, ready=False)
                coming.created = True
            if coming.created and now >= coming.ready:
                self._make_ready(coming.name)
                self._state.coming.remove(coming)

    def _create_node(self, group: NodeGroup, name: str, *, ready: bool) -> None:
        self._state.serial += 1
        index = int(name.rsplit("-", 1)[1])
        obj = group.node(index, self._state.serial)
        if not ready:
            # As a node registers: tainted and NotReady until the kubelet reports Ready.
            obj["spec"].setdefault("taints", []).append(
                {"key": NOT_READY_TAINT, "effect": "NoSchedule"}
            )
            for condition in obj["status"]["conditions"]:
                if condition["type"] == "Ready":
                    condition.update(
                        status="False",
                        reason="KubeletNotReady",
                        message="container runtime status check may not have completed yet",
                    )
        self.api.create(self.api.kind("", "v1", NODES), None, obj)

    def _make_ready(self, name: str) -> None:
        kind = self.api.kind("", "v1", NODES)
        node = self.api.store.get(NODES, "", name)
        if node is None:
            return
        taints = [
            t
            for t in (node.get("spec") or {}).get("taints") or []
            if t.get("key") != NOT_READY_TAINT
        ]
        self.api.patch(kind, None, name, MERGE_PATCH, {"spec": {"taints": taints or None}})
        conditions = [
            dict(c, status="True", reason="KubeletReady", message="kubelet is posting ready status")
            if c.get("type") == "Ready"
            else c
            for c in (node.get("status") or {}).get("conditions") or []
        ]
        self.api.patch(
            kind, None, name, MERGE_PATCH, {"status": {"conditions": conditions}}, "status"
        )

    # The simulation of the cluster ------------------------------------------------
    def _simulation(self, requests: list[Obj], *, upcoming: bool, skip: str = "") -> _Simulation:
        """The nodes (and, with `upcoming`, those on their way) with the pods on them and the
        booked requests' pods (but `skip`'s) placed."""
        used: dict[str, Amounts] = {}
        for pod in self.api.store.iter_all(PODS):
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            taken = used.setdefault(node, {})
            for name, value in pod_need(pod.get("spec") or {}).items():
                taken[name] = taken.get(name, Fraction(0)) + value
        nodes = []
        for node in sorted(self.api.store.iter_all(NODES), key=lambda n: n["metadata"]["name"]):
            meta = node["metadata"]
            free = _amounts((node.get("status") or {}).get("allocatable"))
            for name, value in used.get(meta["name"], {}).items():
                free[name] = free.get(name, Fraction(0)) - value
            labels = dict(meta.get("labels") or {})
            nodes.append(
                _SimNode(
                    meta["name"], labels, list((node.get("spec") or {}).get("taints") or []), free
                )
            )
        if upcoming:
            for coming in self._state.coming:
                if not coming.created:
                    nodes.append(_template_node(coming.group, coming.name))
        simulation = _Simulation(nodes)
        for request in requests:
            key = f"{request['metadata']['namespace']}/{request['metadata']['name']}"
            if key == skip or not self._booked(request):
                continue
            booked = self._pods_of(request) or []
            for held in booked[self._consumers(request) :]:
                simulation.place(held)
        return simulation

    # ProvisioningRequests ---------------------------------------------------------
    def _requests(self) -> list[Obj]:
        found = list(self.api.store.iter_all(REQUESTS))
        found.sort(
            key=lambda r: (r["metadata"].get("creationTimestamp", ""), r["metadata"]["name"])
        )
        return found

    def _supported(self, request: Obj) -> bool:
        return (request.get("spec") or {}).get("provisioningClassName") in (
            BEST_EFFORT_ATOMIC,
            CHECK_CAPACITY,
        )

    def _booked(self, request: Obj) -> bool:
        return (
            self._supported(request)
            and _true(request, "Provisioned")
            and not _true(request, "Failed")
            and not _true(request, "BookingExpired")
        )

    def _due(self, request: Obj, now: float) -> bool:
        """Whether the request waits for an answer now (cluster-autoscaler's injector)."""
        if not self._supported(request) or _true(request, "Failed"):
            return False
        provisioned = _condition(request, "Provisioned")
        if provisioned is None:
            return True
        if provisioned.get("status") != "False":
            return False
        key = f"{request['metadata']['namespace']}/{request['metadata']['name']}"
        wait = self._state.backoff.get(key, self.config.initial_backoff)
        return now >= _epoch(provisioned.get("lastTransitionTime")) + wait

    def _pods_of(self, request: Obj) -> list[_SimPod] | None:
        """The request's pods, or None when a template it names is missing."""
        namespace = request["metadata"]["namespace"]
        pods: list[_SimPod] = []
        for pod_set in (request.get("spec") or {}).get("podSets") or []:
            name = (pod_set.get("podTemplateRef") or {}).get("name", "")
            template = self.api.store.get(TEMPLATES, namespace, name)
            if template is None:
                return None
            spec = (template.get("template") or {}).get("spec") or {}
            pods += [_SimPod(spec, pod_need(spec))] * int(pod_set.get("count", 0))
        return pods

    def _consumers(self, request: Obj) -> int:
        """How many of the request's pods are on nodes (by their annotation)."""
        meta = request["metadata"]
        return sum(
            1
            for pod in self.api.store.items(PODS, meta["namespace"])
            if (pod.get("spec") or {}).get("nodeName")
            and (pod["metadata"].get("annotations") or {}).get(CONSUME) == meta["name"]
            and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        )

    def _refresh_bookings(self, requests: list[Obj], now: float) -> None:
        for request in requests:
            if not self._supported(request) or _true(request, "Failed"):
                continue
            if _true(request, "BookingExpired"):
                continue
            provisioned = _condition(request, "Provisioned")
            if provisioned is not None and provisioned.get("status") == "True":
                pods = self._pods_of(request)
                if pods is not None and self._consumers(request) >= len(pods):
                    self._set(
                        request,
                        "BookingExpired",
                        "True",
                        "CapacityBookingConsumed",
                        "Capacity booking consumed: all pods scheduled",
                    )
                elif now > _epoch(provisioned.get("lastTransitionTime")) + self.config.booking_time:
                    self._set(
                        request,
                        "BookingExpired",
                        "True",
                        "CapacityReservationTimeExpired",
                        "Capacity reservation time is expired",
                    )
                continue
            if now > _epoch(request["metadata"].get("creationTimestamp")) + EXPIRATION:
                self._set(request, "Failed", "True", "Expired", "ProvisioningRequest is expired")

    def _provision(self, request: Obj, requests: list[Obj], now: float) -> None:
        meta = request["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        provisioned = _condition(request, "Provisioned")
        if provisioned is not None:
            # A retry: the next one, if needed, waits twice as long (cluster-autoscaler's).
            wait = self._state.backoff.get(key, self.config.initial_backoff)
            self._state.backoff[key] = min(2 * wait, self.config.max_backoff)
        pods = self._pods_of(request)
        if pods is None:
            self._set(
                request,
                "Failed",
                "True",
                "FailedToCreatePods",
                "a PodTemplate the request names does not exist",
            )
            return
        request = self._set(
            request,
            "Accepted",
            "True",
            "Accepted",
            "ProvisioningRequest is accepted by ClusterAutoscaler",
        )
        if request["spec"]["provisioningClassName"] == CHECK_CAPACITY:
            self._check_capacity(request, pods, requests)
            return
        simulation = self._simulation(requests, upcoming=True, skip=key)
        unplaced = [pod for pod in pods if not simulation.place(pod)]
        if not unplaced:
            self._provisioned(request, "CapacityIsFound")
            return
        options = []
        for group in self.config.groups:
            room = group.max_size - self.group_size(group)
            added, helped = _nodes_for(group, unplaced, room)
            if helped == len(unplaced):
                options.append((added, group.name, group))
        if not options:
            self._set(
                request,
                "Provisioned",
                "False",
                "CapacityIsNotFound",
                "Capacity is not found, CA will try to find it later.",
            )
            return
        added, _, group = min(options, key=lambda option: option[:2])
        self._grow(group, added, now)
        self._provisioned(request, "CapacityIsProvisioned")

    def _check_capacity(self, request: Obj, pods: list[_SimPod], requests: list[Obj]) -> None:
        key = f"{request['metadata']['namespace']}/{request['metadata']['name']}"
        simulation = self._simulation(requests, upcoming=False, skip=key)
        if all(simulation.place(pod) for pod in pods):
            self._provisioned(request, "CapacityIsFound")
        elif (request["spec"].get("parameters") or {}).get("noRetry") == "true":
            self._set(
                request,
                "Failed",
                "True",
                "CapacityIsNotFound",
                "CA could not find requested capacity",
            )
        else:
            self._set(
                request,
                "Provisioned",
                "False",
                "CapacityIsNotFound",
                "Capacity is not found, CA will try to find it later.",
            )

    def _provisioned(self, request: Obj, reason: str) -> None:
        self._set(request, "Provisioned", "True", reason, "Capacity is found in the cluster")

    def _set(self, request: Obj, kind: str, status: str, reason: str, message: str) -> Obj:
        """Add or replace one condition of the request (its status subresource)."""
        meta = request["metadata"]
        condition = {
            "type": kind,
            "status": status,
            "observedGeneration": meta.get("generation", 1),
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._now)),
            "reason": reason,
            "message": message,
        }
        conditions = [
            c
            for c in (request.get("status") or {}).get("conditions") or []
            if c.get("type") != kind
        ]
        conditions.append(condition)
        kind_ = self.api.kind("autoscaling.x-k8s.io", "v1", "provisioningrequests")
        try:
            return self.api.patch(
                kind_,
                meta["namespace"],
                meta["name"],
                MERGE_PATCH,
                {"status": {"conditions": conditions}},
                "status",
            )
        except ApiError as error:
            # Deleted meanwhile (its gang placed): nothing to answer.
            log.info("request %s/%s not updated: %s", meta["namespace"], meta["name"], error)
            return request

    # Unschedulable pods -------------------------------------------------------------
    def _unschedulable(self, now: float) -> list[Obj]:
        found = []
        for pod in self.api.store.iter_all(PODS):
            meta = pod["metadata"]
            annotations = meta.get("annotations") or {}
            if (pod.get("spec") or {}).get("nodeName") or meta.get("deletionTimestamp"):
                continue
            if CONSUME in annotations or CONSUME_DEPRECATED in annotations:
                continue
            scheduled = _condition(pod, "PodScheduled")
            if scheduled is None or scheduled.get("status") != "False":
                continue
            if scheduled.get("reason") != "Unschedulable":
                continue
            if now - _epoch(meta.get("creationTimestamp")) <= self.config.new_pod_scale_up_delay:
                continue
            found.append(pod)
        found.sort(
            key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"])
        )
        return found

    def _scale_for_pods(self, pods: list[Obj], requests: list[Obj], now: float) -> None:
        simulation = self._simulation(requests, upcoming=True)
        remaining = [
            (pod, sim_pod)
            for pod in pods
            if not simulation.place(sim_pod := _SimPod(pod["spec"], pod_need(pod["spec"])))
        ]
        if not remaining:
            return
        best: tuple[int, int, str] | None = None
        chosen: NodeGroup | None = None
        for group in self.config.groups:
            room = group.max_size - self.group_size(group)
            if room <= 0:
                continue
            added, helped = _nodes_for(group, [p for _, p in remaining], room)
            if helped == 0:
                continue
            option = (-helped, added, group.name)
            if best is None or option < best:
                best, chosen = option, group
        if best is None or chosen is None:
            return
        helped, added = -best[0], best[1]
        before = self.group_size(chosen)
        self._grow(chosen, added, now)
        message = (
            f"pod triggered scale-up: [{chosen.name} {before}->{before + added} "
            f"(max: {chosen.max_size})]"
        )
        for pod, _ in remaining[:helped]:
            involved = dict(pod, kind="Pod", apiVersion="v1")
            record_event(self.api, involved, "Normal", "TriggeredScaleUp", message, COMPONENT)


# Command line ----------------------------------------------------------------------------

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
        "taints}}): it answers ProvisioningRequests and scales up for unschedulable pods as "
        "cluster-autoscaler does",
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
