"""Which devices each request of a claim may take on the nodes of its pods.

A candidate is a device, in inventory order, that the pods' nodes all reach (a claim
used on several nodes takes no node-local device), that meets the class's selectors and
then the request's (kube-scheduler's order: a class selector that says no spares the
request's), whose NoSchedule and NoExecute taints the request tolerates, and that muster
allocates. A device whose selectors fail to evaluate is kept as a candidate with its
error ("poison"): kube-scheduler fails the pod only when its search reaches that device,
and so does muster's. An All request fails at once instead (kube-scheduler lists all its
devices before searching), and so does an All request on a node that sees an incomplete
or invalid pool, or whose devices include one muster does not allocate; a device an All
request must take but whose taint it does not tolerate is kept too, `blocked`, so the
request fails on the node as kube-scheduler's does.

The candidates of a choice depend on its class, selectors, tolerations and nodes only,
so they are kept for the session, and across sessions in the store the cache's DeviceMemo
gives while the inventory and the classes are the same objects (dra/kept.py); selectors'
answers per device come from the memo.

`shape(claim)` and `on_node` serve the allocator's counting answer (dra/allocator.py, and a
pod's lane, dra/pods.py): the candidates every request of the claim shares on the node when
each request asks a count of devices any of which will do (one ExactCount choice, no admin
access, no constraint in the claim, no candidate whose selectors failed or that consumes
counters), or None when the search must decide.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.api import dra
from scheduler.api.matching import tolerates
from scheduler.dra.cel import SelectorError, SelectorMemo
from scheduler.dra.fit import PodProblem, Verdict
from scheduler.dra.inventory import COMPLETE, INCOMPLETE, Device, Inventory
from scheduler.dra.requests import Choice, Claim
from scheduler.dra.search import Job, Unit

# Stands for the claim's name in a selector's error, which several claims' candidates share.
_CLAIM = "\x00claim\x00"

# A choice's candidates, the errors of those whose selectors failed (by order), the devices'
# needs muster does not honour, and the devices an All request cannot take (by order).
Found = tuple[list[Device], dict[int, str], list[str], set[int]]


class Candidates:
    """The candidates of every request, found once per session (or kept in `found` and
    `counted`, stores the caller keeps while the inventory and the classes stay the same)."""

    def __init__(
        self,
        inventory: Inventory,
        classes: Mapping[str, dra.DeviceClass],
        memo: SelectorMemo,
        found: dict[tuple[object, ...], Found] | None = None,
        counted: dict[tuple[object, ...], dict[str, list[Device] | None]] | None = None,
    ) -> None:
        self.inventory = inventory
        self.classes = classes
        self.memo = memo
        self._found: dict[tuple[object, ...], Found] = found if found is not None else {}
        # Per claim (by identity: the allocator keeps its claims for the session), the key
        # of the candidates all its requests share, without the nodes; None: not counted.
        self._shapes: dict[int, tuple[object, ...] | None] = {}
        # Per shape, by node: what `on_node` found (kept with `found`).
        self._counted = counted if counted is not None else {}

    def units(self, job: Job) -> list[Unit]:
        """One unit per request of the job's claim; PodProblem for what fails the pod."""
        units = []
        for request in job.claim.requests:
            poison: dict[int, str] = {}
            refused: dict[str, list[str]] = {}
            blocked: set[int] = set()
            choices = []
            for choice in request.choices:
                devices, errors, unhonoured, tainted = self._for_choice(job, choice)
                poison.update({order: _for(text, job.claim) for order, text in errors.items()})
                if unhonoured:
                    refused[choice.name] = unhonoured
                blocked |= tainted
                choices.append((choice, devices))
            need = min(
                len(devices) if choice.all_devices else choice.count for choice, devices in choices
            )
            units.append(Unit(job, choices, need, poison, refused, blocked))
        total = sum(unit.need for unit in units)
        if total > dra.ALLOCATION_RESULTS_MAX:
            raise PodProblem(
                Verdict.POD,
                f"claim {job.claim.key}: number of requested devices {total} exceeds the "
                f"claim limit of {dra.ALLOCATION_RESULTS_MAX}",
            )
        return units

    def shape(self, claim: Claim) -> tuple[object, ...] | None:
        """The key of the candidates every request of the claim shares, without the nodes,
        when a count answers for it (the module docstring); else None."""
        shape = self._shapes.get(id(claim), ())
        if shape == ():
            shape = self._shapes[id(claim)] = _shape(claim)
        return shape

    def counted_nodes(self, shape: tuple[object, ...]) -> dict[str, list[Device] | None]:
        """What `on_node` found so far for claims of this shape, by node (one dict per
        shape, for the session)."""
        nodes = self._counted.get(shape)
        if nodes is None:
            nodes = self._counted[shape] = {}
        return nodes

    def on_node(
        self, nodes: dict[str, list[Device] | None], claim: Claim, node: str
    ) -> list[Device] | None:
        """The candidates on the node every request of the claim (of the shape whose
        `counted_nodes` these are) draws from, or None when the search must decide. Raises
        PodProblem where `units` would."""
        if node in nodes:
            return nodes[node]
        choice = claim.requests[0].choices[0]
        devices, errors, _, _ = self._for_choice(Job(claim, (node,)), choice)
        counted = None if errors or any(d.consumes for d in devices) else devices
        nodes[node] = counted
        return counted

    def _for_choice(self, job: Job, choice: Choice) -> Found:
        device_class = self.classes.get(choice.device_class)
        if device_class is None:
            raise PodProblem(
                Verdict.POD,
                f"request {choice.name}: device class {choice.device_class} does not exist",
            )
        if choice.all_devices:
            self._pools_ready(job, choice)
        tolerations = tuple((t.key, t.operator, t.value, t.effect) for t in choice.tolerations)
        key = (choice.device_class, choice.selectors, tolerations, choice.all_devices, job.nodes)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._search(job, choice, device_class)
        return found

    def _search(self, job: Job, choice: Choice, device_class: dra.DeviceClass) -> Found:
        class_selectors = [s.cel.expression for s in device_class.spec.selectors if s.cel]
        devices: list[Device] = []
        errors: dict[int, str] = {}
        unhonoured: list[str] = []
        tainted: set[int] = set()
        for device in self._reachable(job.nodes):
            selectable = self._selectable(choice, class_selectors, device)
            if isinstance(selectable, str):
                if choice.all_devices:
                    raise PodProblem(Verdict.POD, _for(selectable, job.claim))
                errors[device.order] = selectable
                devices.append(device)
                continue
            if not selectable:
                continue
            if not all(_tolerated(choice, taint) for taint in device.taints):
                # All's devices are every selected one: kube-scheduler then finds one it
                # cannot take, and the request fails on the node.
                if choice.all_devices:
                    tainted.add(device.order)
                    devices.append(device)
                continue
            if device.refusal is not None:
                if choice.all_devices:
                    raise PodProblem(
                        Verdict.REFUSED,
                        f"claim {job.claim.key}, request {choice.name}: asks for all devices, "
                        f"and device {device.label} needs {device.refusal}, which muster "
                        "does not honour yet",
                    )
                unhonoured.append(device.refusal)
                continue
            devices.append(device)
        return devices, errors, unhonoured, tainted

    def _reachable(self, nodes: tuple[str, ...]) -> list[Device]:
        first = self.inventory.devices_on(nodes[0])
        if len(nodes) == 1:
            return first
        others = [(node, self.inventory.labels(node)) for node in nodes[1:]]
        return [
            device
            for device in first
            if not device.node_bound and all(device.reaches(n, labels) for n, labels in others)
        ]

    def _pools_ready(self, job: Job, choice: Choice) -> None:
        for node in job.nodes:
            for pool in self.inventory.pools_on(node):
                if pool.state != COMPLETE:
                    state = "being updated" if pool.state == INCOMPLETE else "invalid"
                    raise PodProblem(
                        Verdict.POD,
                        f"claim {job.claim.key}, request {choice.name}: asks for all devices, "
                        f"but resource pool {pool.label} is currently {state}",
                    )

    def _selectable(self, choice: Choice, class_selectors: list[str], device: Device) -> bool | str:
        """Whether the device meets the class's selectors, then the request's; an error
        in kube-scheduler's words when one cannot be evaluated."""
        for owner, selectors in (
            (f"class {choice.device_class}", class_selectors),
            (f"claim {_CLAIM}", choice.selectors),
        ):
            for index, text in enumerate(selectors):
                compiled = self.memo.selector(text)
                if compiled.compile_error is not None:
                    return (
                        f"{owner}: selector #{index}: CEL compile error: {compiled.compile_error}"
                    )
                try:
                    matched = self.memo.matches(
                        text, device.slice_key, device.slot, device.driver, device.spec
                    )
                except SelectorError as problem:
                    return f"{owner}: selector #{index}: CEL runtime error: {problem}"
                if not matched:
                    return False
        return True


def _shape(claim: Claim) -> tuple[object, ...] | None:
    """The candidates' key (without nodes) all the claim's requests share, when each is one
    ExactCount choice without admin access and the claim has no constraint; else None."""
    if claim.constraints or not claim.requests:
        return None
    shape: tuple[object, ...] | None = None
    total = 0
    for request in claim.requests:
        if len(request.choices) != 1:
            return None
        choice = request.choices[0]
        if choice.all_devices or choice.admin_access:
            return None
        tolerations = tuple((t.key, t.operator, t.value, t.effect) for t in choice.tolerations)
        key = (choice.device_class, choice.selectors, tolerations, False)
        if shape is not None and key != shape:
            return None
        shape = key
        total += choice.count
    # More than a claim may hold: `units` refuses the pod.
    return shape if total <= dra.ALLOCATION_RESULTS_MAX else None


def _for(text: str, claim: Claim) -> str:
    return text.replace(_CLAIM, claim.key)


def _tolerated(choice: Choice, taint: dra.DeviceTaint) -> bool:
    return any(tolerates(toleration, taint) for toleration in choice.tolerations)
