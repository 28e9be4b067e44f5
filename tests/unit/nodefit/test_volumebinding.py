"""VolumeBinding and VolumeZone give kube-scheduler's verdicts and reasons, gang-aware."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from scheduler.api import wire
from scheduler.api.names import GROUP_NAME_ANNOTATION
from scheduler.api.node import NodeInfo
from scheduler.api.selectors import label_selector
from scheduler.api.snapshot import StorageView, build_snapshot, storage_view
from scheduler.api.task import TaskInfo, TaskStatus
from scheduler.engine import schedule
from scheduler.framework.decisions import ClaimBinding
from scheduler.framework.status import Code, Status
from scheduler.nodefit.storagefilters import StorageFilters, VolumePredicateArguments
from scheduler.nodefit.volumebinding import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_PV_NOT_EXIST,
    REASON_UNBOUND_IMMEDIATE,
    VolumeBinding,
    claim_class,
)
from scheduler.nodefit.volumezone import REASON_ZONE_CONFLICT
from tests.unit.builders import node

ZONE = "topology.kubernetes.io/zone"
NS = "ns"


def claim(
    name: str,
    *,
    storage_class: str | None = "wfc",
    volume: str = "",
    bound: bool = False,
    request: str = "1Gi",
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    selector: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
) -> wire.PersistentVolumeClaim:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "uid": f"uid-{name}",
        "annotations": dict(annotations or {}),
    }
    if bound:
        meta["annotations"]["pv.kubernetes.io/bind-completed"] = "yes"
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": request}},
        "volumeName": volume,
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if selector is not None:
        spec["selector"] = selector
    return wire.from_dict({"metadata": meta, "spec": spec}, wire.PersistentVolumeClaim)


def volume(
    name: str,
    *,
    storage_class: str = "wfc",
    size: str = "10Gi",
    zone: str | None = None,
    host: str | None = None,
    phase: str = "Available",
    claim_ref: str | None = None,
    labels: dict[str, str] | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
) -> wire.PersistentVolume:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": list(modes),
        "storageClassName": storage_class,
    }
    key, value = (ZONE, zone) if zone else ("kubernetes.io/hostname", host)
    if value:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                ]
            }
        }
    if claim_ref:
        spec["claimRef"] = {"namespace": NS, "name": claim_ref}
    return wire.from_dict(
        {
            "metadata": {"name": name, "labels": labels or {}, "resourceVersion": "7"},
            "spec": spec,
            "status": {"phase": phase},
        },
        wire.PersistentVolume,
    )


def storage_class(
    name: str,
    *,
    mode: str = "WaitForFirstConsumer",
    provisioner: str = "csi.example.com",
    zones: tuple[str, ...] = (),
) -> wire.StorageClass:
    body: dict[str, Any] = {
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if zones:
        body["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE, "values": list(zones)}]}
        ]
    return wire.from_dict(body, wire.StorageClass)


STATIC = storage_class("wfc", provisioner="kubernetes.io/no-provisioner")
IMMEDIATE = storage_class("fast", mode="Immediate")
PROVISIONED = storage_class("wfc", zones=("b",))


def pod(name: str, *claims: str, ephemeral: tuple[str, ...] = ()) -> TaskInfo:
    volumes: list[dict[str, Any]] = [
        {"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims
    ]
    volumes += [{"name": v, "ephemeral": {"volumeClaimTemplate": {}}} for v in ephemeral]
    body = {
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {"schedulerName": "muster", "containers": [{"name": "c"}], "volumes": volumes},
    }
    return TaskInfo.from_pod(wire.decode_pod(msgspec.json.encode(body)))


def zonal(name: str, zone: str) -> NodeInfo:
    return node(name, labels={"kubernetes.io/hostname": name, ZONE: zone})


def storage(
    claims: list[wire.PersistentVolumeClaim],
    volumes: list[wire.PersistentVolume] = (),  # type: ignore[assignment]
    classes: list[wire.StorageClass] = (),  # type: ignore[assignment]
) -> StorageView:
    return storage_view(claims, volumes, classes, ())


def filters(view: StorageView, nodes: list[NodeInfo]) -> StorageFilters:
    return StorageFilters(
        view, {n.name: n for n in nodes}, VolumePredicateArguments.model_validate({})
    )


CASES = [
    pytest.param(
        storage([]),
        Status(Code.UNRESOLVABLE, ('persistentvolumeclaim "data" not found',)),
        id="missing-claim-is-unresolvable",
    ),
    pytest.param(
        storage([claim("data", deleting=True)], [], [STATIC]),
        Status(Code.UNRESOLVABLE, ('persistentvolumeclaim "data" is being deleted',)),
        id="claim-being-deleted-is-unresolvable",
    ),
    pytest.param(
        storage([claim("data", storage_class="fast")], [], [IMMEDIATE]),
        Status(Code.UNRESOLVABLE, (REASON_UNBOUND_IMMEDIATE,)),
        id="unbound-immediate-claim",
    ),
    pytest.param(
        storage([claim("data", storage_class="missing")]),
        Status(Code.UNRESOLVABLE, (REASON_UNBOUND_IMMEDIATE,)),
        id="claim-of-a-missing-class-binds-immediately",
    ),
    pytest.param(
        storage([claim("data", volume="pv-a")], [volume("pv-a", zone="a")], [STATIC]),
        Status(Code.UNRESOLVABLE, (REASON_UNBOUND_IMMEDIATE,)),
        id="prebound-claim-without-bind-completed-waits-like-immediate",
    ),
    pytest.param(
        storage([claim("data", volume="pv-a", bound=True)], [volume("pv-a", zone="a")]),
        Status(Code.UNRESOLVABLE, (REASON_NODE_CONFLICT,)),
        id="bound-volume-in-another-zone",
    ),
    pytest.param(
        storage([claim("data", volume="pv-b", bound=True)], [volume("pv-b", zone="b")]),
        Status(Code.SUCCESS),
        id="bound-volume-in-the-node-zone",
    ),
    pytest.param(
        storage([claim("data", volume="gone", bound=True)]),
        Status(Code.UNRESOLVABLE, (REASON_PV_NOT_EXIST,)),
        id="bound-to-a-volume-that-does-not-exist",
    ),
    pytest.param(
        storage([claim("data")], [volume("pv-b", zone="b")], [STATIC]),
        Status(Code.SUCCESS),
        id="wfc-static-volume-in-the-node-zone",
    ),
    pytest.param(
        storage([claim("data")], [volume("pv-a", zone="a")], [STATIC]),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-static-volume-only-elsewhere",
    ),
    pytest.param(
        storage([claim("data", request="20Gi")], [volume("pv-b", zone="b")], [STATIC]),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-static-volume-too-small",
    ),
    pytest.param(
        storage([claim("data", modes=("ReadWriteMany",))], [volume("pv-b", zone="b")], [STATIC]),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-static-volume-without-the-access-mode",
    ),
    pytest.param(
        storage(
            [claim("data", selector={"matchLabels": {"tier": "gold"}})],
            [volume("pv-b", zone="b", labels={"tier": "silver"})],
            [STATIC],
        ),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-static-volume-outside-the-selector",
    ),
    pytest.param(
        storage([claim("data")], [volume("pv-b", zone="b", phase="Released")], [STATIC]),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-static-volume-not-available",
    ),
    pytest.param(
        storage([claim("data")], [volume("pv-b", zone="b", storage_class="other")], [STATIC]),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-static-volume-of-another-class",
    ),
    pytest.param(
        storage([claim("data")], [], [PROVISIONED]),
        Status(Code.SUCCESS),
        id="wfc-provisioning-allowed-in-the-node-zone",
    ),
    pytest.param(
        storage([claim("data")], [], [storage_class("wfc", zones=("a",))]),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-provisioning-topology-excludes-the-node",
    ),
    pytest.param(
        storage([claim("data")], [], [STATIC]),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-no-provisioner-and-no-volume",
    ),
    pytest.param(
        storage(
            [claim("data", annotations={"volume.kubernetes.io/selected-node": "n-a"})],
            [],
            [storage_class("wfc")],
        ),
        Status(Code.UNRESOLVABLE, (REASON_BIND_CONFLICT,)),
        id="wfc-claim-selected-for-another-node",
    ),
    pytest.param(
        storage(
            [claim("data", volume="pv-a", bound=True)],
            [volume("pv-a", storage_class="x", labels={ZONE: "a"})],
        ),
        Status(Code.UNRESOLVABLE, (REASON_ZONE_CONFLICT,)),
        id="volumezone-bound-volume-labelled-with-another-zone",
    ),
    pytest.param(
        storage(
            [claim("data", volume="pv-ab", bound=True)],
            [volume("pv-ab", storage_class="x", labels={ZONE: "a__b"})],
        ),
        Status(Code.SUCCESS),
        id="volumezone-multi-zone-volume-includes-the-node-zone",
    ),
]


@pytest.mark.parametrize(("view", "expected"), CASES)
def test_claims_of_a_pod_on_a_zone_b_node(view: StorageView, expected: Status) -> None:
    target = zonal("n-b", "b")
    assert filters(view, [target]).admits(pod("p", "data"), target) == expected


def test_a_node_without_zone_labels_is_not_constrained_by_volume_zone() -> None:
    view = storage(
        [claim("data", volume="pv-a", bound=True)],
        [volume("pv-a", storage_class="x", labels={ZONE: "a"})],
    )
    plain = node("n1")
    assert filters(view, [plain]).admits(pod("p", "data"), plain).ok


def test_the_volume_zone_toggle_turns_the_zone_check_off() -> None:
    view = storage(
        [claim("data", volume="pv-a", bound=True)],
        [volume("pv-a", storage_class="x", labels={ZONE: "a"})],
    )
    target = zonal("n-b", "b")
    off = VolumePredicateArguments.model_validate({"predicate.VolumeZoneEnable": False})
    assert StorageFilters(view, {"n-b": target}, off).admits(pod("p", "data"), target).ok


def test_an_ephemeral_volume_uses_the_claim_named_after_pod_and_volume() -> None:
    subject = pod("web-0", ephemeral=("scratch",))
    assert subject.placement.claims == (f"{NS}/web-0-scratch",)
    target = zonal("n-b", "b")
    status = filters(storage([]), [target]).admits(subject, target)
    assert status.reasons == ('persistentvolumeclaim "web-0-scratch" not found',)


def _ephemeral_claim(owner_uid: str) -> wire.PersistentVolumeClaim:
    made = claim("web-0-scratch", storage_class="wfc")
    made.metadata.owner_references = [
        wire.OwnerReference(kind="Pod", name="web-0", uid=owner_uid, controller=True)
    ]
    return made


@pytest.mark.parametrize(
    ("owner", "reasons"),
    [
        pytest.param("uid-web-0", (), id="owned-by-the-pod"),
        pytest.param(
            "uid-someone-else",
            ("PVC ns/web-0-scratch was not created for pod ns/web-0 (pod is not owner)",),
            id="made-for-another-pod",
        ),
    ],
)
def test_an_ephemeral_claim_must_be_owned_by_its_pod(owner: str, reasons: tuple[str, ...]) -> None:
    subject = pod("web-0", ephemeral=("scratch",))
    assert subject.placement.ephemeral_claims == ("ns/web-0-scratch",)
    target = zonal("n-b", "b")
    view = storage([_ephemeral_claim(owner)], [], [PROVISIONED])
    assert filters(view, [target]).admits(subject, target).reasons == reasons


def test_a_persistent_volume_claim_needs_no_owner() -> None:
    target = zonal("n-b", "b")
    view = storage([claim("data")], [], [PROVISIONED])
    assert pod("p", "data").placement.ephemeral_claims == ()
    assert filters(view, [target]).admits(pod("p", "data"), target).ok


def test_two_pods_of_a_session_never_take_the_same_volume() -> None:
    target = zonal("n-b", "b")
    view = storage([claim("c1"), claim("c2")], [volume("pv-b", zone="b")], [STATIC])
    binding = VolumeBinding(view, {"n-b": target})
    first, second = pod("p1", "c1"), pod("p2", "c2")
    assert binding.admits(first, target).ok and binding.admits(second, target).ok
    first.status, first.node_name = TaskStatus.ALLOCATED, "n-b"
    binding.allocate(first)
    assert binding.fits(first, target).ok
    assert binding.fits(second, target).reasons == (REASON_BIND_CONFLICT,)
    # a discarded placement gives the volume back
    binding.deallocate(first)
    assert binding.fits(second, target).ok


def test_a_claim_takes_the_smallest_volume_that_fits_and_prebind_binds_it() -> None:
    target = zonal("n-b", "b")
    view = storage(
        [claim("data", request="5Gi")],
        [volume("big", size="100Gi", zone="b"), volume("small", size="5Gi", zone="b")],
        [STATIC],
    )
    binding = VolumeBinding(view, {"n-b": target})
    subject = pod("p", "data")
    subject.status, subject.node_name = TaskStatus.ALLOCATED, "n-b"
    binding.allocate(subject)
    assert binding.claim_bindings(subject.uid) == (
        ClaimBinding(NS, "data", "uid-data", volume="small", volume_resource_version="7"),
    )


def test_a_claim_to_provision_gets_a_selected_node_prebind() -> None:
    target = zonal("n-b", "b")
    binding = VolumeBinding(storage([claim("data")], [], [PROVISIONED]), {"n-b": target})
    subject = pod("p", "data")
    subject.status, subject.node_name = TaskStatus.ALLOCATED, "n-b"
    binding.allocate(subject)
    assert binding.claim_bindings(subject.uid) == (ClaimBinding(NS, "data", "uid-data"),)


def test_a_bound_claim_needs_no_prebind() -> None:
    target = zonal("n-b", "b")
    view = storage([claim("data", volume="pv-b", bound=True)], [volume("pv-b", zone="b")])
    binding = VolumeBinding(view, {"n-b": target})
    subject = pod("p", "data")
    subject.status, subject.node_name = TaskStatus.ALLOCATED, "n-b"
    binding.allocate(subject)
    assert binding.claim_bindings(subject.uid) == ()


@pytest.mark.parametrize(
    ("annotations", "field", "expected"),
    [
        pytest.param({}, "gold", "gold", id="field"),
        pytest.param(
            {"volume.beta.kubernetes.io/storage-class": "old"}, "gold", "old", id="beta-first"
        ),
        pytest.param({}, None, "", id="none"),
    ],
)
def test_claim_class_reads_the_beta_annotation_first(
    annotations: dict[str, str], field: str | None, expected: str
) -> None:
    assert claim_class(claim("c", storage_class=field, annotations=annotations)) == expected


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "1"}, True, id="labels-match"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "2"}, False, id="labels-differ"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {},
            True,
            id="notin-absent",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False, id="exists"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            {"a": "2"},
            False,
            id="unknown-operator-matches-nothing",
        ),
    ],
)
def test_claim_selector_matching(
    selector: dict[str, Any], labels: dict[str, str], expected: bool
) -> None:
    assert label_selector(wire.from_dict(selector, wire.LabelSelector)).matches(labels) is expected


# A whole session: a gang of three, each with its own WaitForFirstConsumer claim.


def _wire_node(name: str, zone: str) -> wire.Node:
    return wire.from_dict(
        {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: zone}},
            "status": {
                "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        wire.Node,
    )


def _gang_pod(name: str, claim_name: str) -> wire.Pod:
    body = {
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "annotations": {GROUP_NAME_ANNOTATION: "g"},
        },
        "spec": {
            "schedulerName": "muster",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
        },
    }
    return wire.decode_pod(msgspec.json.encode(body))


def _gang_session(volumes: list[wire.PersistentVolume]) -> Any:
    group = wire.from_dict(
        {
            "metadata": {"name": "g", "namespace": NS, "uid": "g1"},
            "spec": {"minMember": 3, "queue": "default"},
            "status": {"phase": "Inqueue"},
        },
        wire.PodGroup,
    )
    snap = build_snapshot(
        pods=[_gang_pod(f"w{i}", f"data-{i}") for i in range(3)],
        nodes=[_wire_node("n-a", "a"), _wire_node("n-b", "b")],
        podgroups=[group],
        queues=[wire.from_dict({"metadata": {"name": "default", "uid": "q"}}, wire.Queue)],
        claims=[claim(f"data-{i}") for i in range(3)],
        volumes=volumes,
        storage_classes=[STATIC],
    )
    return schedule(snap)


def test_a_gang_binds_whole_each_member_on_its_own_static_volume() -> None:
    result = _gang_session(
        [volume("pv-a1", zone="a"), volume("pv-b1", zone="b"), volume("pv-b2", zone="b")]
    )
    assert sorted(b.name for b in result.binds) == ["w0", "w1", "w2"]
    chosen = [c.volume for b in result.binds for c in b.claims]
    assert sorted(chosen) == ["pv-a1", "pv-b1", "pv-b2"]
    zone_of = {"pv-a1": "n-a", "pv-b1": "n-b", "pv-b2": "n-b"}
    for bind in result.binds:
        (prebind,) = bind.claims
        assert zone_of[prebind.volume] == bind.node


def test_a_gang_short_of_volumes_binds_nothing() -> None:
    result = _gang_session([volume("pv-a1", zone="a"), volume("pv-b1", zone="b")])
    assert result.binds == []
    messages = {m.name: m.message for m in result.unschedulable}
    assert any(REASON_BIND_CONFLICT in message for message in messages.values())
