"""What allocation answers about a pod on a node: a DeviceFit, in kube-scheduler's words
and then muster's."""

from __future__ import annotations

import enum
from dataclasses import dataclass

# kube-scheduler's reasons, as its DynamicResources plugin words them.
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
INVALID_POOLS = "invalid resource pools were encountered"


class Verdict(enum.Enum):
    """Whether a pod's claims can be allocated on a node, or why not."""

    FITS = "fits"
    # Not on this node (another may do): kube-scheduler's Unschedulable.
    NODE = "node"
    # Not on any node for now: kube-scheduler's Error (a selector that fails to
    # evaluate, a missing class) or a claim the pod must wait for (PreEnqueue).
    POD = "pod"
    # A field muster does not honour yet: the pod's condition names it.
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class DeviceFit:
    """The answer for one pod on one node: kube-scheduler's reason, muster's detail."""

    verdict: Verdict
    reason: str = ""
    detail: str = ""
    # A yes that takes devices of pods being evicted or deleted: the pod may be promised
    # them (pipelined), not bound to them until their claims let go.
    later: bool = False

    @property
    def fits(self) -> bool:
        """Whether the pod's claims can be allocated there."""
        return self.verdict is Verdict.FITS

    def __str__(self) -> str:
        if self.fits:
            return "fits"
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


FITS = DeviceFit(Verdict.FITS)
FITS_LATER = DeviceFit(Verdict.FITS, later=True)


class PodProblem(Exception):
    """A reason the pod cannot be placed on any node for now: allocation stops."""

    def __init__(self, verdict: Verdict, reason: str) -> None:
        super().__init__(reason)
        self.fit = DeviceFit(verdict, reason)
