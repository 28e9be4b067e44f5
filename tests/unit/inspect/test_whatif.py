"""whatif's World: the file's documents added as the API server would create them, and the
answer read from one session with them against one without."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.resources import Resource
from scheduler.engine import default_config, load_config
from scheduler.inspect.cluster import ClusterObjects, build_world, run_session
from scheduler.inspect.whatif import (
    ManifestError,
    add_manifests,
    answer_text,
    answers,
    load_documents,
)
from tests.unit.dra.devices import device_class, gpu, node_slice
from tests.unit.inspect.objects import (
    PREEMPTING,
    node,
    pod,
    pod_doc,
    podgroup,
    podgroup_doc,
    priority_class,
    queue,
)

NOW = 1767225600.0


def empty_cluster() -> ClusterObjects:
    return ClusterObjects(nodes=[node("n0"), node("n1")], queues=[queue()])


def gang(name: str, size: int, cpu: str = "1", **pod_args: Any) -> list[dict[str, Any]]:
    return [podgroup_doc(name, size)] + [
        pod_doc(f"{name}-{i}", group=name, cpu=cpu, **pod_args) for i in range(size)
    ]


def test_documents_of_a_multi_document_file_and_a_list_are_read_and_empty_ones_dropped() -> None:
    text = "---\nkind: PodGroup\n---\n\n---\nkind: List\nitems:\n- kind: Pod\n- kind: Pod\n"

    assert [d["kind"] for d in load_documents(text)] == ["PodGroup", "Pod", "Pod"]


def test_a_document_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ManifestError, match="document 1 is not an object"):
        load_documents("- a\n- b\n")


def test_file_objects_join_the_world_in_the_given_namespace_as_new_objects() -> None:
    world = build_world(empty_cluster())

    submission = add_manifests(world, gang("g", 2), "team", NOW)

    assert submission.podgroups == ["team/g"]
    assert submission.pods == ["team/g-0", "team/g-1"]
    job = world.live.jobs["team/g"]
    assert {t.name for t in job.tasks.values()} == {"g-0", "g-1"}
    assert job.creation_timestamp == "2026-01-01T00:00:00Z"
    assert all(t.uid.startswith("whatif-pod-team-") for t in job.tasks.values())


def test_a_namespace_in_the_document_wins_unless_it_contradicts_minus_n() -> None:
    docs = gang("g", 1)
    docs[0]["metadata"]["namespace"] = "theirs"
    docs[1]["metadata"]["namespace"] = "theirs"

    assert add_manifests(build_world(empty_cluster()), docs, "default", NOW).podgroups == [
        "theirs/g"
    ]
    with pytest.raises(ManifestError, match=r"metadata\.namespace 'theirs' but -n says 'mine'"):
        add_manifests(build_world(empty_cluster()), docs, "mine", NOW, explicit_namespace=True)


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}], "kind 'Job'"),
        ([{"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "p-"}}], "generateName"),
        ([podgroup_doc("old", 1)], "PodGroup ns/old exists already"),
        ([pod_doc("old-0")], "Pod ns/old-0 exists already"),
        (
            [{**pod_doc("p"), "spec": {"schedulerName": "default-scheduler", "containers": []}}],
            "spec.schedulerName 'default-scheduler' is not one the scheduler serves",
        ),
        ([podgroup_doc("bad", -1)], "spec.minMember"),
    ],
)
def test_a_document_whatif_cannot_submit_is_refused_by_name(
    docs: list[dict[str, Any]], message: str
) -> None:
    objects = empty_cluster()
    objects.podgroups.append(podgroup("old", 1))
    objects.pods.append(pod("old-0", group="old"))
    world = build_world(objects)

    with pytest.raises(ManifestError, match=message):
        add_manifests(world, docs, "ns", NOW)
    assert "ns/bad" not in world.live.jobs


def test_a_gang_that_fits_would_run_on_the_nodes_the_session_binds_it_to() -> None:
    world = build_world(empty_cluster())
    config = default_config()
    baseline = run_session(world, config, NOW)
    submission = add_manifests(world, gang("g", 2), "ns", NOW)
    session = run_session(world, config, NOW)

    (answer,) = answers(session, baseline, world, submission)

    binds = {b.name: b.node for b in session.result.binds}
    assert answer.verdict == "would run"
    assert {pod: node for pod, (node, _) in answer.placements.items()} == binds
    assert set(binds) == {"g-0", "g-1"}
    assert answer.evictions == []
    assert "PodGroup ns/g: would run" in answer_text(answer)


def test_a_gang_too_big_waits_in_the_words_of_the_condition_the_session_writes() -> None:
    world = build_world(empty_cluster())
    baseline = run_session(world, default_config(), NOW)
    submission = add_manifests(world, gang("big", 4, cpu="1500m"), "ns", NOW)
    session = run_session(world, default_config(), NOW)

    (answer,) = answers(session, baseline, world, submission)

    update = next(u for u in session.result.podgroups if u.name == "big")
    condition = next(c for c in update.conditions if c.type == "Unschedulable")
    assert answer.verdict == "waits"
    assert answer.view.waiting_reason == condition.message
    assert answer.placements == {}
    assert f"Unschedulable=True ({condition.reason}): {condition.message}" in answer_text(answer)


def test_evictions_are_those_the_submission_causes_and_the_gang_would_run_after_them() -> None:
    objects = empty_cluster()
    objects.priority_classes = [priority_class("low", 10), priority_class("high", 1000)]
    objects.pods = [
        pod(f"low-{i}", node_name=f"n{i % 2}", phase="Running", priority_class="low", priority=10)
        for i in range(4)
    ]
    world = build_world(objects)
    config = load_config(PREEMPTING)
    baseline = run_session(world, config, NOW)
    docs = gang("high", 2, priority_class="high")
    docs[0]["spec"]["priorityClassName"] = "high"
    submission = add_manifests(world, docs, "ns", NOW)
    session = run_session(world, config, NOW)

    (answer,) = answers(session, baseline, world, submission)

    assert baseline.result.evictions == []
    assert len(answer.evictions) == 2
    assert {e.name for e in answer.evictions} <= {f"low-{i}" for i in range(4)}
    assert all("preempted by ns/high" in e.reason for e in answer.evictions)
    assert answer.verdict == "would run"
    assert {status for _, status in answer.placements.values()} == {"Pipelined"}
    assert "evicts 2 pods:" in answer_text(answer)


def test_pods_get_the_priority_of_their_class_as_the_api_server_admits_them() -> None:
    objects = empty_cluster()
    objects.priority_classes = [priority_class("high", 1000)]
    world = build_world(objects)

    add_manifests(world, [pod_doc("p", priority_class="high")], "ns", NOW)

    (task,) = world.tasks.values()
    assert task.priority == 1000
    with pytest.raises(ManifestError, match="no PriorityClass with name missing was found"):
        add_manifests(world, [pod_doc("q", priority_class="missing")], "ns", NOW)


def test_pods_get_the_requests_the_api_server_defaults_from_limits() -> None:
    world = build_world(empty_cluster())
    # a container naming only a limit; a pod naming only pod-level limits
    by_container = pod_doc("c")
    by_container["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1500m"}}
    by_pod = pod_doc("p", cpu="100m")
    by_pod["spec"]["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}}

    add_manifests(world, [by_container, by_pod], "ns", NOW)

    requests = {t.name: t.request for t in world.tasks.values()}
    assert requests["c"] == Resource(1500)
    # pod-level cpu from the containers' 100m, which name it; memory from the limit
    assert requests["p"] == Resource(100, 2**30)


def test_a_pod_level_request_of_a_manifest_sizes_its_pod() -> None:
    world = build_world(empty_cluster())
    # three pods of 100m would share a 2-cpu node; at 1500m each, two nodes hold two
    docs = gang("big", 3, cpu="100m")
    for doc in docs[1:]:
        doc["spec"]["resources"] = {"requests": {"cpu": "1500m"}}
    baseline = run_session(world, default_config(), NOW)
    submission = add_manifests(world, docs, "ns", NOW)
    session = run_session(world, default_config(), NOW)

    (answer,) = answers(session, baseline, world, submission)

    assert answer.verdict == "waits"
    assert "Insufficient cpu" in answer.view.waiting_reason


SCALE_UP = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: scaleup}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
"""


