"""The kind registry: which resources the server serves, built-in and from CRDs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from muster_sim.errors import ApiError, qualified_resource
from muster_sim.validation.apps import (
    APPS_GROUP,
    DeploymentStrategy,
    ReplicaSetStrategy,
    StatefulSetStrategy,
)
from muster_sim.validation.dra.claims import (
    RESOURCE_GROUP,
    ResourceClaimStrategy,
    ResourceClaimTemplateStrategy,
)
from muster_sim.validation.dra.classes import DeviceClassStrategy
from muster_sim.validation.dra.slices import ResourceSliceStrategy
from muster_sim.validation.jobs import BATCH_GROUP, JobStrategy
from muster_sim.validation.native_scheduling import GROUP as NATIVE_GROUP
from muster_sim.validation.native_scheduling import PodGroupStrategy, WorkloadStrategy
from muster_sim.validation.pod_templates import PodTemplateStrategy
from muster_sim.validation.rbac import RbacValidator
from muster_sim.validation.storage import (
    STORAGE_GROUP,
    CSIDriverStrategy,
    CSINodeStrategy,
    StorageClassStrategy,
)
from muster_sim.validation.strategy import RequestValidator
from muster_sim.validation.volumes import PersistentVolumeClaimStrategy, PersistentVolumeStrategy

Obj = dict[str, Any]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

# The storage keys (Kind.key) of the kinds whose rules the API server applies by name.
PODS = "pods"
NAMESPACES = "namespaces"
NODES = "nodes"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"
PDBS = "poddisruptionbudgets.policy"
# Kubernetes' own gang API (served at the version `muster sim --native-api` names).
NATIVE_PODGROUPS = "podgroups.scheduling.k8s.io"
NATIVE_WORKLOADS = "workloads.scheduling.k8s.io"


class ObjectValidator(Protocol):
    """A kind's own validation, run by the API on every create and update."""

    def validate_create(self, obj: Obj) -> None:
        """Raise an ApiError (422) when `obj` may not be created."""

    def validate_update(self, old: Obj, new: Obj) -> None:
        """Raise an ApiError (422) when `old` may not become `new`."""


class ObjectStrategy(Protocol):
    """A kind's registry strategy: the defaults and resets applied to a write before validation."""

    def prepare_for_create(self, obj: Obj) -> None:
        """Default `obj` and reset what a client may not set on create, in place."""

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """Default `new` (replacing `old`) in place; `subresource` is "status" for status writes."""


@dataclass(frozen=True)
class Kind:
    """One served resource: its group/version/plural, kind name, scope and subresources."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # The CRD's openAPIV3Schema for this version; only its `default`s are used.
    schema: Obj | None = field(default=None, compare=False, hash=False)
    from_crd: bool = False
    validator: ObjectValidator | None = field(default=None, compare=False, hash=False)
    strategy: ObjectStrategy | None = field(default=None, compare=False, hash=False)
    # Runs once a new object has its uid, after mutating admission and before validation
    # (the steps of kube's PrepareForCreate that need the uid: a Job's generated selector).
    after_uid: Callable[[Obj], None] | None = field(default=None, compare=False, hash=False)
    # Validation that also reads the write's context (the requester's other permissions, a
    # namespace's labels); it takes the place of `validator`.
    request_validator: RequestValidator | None = field(default=None, compare=False, hash=False)

    @property
    def key(self) -> str:
        """The storage key shared by every version of the resource."""
        return qualified_resource(self.group, self.plural)

    @property
    def api_version(self) -> str:
        """The apiVersion string objects of this kind carry."""
        return self.version if not self.group else f"{self.group}/{self.version}"

    @property
    def has_status(self) -> bool:
        """Whether writes to the main resource leave `.status` alone (status subresource)."""
        return "status" in self.subresources


def _core(
    plural: str,
    kind: str,
    namespaced: bool,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
) -> Kind:
    # only pods, services etc. are in the `all` category, but listing more is harmless
    return Kind("", "v1", plural, kind.lower(), kind, namespaced, short, sub, ("all",))


def _validated(
    group: str,
    plural: str,
    kind: str,
    namespaced: bool,
    strategy: Any,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    categories: tuple[str, ...] = (),
    after_uid: Callable[[Obj], None] | None = None,
) -> Kind:
    """A kind whose strategy object both defaults and validates it."""
    return Kind(
        group,
        "v1",
        plural,
        kind.lower(),
        kind,
        namespaced,
        short,
        sub,
        categories,
        validator=strategy,
        strategy=strategy,
        after_uid=after_uid,
    )


_JOBS = JobStrategy()


def _dra(
    plural: str, kind: str, namespaced: bool, strategy: Any, sub: tuple[str, ...] = ()
) -> Kind:
    """A resource.k8s.io/v1 kind, validated with the write's context."""
    return Kind(
        RESOURCE_GROUP,
        "v1",
        plural,
        kind.lower(),
        kind,
        namespaced,
        subresources=sub,
        strategy=strategy,
        request_validator=strategy,
    )


