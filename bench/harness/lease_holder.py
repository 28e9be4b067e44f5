"""A stand-in old leader for bench/failover_bench.py: it holds the scheduler's Lease with
muster's own LeaderElector (client-go's rules: renew every 2 s, a 15 s lease) and schedules
nothing, until it is killed.

    python -m harness.lease_holder --kubeconfig FILE --namespace NS --name NAME --identity ID

It prints "leading" once it holds the Lease. A leader that schedules nothing is what lets the
bench put a whole backlog in front of a warm standby at the moment the leader dies; the
standby sees only the Lease, as it would see a real leader's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration
from scheduler.kube.lease import LeaderElector


async def hold(kubeconfig: str, namespace: str, name: str, identity: str) -> None:
    """Campaign for the Lease and keep it until killed; say when it is held."""
    async with KubeClient(load_configuration(kubeconfig)) as client:
        elector = LeaderElector(
            client,
            namespace=namespace,
            name=name,
            identity=identity,
            on_change=lambda leading: print("leading" if leading else "lost", flush=True),
        )
        await elector.run()


def main(argv: list[str] | None = None) -> int:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--identity", default="old-leader")
    args = parser.parse_args(argv)
    asyncio.run(hold(args.kubeconfig, args.namespace, args.name, args.identity))
    return 0


if __name__ == "__main__":
    sys.exit(main())
