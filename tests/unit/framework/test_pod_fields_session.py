"""A session with pods that use fields muster does not honour: refused members hold their
whole gang back with a condition naming the field; warned pods are placed and warned once."""

from __future__ import annotations

from typing import Any

import msgspec

from scheduler.api import wire
from scheduler.api.names import GROUP_NAME_ANNOTATION
from scheduler.api.snapshot import build_snapshot
from scheduler.engine import schedule
from scheduler.framework.decisions import SessionResult
from tests.unit.dra.devices import claim, device_class, exactly, gpu, node_slice

# A claim asking for part of a device (consumable capacity) is refused by name;
# spec.evictionResponders is warned.
REFUSED = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "slice-of-gpu"}]}
REFUSED_CLAIM = claim("slice-of-gpu", exactly(capacity={"memory": "10Gi"}))
REFUSED_FIELD = "spec.devices.requests[0].exactly.capacity"
WARNED = {"evictionResponders": [{"name": "drainer"}]}
WARNED_FIELD = "spec.evictionResponders"


def pod(name: str, group: str, **spec: Any) -> wire.Pod:
    body = {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "annotations": {GROUP_NAME_ANNOTATION: group},
        },
        "spec": {
            "schedulerName": "muster",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            **spec,
        },
    }
    return wire.decode_pod(msgspec.json.encode(body))


def run(pods: list[wire.Pod], min_member: int) -> SessionResult:
    nodes = [
        wire.from_dict(
            {
                "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
                "status": {
                    "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            },
            wire.Node,
        )
        for i in range(3)
    ]
    group = wire.from_dict(
        {
            "metadata": {"name": "g", "namespace": "ns", "uid": "g1"},
            "spec": {"minMember": min_member, "queue": "default"},
            "status": {"phase": "Inqueue"},
        },
        wire.PodGroup,
    )
    queue = wire.from_dict({"metadata": {"name": "default", "uid": "q"}}, wire.Queue)
    snap = build_snapshot(
        pods=pods,
        nodes=nodes,
        podgroups=[group],
        queues=[queue],
        device_classes=[device_class("gpu")],
        resource_slices=[node_slice("n0", gpu("gpu-0"))],
        resource_claims=[REFUSED_CLAIM],
    )
    return schedule(snap)


def test_gang_with_one_refused_member_binds_nothing_and_names_the_field() -> None:
    result = run([pod("a", "g"), pod("b", "g"), pod("c", "g", **REFUSED)], 3)
    assert result.binds == []
    (update,) = result.podgroups
    condition = next(c for c in update.conditions if c.type == "Unschedulable")
    assert condition.reason == "FieldNotHonoured"
    assert REFUSED_FIELD in condition.message and "ns/c" in condition.message
    messages = {m.name: m for m in result.unschedulable}
    assert messages["c"].reason == "Unschedulable"
    assert messages["c"].message.startswith(f"claim ns/slice-of-gpu: {REFUSED_FIELD}: capacity")
    # the others wait for the gang, and say why
    assert REFUSED_FIELD in messages["a"].message
    assert REFUSED_FIELD in messages["b"].message


def test_a_refused_extra_member_does_not_hold_back_a_gang_that_has_enough() -> None:
    result = run([pod("a", "g"), pod("b", "g"), pod("c", "g", **REFUSED)], 2)
    assert sorted(b.name for b in result.binds) == ["a", "b"]
    assert [m.name for m in result.unschedulable] == ["c"]
    assert REFUSED_FIELD in result.unschedulable[0].message


def test_pod_with_a_warned_field_is_bound_with_one_warning_naming_the_field() -> None:
    result = run([pod("a", "g", **WARNED), pod("b", "g")], 2)
    assert sorted(b.name for b in result.binds) == ["a", "b"]
    (warning,) = result.field_warnings
    assert (warning.name, warning.uid) == ("a", "uid-a")
    assert WARNED_FIELD in warning.message


def test_pod_that_is_not_placed_gets_no_placement_warning() -> None:
    # the gang cannot start (minMember 3, two pods): nothing is bound, nothing is warned
    result = run([pod("a", "g", **WARNED), pod("b", "g")], 3)
    assert result.binds == [] and result.field_warnings == []
