"""The subset of resource.k8s.io/v1 that device allocation reads, as msgspec structs.

DeviceClasses, ResourceSlices and ResourceClaims (Kubernetes' Dynamic Resource
Allocation, GA since 1.34), decoded in the style of api/wire/: camelCase names through
`rename="camel"`, unknown fields skipped, only what scheduling reads. The AllocationResult
a claim's `status.allocation` holds is both read (claims allocated already) and written
(dra/allocator.py builds it, the binder will write it), so its structs encode to the JSON
kube-scheduler writes.

Some fields are decoded only so that a refusal can name them: muster does not honour them
yet, and a device or request that uses one is never silently treated as if it did not
(`NOT_HONOURED` lists them with the reason, and dra/ refuses with those words).
"""

from __future__ import annotations

import msgspec

from scheduler.api import wire

# The API group and version muster reads (served by default since Kubernetes 1.34).
API_VERSION = "resource.k8s.io/v1"

# Set by the scheduler on a claim before it writes the allocation, so the claim is not
# deleted while allocated (kube-scheduler's PreBind).
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
# On a claim the resourceclaim controller made from a template: the pod's claim name.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# On the claim kube-scheduler makes for extended resources backed by DRA.
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# The namespace label without which a request may not ask for admin access.
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
# The extended resource name every DeviceClass has implicitly: this prefix and its name.
IMPLICIT_EXTENDED_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"

# An allocation holds at most this many device results (AllocationResultsMaxSize).
ALLOCATION_RESULTS_MAX = 32
# The runtime cost one selector may spend on one device (CELSelectorExpressionMaxCost).
CEL_SELECTOR_MAX_COST = 1_000_000

EXACT_COUNT = "ExactCount"
ALL = "All"

# The fields decoded only to be refused by name, with what muster says about each.
NOT_HONOURED = {
    "spec.devices[].allowMultipleAllocations": (
        "consumable capacity (DRAConsumableCapacity): a device shared by several claims, "
        "each with a share ID and the capacity it consumes"
    ),
    "spec.devices[].bindingConditions": (
        "binding conditions (DRADeviceBindingConditions): the bind waits for a driver to "
        "report the device ready"
    ),
    "spec.devices[].nodeAllocatableResourceMappings": (
        "node allocatable resources (DRANodeAllocatableResources, alpha)"
    ),
    "spec.devices[].attributes[].ints|bools|strings|versions": (
        "list-type attributes (DRAListTypeAttributes, alpha)"
    ),
    "spec.devices.requests[].exactly.capacity": (
        "capacity requests (DRAConsumableCapacity): a request for part of a shared device"
    ),
    "spec.devices.requests[].firstAvailable[].capacity": (
        "capacity requests (DRAConsumableCapacity): a request for part of a shared device"
    ),
    "DeviceClass spec.extendedResourceName": (
        "extended resources backed by DRA (DRAExtendedResource): a pod's resource request "
        "served by devices"
    ),
}

# Absent Raw (falsy): for fields read only for their presence.
_ABSENT = msgspec.Raw()


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    """Base of the resource.k8s.io wire structs."""


class ClaimMeta(wire.ObjectMeta):
    """A ResourceClaim's metadata: its finalizers too (the delete-protection one)."""

    finalizers: list[str] = msgspec.field(default_factory=list)


# DeviceClass -----------------------------------------------------------------------------


class CELDeviceSelector(_Wire):
    """selectors[].cel."""

    expression: str = ""


class DeviceSelector(_Wire):
    """A selector of a class or a request; `cel` is the only kind v1 has."""

    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(_Wire):
    """config[].opaque: a driver's parameters, copied into the allocation unread."""

    driver: str = ""
    parameters: msgspec.Raw = _ABSENT


class DeviceClassConfiguration(_Wire):
    """A DeviceClass's config[]."""

    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(_Wire):
    """DeviceClass spec."""

    selectors: list[DeviceSelector] = msgspec.field(default_factory=list)
    config: list[DeviceClassConfiguration] = msgspec.field(default_factory=list)
    extended_resource_name: str | None = None


class DeviceClass(_Wire):
    """A DeviceClass (cluster-scoped): the selectors and configuration a request's class
    brings."""

    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


# ResourceSlice ---------------------------------------------------------------------------


class ResourcePool(_Wire):
    """spec.pool: the pool a slice belongs to, its generation and how many slices it has."""

    name: str = ""
    generation: int = 0
    resource_slice_count: int = 0


class DeviceAttribute(_Wire):
    """An attribute's value: exactly one of the scalar fields is set. The list fields are
    alpha (off by default) and refused by name when found."""

    int_value: int | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string_value: str | None = msgspec.field(default=None, name="string")
    version_value: str | None = msgspec.field(default=None, name="version")
    ints: msgspec.Raw = _ABSENT
    bools: msgspec.Raw = _ABSENT
    strings: msgspec.Raw = _ABSENT
    versions: msgspec.Raw = _ABSENT


class DeviceCapacity(_Wire):
    """capacity[name]: the value (a quantity); a request policy only matters to consumable
    capacity, which is refused."""

    value: wire.Quantity = "0"
    request_policy: msgspec.Raw = _ABSENT


class Counter(_Wire):
    """A counter's value (a quantity)."""

    value: wire.Quantity = "0"


class CounterSet(_Wire):
    """sharedCounters[]: counters the devices of the pool consume (a GPU's memory slices)."""

    name: str = ""
    counters: dict[str, Counter] = msgspec.field(default_factory=dict)