def test_a_gang_that_fits_nowhere_says_what_muster_would_ask_an_autoscaler_for() -> None:
    world = build_world(empty_cluster())
    config = load_config(SCALE_UP)
    baseline = run_session(world, config, NOW)
    submission = add_manifests(world, gang("big", 4, cpu="1500m"), "ns", NOW)
    session = run_session(world, config, NOW)

    (answer,) = answers(session, baseline, world, submission)

    assert answer.verdict == "waits"
    text = answer_text(answer)
    assert "  Scale-up: would be asked" in text
    assert "    ProvisioningRequest big-scaleup-1 (attempt 1)" in text
    assert "    adds room for 4 pods: 4 x cpu 1500m" in text
    assert answer.as_dict(NOW)["scaleUp"] == {
        "state": "asked",
        "request": "big-scaleup-1",
        "attempt": 1,
        "adds": [{"pods": 4, "request": {"cpu": "1500m"}}],
    }


def test_without_scale_up_nothing_would_be_asked() -> None:
    world = build_world(empty_cluster())
    baseline = run_session(world, default_config(), NOW)
    submission = add_manifests(world, gang("big", 4, cpu="1500m"), "ns", NOW)
    session = run_session(world, default_config(), NOW)
    (answer,) = answers(session, baseline, world, submission)
    assert answer.scale_up is None
    assert "Scale-up" not in answer_text(answer)


