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
from typing import Any

from muster_sim.apiserver.admission_plugins import NOT_READY_TAINT
from muster_sim.apiserver.patch import MERGE_PATCH
from muster_sim.apiserver.resources import NODES, PODS
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.cluster.autoscaler.config import AutoscalerConfig
from muster_sim.cluster.autoscaler.fitting import (
    Amounts,
    SimNode,
    SimPod,
    Simulation,
    amounts,
    nodes_for,
    pod_need,
    template_node,
)
from muster_sim.cluster.autoscaler.node_groups import GROUP_LABEL, NodeGroup
from muster_sim.cluster.recorder import record_event
from muster_sim.errors import ApiError

Obj = dict[str, Any]

log = logging.getLogger("muster.sim.autoscaler")

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
    def _simulation(self, requests: list[Obj], *, upcoming: bool, skip: str = "") -> Simulation:
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
            free = amounts((node.get("status") or {}).get("allocatable"))
            for name, value in used.get(meta["name"], {}).items():
                free[name] = free.get(name, Fraction(0)) - value
            labels = dict(meta.get("labels") or {})
            nodes.append(
                SimNode(
                    meta["name"], labels, list((node.get("spec") or {}).get("taints") or []), free
                )
            )
        if upcoming:
            for coming in self._state.coming:
                if not coming.created:
                    nodes.append(template_node(coming.group, coming.name))
        simulation = Simulation(nodes)
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

    def _pods_of(self, request: Obj) -> list[SimPod] | None:
        """The request's pods, or None when a template it names is missing."""
        namespace = request["metadata"]["namespace"]
        pods: list[SimPod] = []
        for pod_set in (request.get("spec") or {}).get("podSets") or []:
            name = (pod_set.get("podTemplateRef") or {}).get("name", "")
            template = self.api.store.get(TEMPLATES, namespace, name)
            if template is None:
                return None
            spec = (template.get("template") or {}).get("spec") or {}
            pods += [SimPod(spec, pod_need(spec))] * int(pod_set.get("count", 0))
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
            added, helped = nodes_for(group, unplaced, room)
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

    def _check_capacity(self, request: Obj, pods: list[SimPod], requests: list[Obj]) -> None:
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
            if not simulation.place(sim_pod := SimPod(pod["spec"], pod_need(pod["spec"])))
        ]
        if not remaining:
            return
        best: tuple[int, int, str] | None = None
        chosen: NodeGroup | None = None
        for group in self.config.groups:
            room = group.max_size - self.group_size(group)
            if room <= 0:
                continue
            added, helped = nodes_for(group, [p for _, p in remaining], room)
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