class DeviceCounterConsumption(_Wire):
    """consumesCounters[]: what a device takes from one counter set while allocated."""

    counter_set: str = ""
    counters: dict[str, Counter] = msgspec.field(default_factory=dict)


class DeviceTaint(_Wire):
    """A device's taints[]: NoSchedule and NoExecute keep it from new allocations."""

    key: str = ""
    value: str = ""
    effect: str = ""


class Device(_Wire):
    """A device of a slice."""

    name: str = ""
    attributes: dict[str, DeviceAttribute] = msgspec.field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = msgspec.field(default_factory=dict)
    consumes_counters: list[DeviceCounterConsumption] = msgspec.field(default_factory=list)
    # Only with the slice's perDeviceNodeSelection: where this device can be used.
    node_name: str | None = None
    node_selector: wire.NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = msgspec.field(default_factory=list)
    binds_to_node: bool | None = None
    binding_conditions: list[str] = msgspec.field(default_factory=list)
    binding_failure_conditions: list[str] = msgspec.field(default_factory=list)
    allow_multiple_allocations: bool | None = None
    node_allocatable_resource_mappings: msgspec.Raw = _ABSENT


class ResourceSliceSpec(_Wire):
    """ResourceSlice spec: exactly one of nodeName, nodeSelector, allNodes and
    perDeviceNodeSelection says where its devices can be used; a slice carries devices or
    shared counters, never both."""

    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    node_name: str | None = None
    node_selector: wire.NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = msgspec.field(default_factory=list)
    shared_counters: list[CounterSet] = msgspec.field(default_factory=list)


class ResourceSlice(_Wire):
    """A ResourceSlice (cluster-scoped): some or all of one pool's devices."""

    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


# ResourceClaim ---------------------------------------------------------------------------


class DeviceToleration(_Wire):
    """A request's tolerations[] (copied into each of its results)."""

    key: str = ""
    # The API server defaults it to Equal; "" means the same (and is kept as it came, so a
    # result copies the request's toleration as written).
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class CapacityRequirements(_Wire):
    """A request's capacity (consumable capacity, refused by name)."""

    requests: dict[str, wire.Quantity] = msgspec.field(default_factory=dict)


class ExactDeviceRequest(_Wire):
    """requests[].exactly."""

    device_class_name: str = ""
    selectors: list[DeviceSelector] = msgspec.field(default_factory=list)
    allocation_mode: str = EXACT_COUNT
    count: int = 0
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = msgspec.field(default_factory=list)
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(_Wire):
    """requests[].firstAvailable[]: one alternative, tried in the listed order."""

    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = msgspec.field(default_factory=list)
    allocation_mode: str = EXACT_COUNT
    count: int = 0
    tolerations: list[DeviceToleration] = msgspec.field(default_factory=list)
    capacity: CapacityRequirements | None = None


class DeviceRequest(_Wire):
    """spec.devices.requests[]: exactly one of `exactly` and `firstAvailable`."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = msgspec.field(default_factory=list)


class DeviceConstraint(_Wire):
    """spec.devices.constraints[]: exactly one of matchAttribute and distinctAttribute."""

    requests: list[str] = msgspec.field(default_factory=list)
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(_Wire):
    """spec.devices.config[]: copied into the allocation for the requests it names."""

    requests: list[str] = msgspec.field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(_Wire):
    """spec.devices."""

    requests: list[DeviceRequest] = msgspec.field(default_factory=list)
    constraints: list[DeviceConstraint] = msgspec.field(default_factory=list)
    config: list[DeviceClaimConfiguration] = msgspec.field(default_factory=list)


class ResourceClaimSpec(_Wire):
    """ResourceClaim spec (immutable)."""

    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(_Wire):
    """status.allocation.devices.results[]: one device given to one request."""

    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = msgspec.field(default_factory=list)
    binding_conditions: list[str] = msgspec.field(default_factory=list)
    binding_failure_conditions: list[str] = msgspec.field(default_factory=list)
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, wire.Quantity] = msgspec.field(default_factory=dict)


class DeviceAllocationConfiguration(_Wire):
    """status.allocation.devices.config[]: a class's or the claim's configuration, for the
    requests it applies to."""

    # FromClass or FromClaim.
    source: str = ""
    requests: list[str] = msgspec.field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(_Wire):
    """status.allocation.devices."""

    results: list[DeviceRequestAllocationResult] = msgspec.field(default_factory=list)
    config: list[DeviceAllocationConfiguration] = msgspec.field(default_factory=list)


class AllocationResult(_Wire):
    """status.allocation: the devices and where they can be used (none: everywhere)."""

    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    node_selector: wire.NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(_Wire):
    """status.reservedFor[]: who uses the claim (a pod, in 1.36 by default)."""

    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class ResourceClaimStatus(_Wire):
    """ResourceClaim status."""

    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = msgspec.field(default_factory=list)


class ResourceClaim(_Wire):
    """A ResourceClaim (namespaced)."""

    metadata: ClaimMeta = msgspec.field(default_factory=ClaimMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(_Wire):
    """A ResourceClaimTemplate's spec: the metadata and spec of the claims made from it."""

    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(_Wire):
    """A ResourceClaimTemplate (namespaced): the resourceclaim controller makes a claim from
    it for each pod naming it (`muster whatif` does the same for the pods it submits)."""

    metadata: wire.ObjectMeta = msgspec.field(default_factory=wire.ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)


# The pod's side (read with the pod: api/wire/pod.py, api/resource_claims.py).
PodResourceClaimStatus = wire.PodResourceClaimStatus
