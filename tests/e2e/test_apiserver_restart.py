"""The API server restarts in the middle of a backlog: connections cut, then 403s while its
authorizer warms up, 404s on the CRDs' resources, 410s for the watches. Every gang, sent
before or after, is placed whole within 30 s of the server being ready, and none twice.

Against muster sim always (POST /sim/restart); against a real server when
MUSTER_E2E_APISERVER_RESTART names a command that restarts it and returns once it is
ready again (with MUSTER_E2E_KUBECONFIG)."""

from __future__ import annotations

import os
import shlex
import subprocess
import time

import pytest

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import BindingLog, Cluster, bound, make_gang, wait_for

RESTART_ENV = "MUSTER_E2E_APISERVER_RESTART"
# How soon after the server is ready every gang must be placed whole.
PLACED_WITHIN = 30.0
GANG_SIZE = 3
BEFORE, AFTER = 8, 4


def restart_api_server(cluster: Cluster) -> float:
    """Restart the API server under test; the monotonic time it was ready again."""
    if cluster.sim is not None:
        cluster.sim.restart(downtime=2)
        wait_for(lambda: not cluster.ready(), 5, interval=0.02, message="sim going down")
    else:
        command = os.environ.get(RESTART_ENV)
        if not command:
            pytest.skip(f"{RESTART_ENV} names no command that restarts the API server")
        subprocess.run(shlex.split(command), check=True, timeout=300, capture_output=True)
    wait_for(cluster.ready, 120, interval=0.1, message="the API server ready again")
    return time.monotonic()


def whole(cluster: Cluster, namespace: str, names: list[str]) -> list[str]:
    """The gangs of `names` not yet bound to their last member."""
    placements = cluster.placements(namespace)
    return [
        name
        for name in names
        if len(bound(placements, [f"{name}-{i}" for i in range(GANG_SIZE)])) < GANG_SIZE
    ]


@pytest.mark.timeout(240)
@pytest.mark.nodes(4, "4")
def test_every_gang_is_placed_whole_within_30s_of_a_restarted_api_server_being_ready(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    scheduler = start_scheduler(period=1.0)
    before = [f"before-{g}" for g in range(BEFORE)]
    after = [f"after-{g}" for g in range(AFTER)]
    with BindingLog(cluster, namespace) as log:
        for name in before:
            cluster.submit(namespace, *make_gang(name, GANG_SIZE, cpu="200m"))
        ready = restart_api_server(cluster)
        for name in after:
            cluster.submit(namespace, *make_gang(name, GANG_SIZE, cpu="200m"))
        wait_for(
            lambda: not whole(cluster, namespace, before + after),
            PLACED_WITHIN - (time.monotonic() - ready),
            interval=0.2,
            message=lambda: (
                f"every gang whole within {PLACED_WITHIN:g}s of the server being ready; "
                f"not yet: {whole(cluster, namespace, before + after)}\n"
                f"{cluster.describe(namespace)}"
            ),
        )
        assert log.double_binds() == {}
    assert scheduler.process.alive, "the scheduler exited over the restart"
    failures = scheduler.metrics().series("muster_watch_failures_total")
    assert sum(value for _, value in failures) > 0, "the restart was not seen by the watches"
    wait_for(scheduler.ready, 30, message="the scheduler ready again")
