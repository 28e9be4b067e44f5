"""A scheduler process built but never connected: its kubeconfig names a server that nothing
listens on (port 9), enough to look at how the process is wired."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scheduler.server import SchedulerOptions, SchedulerProcess

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def offline_process(tmp_path: Path, **options: Any) -> SchedulerProcess:
    """A SchedulerProcess (no leader election) with `options` over the defaults."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    return SchedulerProcess(
        SchedulerOptions(kubeconfig=str(kubeconfig), leader_elect=False, **options)
    )
