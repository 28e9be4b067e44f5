"""`muster status`, `explain` and `whatif` show Kubernetes' own PodGroups too, named apart
from Volcano's: `podgroups.scheduling.k8s.io NS/NAME`, `pg` for Volcano's, and a plain
`podgroup` for whichever exists by that name."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from scheduler.api.native import PODGROUPS, V1ALPHA2, V1BETA1
from scheduler.inspect.cluster import ClusterObjects, Observed, build_world, run_session
from scheduler.inspect.config import built_in
from scheduler.inspect.explain import explain_text
from scheduler.inspect.explain_target import PodAnswer, pod_answer, podgroup_key
from scheduler.inspect.status import podgroup_table, render
from scheduler.inspect.views import group_views
from scheduler.inspect.whatif import add_manifests, answer_text, answers
from tests.unit.inspect.objects import node, podgroup, queue
from tests.unit.native_objects import member, native_podgroup, native_podgroup_body

NOW = 1767225600.0 + 90


def objects(*, volcano_too: bool = False, cpu: str = "2") -> ClusterObjects:
    """Two nodes; native gang "train" of 4 one-cpu pods (room for them all with 2 cpu each)."""
    found = ClusterObjects(nodes=[node("n0", cpu), node("n1", cpu)], queues=[queue()])
    found.served_versions[PODGROUPS] = V1ALPHA2
    found.others["nativepodgroup"] = [native_podgroup("train", 4)]
    found.pods = [member(f"train-{i}", group="train") for i in range(4)]
    if volcano_too:
        found.podgroups = [podgroup("train", 1)]
    return found


def observed(found: ClusterObjects) -> tuple[Observed, Any]:
    world = build_world(found)
    return Observed(world, found, built_in()), run_session(world, built_in().config, NOW)


def test_status_lists_a_native_podgroup_by_its_resource_with_why_it_waits() -> None:
    seen, session = observed(objects(cpu="1"))

    (view,) = group_views(session, seen.world)
    table = podgroup_table([view], NOW, all_namespaces=True)

    assert view.native and view.key == "scheduling.k8s.io/ns/train"
    assert view.title == "podgroups.scheduling.k8s.io ns/train"
    assert view.waiting_reason.startswith("4/4 tasks in gang unschedulable: 0/2 nodes")
    assert "podgroup.scheduling.k8s.io/train" in table
    assert view.as_dict(NOW)["api"] == "scheduling.k8s.io"


def test_status_shows_a_volcano_and_a_native_podgroup_of_one_name_as_two_rows() -> None:
    seen, _ = observed(objects(volcano_too=True))
    args = argparse.Namespace(all_namespaces=True, namespace=None, output=None)

    text = render(args, None, seen, NOW).text  # type: ignore[arg-type]

    rows = [line.split()[1] for line in text.splitlines() if "train" in line]
    assert sorted(rows) == ["podgroup.scheduling.k8s.io/train", "train"]


@pytest.mark.parametrize(
    ("kind", "volcano_too", "expected"),
    [
        pytest.param(
            "podgroups.scheduling.k8s.io", True, "scheduling.k8s.io/ns/train", id="native"
        ),
        pytest.param("pg", True, "ns/train", id="pg-is-volcanos"),
        pytest.param("podgroups.scheduling.volcano.sh", True, "ns/train", id="volcano"),
        pytest.param("podgroup", False, "scheduling.k8s.io/ns/train", id="plain-the-one-there"),
    ],
)
def test_explain_names_each_api_by_its_kind(kind: str, volcano_too: bool, expected: str) -> None:
    seen, _ = observed(objects(volcano_too=volcano_too))
    assert podgroup_key(kind, "ns/train", seen) == expected


def test_a_plain_podgroup_naming_both_asks_for_the_qualified_kind() -> None:
    seen, _ = observed(objects(volcano_too=True))
    with pytest.raises(ValueError, match=r"podgroups\.scheduling\.k8s\.io ns/train") as both:
        podgroup_key("podgroups", "ns/train", seen)
    assert "muster explain pg ns/train" in str(both.value)


def test_explain_of_a_native_gang_names_its_kind_and_says_it_runs() -> None:
    seen, session = observed(objects())
    (view,) = group_views(session, seen.world)

    text = explain_text(view, None, session, seen.world, [])

    assert text.splitlines()[0].startswith("podgroups.scheduling.k8s.io ns/train: Running")


def test_explain_pod_of_a_native_podgroup_that_does_not_exist_says_so() -> None:
    found = objects()
    found.pods.append(member("lost", group="nowhere"))
    seen, session = observed(found)

    answer = pod_answer(seen, session, "ns/lost")

    assert isinstance(answer, PodAnswer) and answer.waits
    assert answer.lines[0] == "Pod ns/lost: member of podgroups.scheduling.k8s.io ns/nowhere"
    assert "podgroups.scheduling.k8s.io ns/nowhere does not exist" in answer.lines[1]


@pytest.mark.parametrize("version", [V1ALPHA2, V1BETA1])
def test_whatif_submits_a_native_podgroup_and_its_pods(version: str) -> None:
    world = build_world(ClusterObjects(nodes=[node("n0"), node("n1")], queues=[queue()]))
    group = native_podgroup_body("g", 4, version=version)
    group["apiVersion"] = f"scheduling.k8s.io/{version}"
    group["kind"] = "PodGroup"
    docs: list[dict[str, Any]] = [group]
    for index in range(4):
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"g-{index}"},
            "spec": {
                "schedulerName": "muster",
                "schedulingGroup": {"podGroupName": "g"},
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
        docs.append(pod)

    submission = add_manifests(world, docs, "ns", NOW)
    baseline = run_session(
        build_world(ClusterObjects(nodes=[node("n0")], queues=[queue()])), built_in().config, NOW
    )
    (answer,) = answers(run_session(world, built_in().config, NOW), baseline, world, submission)

    assert submission.podgroups == ["scheduling.k8s.io/ns/g"]
    assert answer.verdict == "would run"
    assert answer_text(answer).startswith("podgroups.scheduling.k8s.io ns/g: would run")
