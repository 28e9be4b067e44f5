"""networkTopology, as a PodGroup and each of its subGroupPolicy entries write it: how far
apart on the network the pods of a gang (or of one subgroup) may be placed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from scheduler.api.errors import InvalidObject

NETWORK_TOPOLOGY_FIELD = "spec.networkTopology"

TopologyMode = Literal["hard", "soft"]
_NETWORK_TOPOLOGY_KEYS = ("mode", "highestTierAllowed", "highestTierName")


@dataclass(frozen=True, slots=True)
class NetworkTopology:
    """spec.networkTopology: keep the whole gang inside one domain of tier at most
    `highest_tier` (or the tier named `highest_tier_name`); `hard` waits rather than
    crossing, `soft` prefers the lowest tier that holds the gang and falls back.
    Neither tier field: any tier (one domain of the highest tier there is)."""

    mode: TopologyMode = "hard"
    highest_tier: int | None = None
    highest_tier_name: str = ""

    @property
    def hard(self) -> bool:
        """Whether the gang waits rather than crossing its highest tier."""
        return self.mode == "hard"

    @classmethod
    def read(
        cls, key: str, raw: Mapping[str, Any], field: str = NETWORK_TOPOLOGY_FIELD
    ) -> NetworkTopology:
        """The networkTopology at `field` of a PodGroup (`key` names it); InvalidObject
        naming the field when a value cannot be used (Volcano's types: mode hard|soft,
        highestTierAllowed an integer of 0 or more, highestTierName a string, not both
        tier fields, which Volcano's admission webhook refuses too)."""
        if not isinstance(raw, Mapping):
            raise InvalidObject("PodGroup", key, field, raw, "must be an object")
        unknown = sorted(str(name) for name in raw if name not in _NETWORK_TOPOLOGY_KEYS)
        if unknown:
            raise InvalidObject(
                "PodGroup",
                key,
                f"{field}.{unknown[0]}",
                raw[unknown[0]],
                f"is not a field of networkTopology (known: {', '.join(_NETWORK_TOPOLOGY_KEYS)})"
                "; remove it",
            )
        mode = raw.get("mode") or "hard"
        if mode not in ("hard", "soft"):
            raise InvalidObject("PodGroup", key, f"{field}.mode", mode, 'must be "hard" or "soft"')
        tier = raw.get("highestTierAllowed")
        name = raw.get("highestTierName")
        if tier is not None and (isinstance(tier, bool) or not isinstance(tier, int) or tier < 0):
            raise InvalidObject(
                "PodGroup",
                key,
                f"{field}.highestTierAllowed",
                tier,
                "must be an integer of 0 or more (a HyperNode tier)",
            )
        if name is not None and not isinstance(name, str):
            raise InvalidObject(
                "PodGroup", key, f"{field}.highestTierName", name, "must be a string"
            )
        if tier is not None and name:
            raise InvalidObject(
                "PodGroup",
                key,
                f"{field}.highestTierName",
                name,
                f"cannot be set with highestTierAllowed ({tier}); set one of the two",
            )
        return NetworkTopology("soft" if mode == "soft" else "hard", tier, name or "")
