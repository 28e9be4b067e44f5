"""The two baselines muster is compared with, each run as its own process.

    python -m harness.baselines ceiling|naive --kubeconfig K --namespace NS --expect M

ceiling: posts a binding for every pending pod, round-robin over the nodes, with no decision and
high concurrency, on pipelined connections as muster's bind lane sends them (32 connections,
4 binds in flight on each, twice muster's default depth): the most any scheduler could bind
through that API server.
naive: lists pending pods and nodes, places one pod at a time first-fit with its own accounting,
and posts each bind and waits for it before the next: a one-pod-at-a-time scheduler.
Both loop (re-listing) until `--expect` pods are bound, for steady-arrival runs.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
from pathlib import Path
from typing import Any

import msgspec

from harness.cluster import client
from harness.naive import first_fit, free_nodes, pod_requests
from scheduler.kube.client import KubeClient


async def list_items(kube: KubeClient, path: str) -> list[dict[str, Any]]:
    """The items of a list call."""
    items: list[dict[str, Any]] = msgspec.json.decode(await kube.request("GET", path))["items"]
    return items


async def pending(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    """Pods of the namespace with no node yet, oldest name first (creation order)."""
    pods = await list_items(kube, f"/api/v1/namespaces/{namespace}/pods")
    waiting = [p for p in pods if not p.get("spec", {}).get("nodeName")]
    return sorted(waiting, key=lambda p: _order(str(p["metadata"]["name"])))


def _order(name: str) -> tuple[str, int]:
    group, _, member = name.rpartition("-")
    return group, int(member) if member.isdigit() else 0


async def ceiling(kube: KubeClient, namespace: str, expect: int, concurrency: int) -> int:
    """Bind every pending pod round-robin over the nodes; return how many binds were posted."""
    names = [str(n["metadata"]["name"]) for n in await list_items(kube, "/api/v1/nodes")]
    nodes = itertools.cycle(sorted(names))
    posted = 0
    while posted < expect:
        pods = await pending(kube, namespace)
        if not pods:
            await asyncio.sleep(0.05)
            continue
        targets = [(p["metadata"], next(nodes)) for p in pods]
        await bind_all(kube, namespace, targets, concurrency)
        posted += len(targets)
    return posted


async def bind_all(
    kube: KubeClient, namespace: str, targets: list[tuple[dict[str, Any], str]], concurrency: int
) -> None:
    """Post every (pod metadata, node) binding with `concurrency` in flight."""
    queue: asyncio.Queue[tuple[dict[str, Any], str]] = asyncio.Queue()
    for target in targets:
        queue.put_nowait(target)

    async def worker() -> None:
        while not queue.empty():
            meta, node = queue.get_nowait()
            await kube.bind(namespace, meta["name"], meta.get("uid", ""), node)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def naive(kube: KubeClient, namespace: str, expect: int) -> int:
    """First-fit, one pod at a time, each bind awaited; return how many were bound."""
    bound = 0
    while bound < expect:
        pods = await pending(kube, namespace)
        if not pods:
            await asyncio.sleep(0.05)
            continue
        nodes = await list_items(kube, "/api/v1/nodes")
        everything = await list_items(kube, "/api/v1/pods")
        free = free_nodes(nodes, everything)
        placed = 0
        for pod in pods:
            node = first_fit(free, *pod_requests(pod))
            if node is None:
                continue
            meta = pod["metadata"]
            await kube.bind(namespace, meta["name"], meta.get("uid", ""), node.name)
            placed += 1
        bound += placed
        if not placed:
            await asyncio.sleep(0.2)  # nothing fits now: wait for room, as a scheduler would
    return bound


# Binds in flight on each of the ceiling's pipelined connections.
CEILING_DEPTH = 4


def main() -> int:
    """Run one baseline to completion."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["ceiling", "naive"])
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=128)
    args = parser.parse_args()

    async def run() -> int:
        async with client(args.kubeconfig, connections=args.concurrency) as kube:
            if args.mode == "ceiling":
                # The cheapest binds muster knows how to send (kube/pipeline.py), so that
                # the client is never what limits the ceiling.
                depth = CEILING_DEPTH
                async with kube.lane(max(1, args.concurrency // depth), depth=depth) as lane:
                    return await ceiling(lane, args.namespace, args.expect, args.concurrency)
            return await naive(kube, args.namespace, args.expect)

    done = asyncio.run(run())
    print(f"{args.mode}: {done} binds", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
