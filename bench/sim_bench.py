"""Throughput of muster sim: binding POSTs per second and watch events per second.

Run: .venv/bin/python bench/sim_bench.py [--pods 5000] [--concurrency 64] [--nodes 100]

The sim runs as a separate `muster sim` process (as the scheduler benchmarks use it), so the
client's CPU does not share the server's interpreter. Targets: >= 2,000 binds/s and
>= 5,000 watch events/s to one watcher.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import yaml

NS = "bench"


def start_sim(workdir: Path, nodes: int) -> tuple[subprocess.Popen[bytes], str]:
    """Start `muster sim` on a free port; return the process and its URL."""
    kubeconfig = workdir / "sim.kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "scheduler.cli",
            "sim",
            "--port",
            "0",
            "--nodes",
            str(nodes),
            "--kubeconfig-out",
            str(kubeconfig),
            "--log-level",
            "WARNING",
            "--history-size",
            "100000",
        ],
    )
    deadline = time.monotonic() + 30
    while not kubeconfig.exists():
        if time.monotonic() > deadline or process.poll() is not None:
            raise SystemExit("muster sim did not start")
        time.sleep(0.05)
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    return process, str(server)


def pod(name: str) -> bytes:
    """A small pod manifest, pre-encoded."""
    return msgspec.json.encode(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "schedulerName": "muster",
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox:1.36",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                    }
                ],
            },
        }
    )


async def run_concurrently(count: int, concurrency: int, make: Any) -> float:
    """Run make(i) for i in range(count) with `concurrency` workers; return elapsed seconds."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(count):
        queue.put_nowait(index)

    async def worker() -> None:
        while not queue.empty():
            await make(queue.get_nowait())

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - began


async def count_watch(
    session: aiohttp.ClientSession, url: str, expected: int, times: list[float]
) -> int:
    """Read a watch stream until `expected` events arrived; record first and last arrival."""
    seen = 0
    async with session.get(url, timeout=aiohttp.ClientTimeout(total=600)) as response:
        async for _line in response.content:
            seen += 1
            now = time.perf_counter()
            if seen == 1:
                times.append(now)
            if seen >= expected:
                times.append(now)
                break
    return seen


async def bench(url: str, pods: int, concurrency: int, nodes: int) -> dict[str, float]:
    """Create pods, bind them all while one watcher counts events, then replay the history."""
    connector = aiohttp.TCPConnector(limit=concurrency + 4, keepalive_timeout=60)
    json_headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(url, connector=connector) as session:
        await session.post(
            "/api/v1/namespaces",
            data=msgspec.json.encode({"metadata": {"name": NS}}),
            headers=json_headers,
        )
        async with session.get(f"/api/v1/namespaces/{NS}/pods?limit=1") as response:
            start_rv = (await response.json())["metadata"]["resourceVersion"]

        async def create(index: int) -> None:
            async with session.post(
                f"/api/v1/namespaces/{NS}/pods", data=pod(f"p-{index}"), headers=json_headers
            ) as response:
                await response.read()
                assert response.status == 201, response.status

        create_s = await run_concurrently(pods, concurrency, create)

        async with session.get(f"/api/v1/namespaces/{NS}/pods?limit=1") as response:
            created_rv = (await response.json())["metadata"]["resourceVersion"]
        # each bind is one MODIFIED event; the kubelet adds one more per pod (Running)
        live_times: list[float] = []
        watcher = asyncio.create_task(
            count_watch(
                session,
                f"/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion={created_rv}",
                2 * pods,
                live_times,
            )
        )
        await asyncio.sleep(0.2)
        bindings = [
            msgspec.json.encode(
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": f"p-{i}"},
                    "target": {"kind": "Node", "name": f"sim-node-{i % nodes:04d}"},
                }
            )
            for i in range(pods)
        ]

        async def bind(index: int) -> None:
            async with session.post(
                f"/api/v1/namespaces/{NS}/pods/p-{index}/binding",
                data=bindings[index],
                headers=json_headers,
            ) as response:
                await response.read()
                assert response.status == 201, response.status

        bind_s = await run_concurrently(pods, concurrency, bind)
        binds_done = time.perf_counter()
        live_events = await watcher
        live_s = live_times[-1] - live_times[0]

        # replay: one watcher reads the whole history from before the creates at full speed
        replay_times: list[float] = []
        replay_began = time.perf_counter()
        replayed = await count_watch(
            session,
            f"/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion={start_rv}",
            3 * pods,
            replay_times,
        )
        replay_s = replay_times[-1] - replay_began
    return {
        "pods": pods,
        "creates_per_s": pods / create_s,
        "binds_per_s": pods / bind_s,
        "live_watch_events": live_events,
        "live_watch_events_per_s": live_events / live_s,
        # how long after the last bind the watcher had every event (includes the kubelet's
        # start delay): the watcher keeping up with writers, not waiting on them
        "watch_lag_after_last_bind_ms": (live_times[-1] - binds_done) * 1000,
        "replayed_watch_events": replayed,
        "replay_watch_events_per_s": replayed / replay_s,
    }


def main() -> int:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--url", help="use a running sim instead of starting one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sim-bench-") as tmp:
        process = None
        url = args.url
        if url is None:
            process, url = start_sim(Path(tmp), args.nodes)
        try:
            result = asyncio.run(bench(url, args.pods, args.concurrency, args.nodes))
        finally:
            if process is not None:
                process.terminate()
                process.wait(timeout=20)
    for key, value in result.items():
        print(f"{key:28s} {value:12,.0f}")
    ok = result["binds_per_s"] >= 2000 and result["live_watch_events_per_s"] >= 5000
    print("targets (2,000 binds/s, 5,000 watch events/s):", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
