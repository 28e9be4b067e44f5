"""The AllocationResult kube-scheduler writes into a claim's status, from chosen devices.

- **results**: one per device, in the claim's request order (a sub-request's named
  "request/sub-request"), with `adminAccess: true` only for an admin request and the
  request's tolerations copied.
- **config**: each class's configuration once (`FromClass`), for every request that used
  the class; then the claim's (`FromClaim`): one naming no request applies to all, one
  naming requests is added for each allocated request (or chosen sub-request) it names,
  so once per name, as kube-scheduler adds it.
- **nodeSelector**: `metadata.name In [node]` when any device is node-local or binds to
  its node; otherwise one term merging the devices' own single-term selectors (each
  requirement once); none when no device has one (usable everywhere).
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api import dra, wire
from scheduler.api.matching import NODE_NAME_FIELD
from scheduler.dra.requests import Claim
from scheduler.dra.search import Pick


def allocation_result(
    claim: Claim,
    picks: list[Pick],
    node: str | None,
    classes: Mapping[str, dra.DeviceClass],
    pinned: dict[str, wire.NodeSelector] | None = None,
) -> dra.AllocationResult:
    """The claim's status.allocation for these devices; `node` is the node of its pod
    (read only when a device pins the allocation to it). `pinned` keeps the selector of
    each node an allocation was pinned to, shared by the results of one session (none
    changes them)."""
    if len(picks) < 2:
        ordered = picks
    else:
        order = {choice.name: index for index, choice in enumerate(claim.choices)}
        ordered = sorted(picks, key=lambda pick: (order[pick.choice.name], pick.device.order))
    results = [
        dra.DeviceRequestAllocationResult(
            request=pick.choice.name,
            driver=pick.device.driver,
            pool=pick.device.id[1],
            device=pick.device.id[2],
            admin_access=True if pick.choice.admin_access else None,
            tolerations=list(pick.choice.tolerations),
        )
        for pick in ordered
    ]
    return dra.AllocationResult(
        devices=dra.DeviceAllocationResult(
            results=results, config=_configuration(claim, ordered, classes)
        ),
        node_selector=node_selector(ordered, node, pinned),
    )


def _configuration(
    claim: Claim, picks: list[Pick], classes: Mapping[str, dra.DeviceClass]
) -> list[dra.DeviceAllocationConfiguration]:
    config: list[dra.DeviceAllocationConfiguration] = []
    if not claim.config and not _classes_configured(picks, classes):
        return config
    chosen = {pick.choice.request: pick.choice for pick in picks}
    by_class: dict[str, tuple[int, int]] = {}
    for request in claim.requests:
        choice = chosen.get(request.name)
        if choice is None:
            continue
        known = by_class.get(choice.device_class)
        if known is not None:
            for entry in config[known[0] : known[1]]:
                entry.requests.append(choice.name)
            continue
        start = len(config)
        device_class = classes.get(choice.device_class)
        for item in device_class.spec.config if device_class is not None else []:
            config.append(
                dra.DeviceAllocationConfiguration(
                    source="FromClass", requests=[choice.name], opaque=item.opaque
                )
            )
        by_class[choice.device_class] = (start, len(config))
    for claim_config in claim.config:
        entry = dra.DeviceAllocationConfiguration(
            source="FromClaim", requests=list(claim_config.requests), opaque=claim_config.opaque
        )
        if not claim_config.requests:
            config.append(entry)
            continue
        for request in claim.requests:
            choice = chosen.get(request.name)
            if request.name in claim_config.requests or (
                choice is not None and choice.sub_request and choice.name in claim_config.requests
            ):
                config.append(entry)
    return config


def _classes_configured(picks: list[Pick], classes: Mapping[str, dra.DeviceClass]) -> bool:
    """Whether the class of any pick has configuration to copy (a loop: asked per claim)."""
    for pick in picks:
        device_class = classes.get(pick.choice.device_class)
        if device_class is not None and device_class.spec.config:
            return True
    return False


def node_selector(
    picks: list[Pick], node: str | None, pinned: dict[str, wire.NodeSelector] | None = None
) -> wire.NodeSelector | None:
    """Where the devices can be used, as the allocation says it (`pinned`: as
    `allocation_result`)."""
    if picks[0].device.node_bound if len(picks) == 1 else any(p.device.node_bound for p in picks):
        name = node or ""
        selector = pinned.get(name) if pinned is not None else None
        if selector is None:
            requirement = wire.NodeSelectorRequirement(
                key=NODE_NAME_FIELD, operator="In", values=[name]
            )
            selector = wire.NodeSelector([wire.NodeSelectorTerm(match_fields=[requirement])])
            if pinned is not None:
                pinned[name] = selector
        return selector
    merged = wire.NodeSelectorTerm()
    for pick in picks:
        selector = pick.device.node_selector
        if selector is None or len(selector.node_selector_terms) != 1:
            continue
        term = selector.node_selector_terms[0]
        for source, target in (
            (term.match_fields, merged.match_fields),
            (term.match_expressions, merged.match_expressions),
        ):
            for requirement in source:
                if not any(_same(requirement, known) for known in target):
                    target.append(requirement)
    if not merged.match_fields and not merged.match_expressions:
        return None
    return wire.NodeSelector([merged])


def _same(a: wire.NodeSelectorRequirement, b: wire.NodeSelectorRequirement) -> bool:
    return a.key == b.key and a.operator == b.operator and set(a.values) == set(b.values)