BUILTIN_KINDS: tuple[Kind, ...] = (
    _core("pods", "Pod", True, ("po",), ("status", "binding", "eviction")),
    _core("nodes", "Node", False, ("no",), ("status",)),
    _core("namespaces", "Namespace", False, ("ns",), ("status", "finalize")),
    _core("events", "Event", True, ("ev",)),
    _core("configmaps", "ConfigMap", True, ("cm",)),
    _core("secrets", "Secret", True),
    _core("services", "Service", True, ("svc",), ("status",)),
    _core("serviceaccounts", "ServiceAccount", True, ("sa",), ("token",)),
    _validated("", "podtemplates", "PodTemplate", True, PodTemplateStrategy()),
    _validated(
        "",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        True,
        PersistentVolumeClaimStrategy(),
        ("pvc",),
        ("status",),
    ),
    _validated(
        "",
        "persistentvolumes",
        "PersistentVolume",
        False,
        PersistentVolumeStrategy(),
        ("pv",),
        ("status",),
    ),
    _validated(
        STORAGE_GROUP, "storageclasses", "StorageClass", False, StorageClassStrategy(), ("sc",)
    ),
    _validated(STORAGE_GROUP, "csinodes", "CSINode", False, CSINodeStrategy()),
    _validated(STORAGE_GROUP, "csidrivers", "CSIDriver", False, CSIDriverStrategy()),
    # The workload kinds, stored and validated with no controller behind them; their scale
    # subresource is not served.
    _validated(
        APPS_GROUP,
        "deployments",
        "Deployment",
        True,
        DeploymentStrategy(),
        ("deploy",),
        ("status",),
        ("all",),
    ),
    _validated(
        APPS_GROUP,
        "replicasets",
        "ReplicaSet",
        True,
        ReplicaSetStrategy(),
        ("rs",),
        ("status",),
        ("all",),
    ),
    _validated(
        APPS_GROUP,
        "statefulsets",
        "StatefulSet",
        True,
        StatefulSetStrategy(),
        ("sts",),
        ("status",),
        ("all",),
    ),
    _validated(
        BATCH_GROUP,
        "jobs",
        "Job",
        True,
        _JOBS,
        (),
        ("status",),
        ("all",),
        after_uid=_JOBS.generate_selector,
    ),
    # Dynamic Resource Allocation
    _dra("deviceclasses", "DeviceClass", False, DeviceClassStrategy()),
    _dra("resourceclaims", "ResourceClaim", True, ResourceClaimStrategy(), ("status",)),
    _dra("resourceclaimtemplates", "ResourceClaimTemplate", True, ResourceClaimTemplateStrategy()),
    _dra("resourceslices", "ResourceSlice", False, ResourceSliceStrategy()),
    Kind("coordination.k8s.io", "v1", "leases", "lease", "Lease", True),
    Kind("events.k8s.io", "v1", "events", "event", "Event", True, ("ev",)),
    Kind(
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        "priorityclass",
        "PriorityClass",
        False,
        ("pc",),
    ),
    Kind(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        True,
        ("pdb",),
        ("status",),
    ),
    Kind(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        ("status",),
    ),
    *(
        Kind(
            "rbac.authorization.k8s.io",
            "v1",
            plural,
            kind.lower(),
            kind,
            kind in ("Role", "RoleBinding"),
            validator=RbacValidator(kind),
        )
        for plural, kind in (
            ("roles", "Role"),
            ("clusterroles", "ClusterRole"),
            ("rolebindings", "RoleBinding"),
            ("clusterrolebindings", "ClusterRoleBinding"),
        )
    ),
    Kind(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "validatingwebhookconfiguration",
        "ValidatingWebhookConfiguration",
        False,
    ),
    Kind(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "mutatingwebhookconfiguration",
        "MutatingWebhookConfiguration",
        False,
    ),
)


def native_kinds(version: str) -> tuple[Kind, ...]:
    """scheduling.k8s.io's Workloads and PodGroups at `version` (a real server serves one
    version of them, when its GenericWorkload gate and runtime config say so)."""
    podgroups = PodGroupStrategy(version)
    workloads = WorkloadStrategy(version)
    return (
        Kind(
            NATIVE_GROUP,
            version,
            "podgroups",
            "podgroup",
            "PodGroup",
            True,
            subresources=("status",),
            validator=podgroups,
            strategy=podgroups,
        ),
        Kind(
            NATIVE_GROUP,
            version,
            "workloads",
            "workload",
            "Workload",
            True,
            validator=workloads,
            strategy=workloads,
        ),
    )


