"""The scheduler's RBAC grants exactly what muster's code asks the API server for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tests.manifests.conftest import find, render

Grant = tuple[str, str, str]  # (API group, resource, verb)

# Every request `muster scheduler` sends, by where it is sent from. Keep this in step
# with the code: a new request needs its grant here and in deploy/.../rbac.yaml.
CLUSTER_WIDE: dict[str, set[Grant]] = {
    "cache/reflector.py: list then watch, per kind": {
        (group, resource, verb)
        for group, resource in (
            ("", "pods"),
            ("", "nodes"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("scheduling.volcano.sh", "podgroups"),
            ("scheduling.volcano.sh", "queues"),
        )
        for verb in ("list", "watch")
    },
    "effects/binder.py": {("", "pods/binding", "create")},
    "effects/status_writer.py": {
        ("", "pods/status", "patch"),
        # PodGroup has no status subresource: its status is patched on the object.
        ("scheduling.volcano.sh", "podgroups", "patch"),
        ("scheduling.volcano.sh", "queues/status", "patch"),
    },
    "effects/evictor.py": {("", "pods/status", "patch"), ("", "pods", "delete")},
    "effects/recorder.py": {("", "events", "create")},
    "server.py: the default queue": {
        ("scheduling.volcano.sh", "queues", "create"),
        ("scheduling.volcano.sh", "queues", "get"),
        ("scheduling.volcano.sh", "queues/status", "patch"),
    },
}
IN_LOCK_NAMESPACE: dict[str, set[Grant]] = {
    "kube/lease.py": {
        ("coordination.k8s.io", "leases", verb) for verb in ("get", "create", "update")
    },
}


def grants(rules: list[dict[str, Any]]) -> Iterator[Grant]:
    """Every (group, resource, verb) a list of policy rules allows."""
    for rule in rules:
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                for verb in rule.get("verbs", []):
                    yield group, resource, verb


def needed(uses: dict[str, set[Grant]]) -> set[Grant]:
    return set().union(*uses.values())


def test_the_cluster_role_grants_exactly_what_the_scheduler_uses() -> None:
    role = find(render("deploy"), "ClusterRole", "muster-scheduler")
    granted = set(grants(role["rules"]))
    assert needed(CLUSTER_WIDE) - granted == set(), "the scheduler would be forbidden these"
    assert granted - needed(CLUSTER_WIDE) == set(), "granted but never used"


def test_the_lease_role_grants_exactly_leader_election_in_muster_system() -> None:
    docs = render("deploy")
    role = find(docs, "Role", "muster-scheduler-leader-election")
    assert role["metadata"]["namespace"] == "muster-system"
    assert set(grants(role["rules"])) == needed(IN_LOCK_NAMESPACE)
    binding = find(docs, "RoleBinding", "muster-scheduler-leader-election")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_no_rule_has_a_wildcard_names_secrets_or_stays_unbound() -> None:
    docs = render("deploy")
    account = find(docs, "ServiceAccount", "muster-scheduler")
    subject = {
        "kind": "ServiceAccount",
        "name": account["metadata"]["name"],
        "namespace": account["metadata"]["namespace"],
    }
    roles = [d for d in docs if d["kind"] in ("ClusterRole", "Role")]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, []), f"{role['metadata']['name']}: {rule}"
            assert not any(r.split("/")[0] == "secrets" for r in rule["resources"]), rule
        kind = "ClusterRoleBinding" if role["kind"] == "ClusterRole" else "RoleBinding"
        binding = find(docs, kind, role["metadata"]["name"])
        assert binding["subjects"] == [subject]
    deployment = find(docs, "Deployment", "muster-scheduler")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == subject["name"]
