"""`muster status`, `muster explain` and `muster whatif` end to end: run as the `muster`
console script with the test cluster's admin kubeconfig, answering with the scheduler's own
session, and writing nothing."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.e2e.conftest import StartScheduler
from tests.e2e.harness import (
    DEPLOY,
    GROUP,
    MUSTER,
    VERSION,
    Cluster,
    Identities,
    Obj,
    condition,
    confine_to_pool,
    make_gang,
    make_pod,
    make_podgroup,
    scheduler_conf,
    wait_for,
    wait_for_phase,
)

PREEMPTING = "enqueue, allocate, preempt, reclaim, backfill"
CHEAPEST = (1, 5, 6)


def muster(cluster: Cluster, *words: str) -> subprocess.CompletedProcess[str]:
    """Run `muster WORDS --kubeconfig <admin>`; its exit code, stdout and stderr."""
    argv = [MUSTER, *words, "--kubeconfig", str(cluster.kubeconfig)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def unschedulable_message(cluster: Cluster, namespace: str, name: str, size: int) -> str | None:
    """The Unschedulable condition's message once the scheduler saw the whole gang (a
    session that ran while the pods were being created speaks of fewer of them)."""
    found = condition(cluster.podgroup(namespace, name), "Unschedulable")
    if not found or found.get("status") != "True":
        return None
    message = str(found.get("message", ""))
    return message if message.startswith(f"{size}/{size} tasks in gang") else None


@pytest.fixture
def priority_classes(cluster: Cluster) -> Iterator[tuple[str, str, str]]:
    """Three PriorityClasses: lowest (5), low (10), high (1000)."""
    api = client.SchedulingV1Api(cluster.api)
    suffix = uuid.uuid4().hex[:6]
    names = (f"lowest-{suffix}", f"low-{suffix}", f"high-{suffix}")
    for name, value in zip(names, (5, 10, 1000), strict=True):
        api.create_priority_class(
            client.V1PriorityClass(metadata=client.V1ObjectMeta(name=name), value=value)
        )
    yield names
    for name in names:
        api.delete_priority_class(name)


@pytest.mark.nodes(2, "2")
def test_explain_gives_a_gang_too_big_to_fit_the_reasons_on_its_podgroup_and_exits_1(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    start_scheduler(period=0.5)
    # 4 x 1.5 cpu on two 2-cpu nodes: two members would fit, the gang does not
    podgroup, pods = make_gang("big", 4, cpu="1500m")
    cluster.submit(namespace, podgroup, pods)
    message = wait_for(
        lambda: unschedulable_message(cluster, namespace, "big", 4),
        timeout=10,
        message=lambda: f"Unschedulable condition on podgroup big\n{cluster.describe(namespace)}",
    )

    explained = muster(cluster, "explain", "podgroup", f"{namespace}/big")

    assert explained.returncode == 1, explained.stdout + explained.stderr
    out = explained.stdout
    assert message in out, f"the PodGroup's condition {message!r} not in:\n{out}"
    assert "nodes are available" in out and "Insufficient cpu" in out, out
    sections = [out.index(s) for s in ("Admission:", "Placement:", "Ahead of it in queue")]
    assert sections == sorted(sections), out
    assert "Verdict: waits" in out


@pytest.mark.nodes(2, "4")
def test_explain_of_a_running_gang_names_each_members_node_and_exits_0(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    start_scheduler()
    podgroup, pods = make_gang("small", 2, cpu="1")
    cluster.submit(namespace, podgroup, pods)
    wait_for_phase(cluster, namespace, "small", "Running", timeout=10)
    # Running counts members placed in the session, so it may be written before their binds
    # land (as Volcano's phase): wait for the binds too.
    placements = wait_for(
        lambda: (found := cluster.placements(namespace)) and all(found.values()) and found,
        timeout=10,
        message=lambda: f"both members bound\n{cluster.describe(namespace)}",
    )

    explained = muster(cluster, "explain", "pg", "small", "-n", namespace)

    assert explained.returncode == 0, explained.stdout + explained.stderr
    for pod, node in placements.items():
        # Running on sim; on a real cluster without kubelets the suite's pods stay bound
        assert f"{pod}: {node} (" in explained.stdout, explained.stdout
    assert "Verdict: runs" in explained.stdout


@pytest.mark.nodes(2, "2")
def test_status_all_namespaces_json_lists_the_queues_and_podgroups_with_why_they_wait(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler
) -> None:
    start_scheduler(period=0.5)
    fits, fitting_pods = make_gang("fits", 2, cpu="1")
    big, big_pods = make_gang("big", 4, cpu="1500m")
    cluster.submit(namespace, fits, fitting_pods)
    cluster.submit(namespace, big, big_pods)
    message = wait_for(
        lambda: unschedulable_message(cluster, namespace, "big", 4),
        timeout=10,
        message=lambda: f"Unschedulable condition on podgroup big\n{cluster.describe(namespace)}",
    )
    wait_for_phase(cluster, namespace, "fits", "Running", timeout=10)
    wait_for(
        lambda: all(cluster.placements(namespace).get(f"fits-{i}") for i in range(2)),
        timeout=10,
        message=lambda: f"fits bound\n{cluster.describe(namespace)}",
    )

    listed = muster(cluster, "status", "-A", "-o", "json")

    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    queues = {q["name"]: q for q in doc["queues"]}
    assert "default" in queues
    assert queues["default"]["state"] == "Open"
    assert queues["default"]["podgroups"]["running"] >= 1
    assert queues["default"]["allocated"]["cpu"] == "2"
    groups = {(g["namespace"], g["name"]): g for g in doc["podgroups"]}
    assert groups[(namespace, "fits")]["phase"] == "Running"
    assert groups[(namespace, "fits")]["placed"] == 2
    assert groups[(namespace, "big")]["phase"] in ("Pending", "Inqueue")
    assert groups[(namespace, "big")]["reason"] == message

    table = muster(cluster, "status", "-n", namespace)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["NAME", "STATE", "WEIGHT"]
    header = next(line for line in lines if line.startswith("NAME   PHASE"))
    assert header.split() == ["NAME", "PHASE", "PLACED", "QUEUE", "AGE", "REASON"]
    assert any(line.startswith("fits ") and " 2/2 " in line for line in lines), table.stdout


def write_gang(cluster: Cluster, path: Path, docs: list[Obj]) -> Path:
    """The file whatif reads; on a real cluster its pods go only to the suite's nodes."""
    for doc in docs:
        if doc.get("kind") == "Pod" and cluster.pool is not None:
            confine_to_pool(doc, cluster.pool)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def state_of(cluster: Cluster, namespace: str) -> dict[str, Any]:
    """resourceVersion of every pod and PodGroup of the namespace, and its Event names."""
    pods = {
        p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in cluster.pods(namespace)
    }
    groups: Any = cluster.custom.list_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups"
    )
    # the raw response: its JSON, not the client's models
    events: Any = cluster.core.list_namespaced_event(namespace, _preload_content=False)
    return {
        "pods": pods,
        "podgroups": {
            g["metadata"]["name"]: g["metadata"]["resourceVersion"] for g in groups["items"]
        },
        "events": sorted(e["metadata"]["name"] for e in json.loads(events.data)["items"]),
    }


