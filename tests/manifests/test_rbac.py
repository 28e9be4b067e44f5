"""muster's RBAC grants exactly what its code asks the API server for, process by process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from scheduler.cache.wiring import HANDLERS
from scheduler.controller.follow import FOLLOWED
from tests.manifests.conftest import KUSTOMIZATIONS, WEBHOOKS, find, render

Grant = tuple[str, str, str]  # (API group, resource, verb)

# Every request `muster scheduler` sends, by where it is sent from. Keep this in step
# with the code: a new request needs its grant here and in deploy/.../rbac.yaml.
CLUSTER_WIDE: dict[str, set[Grant]] = {
    "cache/reflector.py: list then watch, per kind of cache/wiring.py": {
        (group, resource, verb)
        for group, resource in (
            ("", "pods"),
            ("", "nodes"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("scheduling.volcano.sh", "podgroups"),
            ("scheduling.volcano.sh", "queues"),
            # At the version discovery finds (none when neither is served).
            ("scheduling.k8s.io", "podgroups"),
            ("scheduling.k8s.io", "workloads"),
            ("", "persistentvolumeclaims"),
            ("", "persistentvolumes"),
            ("storage.k8s.io", "storageclasses"),
            ("storage.k8s.io", "csinodes"),
            ("", "namespaces"),
            ("policy", "poddisruptionbudgets"),
            # Optional: a cluster without the CRD answers 404, which the reflector reads
            # as "no HyperNodes" (a 403 would not be: the grant must be there).
            ("topology.volcano.sh", "hypernodes"),
            # Optional as HyperNodes: a cluster without an autoscaler's CRD has none.
            ("autoscaling.x-k8s.io", "provisioningrequests"),
            ("resource.k8s.io", "deviceclasses"),
            ("resource.k8s.io", "resourceslices"),
            ("resource.k8s.io", "resourceclaims"),
        )
        for verb in ("list", "watch")
    },
    "effects/scale_up.py: requests, their templates, the pods that wait for them": {
        ("autoscaling.x-k8s.io", "provisioningrequests", "create"),
        # A request that existed already (409) is read back for its uid.
        ("autoscaling.x-k8s.io", "provisioningrequests", "get"),
        ("autoscaling.x-k8s.io", "provisioningrequests", "delete"),
        ("", "podtemplates", "create"),
        # Each template's owner becomes the request once the request exists.
        ("", "podtemplates", "patch"),
        ("", "podtemplates", "delete"),
        ("", "pods", "patch"),
    },
    "effects/binder.py": {("", "pods/binding", "create")},
    "effects/device_claims.py: PreBind of ResourceClaims, as kube-scheduler writes them": {
        # The finalizer, by merge patch with the claim's resourceVersion; read again on a
        # conflict.
        ("resource.k8s.io", "resourceclaims", "patch"),
        ("resource.k8s.io", "resourceclaims", "get"),
        # The allocation and the reservation, in one write of the status; kube-apiserver
        # 1.36 asks the same verb of resourceclaims/binding, cluster-wide.
        ("resource.k8s.io", "resourceclaims/status", "patch"),
        ("resource.k8s.io", "resourceclaims/binding", "patch"),
    },
    "effects/binder.py: PreBind, selected-node on claims, claimRef on static volumes": {
        ("", "persistentvolumeclaims", "patch"),
        ("", "persistentvolumes", "patch"),
    },
    "effects/status_writer.py": {
        ("", "pods/status", "patch"),
        # PodGroup has no status subresource: its status is patched on the object.
        ("scheduling.volcano.sh", "podgroups", "patch"),
        ("scheduling.volcano.sh", "queues/status", "patch"),
        ("topology.volcano.sh", "hypernodes/status", "patch"),
        # A native PodGroup's conditions, by strategic merge patch of its status.
        ("scheduling.k8s.io", "podgroups/status", "patch"),
    },
    "effects/evictor.py": {("", "pods/status", "patch"), ("", "pods/eviction", "create")},
    "effects/recorder.py": {("", "events", "create")},
    "effects/queues.py: the default queue": {
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

# Every request `muster controller` sends, by where it is sent from (scheduler/controller/),
# its own through objects.py, pending.py, census.py and follow.py, and kopf's on behalf of
# operator.py and settings.py. Read with --all-namespaces (the Deployment's): kopf then lists
# no namespaces.
OWNER_KINDS: dict[str, tuple[str, ...]] = {
    # A Spark executor's controller is its driver; an LWS worker StatefulSet's, its leader.
    "": ("pods",),
    "apps": ("replicasets", "statefulsets", "daemonsets", "deployments"),
    "batch": ("jobs", "cronjobs"),
    "jobset.x-k8s.io": ("jobsets",),
    "leaderworkerset.x-k8s.io": ("leaderworkersets",),
    "ray.io": ("rayclusters", "rayjobs", "rayservices"),
    "kubeflow.org": ("pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs", "jaxjobs"),
    "trainer.kubeflow.org": ("trainjobs",),
    "sparkoperator.k8s.io": ("sparkapplications", "scheduledsparkapplications"),
    "argoproj.io": ("workflows",),
}
# The kinds follow.py watches, as the code lists them.
FOLLOWED_KINDS: dict[str, tuple[str, ...]] = {
    group: tuple(f.plural for f in FOLLOWED if f.api_group == group)
    for group in {f.api_group for f in FOLLOWED}
}
CONTROLLER: dict[str, set[Grant]] = {
    "pending.py: the unbound pods, listed and watched; operator.py: kopf's queue watch": {
        (group, resource, verb)
        for group, resource in (("", "pods"), ("scheduling.volcano.sh", "queues"))
        for verb in ("list", "watch")
    },
    "census.py: every PodGroup, listed and watched": {
        ("scheduling.volcano.sh", "podgroups", verb) for verb in ("list", "watch")
    },
    "objects.py owner(): a pod's owners up the controller references, kind by kind": {
        (group, resource, "get")
        for group, resources in OWNER_KINDS.items()
        for resource in resources
    },
    "follow.py: the kinds whose groups follow their spec": {
        (group, resource, verb)
        for group, resources in FOLLOWED_KINDS.items()
        for resource in resources
        for verb in ("list", "watch")
    },
    "objects.py namespace_queue(): the namespace's default queue": {("", "namespaces", "get")},
    "objects.py create_podgroup(), patch_podgroup()": {
        ("scheduling.volcano.sh", "podgroups", verb) for verb in ("create", "patch")
    },
    "objects.py annotate_pod(): the group's name": {("", "pods", "patch")},
    "objects.py native_podgroup(), native_workload(), annotate_native_podgroup()": {
        ("scheduling.k8s.io", "podgroups", "get"),
        ("scheduling.k8s.io", "workloads", "get"),
        ("scheduling.k8s.io", "podgroups", "patch"),
    },
    "objects.py native_podgroups_in(): whether the Job controller gangs a workload's Jobs": {
        ("scheduling.k8s.io", "podgroups", "list"),
    },
    "objects.py set_queue_state()": {("scheduling.volcano.sh", "queues/status", "patch")},
    "objects.py ensure_queue(): the default queue": {("scheduling.volcano.sh", "queues", "create")},
    "objects.py ensure_peering(): kopf's peering object": {
        ("kopf.dev", "clusterkopfpeerings", "create")
    },
    "settings.py: kopf's peering keep-alive": {
        ("kopf.dev", "clusterkopfpeerings", verb) for verb in ("list", "watch", "patch")
    },
    "objects.py warn() and kopf: OwnerNotReadable, InvalidObject and failures as events": {
        ("", "events", "create")
    },
    "kopf's resource observer: CRDs installed after start": {
        ("apiextensions.k8s.io", "customresourcedefinitions", verb) for verb in ("list", "watch")
    },
}
# Each ClusterRole or Role, and the service account of the Deployment it is bound to.
ACCOUNTS = {
    "muster-scheduler": "muster-scheduler",
    "muster-scheduler-leader-election": "muster-scheduler",
    "muster-controller": "muster-controller",
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


def collection(path: str) -> tuple[str, str]:
    """The API group and resource of a collection's path ("/api/v1/pods": core pods)."""
    parts = path.strip("/").split("/")
    return ("", parts[2]) if parts[0] == "api" else (parts[1], parts[3])


