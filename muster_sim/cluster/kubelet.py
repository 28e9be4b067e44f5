"""The simulated kubelet: runs, completes, restarts and finishes deleting pods bound to nodes.

Like a real kubelet it starts no container of a pod whose PersistentVolumeClaims are missing,
unbound, or bound to a volume whose nodeAffinity excludes the node: the pod stays Pending with
its containers waiting in ContainerCreating and a FailedMount event, until the claim is bound and
reachable. Nor of a pod one of whose ResourceClaims does not exist yet, is not the pod's own (for
a claim made from a template), or is not reserved for the pod: it waits the same way with a
FailedPrepareDynamicResources event in the kubelet's words ("pod ... is not allowed to use
ResourceClaim ..."), until the claim lists the pod in `reservedFor`. (sim's kubelet runs every
DRA driver: it prepares any allocated device.)
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

from muster_sim.apiserver.options import DeleteOptions
from muster_sim.apiserver.resources import NODES, PODS
from muster_sim.apiserver.store import Event
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.cluster.pod_claims import (
    CLAIMS,
    ClaimNameError,
    claim_name,
    owner_problem,
    reserved_for,
)
from muster_sim.cluster.recorder import record_event
from muster_sim.errors import ApiError
from muster_sim.selectors import node_selector_matches
from muster_sim.timestamps import now_rfc3339

Obj = dict[str, Any]

DURATION_ANNOTATION = "sim.muster.dev/duration"
EXIT_CODE_ANNOTATION = "sim.muster.dev/exit-code"
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s|us|ns)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
PVCS = "persistentvolumeclaims"
PVS = "persistentvolumes"


def parse_duration(text: str) -> float | None:
    """A Go duration ("30s", "1m30s", "500ms") or plain seconds, in seconds; None if invalid."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNITS[u] for n, u in parts)


