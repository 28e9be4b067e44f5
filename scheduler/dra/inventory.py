"""The devices a session sees: ResourceSlices gathered into pools, in kube-scheduler's order.

1. **Pools**: slices are grouped by (driver, pool name). Only the newest generation of a
   pool counts: older slices are obsolete. The pool is complete when it has as many
   slices of that generation as they say (`resourceSliceCount`); an incomplete pool is
   never allocated from, and a request for All devices that would see it fails (its
   driver is updating it). A complete pool is invalid when two of its devices share a
   name, two counter sets share a name, or a device consumes a counter no set has; no
   device of an invalid pool is allocated. (kube-scheduler decides the generation per
   node, from the slices that node can use; muster decides it per pool, which differs
   only while a driver replaces a pool's slices, where muster waits for the new ones.)
2. **Order**: pools by driver then name, slices by name, devices as listed: the order in
   which kube-scheduler tries devices (first fit), so a pod alone gets the device
   kube-scheduler would give it.
3. **Where a device can be used**: the slice's `nodeName` (node-local), `allNodes`, or
   `nodeSelector`; with `perDeviceNodeSelection`, the device's own fields. A slice with
   none of them is a future kind of slice and is skipped, as kube-scheduler does.
4. **What a device is**: its taints that block allocation (NoSchedule, NoExecute), the
   counters it consumes from its pool's shared counter sets (a partition of a GPU), and
   whether muster refuses to allocate it (`Device.refusal`: binding conditions,
   consumable capacity, alpha fields), which an explanation names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from scheduler.api import dra, wire
from scheduler.api.matching import selector_matches, wire_term
from scheduler.api.quantity import parse_quantity
from scheduler.api.selectors import SelectorTerm
from scheduler.dra.cel import SliceKey, slice_key

# (driver, pool, device): how results and kube-scheduler name a device.
DeviceId = tuple[str, str, str]
# (counter set, counter) within one pool.
CounterId = tuple[str, str]

COMPLETE = "complete"
INCOMPLETE = "incomplete"
INVALID = "invalid"
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(eq=False, slots=True)
class Pool:
    """One (driver, pool) at its newest generation."""

    driver: str
    name: str
    generation: int
    state: str
    reason: str = ""
    devices: list[Device] = field(default_factory=list)
    counters: dict[CounterId, Fraction] = field(default_factory=dict)
    slices: list[dra.ResourceSlice] = field(default_factory=list)

    @property
    def label(self) -> str:
        """driver/pool, as kube-scheduler names a pool."""
        return f"{self.driver}/{self.name}"

    @property
    def usable(self) -> bool:
        """Whether devices may be allocated from it."""
        return self.state == COMPLETE


@dataclass(eq=False, slots=True)
class Device:
    """A device of a pool, with what allocation needs to know of it."""

    order: int
    id: DeviceId
    pool: Pool
    slice_name: str
    slice_key: SliceKey
    slot: int
    spec: dra.Device
    # The node it is local to (its slice's nodeName, or its own with perDeviceNodeSelection).
    node_name: str | None
    node_terms: tuple[SelectorTerm, ...] | None
    node_selector: wire.NodeSelector | None
    all_nodes: bool
    binds_to_node: bool
    taints: tuple[dra.DeviceTaint, ...]
    consumes: tuple[tuple[CounterId, Fraction], ...]
    refusal: str | None

    @property
    def driver(self) -> str:
        """The driver that publishes it."""
        return self.id[0]

    @property
    def label(self) -> str:
        """driver/pool/device."""
        return "/".join(self.id)

    def reaches(self, node: str, labels: Mapping[str, str]) -> bool:
        """Whether a pod on the node can use it."""
        if self.node_name is not None:
            return self.node_name == node
        if self.all_nodes:
            return True
        if self.node_terms is not None:
            return selector_matches(self.node_terms, labels, node)
        return False

    @property
    def node_bound(self) -> bool:
        """Whether an allocation of it is pinned to one node (local, or binds to its node)."""
        return self.node_name is not None or self.binds_to_node


class Inventory:
    """The pools and devices of one session, and which of them each node reaches."""

    def __init__(
        self, slices: Iterable[dra.ResourceSlice], nodes: Mapping[str, Mapping[str, str]]
    ) -> None:
        self.nodes = nodes
        grouped: dict[tuple[str, str], list[dra.ResourceSlice]] = {}
        for item in slices:
            grouped.setdefault((item.spec.driver, item.spec.pool.name), []).append(item)
        self.pools = [_pool(key, grouped[key]) for key in sorted(grouped)]
        # Pools with devices that wait for binding conditions go last, as kube-scheduler
        # orders them (muster refuses those devices, but keeps the order).
        self.pools.sort(key=lambda pool: any(d.spec.binding_conditions for d in pool.devices))
        self.devices: list[Device] = []
        for pool in self.pools:
            for device in pool.devices:
                device.order = len(self.devices)
                self.devices.append(device)
        self.by_id = {device.id: device for device in self.devices}
        # Node-local devices by node, and the others (checked node by node): a node's
        # devices are found without a walk over every device of the cluster.
        self._local: dict[str, list[Device]] = {}
        self._shared: list[Device] = []
        for device in self.devices:
            if device.pool.usable:
                if device.node_name is not None:
                    self._local.setdefault(device.node_name, []).append(device)
                else:
                    self._shared.append(device)
        self._on_node: dict[str, list[Device]] = {}
        # Likewise for pools: those whose slices all name one node, by that node.
        self._local_pools: dict[str, list[Pool]] = {}
        self._shared_pools: list[Pool] = []
        for pool in self.pools:
            local = {item.spec.node_name for item in pool.slices}
            if (
                len(local) == 1
                and None not in local
                and not any(item.spec.shared_counters for item in pool.slices)
            ):
                self._local_pools.setdefault(str(local.pop()), []).append(pool)
            else:
                self._shared_pools.append(pool)
        self._pool_order = {id(pool): index for index, pool in enumerate(self.pools)}
        self._pools_on_node: dict[str, list[Pool]] = {}

    def for_nodes(self, nodes: Mapping[str, Mapping[str, str]]) -> Inventory:
        """The same pools and devices seen from these nodes: what a node reaches is found
        afresh (a session's nodes and labels are its own), the decoding is not."""
        seen = Inventory((), nodes)
        seen.pools = self.pools
        seen.devices = self.devices
        seen.by_id = self.by_id
        seen._local = self._local
        seen._shared = self._shared
        seen._local_pools = self._local_pools
        seen._shared_pools = self._shared_pools
        seen._pool_order = self._pool_order
        return seen

    @property
    def reach_by_labels(self) -> bool:
        """Whether some device a pod may use is reached through nodes' labels (not only
        from the node it is local to)."""
        return bool(self._shared)

    @property
    def slice_keys(self) -> list[SliceKey]:
        """Every slice of the newest generations (what a selector memo keeps)."""
        return [slice_key(item) for pool in self.pools for item in pool.slices]

    def devices_on(self, node: str) -> list[Device]:
        """The devices of usable pools a pod on the node can use, in order."""
        found = self._on_node.get(node)
        if found is None:
            labels = self.nodes.get(node, {})
            reached = [device for device in self._shared if device.reaches(node, labels)]
            found = sorted(self._local.get(node, []) + reached, key=lambda device: device.order)
            self._on_node[node] = found
        return found

    def pools_on(self, node: str) -> list[Pool]:
        """Every pool the node can use a slice of, usable or not (All devices wants them
        complete; an invalid one explains a failure)."""
        found = self._pools_on_node.get(node)
        if found is None:
            labels = self.nodes.get(node, {})
            shared = [
                pool
                for pool in self._shared_pools
                if any(_slice_relevant(item, node, labels) for item in pool.slices)
            ]
            found = sorted(
                self._local_pools.get(node, []) + shared, key=lambda p: self._pool_order[id(p)]
            )
            self._pools_on_node[node] = found
        return found

    def labels(self, node: str) -> Mapping[str, str]:
        """The node's labels (empty for a node the session does not know)."""
        return self.nodes.get(node, {})


def _pool(key: tuple[str, str], slices: list[dra.ResourceSlice]) -> Pool:
    driver, name = key
    newest = max(item.spec.pool.generation for item in slices)
    current = sorted(
        (item for item in slices if item.spec.pool.generation == newest),
        key=lambda item: item.metadata.name,
    )
    pool = Pool(driver, name, newest, COMPLETE, slices=current)
    if len(current) != current[0].spec.pool.resource_slice_count:
        pool.state = INCOMPLETE
        return pool
    problem = _counter_sets(pool, current)
    if problem is None:
        problem = _devices(pool, current)
    if problem is not None:
        pool.state, pool.reason, pool.devices = INVALID, problem, []
    return pool


def _counter_sets(pool: Pool, slices: list[dra.ResourceSlice]) -> str | None:
    names: set[str] = set()
    for item in slices:
        for counter_set in item.spec.shared_counters:
            if counter_set.name in names:
                return f"duplicate counter set name {counter_set.name}"
            names.add(counter_set.name)
            for counter, value in counter_set.counters.items():
                pool.counters[(counter_set.name, counter)] = parse_quantity(value.value)
    return None


def _devices(pool: Pool, slices: list[dra.ResourceSlice]) -> str | None:
    seen: set[str] = set()
    sets = {counter_set for counter_set, _ in pool.counters}
    for item in slices:
        if item.spec.shared_counters:
            continue
        key = slice_key(item)
        for slot, spec in enumerate(item.spec.devices):
            if spec.name in seen:
                return f"duplicate device name {spec.name}"
            seen.add(spec.name)
            consumes: list[tuple[CounterId, Fraction]] = []
            for consumption in spec.consumes_counters:
                if consumption.counter_set not in sets:
                    return f"counter set {consumption.counter_set} not found"
                for counter, value in consumption.counters.items():
                    if (consumption.counter_set, counter) not in pool.counters:
                        return (
                            f"counter {counter} not found in counter set {consumption.counter_set}"
                        )
                    amount = parse_quantity(value.value)
                    consumes.append(((consumption.counter_set, counter), amount))
            device = _device(pool, item, key, slot, spec, tuple(consumes))
            if device is not None:
                pool.devices.append(device)
    return None


def _device(
    pool: Pool,
    item: dra.ResourceSlice,
    key: SliceKey,
    slot: int,
    spec: dra.Device,
    consumes: tuple[tuple[CounterId, Fraction], ...],
) -> Device | None:
    slice_spec = item.spec
    if slice_spec.per_device_node_selection:
        node_name, selector, all_nodes = spec.node_name, spec.node_selector, spec.all_nodes
    elif slice_spec.node_name or slice_spec.all_nodes or slice_spec.node_selector is not None:
        node_name, selector = slice_spec.node_name, slice_spec.node_selector
        all_nodes = slice_spec.all_nodes
    else:
        # No kind of node selection muster knows: a future field (kube-scheduler skips it).
        return None
    return Device(
        order=0,
        id=(slice_spec.driver, pool.name, spec.name),
        pool=pool,
        slice_name=item.metadata.name,
        slice_key=key,
        slot=slot,
        spec=spec,
        node_name=node_name or None,
        node_terms=_terms(selector),
        node_selector=selector,
        all_nodes=bool(all_nodes),
        binds_to_node=bool(spec.binds_to_node),
        taints=tuple(taint for taint in spec.taints if taint.effect in BLOCKING_EFFECTS),
        consumes=consumes,
        refusal=_refusal(spec),
    )


def _terms(selector: wire.NodeSelector | None) -> tuple[SelectorTerm, ...] | None:
    if selector is None:
        return None
    return tuple(wire_term(term) for term in selector.node_selector_terms)


def _refusal(spec: dra.Device) -> str | None:
    """What keeps muster from allocating the device, in the words of api/dra.py."""
    reasons = dra.NOT_HONOURED
    if spec.allow_multiple_allocations:
        return reasons["spec.devices[].allowMultipleAllocations"]
    if spec.binding_conditions or spec.binding_failure_conditions:
        return reasons["spec.devices[].bindingConditions"]
    if spec.node_allocatable_resource_mappings:
        return reasons["spec.devices[].nodeAllocatableResourceMappings"]
    for attribute in spec.attributes.values():
        if attribute.ints or attribute.bools or attribute.strings or attribute.versions:
            return reasons["spec.devices[].attributes[].ints|bools|strings|versions"]
    return None


def _slice_relevant(item: dra.ResourceSlice, node: str, labels: Mapping[str, str]) -> bool:
    spec = item.spec
    # A slice of counter sets matters to every node its pool's devices reach.
    if spec.shared_counters:
        return True
    if spec.node_name:
        return spec.node_name == node
    if spec.all_nodes:
        return True
    if spec.node_selector is not None:
        return selector_matches(_terms(spec.node_selector) or (), labels, node)
    if spec.per_device_node_selection:
        for device in spec.devices:
            if device.node_name:
                if device.node_name == node:
                    return True
            elif device.all_nodes or (
                device.node_selector is not None
                and selector_matches(_terms(device.node_selector) or (), labels, node)
            ):
                return True
    return False
