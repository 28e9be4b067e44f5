"""What `muster scheduler` is told on its command line, and the sizes of its lanes."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.api.partition import NodePartition
from scheduler.cache.wiring import LIST_PAGE_SIZE
from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration

# The bind lane: its connections, and (by default; --bind-pipeline-depth) the binds written
# on each before their answers come (kube/pipeline.py); the binder has one worker per bind
# in flight. The Go server works one request of a connection at a time: connections keep it
# busy, depth saves muster's CPU. Two in flight on each binds as fast as four against
# kube-apiserver with less of muster's CPU (docs/performance.md has the measurement).
BIND_CONNECTIONS = 32
BIND_DEPTH = 2
# Connections of the event lane, one per event writer (the recorder's workers).
EVENT_CONNECTIONS = 4
# Every how many sessions the writers drop what they keep about objects that are gone.
FORGET_EVERY = 100
# The pending pods the first session of a leader's term is offered at most, in whole gangs
# (--first-session-pods; cache/bounded.py): a session over 10,000 pending pods takes about
# 100 ms, where one over a backlog of 100,000 takes seconds, and a takeover's first bind
# waits for it.
FIRST_SESSION_PODS = 10_000


@dataclass
class SchedulerOptions:
    """Everything `muster scheduler` is told on its command line."""

    kubeconfig: str | None = None
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER_NAME,)
    # PodGroups with no pods and no muster.dev/scheduler-name annotation (cache/ownership.py)
    claim_podgroups_without_pods: bool = True
    scheduler_conf: Path | None = None
    schedule_period: float = 1.0
    default_queue: str = DEFAULT_QUEUE
    metrics_address: str = ":8080"
    leader_elect: bool = True
    lock_namespace: str = "muster-system"
    lock_name: str = "muster-scheduler"
    qps: float = 0.0
    burst: int = 100
    list_page_size: int = LIST_PAGE_SIZE
    bind_depth: int = BIND_DEPTH
    # The bound of a leader's first session (0: none).
    first_session_pods: int = FIRST_SESSION_PODS
    # --node-selector: the nodes and queues this instance owns (None: all of them).
    partition: NodePartition | None = None
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")


def connect_lanes(options: SchedulerOptions) -> tuple[KubeClient, KubeClient, KubeClient]:
    """The API server's client and its bind and event lanes (connection pools of their own;
    the rate limit is shared): a bind never waits for a connection behind an event, a
    status write or a watch, and events never take more than their few connections."""
    client = KubeClient(
        load_configuration(options.kubeconfig), qps=options.qps, burst=options.burst
    )
    binds = client.lane(BIND_CONNECTIONS, depth=options.bind_depth)
    # Events on the bind lane's lean transport, one at a time per connection (no
    # pipelining to ask of a proxy), as cheap in CPU as a bind. Safe to send twice, as the
    # transport may: an event's name is fixed before it is sent, and a second create of it
    # is a 409, taken as done.
    events = client.lane(EVENT_CONNECTIONS, depth=1)
    return client, binds, events
