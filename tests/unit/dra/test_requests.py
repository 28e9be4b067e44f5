"""A claim's requests normalised, what is refused by name, the claims a pod uses, and
what claims add to a queue (Volcano 1.15's `deviceclass/<class>` counts)."""

from __future__ import annotations

import msgspec

from scheduler.api import dra, wire
from scheduler.dra import claim_from_wire, pod_claims, queue_devices
from tests.unit.dra.devices import claim, exactly, first_available, sub


def test_exactly_is_one_choice_and_first_available_one_per_sub_request_in_order() -> None:
    read = claim_from_wire(
        claim(
            "x",
            exactly("gpu", "true", count=2),
            first_available("alt", sub("big", "gpu-big"), sub("small", "gpu-small", count=3)),
        )
    )
    assert [(c.name, c.device_class, c.count, c.selectors) for c in read.choices] == [
        ("gpu", "gpu", 2, ("true",)),
        ("alt/big", "gpu-big", 1, ()),
        ("alt/small", "gpu-small", 3, ()),
    ]
    assert read.refusal is None


def test_exact_count_defaults_to_one_and_all_has_no_count() -> None:
    read = claim_from_wire(
        claim("x", exactly("gpu"), exactly("gpu", name="every", all_devices=True))
    )
    assert [(c.count, c.all_devices) for c in read.choices] == [(1, False), (0, True)]


def test_a_constraint_applies_to_the_requests_it_names_and_their_sub_requests() -> None:
    read = claim_from_wire(
        claim(
            "x",
            exactly("gpu", name="a"),
            first_available("b", sub("one")),
            exactly("gpu", name="c"),
            constraints=[
                {"requests": ["a", "b"], "matchAttribute": "d/numa"},
                {"distinctAttribute": "d/rack"},
            ],
        )
    )
    named, every = read.constraints
    assert [named.applies_to(c) for c in read.choices] == [True, True, False]
    assert [every.applies_to(c) for c in read.choices] == [True, True, True]


def test_what_muster_does_not_honour_is_refused_by_name() -> None:
    read = claim_from_wire(
        claim(
            "x",
            exactly("gpu", capacity={"memory": "1Gi"}),
            {"name": "odd", "exactly": {"deviceClassName": "gpu", "allocationMode": "Some"}},
        )
    )
    assert read.refusal is not None
    assert "spec.devices.requests[0].exactly.capacity: capacity requests" in read.refusal
    assert (
        'spec.devices.requests[1].exactly.allocationMode: unsupported allocation mode "Some"'
        in read.refusal
    )


def test_admin_access_needs_the_namespace_label() -> None:
    admin = claim("x", exactly("gpu", admin_access=True))
    labelled = {dra.ADMIN_ACCESS_LABEL: "true"}
    assert claim_from_wire(admin, labelled).refusal is None
    assert claim_from_wire(admin, None).refusal is None
    refusal = claim_from_wire(admin, {}).refusal
    assert refusal == (
        "spec.devices.requests[0].exactly.adminAccess: admin access to devices requires the "
        "`resource.kubernetes.io/admin-access: true` label on the containing namespace"
    )


def test_a_pods_claims_are_named_ones_and_those_the_controller_made_from_templates() -> None:
    claims = msgspec.convert(
        [
            {"name": "a", "resourceClaimName": "shared"},
            {"name": "b", "resourceClaimTemplateName": "t"},
            {"name": "c", "resourceClaimTemplateName": "t"},
            {"name": "d", "resourceClaimName": "shared"},
        ],
        list[wire.PodResourceClaim],
    )
    statuses = msgspec.convert(
        [{"name": "b", "resourceClaimName": "p-b-x7"}, {"name": "c"}],
        list[dra.PodResourceClaimStatus],
    )
    read = pod_claims("ns", "p", "p-uid", claims, statuses)
    assert read.claims == ("ns/shared", "ns/p-b-x7")
    assert read.from_template == ("ns/p-b-x7",)
    assert read.waiting is None
    waiting = pod_claims("ns", "p", "p-uid", claims, statuses[1:])
    assert waiting.waiting == 'pod "ns/p": ResourceClaim not created yet'


def test_queues_count_exact_requests_per_device_class_and_a_shared_claim_once() -> None:
    shared = claim_from_wire(claim("shared", exactly("gpu", count=2)))
    other = claim_from_wire(
        claim(
            "x",
            exactly("gpu"),
            exactly("nic", name="net"),
            exactly("gpu", name="every", all_devices=True),
            first_available("alt", sub("one")),
        )
    )
    counts = queue_devices([shared, other, shared])
    assert counts.devices == {"deviceclass/gpu": 3, "deviceclass/nic": 1}
    assert counts.skipped == ["ns/x: every (allocationMode All)", "ns/x: alt (firstAvailable)"]