def gpu_cluster(gpus: int) -> ClusterObjects:
    """Two nodes, each publishing `gpus` GPUs of the test driver, and the class of them."""
    return ClusterObjects(
        nodes=[node("n0"), node("n1")],
        queues=[queue()],
        others={
            "deviceclass": [device_class("gpu")],
            "resourceslice": [
                node_slice(n, *(gpu(f"gpu-{i}") for i in range(gpus)), name=f"{n}-gpus")
                for n in ("n0", "n1")
            ],
        },
    )


ONE_GPU = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "one-gpu"},
    "spec": {
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}
    },
}


def gpu_gang(name: str, size: int) -> list[dict[str, Any]]:
    docs = gang(name, size)
    for doc in docs[1:]:
        doc["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        doc["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return docs


def test_a_gangs_template_claims_are_made_and_it_would_run_on_the_gpus_there_are() -> None:
    world = build_world(gpu_cluster(2))
    baseline = run_session(world, default_config(), NOW)
    submission = add_manifests(world, [ONE_GPU, *gpu_gang("g", 4)], "ns", NOW)
    session = run_session(world, default_config(), NOW)
    (answer,) = answers(session, baseline, world, submission)
    assert answer.verdict == "would run"
    assert world.resource_claims.get("ns/g-0-gpu-whatif") is not None


def test_a_gang_short_of_devices_waits_and_says_which_claim_and_how_many_are_free() -> None:
    world = build_world(gpu_cluster(1))
    baseline = run_session(world, default_config(), NOW)
    submission = add_manifests(world, [ONE_GPU, *gpu_gang("g", 3)], "ns", NOW)
    session = run_session(world, default_config(), NOW)
    (answer,) = answers(session, baseline, world, submission)
    assert answer.verdict == "waits"
    text = answer_text(answer)
    assert "0/2 nodes are available: 2 cannot allocate all claims." in text
    assert (
        "claim ns/g-2-gpu-whatif, request gpu (class gpu) needs 1: 1 device matches its "
        "selectors on node n0, 0 of them free" in text
    )


def test_a_template_neither_in_the_file_nor_in_the_cluster_is_refused_by_name() -> None:
    world = build_world(gpu_cluster(1))
    with pytest.raises(ManifestError, match="ResourceClaimTemplate ns/one-gpu is neither"):
        add_manifests(world, gpu_gang("g", 1), "ns", NOW)