@pytest.mark.nodes(2, "4")
def test_whatif_names_the_pods_preemption_would_evict_and_submitting_evicts_exactly_those(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    priority_classes: tuple[str, str, str],
    tmp_path: Path,
) -> None:
    lowest, low, high = priority_classes
    conf = scheduler_conf(tmp_path / "preempting.yaml", PREEMPTING)
    scheduler = start_scheduler(actions=PREEMPTING, period=0.2)
    # Three of the eight are the cheapest victims. (Among victims of one priority created
    # in the same second the core's choice follows the order the scheduler's cache saw
    # their watch events in, which a fresh read of the cluster cannot know.)
    for index in range(8):
        pod = make_pod(f"low-{index}")
        pod["spec"]["priorityClassName"] = lowest if index in CHEAPEST else low
        cluster.create_pod(namespace, pod)
    wait_for(
        lambda: all(cluster.placements(namespace).values()) and len(cluster.pods(namespace)) == 8,
        timeout=10,
        message=lambda: f"8 low pods bound\n{cluster.describe(namespace)}",
    )
    scheduler.wait_sessions(2)
    podgroup, pods = make_gang("high", 3, cpu="1")
    podgroup["spec"]["priorityClassName"] = high
    for pod in pods:
        pod["spec"]["priorityClassName"] = high
    gang = write_gang(cluster, tmp_path / "gang.yaml", [podgroup, *pods])
    before = state_of(cluster, namespace)

    asked = muster(
        cluster, "whatif", "-f", str(gang), "-n", namespace, "-o", "json",
        "--scheduler-conf", str(conf),
    )  # fmt: skip

    assert asked.returncode == 0, asked.stdout + asked.stderr
    doc = json.loads(asked.stdout)
    assert doc["configuration"]["source"] == f"file {conf}"
    (answer,) = doc["podgroups"]
    assert answer["podgroup"] == f"{namespace}/high"
    assert answer["verdict"] == "would run"
    assert answer["admitted"] is True
    predicted = {e["name"] for e in answer["evictions"]}
    assert len(predicted) == 3, answer
    assert all(f"preempted by {namespace}/high" in e["reason"] for e in answer["evictions"])
    assert set(answer["placements"]) == {p["metadata"]["name"] for p in pods}
    # whatif wrote nothing: no object changed, no Event was recorded, nothing was created
    assert state_of(cluster, namespace) == before
    with pytest.raises(client.ApiException) as missing:
        cluster.podgroup(namespace, "high")
    assert missing.value.status == 404

    cluster.submit(namespace, podgroup, pods)
    wait_for(
        lambda: (
            len([n for n, node in cluster.placements(namespace).items() if node]) == 8
            and all(cluster.placements(namespace).get(p["metadata"]["name"]) for p in pods)
        ),
        timeout=15,
        message=lambda: f"the high gang bound\n{cluster.describe(namespace)}",
    )
    remaining = {n for n in cluster.placements(namespace) if n.startswith("low-")}
    evicted = {f"low-{i}" for i in range(8)} - remaining
    assert evicted == predicted == {f"low-{i}" for i in CHEAPEST}