class Registry:
    """Resolves request paths to kinds; CRDs add and remove kinds at run time."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], Kind] = {}
        # group -> versions, preferred (first registered / storage) first
        self._versions: dict[str, list[str]] = {}
        for kind in BUILTIN_KINDS:
            self.add(kind)

    def add(self, kind: Kind) -> None:
        """Serve `kind` at its group/version/plural."""
        self._by_gvr[(kind.group, kind.version, kind.plural)] = kind
        versions = self._versions.setdefault(kind.group, [])
        if kind.version not in versions:
            versions.append(kind.version)

    def lookup(self, group: str, version: str, plural: str) -> Kind | None:
        """The kind served at group/version/plural, if any."""
        return self._by_gvr.get((group, version, plural))

    def kind(self, group: str, version: str, plural: str) -> Kind:
        """The kind served at group/version/plural, or 404 for a path that names none."""
        found = self.lookup(group, version, plural)
        if found is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        return found

    def by_key(self, key: str) -> Kind | None:
        """The kind for a storage key at the most preferred version that serves it (a group's
        preferred version need not serve every resource of it: scheduling.k8s.io/v1 serves
        priorityclasses, not podgroups)."""
        for kind in self._by_gvr.values():
            if kind.key == key:
                for version in self._versions[kind.group]:
                    found = self._by_gvr.get((kind.group, version, kind.plural))
                    if found is not None:
                        return found
        return None

    def groups(self) -> dict[str, list[str]]:
        """Every served group with its versions, preferred first."""
        return {g: list(v) for g, v in self._versions.items() if v}

    def kinds_in(self, group: str, version: str) -> list[Kind]:
        """Every kind served under group/version."""
        return [k for k in self._by_gvr.values() if k.group == group and k.version == version]

    def all_kinds(self) -> list[Kind]:
        """Every served kind, one entry per version."""
        return list(self._by_gvr.values())

    def add_crd(self, crd: Obj) -> list[Kind]:
        """Serve every `served` version of a CustomResourceDefinition."""
        self.remove_crd(crd)
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group = str(spec.get("group", ""))
        versions = list(spec.get("versions") or [])
        # the storage version is preferred in discovery, as the real server orders it
        versions.sort(key=lambda v: 0 if v.get("storage") else 1)
        added: list[Kind] = []
        for version in versions:
            if not version.get("served", True):
                continue
            subresources = version.get("subresources") or {}
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            kind = Kind(
                group=group,
                version=str(version["name"]),
                plural=str(names.get("plural", "")),
                singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
                kind=str(names.get("kind", "")),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                subresources=tuple(s for s in ("status", "scale") if s in subresources),
                categories=tuple(names.get("categories") or ()),
                schema=schema,
                from_crd=True,
            )
            self.add(kind)
            added.append(kind)
        return added

    def remove_crd(self, crd: Obj) -> None:
        """Stop serving the resource a CRD defined."""
        spec = crd.get("spec") or {}
        group = str(spec.get("group", ""))
        plural = str((spec.get("names") or {}).get("plural", ""))
        for gvr in [g for g in self._by_gvr if g[0] == group and g[2] == plural]:
            del self._by_gvr[gvr]
        if group in self._versions:
            self._versions[group] = sorted(
                {g[1] for g in self._by_gvr if g[0] == group},
                key=lambda v: self._versions[group].index(v) if v in self._versions[group] else 99,
            )


def as_version(kind: Kind, obj: Obj) -> Obj:
    """The object as `kind`'s version serves it: a CRD served at several versions stores
    one, and without a conversion webhook the real server only rewrites apiVersion."""
    if kind.from_crd and obj.get("apiVersion") != kind.api_version:
        return dict(obj, apiVersion=kind.api_version)
    return obj


def apply_schema_defaults(value: Any, schema: Obj | None) -> Any:
    """Fill `default`s of an OpenAPI v3 schema into `value` in place, as CRDs do on write."""
    if schema is None:
        return value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for name, sub in properties.items():
            if name not in value and isinstance(sub, dict) and "default" in sub:
                value[name] = _clone(sub["default"])
            if name in value:
                apply_schema_defaults(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in value.items():
                if name not in properties:
                    apply_schema_defaults(item, extra)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                apply_schema_defaults(item, items)
    return value


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value
