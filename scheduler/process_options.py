"""What `muster scheduler` is told on its command line, and the sizes of its lanes."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from scheduler.api.names import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from scheduler.api.partition import NodePartition
from scheduler.cache.wiring import LIST_PAGE_SIZE

# The bind lane: its connections, and (by default; --bind-pipeline-depth) the binds written
# on each before their answers come (kube/pipeline.py); the binder has one worker per bind
# in flight. The Go server works one request of a connection at a time: connections keep it
# busy (on kube-apiserver 1.23, 16 bound at 0.79 of the ceiling, 32 at 0.90), depth saves
# muster's CPU. Two in flight on each, not four: on kube-apiserver 1.19 depth 2 bound 10,000
# pods at 0.96 of the ceiling, 4 at 0.89 and 1 at 0.93 (3 repeats each, one interleaved
# run), with less CPU than 4; on muster sim 2 and 4 are alike (0.86, 0.87).
BIND_CONNECTIONS = 32
BIND_DEPTH = 2
# Connections of the event lane, one per event writer (the recorder's workers).
EVENT_CONNECTIONS = 4
# Every how many sessions the writers drop what they keep about objects that are gone.
FORGET_EVERY = 100


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
    # --node-selector: the nodes and queues this instance owns (None: all of them).
    partition: NodePartition | None = None
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")