class Kubelet:
    """One kubelet for every Node in the store, driven by pod events and timers."""

    def __init__(
        self, api: ApiServer, start_delay: float = 0.1, terminate_delay: float = 0.1
    ) -> None:
        self.api = api
        self.start_delay = start_delay
        self.terminate_delay = terminate_delay
        self._loop: asyncio.AbstractEventLoop | None = None
        # pod uid -> timer; one pending action per pod
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._terminating: set[str] = set()
        # pods waiting for their volumes or resource claims: uid -> (namespace, name); and the
        # last message each was told, so an unchanged cause is not reported again
        self._waiting: dict[str, tuple[str, str]] = {}
        self._told: dict[str, str] = {}
        self._ips = 0

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reacting to pod events on `loop` (the server's loop)."""
        self._loop = loop
        self.api.store.listen(PODS, self._on_pod)
        # a claim or volume that changes may let a waiting pod start
        self.api.store.listen(PVCS, self._retry_waiting_pods)
        self.api.store.listen(PVS, self._retry_waiting_pods)
        self.api.store.listen(CLAIMS, self._retry_waiting_pods)

    def stop(self) -> None:
        """Cancel every pending timer."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def _on_pod(self, event: Event) -> None:
        pod = event.obj
        uid = str(pod["metadata"].get("uid"))
        if event.type == "DELETED":
            timer = self._timers.pop(uid, None)
            if timer is not None:
                timer.cancel()
            self._terminating.discard(uid)
            self._waiting.pop(uid, None)
            self._told.pop(uid, None)
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or self._loop is None or self.api.store.get(NODES, "", node) is None:
            return
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            if uid in self._terminating:
                return
            self._terminating.add(uid)
            grace = float(meta.get("deletionGracePeriodSeconds") or 0)
            self._schedule(
                uid,
                min(grace, self.terminate_delay),
                self._finish_deletion,
                event.namespace,
                meta["name"],
                uid,
            )
            return
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if phase == "Pending" and uid not in self._timers and uid not in self._waiting:
            self._schedule(uid, self.start_delay, self._start, event.namespace, meta["name"], uid)

    def _retry_waiting_pods(self, event: Event) -> None:
        if self._loop is None:
            return
        for uid, (namespace, name) in list(self._waiting.items()):
            if uid not in self._timers:
                self._schedule(uid, self.start_delay, self._start, namespace, name, uid)

    def _schedule(self, uid: str, delay: float, action: Any, *args: Any) -> None:
        assert self._loop is not None
        old = self._timers.pop(uid, None)
        if old is not None:
            old.cancel()
        self._timers[uid] = self._loop.call_later(delay, action, *args)

    def _live(self, namespace: str, name: str, uid: str) -> Obj | None:
        pod = self.api.store.get(PODS, namespace, name)
        if pod is None or pod["metadata"].get("uid") != uid:
            return None
        return pod

    def _write_status(self, pod: Obj, status: Obj) -> None:
        new = dict(pod)
        new["metadata"] = dict(pod["metadata"])
        new["status"] = status
        self.api.store.put(PODS, new, "MODIFIED")

    def _start(self, namespace: str, name: str, uid: str) -> None:
        self._timers.pop(uid, None)
        pod = self._live(namespace, name, uid)
        finished = (pod or {}).get("status", {}).get("phase") in ("Succeeded", "Failed")
        if pod is None or pod["metadata"].get("deletionTimestamp") or finished:
            # a pod that finished (a client may say so) never starts again
            self._waiting.pop(uid, None)
            return
        node = self.api.store.get(NODES, "", pod["spec"]["nodeName"])
        problem = self._volume_problem(pod, node)
        if problem is not None:
            self._wait(pod, node, uid, "FailedMount", problem)
            return
        problem = self._claims_problem(pod)
        if problem is not None:
            message = f"Failed to prepare dynamic resources: {problem}"
            self._wait(pod, node, uid, "FailedPrepareDynamicResources", message)
            return
        self._waiting.pop(uid, None)
        self._told.pop(uid, None)
        stamp = now_rfc3339()
        self._ips += 1
        ip = f"10.{(244 + (self._ips >> 16)) % 256}.{(self._ips >> 8) & 255}.{self._ips & 255}"
        status = dict(pod.get("status") or {})
        status.update(
            {
                "phase": "Running",
                "conditions": _conditions(status, ready=True, stamp=stamp),
                "hostIP": _internal_ip(node),
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "startTime": stamp,
                "containerStatuses": [
                    _running(c, stamp, restarts=0) for c in pod["spec"].get("containers") or []
                ],
            }
        )
        self._write_status(pod, status)
        self._schedule_completion(pod, uid)

    def _volume_problem(self, pod: Obj, node: Obj | None) -> str | None:
        """The FailedMount message for the first volume the pod cannot mount yet, or None."""
        namespace = str(pod["metadata"].get("namespace", ""))
        for volume in pod["spec"].get("volumes") or []:
            source = volume.get("persistentVolumeClaim")
            if isinstance(source, dict):
                claim_name = str(source.get("claimName", ""))
            elif isinstance(volume.get("ephemeral"), dict):
                # a generic ephemeral volume is the claim <pod>-<volume>; sim runs no
                # ephemeral-volume controller, so unless a client creates it the pod waits
                claim_name = f"{pod['metadata']['name']}-{volume.get('name')}"
            else:
                continue
            cause = self._claim_problem(namespace, claim_name, node)
            if cause is None:
                continue
            if cause.startswith("MountVolume."):
                return cause
            # the kubelet names the volume it could not process and the populator's reason
            return (
                f"Unable to attach or mount volumes: unmounted volumes=[{volume.get('name')}], "
                f"unattached volumes=[], failed to process volumes=[{volume.get('name')}]: "
                f"error processing PVC {namespace}/{claim_name}: {cause}"
            )
        return None

    def _claim_problem(self, namespace: str, claim_name: str, node: Obj | None) -> str | None:
        claim = self.api.store.get(PVCS, namespace, claim_name)
        if claim is None:
            return (
                "failed to fetch PVC from API server: persistentvolumeclaims "
                f'"{claim_name}" not found'
            )
        if claim["metadata"].get("deletionTimestamp"):
            return "PVC is being deleted"
        if (claim.get("status") or {}).get("phase") != "Bound":
            return "PVC is not bound"
        volume_name = str((claim.get("spec") or {}).get("volumeName") or "")
        if not volume_name:
            return "PVC has empty pvc.Spec.VolumeName"
        volume = self.api.store.get(PVS, "", volume_name)
        if volume is None:
            return (
                f"failed to fetch PV {volume_name} from API server: persistentvolumes "
                f'"{volume_name}" not found'
            )
        ref = (volume.get("spec") or {}).get("claimRef")
        if ref is None:
            return (
                f"found PV object {volume_name} but it has a nil pv.Spec.ClaimRef indicating it "
                "is not yet bound to the claim"
            )
        if ref.get("uid") != claim["metadata"].get("uid"):
            return (
                f"found PV object {volume_name} but its pv.Spec.ClaimRef.UID {ref.get('uid')} "
                f"does not point to claim.UID {claim['metadata'].get('uid')}"
            )
        required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required")
        if required is not None and node is not None and not node_selector_matches(required, node):
            return (
                f'MountVolume.NodeAffinity check failed for volume "{volume_name}" : '
                "no matching NodeSelectorTerms"
            )
        return None

    def _claims_problem(self, pod: Obj) -> str | None:
        """Why the kubelet cannot prepare the pod's first unusable ResourceClaim, or None."""
        meta = pod["metadata"]
        for pod_claim in pod["spec"].get("resourceClaims") or []:
            try:
                found = claim_name(pod, pod_claim)
            except ClaimNameError as error:
                return str(error)
            if found.name is None:
                continue
            claim = self.api.store.get(CLAIMS, str(meta.get("namespace", "")), found.name)
            if claim is None:
                return (
                    f"fetch ResourceClaim {found.name}: resourceclaims.resource.k8s.io "
                    f'"{found.name}" not found'
                )
            if found.generated:
                problem = owner_problem(pod, claim)
                if problem is not None:
                    return problem
            if not reserved_for(pod, claim):
                return (
                    f"pod {meta['name']} ({meta.get('uid')}) is not allowed to use ResourceClaim "
                    f"{found.name} ({claim['metadata'].get('uid')})"
                )
        return None

    def _wait(self, pod: Obj, node: Obj | None, uid: str, reason: str, problem: str) -> None:
        """Pending, containers ContainerCreating, and a `reason` event when the cause is new."""
        meta = pod["metadata"]
        self._waiting[uid] = (str(meta.get("namespace", "")), str(meta["name"]))
        stamp = now_rfc3339()
        status = dict(pod.get("status") or {})
        names = [str(c.get("name")) for c in pod["spec"].get("containers") or []]
        waiting = {
            "phase": "Pending",
            "conditions": _conditions(
                status,
                ready=False,
                stamp=stamp,
                reason="ContainersNotReady",
                message=f"containers with unready status: [{' '.join(names)}]",
            ),
            "hostIP": _internal_ip(node),
            "startTime": status.get("startTime", stamp),
            "containerStatuses": [_creating(c) for c in pod["spec"].get("containers") or []],
        }
        if any(status.get(k) != v for k, v in waiting.items() if k != "conditions") or not any(
            c.get("type") == "ContainersReady" for c in status.get("conditions") or []
        ):
            status.update(waiting)
            self._write_status(pod, status)
        if self._told.get(uid) != problem:
            self._told[uid] = problem
            record_event(
                self.api,
                pod,
                "Warning",
                reason,
                problem,
                "kubelet",
                host=str(pod["spec"].get("nodeName", "")),
            )

    def _schedule_completion(self, pod: Obj, uid: str) -> None:
        annotations = pod["metadata"].get("annotations") or {}
        raw = annotations.get(DURATION_ANNOTATION)
        if raw is None:
            return
        duration = parse_duration(str(raw))
        if duration is None:
            return
        meta = pod["metadata"]
        self._schedule(uid, duration, self._complete, meta.get("namespace", ""), meta["name"], uid)

    def _complete(self, namespace: str, name: str, uid: str) -> None:
        self._timers.pop(uid, None)
        pod = self._live(namespace, name, uid)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        annotations = pod["metadata"].get("annotations") or {}
        try:
            code = int(annotations.get(EXIT_CODE_ANNOTATION, 0))
        except ValueError:
            code = 1
        policy = pod["spec"].get("restartPolicy", "Always")
        stamp = now_rfc3339()
        status = dict(pod.get("status") or {})
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            # the container exits and the kubelet starts it again in place
            status["containerStatuses"] = [
                _restarted(cs, code, stamp) for cs in status.get("containerStatuses") or []
            ]
            self._write_status(pod, status)
            self._schedule_completion(pod, uid)
            return
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        status["conditions"] = _conditions(status, ready=False, stamp=stamp, reason="PodCompleted")
        status["containerStatuses"] = [
            _terminated(cs, code, stamp) for cs in status.get("containerStatuses") or []
        ]
        self._write_status(pod, status)

    def _finish_deletion(self, namespace: str, name: str, uid: str) -> None:
        self._timers.pop(uid, None)
        # already gone, or replaced by a new pod of the same name: nothing to finish
        with contextlib.suppress(ApiError):
            self.api.delete(
                self.api.kind("", "v1", PODS),
                namespace,
                name,
                DeleteOptions(grace_period=0, uid=uid),
            )


def _internal_ip(node: Obj | None) -> str:
    for address in ((node or {}).get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return "10.0.0.1"


def _conditions(
    status: Obj, ready: bool, stamp: str, reason: str | None = None, message: str | None = None
) -> list[Obj]:
    kept = [
        c
        for c in status.get("conditions") or []
        if c.get("type") not in ("Initialized", "Ready", "ContainersReady")
    ]
    value = "True" if ready else "False"
    conditions = [
        {
            "type": "Initialized",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": stamp,
        }
    ]
    for kind in ("Ready", "ContainersReady"):
        condition: Obj = {
            "type": kind,
            "status": value,
            "lastProbeTime": None,
            "lastTransitionTime": stamp,
        }
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        conditions.append(condition)
    return conditions + kept


def _creating(container: Obj) -> Obj:
    """A container the kubelet has not started: waiting in ContainerCreating."""
    return {
        "name": container.get("name"),
        "state": {"waiting": {"reason": "ContainerCreating"}},
        "lastState": {},
        "ready": False,
        "restartCount": 0,
        "image": str(container.get("image", "")),
        "imageID": "",
        "started": False,
    }


def _running(container: Obj, stamp: str, restarts: int) -> Obj:
    image = str(container.get("image", ""))
    return {
        "name": container.get("name"),
        "state": {"running": {"startedAt": stamp}},
        "lastState": {},
        "ready": True,
        "restartCount": restarts,
        "image": image,
        "imageID": f"sim://{image}",
        "containerID": f"sim://{container.get('name')}",
        "started": True,
    }


def _restarted(status: Obj, code: int, stamp: str) -> Obj:
    started = ((status.get("state") or {}).get("running") or {}).get("startedAt", stamp)
    return dict(
        status,
        restartCount=int(status.get("restartCount", 0)) + 1,
        lastState={
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": started,
                "finishedAt": stamp,
            }
        },
        state={"running": {"startedAt": stamp}},
        ready=True,
    )


def _terminated(status: Obj, code: int, stamp: str) -> Obj:
    started = ((status.get("state") or {}).get("running") or {}).get("startedAt", stamp)
    return dict(
        status,
        state={
            "terminated": {
                "exitCode": code,
                "reason": "Completed" if code == 0 else "Error",
                "startedAt": started,
                "finishedAt": stamp,
            }
        },
        ready=False,
        started=False,
    )
