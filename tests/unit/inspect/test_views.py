"""The status and explain views: every reason and figure is the session's own."""

from __future__ import annotations

from scheduler.api.reasons import UNSCHEDULABLE
from scheduler.engine import default_config, load_config
from scheduler.inspect.cluster import ClusterObjects, build_world, run_session
from scheduler.inspect.explain import explain_text, gangs_ahead
from scheduler.inspect.status import document, podgroup_table, queue_table
from scheduler.inspect.views import age, group_views, queue_views, table, verdict
from tests.unit.inspect.objects import PREEMPTING, node, pod, podgroup, priority_class, queue

NOW = 1767225600.0 + 90  # 90 s after objects.CREATED


def cluster() -> ClusterObjects:
    """Two 2-cpu nodes; gang "fits" (2 x 1 cpu) running, gang "big" (4 x 1.5 cpu) waiting."""
    return ClusterObjects(
        nodes=[node("n0"), node("n1")],
        queues=[queue()],
        podgroups=[podgroup("fits", 2), podgroup("big", 4)],
        pods=[
            pod("fits-0", group="fits", node_name="n0", phase="Running"),
            pod("fits-1", group="fits", node_name="n1", phase="Running"),
            *(pod(f"big-{i}", group="big", cpu="1500m") for i in range(4)),
        ],
    )


def test_waiting_reason_is_the_unschedulable_condition_the_session_writes() -> None:
    world = build_world(cluster())
    session = run_session(world, default_config(), NOW)

    views = {v.name: v for v in group_views(session, world)}

    update = next(u for u in session.result.podgroups if u.name == "big")
    written = next(c for c in update.conditions if c.type == UNSCHEDULABLE)
    assert written.status == "True"
    assert views["big"].waiting_reason == written.message
    assert "0/2 nodes are available" in written.message
    assert views["fits"].waiting_reason == ""
    assert (views["fits"].phase, views["fits"].placed) == ("Running", 2)
    assert verdict(views["fits"], session.result) == "runs"
    assert verdict(views["big"], session.result) == "waits"


def test_a_gang_the_session_binds_would_run_before_any_member_is_placed() -> None:
    objects = cluster()
    objects.pods = [pod("fits-0", group="fits"), pod("fits-1", group="fits")]
    world = build_world(objects)
    session = run_session(world, default_config(), NOW)

    view = next(v for v in group_views(session, world) if v.name == "fits")

    assert {b.name for b in session.result.binds} == {"fits-0", "fits-1"}
    assert view.placed == 0
    assert verdict(view, session.result) == "would run"


def test_queue_view_holds_the_figures_the_session_computed() -> None:
    world = build_world(cluster())
    session = run_session(world, default_config(), NOW)

    (view,) = queue_views(session)
    (update,) = session.result.queues

    assert view.allocated == update.allocated
    assert view.deserved == update.deserved
    assert view.allocated.to_list()["cpu"] == "2"
    assert view.podgroups["running"] == 1
    assert view.share is not None and view.share > 0


def test_table_aligns_columns_three_spaces_apart_without_trailing_blanks() -> None:
    text = table(["NAME", "PHASE"], [["a-long-name", "Running"], ["b", ""]])

    assert text.splitlines() == ["NAME          PHASE", "a-long-name   Running", "b"]


def test_status_tables_show_queue_figures_and_one_line_reasons() -> None:
    world = build_world(cluster())
    session = run_session(world, default_config(), NOW)
    groups = group_views(session, world)

    queues = queue_table(queue_views(session)).splitlines()
    rows = podgroup_table(groups, NOW, all_namespaces=True).splitlines()

    assert queues[0].split() == [
        "NAME", "STATE", "WEIGHT", "PARENT", "ALLOCATED", "DESERVED", "SHARE", "PODGROUPS"
    ]  # fmt: skip
    assert queues[1].split()[:4] == ["default", "Open", "1", "-"]
    assert "running=1" in queues[1]
    assert rows[0].split() == ["NAMESPACE", "NAME", "PHASE", "PLACED", "QUEUE", "AGE", "REASON"]
    big = next(r for r in rows if r.split()[1] == "big")
    assert big.split()[3:6] == ["0/4", "default", "90s"]
    assert big.endswith(next(g for g in groups if g.name == "big").waiting_reason)
    assert "\n" not in big


