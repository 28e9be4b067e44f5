"""Two replicas with leader election: one binds, and the other takes over when it dies."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import LOCK_NAMESPACE, StartScheduler
from tests.e2e.harness import Cluster, Scheduler, bound, make_gang, wait_for

LEASE_SECONDS = 15


def gang_bound(cluster: Cluster, namespace: str, name: str, size: int) -> bool:
    names = [f"{name}-{i}" for i in range(size)]
    return len(bound(cluster.placements(namespace), names)) == size


def two_replicas(
    cluster: Cluster, start_scheduler: StartScheduler
) -> tuple[Scheduler, Scheduler, str]:
    """Two replicas with leader election, once exactly one leads: leader, standby, holder."""
    replicas = [start_scheduler(leader_elect=True) for _ in range(2)]

    def the_leader() -> Scheduler | None:
        leading = [r for r in replicas if r.is_leader()]
        return leading[0] if len(leading) == 1 else None

    leader = wait_for(the_leader, 20, message="exactly one replica leading")
    standby = next(r for r in replicas if r is not leader)
    holder = wait_for(lambda: cluster.lease_holder(LOCK_NAMESPACE), 5, message="a Lease holder")
    return leader, standby, holder


@pytest.mark.timeout(90)
@pytest.mark.nodes(2, "4")
def test_only_the_leader_binds_and_the_standby_takes_over_within_the_lease(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    leader, standby, holder = two_replicas(cluster, start_scheduler)

    cluster.submit(namespace, *make_gang("first", 3, cpu="1"))
    wait_for(
        lambda: gang_bound(cluster, namespace, "first", 3),
        timeout=10,
        message=lambda: f"gang first bound\n{cluster.describe(namespace)}",
    )
    wait_for(lambda: leader.binds() == 3, 5, message="the leader counting its 3 binds")
    assert standby.binds() == 0, "the standby bound pods"
    assert not standby.is_leader()
    assert standby.ready(), "a standby is ready: its cache is warm"

    leader.process.kill()
    killed = time.monotonic()
    cluster.submit(namespace, *make_gang("second", 3, cpu="1"))
    wait_for(
        lambda: gang_bound(cluster, namespace, "second", 3),
        timeout=LEASE_SECONDS + 10,
        interval=0.1,
        message=lambda: f"gang second bound by the new leader\n{cluster.describe(namespace)}",
    )
    took_over = time.monotonic() - killed
    assert took_over <= LEASE_SECONDS + 10, f"took over after {took_over:.1f}s"
    assert standby.is_leader()
    # the pods show their node as soon as the server stores the binding; the counter moves
    # when the standby reads the answer, a moment later
    wait_for(lambda: standby.binds() == 3, 5, message="the standby counting its 3 binds")
    assert cluster.lease_holder(LOCK_NAMESPACE) != holder


@pytest.mark.timeout(60)
@pytest.mark.nodes(2, "4")
def test_a_leader_stopped_with_sigterm_hands_over_within_3s(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    leader, standby, holder = two_replicas(cluster, start_scheduler)

    # the leader releases its lease on SIGTERM, and no renewal in flight takes it back
    assert leader.process.stop() == 0
    stopped = time.monotonic()
    cluster.submit(namespace, *make_gang("after", 3, cpu="1"))
    wait_for(
        lambda: gang_bound(cluster, namespace, "after", 3),
        timeout=10,
        interval=0.05,
        message=lambda: f"gang after bound by the standby\n{cluster.describe(namespace)}",
    )
    took_over = time.monotonic() - stopped
    assert took_over <= 3.0, f"the standby bound only {took_over:.1f}s after SIGTERM"
    # the pods show their node as soon as the server stores the binding; the counter moves
    # when the standby reads the answer, a moment later
    wait_for(lambda: standby.binds() == 3, 5, message="the standby counting its 3 binds")
    assert cluster.lease_holder(LOCK_NAMESPACE) not in (holder, "")
