"""NodePartition: the nodes, and the queues, one scheduler instance owns (`--node-selector`).

Several instances may share a cluster, each owning the nodes that carry one value of a
node-pool label and the queues labelled with the same value (KAI's scheduling shards
name them the same way): an instance lists and watches only those nodes and queues, and
places only the gangs of its queues, on its nodes, so no node's room is promised by two
instances. Gangs of other queues are not its business: it neither places nor reports them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A label's name part, and a label value: kube's qualified-name rule (63 at most).
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
# An optional prefix: a DNS subdomain (253 at most).
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_FORM = (
    "give it as KEY=VALUE, a label key (an optional DNS subdomain prefix and '/', then a name"
    " of at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or"
    " digit) and a value of the same form, e.g. muster.dev/pool=gpu"
)


@dataclass(frozen=True, slots=True)
class NodePartition:
    """The label key and value that mark an instance's nodes and queues."""

    key: str
    value: str

    @property
    def selector(self) -> str:
        """The labelSelector that lists the partition's nodes and queues."""
        return f"{self.key}={self.value}"


def parse_node_selector(text: str) -> NodePartition:
    """A NodePartition from "KEY=VALUE"; ValueError naming the value and the form."""
    key, sign, value = text.partition("=")
    if not sign or not _valid_key(key) or not _NAME.match(value):
        raise ValueError(f"--node-selector {text!r} is not a label selector muster takes: {_FORM}")
    return NodePartition(key, value)


def _valid_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        return False
    return bool(_NAME.match(name))