@pytest.mark.nodes(2, "2")
def test_whatif_of_a_gang_too_big_says_why_in_the_words_of_its_condition_and_exits_1(
    cluster: Cluster, namespace: str, start_scheduler: StartScheduler, tmp_path: Path
) -> None:
    start_scheduler(period=0.5)
    wait_for(
        lambda: (cluster.queue("default") or {}).get("status", {}).get("state") == "Open",
        timeout=10,
        message="the scheduler created the default queue",
    )
    podgroup, pods = make_gang("big", 4, cpu="1500m")
    gang = write_gang(cluster, tmp_path / "gang.yaml", [podgroup, *pods])

    asked = muster(cluster, "whatif", "-f", str(gang), "-n", namespace)

    assert asked.returncode == 1, asked.stdout + asked.stderr
    assert f"PodGroup {namespace}/big: waits" in asked.stdout
    # submitted for real, the scheduler writes the same words on the PodGroup
    cluster.submit(namespace, podgroup, pods)
    message = wait_for(
        lambda: unschedulable_message(cluster, namespace, "big", 4),
        timeout=10,
        message=lambda: f"Unschedulable condition on podgroup big\n{cluster.describe(namespace)}",
    )
    assert f"Unschedulable=True (NotEnoughResources): {message}" in asked.stdout, asked.stdout


def bind_low_pods(cluster: Cluster, namespace: str, low: str) -> list[str]:
    """Two 1.5-cpu pods of class `low`, bound by the scheduler (one per 2-cpu node)."""
    names = ["low-0", "low-1"]
    for name in names:
        pod = make_pod(name, cpu="1500m")
        pod["spec"]["priorityClassName"] = low
        cluster.create_pod(namespace, pod)
    wait_for(
        lambda: all(cluster.placements(namespace).get(n) for n in names),
        timeout=10,
        message=lambda: f"the low pods bound\n{cluster.describe(namespace)}",
    )
    return names


def crowd_with_low_pods(
    cluster: Cluster, namespace: str, low: str, high: str
) -> tuple[list[str], Obj, list[Obj]]:
    """On two 2-cpu nodes, two bound 1.5-cpu pods of class `low`; then gang "big" (2 x 1.5
    cpu, class `high`) that cannot be placed. The low pods' names and the gang."""
    names = bind_low_pods(cluster, namespace, low)
    podgroup, pods = make_gang("big", 2, cpu="1500m")
    podgroup["spec"]["priorityClassName"] = high
    for pod in pods:
        pod["spec"]["priorityClassName"] = high
    cluster.submit(namespace, podgroup, pods)
    wait_for(
        lambda: unschedulable_message(cluster, namespace, "big", 2),
        timeout=10,
        message=lambda: f"Unschedulable condition on podgroup big\n{cluster.describe(namespace)}",
    )
    return names, podgroup, pods


