"""HyperNodes (topology.volcano.sh/v1alpha1): named network domains of nodes, in tiers.

A HyperNode of tier 1 usually stands for a rack or an NVLink domain, tier 2 for a spine
or a zone; its members are Nodes or lower-tier HyperNodes, chosen by exact name, by a
regular expression over names, or by a label selector (Node members only, as Volcano)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from scheduler.api.task import LabelSelector

MemberType = Literal["Node", "HyperNode"]


@dataclass(frozen=True, slots=True)
class MemberSelector:
    """One `spec.members` entry: exactly one of `exact_name`, `pattern` (a full-match
    regular expression) and `labels` is set, as the CRD's validation requires."""

    type: MemberType
    exact_name: str | None = None
    pattern: str | None = None
    labels: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class HyperNodeInfo:
    """A HyperNode as sessions read it: its tier (1 is the closest), and its members."""

    name: str
    tier: int
    members: tuple[MemberSelector, ...] = ()
    tier_name: str = ""
