"""`muster demo`, the README's first command: it runs, reports, and leaves nothing behind."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.skipif(
    bool(os.environ.get("MUSTER_E2E_KUBECONFIG")),
    reason="the demo brings its own simulated cluster",
)
def test_demo_shares_by_weight_explains_a_waiting_gang_scales_up_gives_gpus_and_cleans_up() -> None:
    env = {**os.environ, "COLUMNS": "250"}
    done = subprocess.run(
        [sys.executable, "-m", "scheduler.cli", "demo", "--timeout", "60"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
    # Weights 1 and 3 under competing demand split the queues 1:3.
    assert "team-b : team-a = 3.00 : 1" in out, out
    # The gang no node can hold waits, in its PodGroup condition's words.
    assert "0/20 nodes are available: 20 Insufficient cpu." in out, out
    assert "no gang is partly placed." in out, out
    # A gang no node can hold gets all its nodes at once from sim's stand-in autoscaler.
    assert "elastic: muster asked the cluster autoscaler for all 4 pods at once" in out, out
    assert "it added large-0000, large-0001, large-0002, large-0003 and the gang runs" in out, out
    # The gang whose pods fit no node group is asked for too, and gets no node for part of it.
    assert "the autoscaler found no capacity for all 4 pods yet (CapacityIsNotFound" in out, out
    # A GPU gang gets a device per pod on its pod's node (DRA); the next waits for devices.
    assert "train-gpu: placed whole" in out, out
    placed = [line for line in out.splitlines() if "train-gpu-worker-" in line]
    assert len(placed) == 8, out
    for line in placed:
        _, _, node, device, _ = (cell.strip() for cell in line.split("\u2502"))
        assert device.startswith(f"{node}/gpu-"), line
    assert len({line.split("\u2502")[3] for line in placed}) == 8, out
    assert "more-gpu waits: 2/2 tasks in gang unschedulable" in out, out
    assert "cannot allocate all claims" in out, out
    assert "Metrics were served at http://127.0.0.1:" in out, out
    assert processes_mentioning("muster-demo-") == [], "the demo left processes behind"


def processes_mentioning(text: str) -> list[str]:
    """Command lines of running processes that contain `text` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command:
            found.append(command)
    return found
