"""`muster scheduler`: the watch cache, the session loop, the effects, leader election, metrics.

The only place that wires the pure core to the API server: reflectors keep a
World current; every period (measured from the end of the previous cycle)
the leader takes a snapshot, runs a session, and hands its decisions to the
binder and the status writer. Standbys keep their cache warm.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import signal
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from scheduler.api import wire
from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.api.resources import UNLIMITED, Resource, share_of
from scheduler.cache.reflector import Kind, Reflector
from scheduler.cache.world import World
from scheduler.config_source import ConfigSource
from scheduler.effects import paths
from scheduler.effects.binder import Binder
from scheduler.effects.evictor import Evictor
from scheduler.effects.queues import create_queue_if_missing
from scheduler.effects.recorder import EventRecorder, ObjectRef
from scheduler.effects.status_writer import StatusWriter
from scheduler.endpoints import metrics_handler, serve
from scheduler.engine import schedule
from scheduler.framework.decisions import Evict, SessionResult
from scheduler.health import Health, Verdict
from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration
from scheduler.kube.errors import StatusError, TransportError
from scheduler.kube.lease import LeaderElector
from scheduler.logs import configure
from scheduler.metrics import Metrics

log = logging.getLogger("muster.scheduler")

# The longest a leader goes without a session while nothing changes.
RESYNC_SECONDS = 10.0
# How stale PodGroup running counts may get while pods start (no decision depends on them).
STATUS_REFRESH_SECONDS = 1.0


@dataclass
class SchedulerOptions:
    """Everything `muster scheduler` is told on its command line."""

    kubeconfig: str | None = None
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER_NAME,)
    scheduler_conf: Path | None = None
    schedule_period: float = 1.0
    default_queue: str = DEFAULT_QUEUE
    metrics_address: str = ":8080"
    leader_elect: bool = True
    lock_namespace: str = "muster-system"
    lock_name: str = "muster-scheduler"
    qps: float = 0.0
    burst: int = 100
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")


class SchedulerProcess:
    """One replica of the scheduler."""

    def __init__(self, options: SchedulerOptions) -> None:
        self.options = options
        self.metrics = Metrics()
        self.config = ConfigSource(options.scheduler_conf)
        self.world = World(frozenset(options.scheduler_names), options.default_queue)
        self.client = KubeClient(
            load_configuration(options.kubeconfig), qps=options.qps, burst=options.burst
        )
        self.recorder = EventRecorder(self.client, self.metrics)
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            self.elector = LeaderElector(
                self.client,
                namespace=options.lock_namespace,
                name=options.lock_name,
                identity=options.identity,
                on_change=lambda leading: self.metrics.is_leader.set(1 if leading else 0),
            )
        self.binder = Binder(
            self.client, self.world, self.recorder, self.metrics, may_bind=self.is_leader
        )
        self.writer = StatusWriter(self.client, self.recorder)
        self.evictor = Evictor(self.client, self.recorder)
        self.reflectors = self._reflectors()
        self.health = Health(options.schedule_period, self.reflectors, time.monotonic)
        self.stopping = asyncio.Event()
        self._last_cycle_error = ""
        self._last_generation: int | None = None
        self._last_status_generation = 0
        self._last_session = 0.0

    # Wiring ----------------------------------------------------------------
    def _reflectors(self) -> list[Reflector[Any]]:
        world = self.world

        def ns_name(obj: Any) -> str:
            return f"{obj.metadata.namespace}/{obj.metadata.name}"

        def delete_podgroup(key: str) -> None:
            namespace, _, name = key.partition("/")
            world.delete_podgroup(namespace, name)

        kinds: list[Kind[Any]] = [
            Kind(
                "node",
                "/api/v1/nodes",
                wire.Node,
                lambda o: o.metadata.name,
                world.upsert_node,
                world.delete_node,
            ),
            Kind(
                "priorityclass",
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                wire.PriorityClass,
                lambda o: o.metadata.name,
                world.upsert_priority_class,
                world.delete_priority_class,
            ),
            Kind(
                "queue",
                f"{paths.GROUP_PATH}/queues",
                wire.Queue,
                lambda o: o.metadata.name,
                world.upsert_queue,
                world.delete_queue,
            ),
            Kind(
                "podgroup",
                f"{paths.GROUP_PATH}/podgroups",
                wire.PodGroup,
                ns_name,
                world.upsert_podgroup,
                delete_podgroup,
            ),
            Kind(
                "pod",
                "/api/v1/pods",
                wire.Pod,
                lambda o: o.metadata.uid,
                world.upsert_pod,
                world.delete_pod,
            ),
        ]
        return [
            Reflector(
                self.client,
                kind,
                on_restart=self._restart_counter(kind.name),
                on_undecodable=self._undecodable_counter(kind.name),
            )
            for kind in kinds
        ]

    def _undecodable_counter(self, resource: str) -> Callable[[str], None]:
        counter = self.metrics.undecodable_objects.labels(resource)
        return lambda _message: counter.inc()

    def _restart_counter(self, resource: str) -> Any:
        counters = {
            "relist": self.metrics.relists,
            "crash": self.metrics.reflector_crashes,
            "error": self.metrics.watch_restarts,
        }

        def count(reason: str) -> None:
            counters[reason].labels(resource).inc()

        return count

    def is_leader(self) -> bool:
        """Whether this replica may schedule now."""
        return self.elector is None or self.elector.is_leader

    def synced(self) -> bool:
        """Whether every reflector finished its first list."""
        return all(r.synced.is_set() for r in self.reflectors)

    # Running -----------------------------------------------------------------
    async def run(self) -> int:
        """Run until SIGTERM or SIGINT; returns the exit code."""
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stopping.set)
        if self.elector is None:
            self.metrics.is_leader.set(1)
        runner = await self._serve_metrics()
        # tasks that must run for the process's whole life: /healthz watches them
        background: list[asyncio.Task[Any]] = [
            loop.create_task(r.run(), name=f"reflector {r.name}") for r in self.reflectors
        ]
        if self.elector is not None:
            background.append(loop.create_task(self.elector.run(), name="leader election"))
        self.health.watch_tasks(background)
        background.append(loop.create_task(self._ensure_default_queue()))
        try:
            await self._wait_synced()
            log.info("cache synced; scheduling as %s", ", ".join(self.options.scheduler_names))
            await self._loop()
        finally:
            await self._shutdown(background, runner)
        return 0

    async def _wait_synced(self) -> None:
        async def all_synced() -> None:
            await asyncio.gather(*(r.synced.wait() for r in self.reflectors))

        synced = asyncio.ensure_future(all_synced())
        stop = asyncio.ensure_future(self.stopping.wait())
        await asyncio.wait([synced, stop], return_when=asyncio.FIRST_COMPLETED)
        synced.cancel()
        stop.cancel()

    async def _loop(self) -> None:
        period = self.options.schedule_period
        while not self.stopping.is_set():
            before = self.config.config
            error = self.config.reload_if_changed()
            if error:
                self._announce_config_error(error)
            config_changed = self.config.config is not before
            if not self.is_leader():
                self._last_generation = None
                self.health.cycle_finished()
            elif self._needs_session(reloaded=config_changed):
                self._session()
            else:
                self.metrics.cycles.labels("skipped").inc()
                self.health.cycle_finished()
            self._observe_cache()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), timeout=period)

    def _session(self) -> None:
        generations = (self.world.generation, self.world.status_generation)
        try:
            self.cycle()
        except Exception as error:
            # A bug must not stop the process: the next period tries again. A cycle that
            # fails every period turns /healthz red (scheduler/health.py), and is logged
            # once, not every period.
            self.metrics.cycles.labels("error").inc()
            text = f"{type(error).__name__}: {error}"
            if text != self._last_cycle_error:
                log.exception("scheduling cycle failed")
                self._last_cycle_error = text
            return
        self._last_generation, self._last_status_generation = generations
        self._last_session = time.monotonic()
        self._last_cycle_error = ""
        self.metrics.cycles.labels("session").inc()
        self.health.cycle_finished()

    def _needs_session(self, *, reloaded: bool) -> bool:
        # Nothing changed since the last session: it would decide the same, so skip
        # it (a 10,000-pod backlog that cannot move costs a whole session per period).
        # Changes that only move statuses (pods starting) get a session at most every
        # STATUS_REFRESH seconds; time-based rules (Inqueue timeout, backoff) one every
        # RESYNC seconds.
        if reloaded or self._last_generation != self.world.generation:
            return True
        since = time.monotonic() - self._last_session
        if self._last_status_generation != self.world.status_generation:
            return since >= STATUS_REFRESH_SECONDS
        return since >= RESYNC_SECONDS

    def cycle(self) -> SessionResult:
        """One session: snapshot, decide, hand the decisions to the effects."""
        start = time.perf_counter()
        # The core never reads the clock: the session's "now" comes with its snapshot.
        now = time.time()
        snapshot = self.world.snapshot(now)
        result = schedule(snapshot, self.config.config, copy=False)
        decided = time.perf_counter()
        if not self.is_leader():
            return result
        self.world.record_session(result, now)
        self.binder.dispatch(result.binds)
        for bind in result.binds:
            self.writer.pod_placed(bind.uid)
        for eviction in result.evictions:
            self.world.assume_releasing(eviction.uid)
            asyncio.get_running_loop().create_task(self._evict(eviction))
        self.writer.podgroups(result.podgroups)
        self.writer.pods(result.unschedulable)
        self.writer.queues(result.queues)
        self.writer.invalid(result.invalid)
        self._observe_session(result, decided - start, time.perf_counter() - start)
        return result

    async def _evict(self, eviction: Evict) -> None:
        if not await self.evictor.evict(eviction):
            self.world.forget_releasing(eviction.uid)

    # Observability -----------------------------------------------------------
    def _observe_session(self, result: SessionResult, decide: float, total: float) -> None:
        m = self.metrics
        m.attempt_duration.observe(decide)
        m.session_duration.observe(total)
        for name, seconds in result.timings.items():
            if name.startswith("plugin:"):
                m.plugin_duration.labels(name.removeprefix("plugin:")).observe(seconds)
            else:
                m.action_duration.labels(name).observe(seconds)
        unschedulable = sum(1 for u in result.unschedulable if u.reason == "Unschedulable")
        if unschedulable:
            m.schedule_attempts.labels("unschedulable").inc(unschedulable)
        m.pending_pods.set(len(result.unschedulable))
        phases: dict[str, int] = {}
        for queue in result.queues:
            for phase, count in queue.podgroups.items():
                phases[phase] = phases.get(phase, 0) + count
            self._observe_queue(queue.name, "allocated", queue.allocated)
            if queue.deserved is not None:
                self._observe_queue(queue.name, "deserved", queue.deserved)
                m.queue_share.labels(queue.name).set(share_of(queue.allocated, queue.deserved))
            if queue.request is not None:
                self._observe_queue(queue.name, "request", queue.request)
            if queue.capability is not None:
                self._observe_queue(queue.name, "capability", queue.capability)
        for phase, count in phases.items():
            m.podgroups.labels(phase.capitalize()).set(count)

    def _observe_queue(self, queue: str, figure: str, value: Resource) -> None:
        gauge = {
            "allocated": self.metrics.queue_allocated,
            "deserved": self.metrics.queue_deserved,
            "request": self.metrics.queue_request,
            "capability": self.metrics.queue_capability,
        }[figure]
        for resource in ("cpu", "memory", *sorted(value.scalars)):
            amount = value.get(resource)
            if amount >= UNLIMITED:
                continue
            # cpu in cores, like kube's resource metrics; the rest in their units.
            gauge.labels(queue, resource).set(amount / 1000 if resource == "cpu" else amount)

    def _observe_cache(self) -> None:
        for kind, count in self.world.counts().items():
            self.metrics.cache_objects.labels(kind).set(count)

    def _announce_config_error(self, error: str) -> None:
        # The event goes on the scheduler's own pod (downward API), where operators look.
        namespace = os.environ.get("POD_NAMESPACE")
        name = os.environ.get("POD_NAME")
        if namespace and name:
            self.recorder.record(
                ObjectRef("Pod", "v1", namespace, name, os.environ.get("POD_UID", "")),
                "Warning",
                "InvalidConfig",
                error,
            )

    async def _serve_metrics(self) -> web.AppRunner:
        def probe(verdict: Verdict) -> web.Response:
            return web.Response(status=200 if verdict.ok else 503, text=verdict.text())

        async def healthz(_: web.Request) -> web.Response:
            return probe(self.health.liveness())

        async def readyz(_: web.Request) -> web.Response:
            return probe(self.health.readiness())

        routes = {
            "/metrics": metrics_handler(self.metrics.registry),
            "/healthz": healthz,
            "/readyz": readyz,
        }
        return await serve(self.options.metrics_address, routes)

    # Start and stop ----------------------------------------------------------
    async def _ensure_default_queue(self) -> None:
        name = self.options.default_queue
        failures = 0
        while True:
            try:
                await create_queue_if_missing(self.client, name)
                queue = await self.client.get_json(paths.queue(name))
                if not (queue.get("status") or {}).get("state"):
                    await self.client.patch(
                        paths.queue(name) + "/status", {"status": {"state": "Open"}}
                    )
                return
            except (StatusError, TransportError) as error:
                failures += 1
                log.warning("default queue %s not ready: %s", name, error)
                await asyncio.sleep(min(30.0, 0.5 * failures))

    async def _shutdown(self, background: list[asyncio.Task[Any]], runner: web.AppRunner) -> None:
        log.info("shutting down: finishing binds in flight")
        try:
            await asyncio.wait_for(self.binder.drain(), timeout=20)
            await asyncio.wait_for(self.writer.drain(), timeout=5)
            await asyncio.wait_for(self.recorder.drain(), timeout=5)
        except TimeoutError:
            log.warning("shutdown: some writes did not finish in time")
        await self.binder.close()
        if self.elector is not None:
            await self.elector.release()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        await self.client.close()
        await runner.cleanup()


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)?$")


def parse_duration(text: str) -> float:
    """Seconds from "1s", "200ms", "0.5" or "2m"."""
    match = _DURATION.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 1s or 200ms")
    value = float(match[1])
    unit = match[2] or "s"
    seconds = value / 1000 if unit == "ms" else value * 60 if unit == "m" else value
    if seconds <= 0:
        raise argparse.ArgumentTypeError("the schedule period must be more than 0")
    return seconds


def add_parser(subparsers: Any) -> None:
    """The `muster scheduler` subcommand."""
    parser = subparsers.add_parser("scheduler", help="run the scheduler against an API server")
    parser.add_argument("--kubeconfig", help="kubeconfig file (in-cluster config when absent)")
    parser.add_argument(
        "--scheduler-name",
        action="append",
        dest="scheduler_names",
        help="a schedulerName to serve (repeatable; default muster; add volcano for KubeRay)",
    )
    parser.add_argument(
        "--scheduler-conf", type=Path, help="scheduler config YAML (reloaded on change)"
    )
    parser.add_argument("--schedule-period", type=parse_duration, default=1.0, help="default 1s")
    parser.add_argument("--default-queue", default=DEFAULT_QUEUE)
    parser.add_argument("--metrics-address", default=":8080")
    parser.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="elect one active replica through a Lease (default on)",
    )
    parser.add_argument("--lock-namespace", default="muster-system")
    parser.add_argument("--lock-name", default="muster-scheduler")
    parser.add_argument("--kube-api-qps", type=float, default=0.0, help="0 means unlimited")
    parser.add_argument("--kube-api-burst", type=int, default=100)
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("--log-level", default="info")
    parser.set_defaults(func=run_scheduler)


def run_scheduler(args: argparse.Namespace) -> int:
    """Entry point of `muster scheduler`."""
    configure(args.log_format, args.log_level)
    options = SchedulerOptions(
        kubeconfig=args.kubeconfig,
        scheduler_names=tuple(args.scheduler_names or [DEFAULT_SCHEDULER_NAME]),
        scheduler_conf=args.scheduler_conf,
        schedule_period=args.schedule_period,
        default_queue=args.default_queue,
        metrics_address=args.metrics_address,
        leader_elect=args.leader_elect,
        lock_namespace=args.lock_namespace,
        lock_name=args.lock_name,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
    )

    async def main() -> int:
        return await SchedulerProcess(options).run()

    return asyncio.run(main())
