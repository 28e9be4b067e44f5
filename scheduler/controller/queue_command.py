"""`muster queue open|close NAME`: ask the controller to open or close a queue.

The request is the Queue's `muster.dev/queue-state` annotation; the
controller moves `status.state` (Closing until the queue's admitted
PodGroups finish, then Closed; or Open at once).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from scheduler.api import paths
from scheduler.controller.queues import STATE_ANNOTATION
from scheduler.kube.client import KubeClient
from scheduler.kube.config import load_configuration
from scheduler.kube.errors import NotFound, StatusError, TransportError


async def request_state(kubeconfig: str | None, name: str, state: str) -> str:
    """Annotate the queue with the state asked for; its status.state as it stands now."""
    async with KubeClient(load_configuration(kubeconfig)) as client:
        await client.patch(
            paths.queue(name), {"metadata": {"annotations": {STATE_ANNOTATION: state}}}
        )
        queue = await client.get_json(paths.queue(name))
    return str((queue.get("status") or {}).get("state") or "Open")


def add_parser(subparsers: Any) -> None:
    """The `muster queue` subcommand."""
    parser = subparsers.add_parser("queue", help="open or close a queue")
    parser.add_argument("--kubeconfig", help="kubeconfig file (in-cluster config when absent)")
    actions = parser.add_subparsers(dest="action", required=True)
    for action, help_text in (
        ("open", "admit new PodGroups again"),
        ("close", "admit no new PodGroups; Closed once the admitted ones finish"),
    ):
        sub = actions.add_parser(action, help=help_text)
        sub.add_argument("name", help="the Queue")
        sub.add_argument("--kubeconfig", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Entry point of `muster queue`."""
    state = "Open" if args.action == "open" else "Closed"
    try:
        current = asyncio.run(request_state(args.kubeconfig, args.name, state))
    except NotFound:
        print(f"queue {args.name} does not exist", file=sys.stderr)
        return 1
    except (StatusError, TransportError) as error:
        print(f"queue {args.name}: {error}", file=sys.stderr)
        return 1
    print(f"queue {args.name}: {state} requested; state now {current}")
    return 0
