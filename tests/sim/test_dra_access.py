"""The permissions a ResourceClaim's status writes need besides `resourceclaims/status`, as
kube-apiserver 1.36 asks its authorizer inside their validation: `resourceclaims/binding`
(cluster-wide, the request's verb) to change `allocation` or `reservedFor`, and
`arbitrary-node:<verb>` on `resourceclaims/driver` to change `devices`. A scheduler whose RBAC
lacks the first fails here as it fails on a cluster.

Every answer below was checked against kube-apiserver 1.36."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw, create_namespace, unique
from tests.sim.test_dra_claims import ALLOCATION, CONSUMER, Claim, claims_path
from tests.sim.test_dra_kinds import causes
from tests.sim.test_rbac import bind, robot, role

MERGE = "application/merge-patch+json"
CLAIM_RULES = [
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceclaims", "resourceclaims/status", "resourceclaims/binding"],
        "verbs": ["get", "update", "patch"],
    }
]


def binding_refused(user: str, verb: str) -> str:
    return (
        "Forbidden: changing status.allocation or status.reservedFor requires "
        f'resource="resourceclaims/binding", verb="{verb}" permission: resourceclaims.resource.'
        f'k8s.io is forbidden: User "{user}" cannot {verb} resource "resourceclaims/binding" in '
        'API group "resource.k8s.io" at the cluster scope'
    )


class Binder:
    """A ServiceAccount allowed resourceclaims and their status (and, in its own namespace
    only, resourceclaims/binding, which does not count), and a claim to write."""

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        self.namespace = create_namespace(raw, "binder")
        self.account = (self.namespace, unique("binder"))
        self.client = robot(raw, self.namespace, self.account[1])
        self.user = f"system:serviceaccount:{self.namespace}:{self.account[1]}"
        name = role(raw, CLAIM_RULES, self.namespace)
        bind(raw, name, self.account, kind="Role", namespace=self.namespace)
        self.claim = Claim(raw, self.namespace)

    def write_status(self, status: dict[str, Any]) -> tuple[int, Any]:
        obj = self.claim.get()
        obj["status"] = status
        return self.client.json("PUT", f"{self.claim.path}/status", obj)

    def patch_status(self, status: dict[str, Any]) -> tuple[int, Any]:
        return self.client.json(
            "PATCH", f"{self.claim.path}/status", {"status": status}, content_type=MERGE
        )

    def grant_binding(self, verbs: list[str]) -> None:
        rules = [
            {
                "apiGroups": ["resource.k8s.io"],
                "resources": ["resourceclaims/binding"],
                "verbs": verbs,
            }
        ]
        bind(self.raw, role(self.raw, rules), self.account)


@pytest.fixture
def binder(raw: Raw) -> Binder:
    return Binder(raw)


def test_allocating_without_the_binding_permission_is_refused_for_the_verb(
    binder: Binder,
) -> None:
    code, answer = binder.write_status({"allocation": ALLOCATION})
    assert code == 422, answer
    assert answer["message"] == (
        f'ResourceClaim.resource.k8s.io "{binder.claim.path.rsplit("/", 1)[1]}" is invalid: '
        f"status.allocation: {binding_refused(binder.user, 'update')}"
    )
    code, answer = binder.patch_status({"allocation": ALLOCATION})
    assert code == 422, answer
    assert causes(answer) == [("status.allocation", binding_refused(binder.user, "patch"))]
    binder.claim.release()


def test_a_status_write_that_changes_neither_needs_no_binding_permission(binder: Binder) -> None:
    code, answer = binder.write_status({})
    assert code == 200, answer
    binder.claim.release()


def test_the_missing_permission_is_one_cause_among_the_status_s_others(binder: Binder) -> None:
    code, answer = binder.write_status({"reservedFor": [CONSUMER]})
    assert code == 422, answer
    assert causes(answer) == [
        ("status.allocation", binding_refused(binder.user, "update")),
        ("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set"),
    ]
    binder.claim.release()


def test_a_cluster_wide_grant_of_the_verb_allows_it_and_only_it(binder: Binder) -> None:
    binder.grant_binding(["update"])
    code, answer = binder.write_status({"allocation": ALLOCATION, "reservedFor": [CONSUMER]})
    assert code == 200, answer
    assert answer["status"] == {"allocation": ALLOCATION, "reservedFor": [CONSUMER]}
    code, answer = binder.patch_status({"reservedFor": None})
    assert code == 422, answer
    assert causes(answer) == [("status.allocation", binding_refused(binder.user, "patch"))]
    binder.claim.release()


def test_changing_device_status_needs_the_driver_s_arbitrary_node_permission(
    binder: Binder,
) -> None:
    binder.grant_binding(["update"])
    device = {"driver": "gpu.example.com", "pool": "p1", "device": "gpu-0"}
    code, answer = binder.write_status(
        {"allocation": ALLOCATION, "reservedFor": [CONSUMER], "devices": [device]}
    )
    assert code == 422, answer
    assert causes(answer) == [
        (
            "status.devices",
            'Forbidden: changing status.devices requires resource="resourceclaims/driver", '
            'verb="[arbitrary-node:update]" permission: resourceclaims.resource.k8s.io '
            f'"gpu.example.com" is forbidden: User "{binder.user}" cannot arbitrary-node:update '
            'resource "resourceclaims/driver" in API group "resource.k8s.io" in the namespace '
            f'"{binder.namespace}"',
        )
    ]
    binder.claim.release()


def test_the_admin_writes_claims_status_unchecked(raw: Raw) -> None:
    namespace = create_namespace(raw, "admin-writes")
    stored = Claim(raw, namespace)
    code, answer = stored.write_status({"allocation": ALLOCATION, "reservedFor": [CONSUMER]})
    assert code == 200, answer
    stored.release()
    assert raw.json("GET", claims_path(namespace))[0] == 200
