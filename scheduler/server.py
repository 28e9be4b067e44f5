"""`muster scheduler`'s process: the run loop, leadership and shutdown of one replica.

Reflectors keep a World current (scheduler/cache/wiring.py); every period (measured
from the end of the previous cycle) the leader takes a snapshot, runs a session over
it, and hands its result to the effects (scheduler/effects/apply.py) and the metrics.
Standbys keep their cache warm. The command line is scheduler/scheduler_cli.py.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import time
from typing import Any

from scheduler import build, gc_policy
from scheduler.cache.reflector import any_broken
from scheduler.cache.wiring import world_reflectors
from scheduler.cache.world import World
from scheduler.config_source import ConfigSource
from scheduler.effects.apply import Effects
from scheduler.effects.fence import LeaderFence
from scheduler.effects.queues import ensure_default_queue
from scheduler.effects.recorder import EventRecorder, own_pod
from scheduler.endpoints import EndpointThread, scheduler_routes, serve_in_thread
from scheduler.engine import schedule
from scheduler.framework.decisions import SessionResult
from scheduler.framework.settled import settles
from scheduler.health import Health
from scheduler.heap import HeapTrimmer, glibc, pin_mmap_threshold
from scheduler.kube.lease import LeaderElector
from scheduler.metrics import Metrics
from scheduler.process_options import (
    BIND_CONNECTIONS,
    EVENT_CONNECTIONS,
    FORGET_EVERY,
    SchedulerOptions,
    connect_lanes,
)
from scheduler.session_gate import SessionGate, pause

log = logging.getLogger("muster.scheduler")


class SchedulerProcess:
    """One replica of the scheduler."""

    def __init__(self, options: SchedulerOptions) -> None:
        self.options = options
        self.metrics = Metrics()
        self.config = ConfigSource(options.scheduler_conf)
        libc = glibc()
        pin_mmap_threshold(libc)
        self.heap = HeapTrimmer(libc, clock=time.monotonic)
        self.world = World(
            frozenset(options.scheduler_names),
            options.default_queue,
            claim_podgroups_without_pods=options.claim_podgroups_without_pods,
            partitioned=options.partition is not None,
        )
        self.client, self.bind_client, self.event_client = connect_lanes(options)
        # What every write of the leader's asks as it is sent (effects/fence.py).
        self.fence = LeaderFence(self.is_leader)
        self.recorder = EventRecorder(
            self.event_client, self.metrics, workers=EVENT_CONNECTIONS, fence=self.fence
        )
        # Read by the metrics thread: a length, read whole.
        self.metrics.events_queued.set_function(self.recorder.queued)
        # Where config errors are announced: the scheduler's own pod, where operators look.
        self.own_pod = own_pod(os.environ)
        self.elector: LeaderElector | None = None
        if options.leader_elect:
            self.elector = LeaderElector(
                self.client,
                namespace=options.lock_namespace,
                name=options.lock_name,
                identity=options.identity,
                on_change=lambda leading: self.metrics.is_leader.set(1 if leading else 0),
            )
        self.effects = Effects.connected(
            self.client,
            self.world,
            self.recorder,
            self.metrics,
            fence=self.fence,
            bind_client=self.bind_client,
            bind_workers=BIND_CONNECTIONS * options.bind_depth,
        )
        self.reflectors = world_reflectors(
            self.client,
            self.world,
            self.metrics,
            page_size=options.list_page_size,
            partition=options.partition,
        )
        self.health = Health(
            options.schedule_period, self.reflectors, time.monotonic, self.effects.progress
        )
        self.gate = SessionGate()
        self.stopping = asyncio.Event()
        self.lease_taken = self.elector.taken if self.elector else asyncio.Event()
        self._last_cycle_error = ""
        self._sessions_applied = 0

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
        endpoints = await serve_in_thread(
            self.options.metrics_address, scheduler_routes(self.metrics.registry, self.health)
        )
        # tasks that must run for the process's whole life: /healthz watches them
        background: list[asyncio.Task[Any]] = [
            loop.create_task(r.run(), name=f"reflector {r.name}") for r in self.reflectors
        ]
        if self.elector is not None:
            background.append(loop.create_task(self.elector.run(), name="leader election"))
        self.health.watch_tasks(background)
        background.append(
            loop.create_task(ensure_default_queue(self.client, self.options.default_queue))
        )
        build.log_core(log)
        try:
            await gc_policy.wait_loaded((r.synced for r in self.reflectors), self.stopping)
            frozen = gc_policy.settle()
            log.info(
                "cache synced; scheduling as %s; %d objects loaded, kept out of the "
                "collector's traversals; young generation every %d allocations",
                ", ".join(self.options.scheduler_names),
                frozen,
                gc.get_threshold()[0],
            )
            await self._loop()
        finally:
            await self._shutdown(background, endpoints)
        return 0

    async def _loop(self) -> None:
        period = self.options.schedule_period
        while not self.stopping.is_set():
            before = self.config.config
            error = self.config.reload_if_changed()
            if error:
                self._announce_config_error(error)
            reloaded = self.config.config is not before
            if not self.is_leader():
                self.gate.forget()
                self.health.cycle_finished()
            elif any_broken(self.reflectors):
                self.metrics.cycles.labels("watch_broken").inc()
                self.health.cycle_finished()
            elif self.gate.needs_session(
                generation=self.world.generation,
                status_generation=self.world.status_generation,
                reloaded=reloaded,
                now=time.monotonic(),
            ):
                self._session()
            else:
                self.metrics.cycles.labels("skipped").inc()
                self.health.cycle_finished()
            self.metrics.observe_cache(self.world.counts())
            self.metrics.tasks.set(len(asyncio.all_tasks()))
            self.heap.trim_if_due()
            # A session that left gangs to the next: the next goes once its first binds are
            # answered (they leave before it holds the loop), not a period later.
            sooner = self.effects.first_bind_answered() if self.gate.due_now else None
            await pause(period, self.stopping, self.lease_taken, sooner)

    def _session(self) -> None:
        # The generations the session sees: changes that arrive while it runs get the next.
        generation, status_generation = self.world.generation, self.world.status_generation
        began = time.monotonic()
        try:
            self.cycle(
                pending_pods=self.gate.pending_pods_bound(
                    self.options.first_session_pods, may_leave_gangs=settles(self.config.config)
                )
            )
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
        ended = time.monotonic()
        self.gate.session_ran(
            generation=generation,
            status_generation=status_generation,
            now=ended,
            seconds=ended - began,
            deferred=bool(self.world.deferred),
        )
        self._last_cycle_error = ""
        self.metrics.cycles.labels("session").inc()
        self.health.cycle_finished()

    def cycle(self, pending_pods: int = 0) -> SessionResult:
        """One session: snapshot, schedule, apply (then observe it on the metrics); with
        `pending_pods`, a bounded one (cache/bounded.py)."""
        start = time.perf_counter()
        # Decisions never read a clock: the session's "now" comes with its snapshot (the
        # core reads perf_counter only to time its actions and plugins for metrics).
        now = time.time()
        with gc_policy.paused():
            snapshot = self.world.snapshot(now, pending_pods=pending_pods)
            result = schedule(snapshot, self.config.config, copy=False)
            decided = time.perf_counter()
            if not self.is_leader():
                return result  # leadership went during the session: the new leader decides
            self.world.record_session(result, now)
            self.effects.apply(result)
        self._sessions_applied += 1
        if self._sessions_applied % FORGET_EVERY == 0:
            self.effects.forget_gone(self.world.live.jobs.keys(), self.world.tasks.keys())
        self.metrics.observe_session(
            result, decide_seconds=decided - start, total_seconds=time.perf_counter() - start
        )
        return result

    def _announce_config_error(self, error: str) -> None:
        if self.own_pod is not None:
            # The process's own: a standby announces its config too.
            self.recorder.record(self.own_pod, "Warning", "InvalidConfig", error, as_leader=False)

    # Stop --------------------------------------------------------------------
    async def _shutdown(
        self, background: list[asyncio.Task[Any]], endpoints: EndpointThread
    ) -> None:
        log.info("shutting down: finishing binds in flight")
        elector = self.elector
        await self.effects.finish(
            None if elector is None else lambda answered: elector.release(give_up=answered)
        )
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        for client in (self.bind_client, self.event_client, self.client):
            await client.close()
        endpoints.stop()