@pytest.mark.nodes(2, "2")
def test_explain_of_a_waiting_gang_gives_its_figures_and_who_holds_the_room_it_lacks(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    priority_classes: tuple[str, str, str],
) -> None:
    _, low, high = priority_classes
    start_scheduler(period=0.5)
    low_pods, _, _ = crowd_with_low_pods(cluster, namespace, low, high)
    placements = cluster.placements(namespace)

    # A ConfigMap of the test's own namespace that does not exist: the built-in default
    # config, whatever scheduler ConfigMap the cluster holds (a shared cluster may run muster).
    absent = f"{namespace}/muster-scheduler-config"
    config_flag = ("--scheduler-config-map", absent)
    explained = muster(cluster, "explain", "podgroup", f"{namespace}/big", *config_flag)

    assert explained.returncode == 1, explained.stdout + explained.stderr
    out = explained.stdout
    assert f"configuration: built-in default (ConfigMap {absent} not found)" in out, out
    assert "nodes: Insufficient cpu (need 1500m, largest free 500m)" in out, out
    room = out[out.index("What would let it run:") :]
    for name in low_pods:
        line = f"{namespace}/{name} (Pod, queue default, priority 10) holds cpu=1500m on "
        assert f"{line}{placements[name]}" in room, room
    # the scheduler runs without preempt: explain asks a session with it added
    assert "preempt and reclaim are not in the configured actions" in room, room
    assert "evicts 2 pods for it, and then it would run:" in room, room
    for name in low_pods:
        assert f"{namespace}/{name} on {placements[name]}: preempted by {namespace}/big" in room
    assert set(cluster.placements(namespace)) >= set(low_pods), "explain evicted nothing"

    # the same findings as one document, as kubectl's -o json
    as_json = muster(cluster, "explain", "podgroup", f"{namespace}/big", "-o", "json", *config_flag)
    document = json.loads(as_json.stdout)
    assert document["verdict"] == "waits"
    assert document["podgroup"]["name"] == "big"
    figures = [f for r in document["placement"]["reasons"] for f in r["figures"]]
    assert {"reason": "Insufficient cpu", "need": "1500m", "largest_free": "500m"}.items() <= (
        next(f for f in figures if f["resource"] == "cpu").items()
    )
    room_document = document["wouldLetItRun"]
    assert {h["name"] for h in room_document["holders"]} == {
        f"{namespace}/{name}" for name in low_pods
    }
    assert room_document["wouldRun"] is True
    assert sorted(e["pod"] for e in room_document["evictions"]) == sorted(
        f"{namespace}/{name}" for name in low_pods
    )


@pytest.mark.nodes(2, "2")
def test_explain_pod_names_its_group_and_place_and_refuses_a_pod_not_of_muster(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    priority_classes: tuple[str, str, str],
) -> None:
    _, low, high = priority_classes
    start_scheduler(period=0.5)
    crowd_with_low_pods(cluster, namespace, low, high)
    cluster.create_pod(namespace, make_pod("theirs", scheduler_name="default-scheduler"))
    node = cluster.placements(namespace)["low-0"]

    member = muster(cluster, "explain", "pod", f"{namespace}/big-1")
    bare = muster(cluster, "explain", "po", "low-0", "-n", namespace)
    theirs = muster(cluster, "explain", "pod", f"{namespace}/theirs")

    assert member.returncode == 1, member.stdout + member.stderr
    assert member.stdout.startswith(f"Pod {namespace}/big-1: member of PodGroup {namespace}/big")
    assert "  waits: " in member.stdout and "Insufficient cpu" in member.stdout
    assert f"PodGroup {namespace}/big: " in member.stdout
    assert bare.returncode == 0, bare.stdout + bare.stderr
    assert f"member of no PodGroup: it is its own one-pod group {namespace}/podgroup-" in (
        bare.stdout
    )
    assert f"  on node {node} (" in bare.stdout
    assert theirs.returncode == 2, theirs.stdout + theirs.stderr
    assert "is not muster's: its spec.schedulerName is 'default-scheduler'" in theirs.stderr


def config_map(name: str, actions: str) -> Obj:
    """deploy's scheduler ConfigMap, renamed, with other actions."""
    (doc,) = yaml.safe_load_all((DEPLOY / "scheduler" / "configmap.yaml").read_text())
    text = yaml.safe_load(doc["data"]["scheduler.yaml"])
    text["actions"] = actions
    doc["metadata"] = {"name": name}
    doc["data"] = {"scheduler.yaml": yaml.safe_dump(text, sort_keys=False)}
    return dict(doc)


