"""The campaign's stream of work: gangs of mixed sizes, queues and priorities, bare pods, Jobs.

All of it from one seeded Random, so a seed replays the same stream (the faults too; the
processes' timing does not replay). Pods finish after a random time (the
sim.muster.dev/duration annotation sim's kubelet honours) and free their room; a low-priority
filler occupies most of the cluster from the start, so that high-priority arrivals preempt
and the other queue reclaims; some gangs are larger than the whole cluster.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kubernetes import client

from chaos.cluster import API_FAILURES, ChaosCluster
from chaos.invariants import GROUP_NAME
from tests.e2e.harness import (
    GROUP,
    QUEUE_NAME,
    VERSION,
    make_gang,
    make_node,
    make_pod,
)

Obj = dict[str, Any]
FINISHED_PHASES = ("Succeeded", "Failed")
DURATION = "sim.muster.dev/duration"
MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
NAMESPACES = ("chaos-a", "chaos-b")
QUEUES = (("q-gold", 3), ("q-bronze", 1))
CLASSES = (("chaos-low", 10), ("chaos-high", 1000))
NODE_CPU = "4"
NODE_MEMORY = "16Gi"
# Gangs up to this size are created pod by pod; bigger ones this many pods at a time.
SERIAL_PODS = 16
PARALLEL_CREATES = 8


@dataclass
class Workload:
    """Creates the objects; counts what it created and what sim refused (faults)."""

    chaos: ChaosCluster
    rng: random.Random
    created: dict[str, int] = field(default_factory=dict)
    refused: int = 0
    serial: int = 0
    nodes_added: list[str] = field(default_factory=list)
    gangs: list[tuple[str, str]] = field(default_factory=list)
    # `refused` is counted from the threads that create a big gang's pods.
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # Gangs given up by `tidy`, by the reason their PodGroup gave for waiting.
    abandoned: dict[str, int] = field(default_factory=dict)
    # Per gang `tidy` may delete: the state it was in and since when it was seen so.
    _since: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)

    def _count(self, kind: str) -> None:
        self.created[kind] = self.created.get(kind, 0) + 1

    def _name(self, stem: str) -> str:
        self.serial += 1
        return f"{stem}-{self.serial}"

    def setup(self) -> None:
        """Namespaces, queues, PriorityClasses and the stand-in Job kind."""
        cluster = self.chaos.cluster
        for namespace in NAMESPACES:
            cluster.ensure_namespace(namespace)
        for name, weight in QUEUES:
            body = {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Queue",
                "metadata": {"name": name},
                "spec": {"weight": weight, "reclaimable": True},
            }
            cluster.create_queue(body)
        scheduling = client.SchedulingV1Api(cluster.api)
        for name, value in CLASSES:
            scheduling.create_priority_class({"metadata": {"name": name}, "value": value})

    # -- arrivals --------------------------------------------------------------

    def filler(self, gangs: int) -> None:
        """Low-priority long-running gangs of whole-node pods in the small queue."""
        for _ in range(gangs):
            self.gang(size=8, cpu=NODE_CPU, queue="q-bronze", klass="chaos-low", duration=None)

    def gang(
        self,
        *,
        size: int | None = None,
        cpu: str | None = None,
        queue: str | None = None,
        klass: str | None = None,
        duration: str | None = "",
        namespace: str | None = None,
    ) -> tuple[str, str]:
        """A PodGroup and its pods; each choice left open is drawn from the seed."""
        rng = self.rng
        size = size or rng.choice((2, 3, 4, 8, 8, 16))
        cpu = cpu or rng.choice(("500m", "1", "2"))
        queue = queue or rng.choice([q for q, _ in QUEUES])
        klass = klass or rng.choice([c for c, _ in CLASSES])
        namespace = namespace or rng.choice(NAMESPACES)
        if duration == "":
            duration = f"{rng.uniform(2, 12):.1f}s"
        name = self._name("gang")
        podgroup, pods = make_gang(name, size, cpu=cpu, memory="256Mi")
        podgroup["spec"]["queue"] = queue
        podgroup["spec"]["priorityClassName"] = klass
        for pod in pods:
            pod["spec"]["priorityClassName"] = klass
            pod["metadata"]["annotations"][QUEUE_NAME] = queue
            if duration:
                pod["metadata"]["annotations"][DURATION] = duration
        if not self._create(self.chaos.cluster.create_podgroup, namespace, podgroup):
            return namespace, name
        self._count("gangs")
        create = partial(self._create, self.chaos.cluster.create_pod, namespace)
        if len(pods) <= SERIAL_PODS:
            for pod in pods:
                create(pod)
        else:
            # Each create passes the controller's webhooks (a third of a second under load):
            # a 160- or 200-pod gang one by one would stall the trial's driver for a minute,
            # its faults unstruck, where an operator creates a Job's pods in parallel.
            with ThreadPoolExecutor(max_workers=PARALLEL_CREATES) as pool:
                list(pool.map(create, pods))
        self.gangs.append((namespace, name))
        return namespace, name

    def huge_gang(self) -> tuple[str, str]:
        """A gang larger than the whole cluster: it must wait, saying why, and never start."""
        cores = int(NODE_CPU) * (self.chaos.nodes + len(self.nodes_added))
        size = cores // int(NODE_CPU) + 8
        return self.gang(size=size, cpu=NODE_CPU, duration=None)

    def bare_pod(self) -> None:
        """A pod with no PodGroup: the controller gives it one."""
        namespace = self.rng.choice(NAMESPACES)
        pod = make_pod(self._name("bare"), cpu=self.rng.choice(("250m", "1")), memory="128Mi")
        pod["metadata"]["annotations"][DURATION] = f"{self.rng.uniform(1, 8):.1f}s"
        if self._create(self.chaos.cluster.create_pod, namespace, pod):
            self._count("bare pods")

    def job(self) -> None:
        """A Job whose pods the controller gangs by its min-member (sim stores Jobs; the
        campaign creates their pods, as the Job controller would)."""
        cluster = self.chaos.cluster
        namespace = self.rng.choice(NAMESPACES)
        size = self.rng.choice((2, 3, 4))
        name = self._name("job")
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "annotations": {MIN_MEMBER: str(size)}},
            "spec": {"template": make_pod(name, cpu="500m", memory="128Mi")},
        }
        del body["spec"]["template"]["apiVersion"], body["spec"]["template"]["kind"]
        job = self.chaos.try_api(
            cluster.custom.create_namespaced_custom_object, "batch", "v1", namespace, "jobs", body
        )
        if job is None:
            self.refused += 1
            return
        self._count("jobs")
        for index in range(size):
            pod = make_pod(f"{name}-{index}", cpu="500m", memory="128Mi")
            pod["metadata"]["annotations"][DURATION] = f"{self.rng.uniform(2, 8):.1f}s"
            pod["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": name,
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                }
            ]
            self._create(cluster.create_pod, namespace, pod)

    def edit_min_member(self) -> bool:
        """Lower or raise a gang's minMember in place, as KubeRay does when it scales."""
        if not self.gangs:
            return False
        namespace, name = self.rng.choice(self.gangs)
        podgroup = self.chaos.try_api(self.chaos.cluster.podgroup, namespace, name)
        if podgroup is None:
            return False
        current = int(podgroup["spec"].get("minMember") or 1)
        wanted = max(1, current + self.rng.choice((-2, -1, 1)))
        patch = {"spec": {"minMember": wanted}}
        if not self.chaos.attempt(self.chaos.cluster.patch_podgroup, namespace, name, patch):
            return False
        self._count("minMember edits")
        return True

    def add_node(self) -> None:
        """A new Ready node (its not-ready taint lifted, as the node lifecycle controller does)."""
        name = self._name("chaos-node")
        cluster = self.chaos.cluster
        try:
            created = cluster.core.create_node(make_node(name, NODE_CPU, NODE_MEMORY))
            taints = [
                {"key": t.key, "value": t.value, "effect": t.effect}
                for t in (created.spec.taints or [])
                if t.key != "node.kubernetes.io/not-ready"
            ]
            cluster.core.patch_node(name, {"spec": {"taints": taints}})
        except API_FAILURES:
            self.refused += 1
            return
        self.nodes_added.append(name)
        self._count("nodes added")

    def remove_node(self) -> None:
        """Delete a node and, as the pod garbage collector does, the pods bound to it."""
        cluster = self.chaos.cluster
        candidates = self.nodes_added or [f"sim-node-{i:04d}" for i in range(self.chaos.nodes)]
        name = self.rng.choice(candidates)
        try:
            cluster.core.delete_node(name)
        except API_FAILURES:
            self.refused += 1
            return
        if name in self.nodes_added:
            self.nodes_added.remove(name)
        self._count("nodes removed")
        for pod in self.chaos.pods():
            if pod["spec"].get("nodeName") == name:
                self.chaos.attempt(
                    cluster.core.delete_namespaced_pod,
                    pod["metadata"]["name"],
                    pod["metadata"]["namespace"],
                    grace_period_seconds=0,
                )

    def tidy(self, now: float, finished_after: float, abandon_after: float = 0.0) -> int:
        """What a cluster's users and controllers do with old work, so that a soak holds a
        steady cluster rather than every object it ever made; returns the pods waiting for a
        node (what the soak's arrivals wait on).

        As a Job's ttlSecondsAfterFinished and the pod garbage collector do, the pods and the
        PodGroup of a gang whose pods all finished `finished_after` seconds ago are deleted.
        With `abandon_after`, a gang that has waited that long with nothing running (its
        minMember raised past its pods, a member lost to preemption, bigger than the cluster)
        is deleted as its user would give up on it, and counted by the reason its PodGroup
        gave; so is a PodGroup left with no pods at all."""
        podgroups = {_key(pg): pg for pg in self.chaos.podgroups()}
        gangs: dict[tuple[str, str], list[Obj]] = {key: [] for key in podgroups}
        pending = 0
        for pod in self.chaos.pods():
            if not (pod.get("spec") or {}).get("nodeName"):
                pending += 1
            group = (pod["metadata"].get("annotations") or {}).get(GROUP_NAME)
            if group:
                gangs.setdefault((pod["metadata"]["namespace"], group), []).append(pod)
        for key, pods in gangs.items():
            state = gang_state(pods)
            if state == RUNNING or (state == WAITING and not abandon_after):
                self._since.pop(key, None)
                continue
            since = self._since.setdefault(key, (state, now))
            if since[0] != state:
                since = self._since[key] = (state, now)
            if now - since[1] < (finished_after if state == FINISHED else abandon_after):
                continue
            self._delete_gang(key, pods, key in podgroups)
            del self._since[key]
            if state == FINISHED:
                self._count("finished gangs cleaned")
                continue
            self._count("waiting gangs abandoned")
            reason = wait_reason(podgroups.get(key)) if pods else "no pods"
            self.abandoned[reason] = self.abandoned.get(reason, 0) + 1
        return pending

    def _delete_gang(self, key: tuple[str, str], pods: list[Obj], has_podgroup: bool) -> None:
        cluster = self.chaos.cluster
        namespace, group = key
        for pod in pods:
            self.chaos.attempt(
                cluster.core.delete_namespaced_pod,
                pod["metadata"]["name"],
                namespace,
                grace_period_seconds=0,
            )
        if has_podgroup:
            self.chaos.attempt(
                cluster.custom.delete_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                "podgroups",
                group,
            )

    def tick(self) -> None:
        """One step of arrivals: mostly gangs, some bare pods and Jobs, rare edits."""
        roll = self.rng.random()
        if roll < 0.55:
            self.gang()
        elif roll < 0.75:
            self.bare_pod()
        elif roll < 0.9:
            self.job()
        elif roll < 0.95:
            self.edit_min_member()
        elif roll < 0.975:
            self.add_node()
        else:
            self.remove_node()

    def _create(self, call: Any, namespace: str, body: Obj) -> bool:
        if not self.chaos.attempt(call, namespace, body):
            with self._lock:
                self.refused += 1
            return False
        return True


FINISHED, WAITING, RUNNING = "finished", "waiting", "running"


def gang_state(pods: list[Obj]) -> str:
    """A gang's members at a glance: `running` while one holds a node and has not finished;
    else `waiting` while one waits for a node; else `finished` (a gang with no pods left
    waits: its PodGroup is all there is)."""
    waiting = False
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase in FINISHED_PHASES:
            continue
        if (pod.get("spec") or {}).get("nodeName"):
            return RUNNING
        waiting = True
    return WAITING if waiting or not pods else FINISHED


def wait_reason(podgroup: Obj | None) -> str:
    """The reason of a PodGroup's Unschedulable condition, else its phase."""
    status = (podgroup or {}).get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Unschedulable" and condition.get("status") == "True":
            return str(condition.get("reason") or "Unschedulable")
    return f"phase {status.get('phase') or 'unset'}"


def _key(podgroup: Obj) -> tuple[str, str]:
    meta = podgroup["metadata"]
    return str(meta["namespace"]), str(meta["name"])