def test_status_document_lists_every_queue_and_podgroup() -> None:
    world = build_world(cluster())
    session = run_session(world, default_config(), NOW)

    doc = document(queue_views(session), group_views(session, world), NOW)

    assert [q["name"] for q in doc["queues"]] == ["default"]
    assert [(g["namespace"], g["name"]) for g in doc["podgroups"]] == [
        ("ns", "big"),
        ("ns", "fits"),
    ]
    assert doc["podgroups"][0]["reason"].startswith("4/4 tasks in gang unschedulable")
    assert doc["podgroups"][1]["age"] == "90s"


def test_age_is_written_as_kubectl_writes_it() -> None:
    start = 1767225600.0
    created = "2026-01-01T00:00:00Z"
    expected = {
        90: "90s",
        330: "5m30s",
        720: "12m",
        3 * 3600 + 10 * 60: "3h10m",
        30 * 3600: "30h",
        3 * 86400 + 4 * 3600: "3d4h",
        20 * 86400: "20d",
        3 * 365 * 86400: "3y",
    }
    assert {s: age(created, start + s) for s in expected} == expected
    assert age("", start) == "<unknown>"


def test_explain_reports_admission_placement_and_the_gangs_ahead_in_that_order() -> None:
    objects = cluster()
    # a younger gang in the same queue, also waiting: the default job order puts it behind
    objects.podgroups.append(podgroup("younger", 4))
    objects.podgroups[-1].metadata.creation_timestamp = "2026-01-01T00:00:30Z"
    objects.pods += [pod(f"younger-{i}", group="younger", cpu="1500m") for i in range(4)]
    world = build_world(objects)
    config = default_config()
    session = run_session(world, config, NOW)
    views = {v.key: v for v in group_views(session, world)}
    ahead = gangs_ahead(world, config, "ns/younger", NOW)

    text = explain_text(
        views["ns/younger"],
        queue_views(session)[0],
        session,
        world,
        [(j.key, j.phase.value, views[j.key].waiting_reason) for j in ahead],
    )

    assert [j.key for j in ahead] == ["ns/big"]
    assert gangs_ahead(world, config, "ns/big", NOW) == []
    order = [text.index(s) for s in ("Admission:", "Placement:", "Ahead of it in queue default:")]
    assert order == sorted(order)
    assert views["ns/younger"].waiting_reason in text
    assert f"ns/big (Pending): {views['ns/big'].waiting_reason}" in text
    assert "Verdict: waits" in text


def test_explain_of_a_gang_preempt_makes_room_for_names_its_victims_and_would_run() -> None:
    objects = ClusterObjects(
        nodes=[node("n0"), node("n1")],
        queues=[queue()],
        priority_classes=[priority_class("low", 10), priority_class("high", 1000)],
        podgroups=[podgroup("high", 2, priorityClassName="high")],
        pods=[
            *(
                pod(f"low-{i}", node_name=f"n{i % 2}", phase="Running", priority=10)
                for i in range(4)
            ),
            *(pod(f"high-{i}", group="high", priority=1000) for i in range(2)),
        ],
    )
    world = build_world(objects)
    session = run_session(world, load_config(PREEMPTING), NOW)
    view = next(v for v in group_views(session, world) if v.name == "high")

    text = explain_text(view, queue_views(session)[0], session, world, [])

    assert len(session.result.evictions) == 2
    for eviction in session.result.evictions:
        assert f"evicts ns/{eviction.name} on {eviction.node}: {eviction.reason}" in text
    assert "Verdict: would run" in text
    assert "Ahead of it" not in text