@pytest.mark.nodes(2, "2")
def test_whatif_runs_with_the_config_map_it_is_given_and_falls_back_aloud_when_forbidden(
    cluster: Cluster,
    namespace: str,
    start_scheduler: StartScheduler,
    identities: Identities,
    priority_classes: tuple[str, str, str],
    tmp_path: Path,
) -> None:
    _, low, high = priority_classes
    start_scheduler(period=0.5)
    cluster.core.create_namespaced_config_map(namespace, config_map("sched", PREEMPTING))
    bind_low_pods(cluster, namespace, low)
    podgroup, pods = make_gang("high", 2, cpu="1500m")
    for doc in (podgroup, *pods):
        doc["spec"]["priorityClassName"] = high
    gang = write_gang(cluster, tmp_path / "gang.yaml", [podgroup, *pods])

    asked = muster(
        cluster, "whatif", "-f", str(gang), "-n", namespace, "-o", "json",
        "--scheduler-config-map", f"{namespace}/sched",
    )  # fmt: skip

    assert asked.returncode == 0, asked.stdout + asked.stderr
    doc = json.loads(asked.stdout)
    assert doc["configuration"] == {
        "source": f"ConfigMap {namespace}/sched key scheduler.yaml",
        "actions": ["enqueue", "allocate", "preempt", "reclaim", "backfill"],
    }
    (answer,) = doc["podgroups"]
    assert {e["name"] for e in answer["evictions"]} == {"low-0", "low-1"}
    assert asked.stderr == ""

    # The scheduler's own ServiceAccount lists what a session reads but may not read
    # ConfigMaps (deploy's RBAC): the default config is used, and said so.
    argv = [MUSTER, "whatif", "-f", str(gang), "-n", namespace,
            "--kubeconfig", str(identities.kubeconfig("scheduler"))]  # fmt: skip
    forbidden = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    assert forbidden.returncode == 1, forbidden.stdout + forbidden.stderr
    notice = (
        "muster whatif: ConfigMap muster-system/muster-scheduler-config cannot be read "
        "(403 Forbidden); using the built-in default scheduler configuration"
    )
    assert forbidden.stderr.startswith(notice), forbidden.stderr
    assert len(forbidden.stderr.splitlines()) == 1
    assert forbidden.stdout.startswith("configuration: built-in default (ConfigMap "), (
        forbidden.stdout
    )
    assert f"PodGroup {namespace}/high: waits" in forbidden.stdout


def test_a_config_map_whose_config_does_not_load_exits_2_with_the_loaders_message(
    cluster: Cluster, namespace: str
) -> None:
    cluster.core.create_namespaced_config_map(namespace, config_map("bad", "enqueue, teleport"))

    listed = muster(cluster, "status", "--scheduler-config-map", f"{namespace}/bad")

    assert listed.returncode == 2
    assert listed.stdout == ""
    assert listed.stderr.startswith(
        f"muster status: ConfigMap {namespace}/bad key scheduler.yaml: "
    ), listed.stderr
    assert "teleport" in listed.stderr


class Frames:
    """The frames `muster status --watch` prints, read as they come: the queue table, a
    blank line, the PodGroup table, a blank line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next(self, timeout: float = 15) -> list[str]:
        """The next frame's lines."""
        frame: list[str] = []
        while frame.count("") < 2:
            line = self.lines.get(timeout=timeout)
            if line is None:
                raise AssertionError(f"muster status -w ended; frame so far: {frame}")
            frame.append(line)
        return frame[:-1]


@pytest.mark.nodes(2, "2")
def test_status_watch_prints_a_new_frame_when_a_podgroup_changes_and_ctrl_c_exits_0(
    cluster: Cluster, namespace: str
) -> None:
    cluster.create_podgroup(namespace, make_podgroup("watched", 1))
    argv = [MUSTER, "status", "-w", "-n", namespace, "--kubeconfig", str(cluster.kubeconfig)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        frames = Frames(process)
        first = frames.next()
        row = next(line for line in first if line.startswith("watched "))
        # the phase is the session's (Pending without a default queue, Inqueue with one)
        assert row.split()[2] == "0/1", first

        cluster.patch_podgroup(namespace, "watched", {"spec": {"minMember": 3}})
        second = frames.next()

        row = next(line for line in second if line.startswith("watched "))
        assert row.split()[2] == "0/3", second
        assert second[0].split()[:2] == ["NAME", "STATE"]
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=10)
    assert code == 0, process.stderr.read() if process.stderr else ""