def test_every_kind_the_cache_watches_and_only_those_are_listed_and_watched_above() -> None:
    # A kind registered in cache/wiring.py without its grant would be forbidden on a cluster.
    watched = {
        collection(handler.versions.path(version) if handler.versions else handler.path)
        for handler in HANDLERS
        for version in (handler.versions.versions if handler.versions else ("",))
    }
    granted = {
        (group, resource)
        for use, grants in CLUSTER_WIDE.items()
        if use.startswith("cache/")
        for group, resource, _verb in grants
    }
    assert watched == granted
    for group, resource in watched:
        assert {(group, resource, "list"), (group, resource, "watch")} <= needed(CLUSTER_WIDE)


def test_the_lease_role_grants_exactly_leader_election_in_muster_system() -> None:
    docs = render("deploy")
    role = find(docs, "Role", "muster-scheduler-leader-election")
    assert role["metadata"]["namespace"] == "muster-system"
    assert set(grants(role["rules"])) == needed(IN_LOCK_NAMESPACE)
    binding = find(docs, "RoleBinding", "muster-scheduler-leader-election")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_the_cluster_role_grants_exactly_what_the_controller_uses() -> None:
    role = find(render("deploy"), "ClusterRole", "muster-controller")
    granted = set(grants(role["rules"]))
    assert needed(CONTROLLER) - granted == set(), "the controller would be forbidden these"
    assert granted - needed(CONTROLLER) == set(), "granted but never used"


def test_the_controller_reads_its_webhook_certificate_from_a_volume_not_the_api() -> None:
    # The Secret is mounted by the kubelet (webhooks/deployment-tls.yaml): the controller
    # itself needs no secrets RBAC, and test_no_rule_... forbids it.
    deployment = find(render(WEBHOOKS), "Deployment", "muster-controller")
    pod = deployment["spec"]["template"]["spec"]
    assert any("secret" in volume for volume in pod["volumes"])
    assert pod["serviceAccountName"] == "muster-controller"


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_no_rule_has_a_wildcard_names_secrets_or_stays_unbound(kustomization: str) -> None:
    docs = render(kustomization)
    roles = [d for d in docs if d["kind"] in ("ClusterRole", "Role")]
    assert sorted(r["metadata"]["name"] for r in roles) == sorted(ACCOUNTS)
    for role in roles:
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, []), f"{role['metadata']['name']}: {rule}"
            assert not any(r.split("/")[0] == "secrets" for r in rule["resources"]), rule
        account = find(docs, "ServiceAccount", ACCOUNTS[role["metadata"]["name"]])
        subject = {
            "kind": "ServiceAccount",
            "name": account["metadata"]["name"],
            "namespace": account["metadata"]["namespace"],
        }
        kind = "ClusterRoleBinding" if role["kind"] == "ClusterRole" else "RoleBinding"
        binding = find(docs, kind, role["metadata"]["name"])
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        assert binding["subjects"] == [subject]
    for name in set(ACCOUNTS.values()):
        deployment = find(docs, "Deployment", name)
        assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == name
