"""Prometheus metrics, named after kube-scheduler's and Volcano's, prefixed muster_,
and how a session's result and the cache map onto them."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from scheduler import __version__, build
from scheduler.api.resources import UNLIMITED, Resource, share_of
from scheduler.framework.decisions import SessionResult

# Sessions and binds are fast: buckets from 1 ms to 10 s.
_LATENCY = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Every series muster exports, on a registry of its own (no process-wide state)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        Info(
            "muster_build",
            "muster's version, and whether its scheduling core runs compiled (mypyc), as "
            "plain Python, or mixed (a broken install).",
            registry=r,
        ).info({"version": __version__, "core": build.core()})
        self.schedule_attempts = Counter(
            "muster_schedule_attempts_total",
            "Pods the scheduler tried to place, by result (scheduled, unschedulable, error).",
            ["result"],
            registry=r,
        )
        self.attempt_duration = Histogram(
            "muster_scheduling_attempt_duration_seconds",
            "Time from a session's start to its decisions, observed once per session.",
            buckets=_LATENCY,
            registry=r,
        )
        self.cycles = Counter(
            "muster_scheduling_cycles_total",
            "Schedule periods of the leader: a session ran, it was skipped because "
            "nothing changed since the last one, it waited for a broken watch "
            "(result=watch_broken), or it failed (result=error).",
            ["result"],
            registry=r,
        )
        self.session_duration = Histogram(
            "muster_session_duration_seconds",
            "Duration of one whole session: snapshot, actions, statuses.",
            buckets=_LATENCY,
            registry=r,
        )
        self.action_duration = Histogram(
            "muster_action_duration_seconds",
            "Duration of each action in a session.",
            ["action"],
            buckets=_LATENCY,
            registry=r,
        )
        self.plugin_duration = Histogram(
            "muster_plugin_duration_seconds",
            "Time each plugin spends opening and closing a session.",
            ["plugin"],
            buckets=_LATENCY,
            registry=r,
        )
        self.bind_duration = Histogram(
            "muster_bind_duration_seconds",
            "Duration of one binding request, retries included.",
            buckets=_LATENCY,
            registry=r,
        )
        self.binds = Counter(
            "muster_binds_total", "Binding requests by result.", ["result"], registry=r
        )
        for result in ("success", "error", "retried", "abandoned"):
            # every series from the start: an alert on "no success for 5 minutes" needs one
            self.binds.labels(result)
        self.pending_pods = Gauge(
            "muster_pending_pods", "Pods of ours waiting for a node.", registry=r
        )
        self.podgroups = Gauge("muster_podgroups", "PodGroups by phase.", ["phase"], registry=r)
        self.placeable_gangs = Gauge(
            "muster_placeable_gangs",
            "Gangs that could move now: their binds sent and not yet answered, or failed "
            "since the last session (which places them again). Above 0 with no bind "
            "succeeding is a stall; a full cluster reads 0.",
            registry=r,
        )
        labels = ["queue", "resource"]
        self.queue_allocated = Gauge(
            "muster_queue_allocated", "Resources allocated to a queue.", labels, registry=r
        )
        self.queue_deserved = Gauge(
            "muster_queue_deserved", "Resources a queue deserves by weight.", labels, registry=r
        )
        self.queue_capability = Gauge(
            "muster_queue_capability",
            "A queue's capability (absent when unlimited).",
            labels,
            registry=r,
        )
        self.queue_request = Gauge(
            "muster_queue_request", "Resources a queue's jobs request.", labels, registry=r
        )
        self.queue_share = Gauge(
            "muster_queue_share",
            "A queue's allocated / deserved (dominant).",
            ["queue"],
            registry=r,
        )
        self.watch_restarts = Counter(
            "muster_watch_restarts_total",
            "Watches restarted after an error.",
            ["resource"],
            registry=r,
        )
        self.watch_failures = Counter(
            "muster_watch_failures_total",
            "Lists and watches that failed, by kind and the HTTP code of the answer (410: "
            "expired, listed again; none: no answer, a connection refused or cut).",
            ["resource", "code"],
            registry=r,
        )
        self.relists = Counter(
            "muster_relists_total", "Full lists after a 410 Gone.", ["resource"], registry=r
        )
        self.reflector_crashes = Counter(
            "muster_reflector_crashes_total",
            "Reflectors restarted (listing again) after an unexpected error.",
            ["resource"],
            registry=r,
        )
        self.undecodable_objects = Counter(
            "muster_undecodable_objects_total",
            "Objects skipped because muster could not read them (the log names each).",
            ["resource"],
            registry=r,
        )
        self.cache_objects = Gauge(
            "muster_cache_objects", "Objects held in the cache.", ["kind"], registry=r
        )
        self.is_leader = Gauge(
            "muster_is_leader", "1 while this replica leads and schedules.", registry=r
        )
        self.status_writes_waiting = Gauge(
            "muster_status_writes_waiting",
            "Status writes waiting for their turn, one per object at most, by lane.",
            ["lane"],
            registry=r,
        )
        self.status_writes = Counter(
            "muster_status_writes_total",
            "Status writes by kind (podgroup, queue, hypernode, pod) and result (success, "
            "error; an error is written again by a later session; fenced: not sent, the "
            "lease lost while it waited).",
            ["kind", "result"],
            registry=r,
        )
        for kind in ("podgroup", "queue", "hypernode", "pod"):
            for result in ("success", "error", "fenced"):
                self.status_writes.labels(kind, result)
        self.watch_broken = Gauge(
            "muster_watch_broken_seconds",
            "How long a kind's list or watch has been failing, until the list after the failure "
            "is in (0 while it works).",
            ["resource"],
            registry=r,
        )
        self.tasks = Gauge(
            "muster_asyncio_tasks",
            "Tasks alive on the scheduler's event loop (binds, writes and watches in flight); "
            "one that only grows is a leak.",
            registry=r,
        )
        self.events_dropped = Counter(
            "muster_events_dropped_total",
            "Events not written because of deduplication, rate limiting, a full queue, or "
            "the lease lost while they waited.",
            registry=r,
        )
        self.events_queued = Gauge(
            "muster_events_queued",
            "Events waiting to be written (at most 1,000; then new ones are dropped).",
            registry=r,
        )
        self._init_starvation(r)

    def _init_starvation(self, r: CollectorRegistry) -> None:
        self.starving_podgroups = Gauge(
            "muster_starving_podgroups",
            "PodGroups waiting longer than their waiting time (sla-waiting-time), by whether "
            "room is held for them (held) or not (over their queue's share, never fitting, "
            "holding turned off).",
            ["state"],
            registry=r,
        )
        self.held_resources = Gauge(
            "muster_held_resources",
            "Room held on nodes for starving gangs, by resource (cpu in cores, memory in "
            "bytes): free room no other gang of equal or lower priority may take.",
            ["resource"],
            registry=r,
        )
        self.scale_up_podgroups = Gauge(
            "muster_scale_up_podgroups",
            "PodGroups muster asks a cluster autoscaler for nodes for (a ProvisioningRequest), "
            "by where that stands: asked (this session), pending, provisioned, retrying, failed.",
            ["state"],
            registry=r,
        )
        self.evictions_refused = Counter(
            "muster_evictions_refused_total",
            "Groups of evictions (one preemptor's) not sent because a PodDisruptionBudget "
            "refused one of them (the preemptor's condition names it).",
            registry=r,
        )

    def observe_session(
        self, result: SessionResult, *, decide_seconds: float, total_seconds: float
    ) -> None:
        """Map one leader session onto the series: its durations (whole, per action, per
        plugin), the pods it left unschedulable, PodGroups by phase, and each queue's figures.
        """
        self.attempt_duration.observe(decide_seconds)
        self.session_duration.observe(total_seconds)
        for name, seconds in result.timings.items():
            if name.startswith("plugin:"):
                self.plugin_duration.labels(name.removeprefix("plugin:")).observe(seconds)
            else:
                self.action_duration.labels(name).observe(seconds)
        # Gated pods (SchedulingGated) were not attempted, as in kube-scheduler.
        unschedulable = sum(1 for u in result.unschedulable if u.reason == "Unschedulable")
        if unschedulable:
            self.schedule_attempts.labels("unschedulable").inc(unschedulable)
        self.pending_pods.set(result.pending)
        phases: dict[str, int] = {}
        for queue in result.queues:
            for phase, count in queue.podgroups.items():
                phases[phase] = phases.get(phase, 0) + count
            self._observe_queue(self.queue_allocated, queue.name, queue.allocated)
            if queue.deserved is not None:
                self._observe_queue(self.queue_deserved, queue.name, queue.deserved)
                self.queue_share.labels(queue.name).set(share_of(queue.allocated, queue.deserved))
            if queue.request is not None:
                self._observe_queue(self.queue_request, queue.name, queue.request)
            if queue.capability is not None:
                self._observe_queue(self.queue_capability, queue.name, queue.capability)
        for phase, count in phases.items():
            # the queue status counts by lower-case key ("running"); the label is the phase
            self.podgroups.labels(phase.capitalize()).set(count)
        self._observe_holds(result)

    def _observe_holds(self, result: SessionResult) -> None:
        held = Resource()
        # Provisioned capacity held for a gang is counted by muster_scale_up_podgroups.
        starving = [room for room in result.holds if room.kind == "starving"]
        for room in starving:
            for amount in room.nodes.values():
                held.add(amount)
        self.starving_podgroups.labels("held").set(len(starving))
        self.starving_podgroups.labels("not_held").set(result.starving - len(starving))
        states = dict.fromkeys(("asked", "pending", "provisioned", "retrying", "failed"), 0)
        for report in result.scale_ups:
            states[report.state] += 1
        for state, count in states.items():
            self.scale_up_podgroups.labels(state).set(count)
        self.held_resources.labels("cpu").set(held.cpu / 1000)
        self.held_resources.labels("memory").set(held.memory)
        for name, value in held.scalars.items():
            self.held_resources.labels(name).set(value)

    def observe_cache(self, counts: Mapping[str, int]) -> None:
        """The number of cached objects of each kind."""
        for kind, count in counts.items():
            self.cache_objects.labels(kind).set(count)

    def reflector_restarted(self, resource: str, reason: str) -> None:
        """Count a reflector's restart by its reason: relist (410 Gone), error, or crash."""
        counter = {
            "relist": self.relists,
            "crash": self.reflector_crashes,
            "error": self.watch_restarts,
        }[reason]
        counter.labels(resource).inc()

    @staticmethod
    def _observe_queue(gauge: Gauge, queue: str, value: Resource) -> None:
        for resource in ("cpu", "memory", *sorted(value.scalars)):
            amount = value.get(resource)
            if amount >= UNLIMITED:
                continue  # an unlimited figure has no series (see muster_queue_capability)
            # cpu in cores, like kube's resource metrics; the rest in their units.
            gauge.labels(queue, resource).set(amount / 1000 if resource == "cpu" else amount)
