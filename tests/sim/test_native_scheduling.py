"""Kubernetes' own gang API on sim (`--native-api v1alpha2`), as a 1.36 kube-apiserver with
GenericWorkload, TopologyAwareWorkloadScheduling, DRAWorkloadResourceClaims and
WorkloadAwarePreemption on serves it. Every answer checked here was read off such a server
(the same request, the same status code, field and message): the stored shape (explicit
nulls, defaults, the finalizer, a status reset, no generation), validation in declarative
validation's words, the admission plugins (Priority, PodGroupProtection,
PodGroupWorkloadExists), podgroups/status, pods' spec.schedulingGroup, discovery, and the
podgroup-protection controller."""

from __future__ import annotations

from typing import Any

import pytest

from muster_sim.crd_files import crds_dir
from tests.sim.conftest import Raw, create_namespace, pod_body, unique, wait_for

SIM_CONFIG = {"native_api": "v1alpha2", "crds_dir": crds_dir()}
Obj = dict[str, Any]
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
STAMP = "2026-01-01T00:00:00Z"
SOURCES = "`resourceClaimName`, `resourceClaimTemplateName`"


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    return create_namespace(raw, "native")


def path(ns: str, plural: str, name: str = "") -> str:
    base = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/{plural}"
    return f"{base}/{name}" if name else base


def gang(name: str, min_count: int = 2, **spec: Any) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec},
    }


def causes(body: Obj) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


def test_discovery_serves_the_group_before_custom_groups_and_both_kinds(raw: Raw) -> None:
    code, group = raw.json("GET", "/apis/scheduling.k8s.io")
    assert code == 200
    assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha2"]
    assert group["preferredVersion"]["version"] == "v1"
    code, listing = raw.json("GET", "/apis/scheduling.k8s.io/v1alpha2")
    names = {r["name"]: r for r in listing["resources"]}
    assert set(names) == {"podgroups", "podgroups/status", "workloads"}
    assert "shortNames" not in names["podgroups"]
    # Built-in groups come before custom ones: `kubectl get podgroups` finds the native kind
    # first, and Volcano's only as pg or podgroups.scheduling.volcano.sh.
    code, groups = raw.json("GET", "/apis")
    order = [g["name"] for g in groups["groups"]]
    assert order.index("scheduling.k8s.io") < order.index("scheduling.volcano.sh")


def test_a_podgroup_is_stored_with_nulls_defaults_the_finalizer_and_no_status(
    raw: Raw, ns: str
) -> None:
    body = gang(unique("pg"))
    body["status"] = {
        "conditions": [{"type": "X", "status": "True", "reason": "R", "lastTransitionTime": STAMP}]
    }
    code, made = raw.json("POST", path(ns, "podgroups"), body)
    assert code == 201, made
    assert made["spec"] == {
        "podGroupTemplateRef": None,
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "disruptionMode": "Pod",
        "priority": 0,
    }
    assert made["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    assert "generation" not in made["metadata"]
    assert made["status"] == {}


def test_a_workload_template_is_stored_with_null_constraints(raw: Raw, ns: str) -> None:
    body = {
        "metadata": {"name": unique("wl")},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
            "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}],
        },
    }
    code, made = raw.json("POST", path(ns, "workloads"), body)
    assert code == 201, made
    assert made["spec"]["podGroupTemplates"] == [
        {"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}, "schedulingConstraints": None}
    ]
    assert "generation" not in made["metadata"] and "finalizers" not in made["metadata"]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(
            {},
            [("spec.schedulingPolicy", 'Invalid value: "": must specify one of: `basic`, `gang`')],
            id="none",
        ),
        pytest.param(
            {"basic": {}, "gang": {"minCount": 1}},
            [
                (
                    "spec.schedulingPolicy",
                    'Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`',
                )
            ],
            id="both",
        ),
        pytest.param(
            {"gang": {"minCount": 0}},
            [("spec.schedulingPolicy.gang.minCount", "Required value")],
            id="min-count-zero",
        ),
        pytest.param(
            {"gang": {"minCount": -1}},
            [
                (
                    "spec.schedulingPolicy.gang.minCount",
                    "Invalid value: -1: must be greater than or equal to 1",
                )
            ],
            id="min-count-negative",
        ),
    ],
)
def test_a_podgroups_policy_is_exactly_one_with_a_min_count_of_one_or_more(
    raw: Raw, ns: str, policy: Obj, expected: list[tuple[str, str]]
) -> None:
    code, body = raw.json(
        "POST",
        path(ns, "podgroups"),
        {"metadata": {"name": unique("pg")}, "spec": {"schedulingPolicy": policy}},
    )
    assert code == 422, body
    assert causes(body) == expected


def test_a_podgroups_constraints_claims_and_disruption_mode_are_validated(
    raw: Raw, ns: str
) -> None:
    claim = {"name": "c", "resourceClaimName": "a"}
    code, body = raw.json(
        "POST",
        path(ns, "podgroups"),
        gang(
            unique("pg"),
            schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]},
            resourceClaims=[{**claim, "name": n} for n in ("w", "x", "y", "z", "v")],
            disruptionMode="Whole",
        ),
    )
    assert code == 422
    assert causes(body) == [
        ("spec.schedulingConstraints.topology", "Too many: 2: must have at most 1 item"),
        ("spec.resourceClaims", "Too many: 5: must have at most 4 items"),
        ("spec.disruptionMode", 'Unsupported value: "Whole": supported values: "Pod", "PodGroup"'),
    ]
    code, body = raw.json(
        "POST",
        path(ns, "podgroups"),
        gang(
            unique("pg"),
            schedulingConstraints={"topology": [{}]},
            resourceClaims=[{"resourceClaimName": "a"}],
        ),
    )
    assert code == 422
    assert causes(body) == [
        ("spec.schedulingConstraints.topology[0].key", "Required value"),
        ("spec.resourceClaims[0].name", "Required value"),
    ]
    code, body = raw.json(
        "POST",
        path(ns, "podgroups"),
        gang(
            unique("pg"),
            schedulingConstraints={"topology": [{"key": "b/c/d"}]},
            resourceClaims=[
                {"name": "x"},
                {"name": "y", "resourceClaimName": "a", "resourceClaimTemplateName": "b"},
            ],
        ),
    )
    assert code == 422
    fields = causes(body)
    assert fields[0][0] == "spec.schedulingConstraints.topology[0].key"
    assert fields[0][1].startswith('Invalid value: "b/c/d": a valid label key must consist of')
    assert fields[1:] == [
        ("spec.resourceClaims[0]", f'Invalid value: "": must specify one of: {SOURCES}'),
        (
            "spec.resourceClaims[1]",
            'Invalid value: "{resourceClaimName, resourceClaimTemplateName}": must specify '
            f"exactly one of: {SOURCES}",
        ),
    ]


def test_a_template_reference_needs_both_names_and_a_workload(raw: Raw, ns: str) -> None:
    code, body = raw.json(
        "POST",
        path(ns, "podgroups"),
        gang(unique("pg"), podGroupTemplateRef={"workload": {"workloadName": ""}}),
    )
    assert code == 422
    assert causes(body) == [
        ("spec.podGroupTemplateRef.workload.workloadName", "Required value"),
        ("spec.podGroupTemplateRef.workload.podGroupTemplateName", "Required value"),
    ]
    code, body = raw.json("POST", path(ns, "podgroups"), gang(unique("pg"), podGroupTemplateRef={}))
    assert code == 422
    assert causes(body) == [
        ("spec.podGroupTemplateRef", 'Invalid value: "": must specify one of: `workload`')
    ]


def test_podgroup_workload_exists_refuses_a_missing_workload_or_template(raw: Raw, ns: str) -> None:
    missing = unique("pg")
    reference = {"workload": {"workloadName": "nope", "podGroupTemplateName": "t"}}
    code, body = raw.json(
        "POST", path(ns, "podgroups"), gang(missing, podGroupTemplateRef=reference)
    )
    assert code == 403
    assert body["message"] == (
        f'podgroups.scheduling.k8s.io "{missing}" is forbidden: '
        'PodGroup rejected: Workload "nope" not found'
    )
    workload = unique("wl")
    raw.json(
        "POST",
        path(ns, "workloads"),
        {
            "metadata": {"name": workload},
            "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}}]},
        },
    )
    other = unique("pg")
    reference = {"workload": {"workloadName": workload, "podGroupTemplateName": "other"}}
    code, body = raw.json("POST", path(ns, "podgroups"), gang(other, podGroupTemplateRef=reference))
    assert code == 403
    assert body["message"].endswith(
        f'PodGroup rejected: PodGroupTemplate "other" not found in Workload "{workload}"'
    )
    reference = {"workload": {"workloadName": workload, "podGroupTemplateName": "t"}}
    code, made = raw.json(
        "POST", path(ns, "podgroups"), gang(unique("pg"), podGroupTemplateRef=reference)
    )
    assert code == 201, made


def test_priority_admission_resolves_a_podgroups_class_and_refuses_a_preset_priority(
    raw: Raw, ns: str
) -> None:
    high = unique("high")
    code, _ = raw.json(
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {"metadata": {"name": high}, "value": 1000},
    )
    assert code == 201
    code, made = raw.json("POST", path(ns, "podgroups"), gang(unique("pg"), priorityClassName=high))
    assert code == 201
    assert (made["spec"]["priority"], made["spec"]["priorityClassName"]) == (1000, high)
    preset = unique("pg")
    code, body = raw.json("POST", path(ns, "podgroups"), gang(preset, priority=5))
    assert code == 403
    assert body["message"] == (
        f'podgroups.scheduling.k8s.io "{preset}" is forbidden: priority set in the pod group (5) '
        "must match the priority computed (0) based on the priority class set in the spec"
    )
    unknown = unique("pg")
    code, body = raw.json("POST", path(ns, "podgroups"), gang(unknown, priorityClassName="missing"))
    assert code == 403
    assert body["message"].endswith("is forbidden: no PriorityClass with name missing was found")


def test_a_podgroups_spec_is_immutable_and_its_metadata_and_status_are_not(
    raw: Raw, ns: str
) -> None:
    name = unique("pg")
    raw.json("POST", path(ns, "podgroups"), gang(name))
    code, body = raw.json(
        "PATCH",
        path(ns, "podgroups", name),
        {"spec": {"schedulingPolicy": {"gang": {"minCount": 5}}}},
        content_type=MERGE,
    )
    assert code == 422
    assert causes(body) == [("spec.schedulingPolicy", "Invalid value: null: field is immutable")]
    code, patched = raw.json(
        "PATCH",
        path(ns, "podgroups", name),
        {
            "metadata": {"annotations": {"scheduling.volcano.sh/queue-name": "team-a"}},
            "status": {"conditions": []},
        },
        content_type=MERGE,
    )
    assert code == 200
    assert patched["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "team-a"}
    assert patched["status"] == {}, "the main resource leaves status alone"


def test_podgroups_status_takes_conditions_merged_by_type_and_deleted_by_key(
    raw: Raw, ns: str
) -> None:
    name = unique("pg")
    raw.json("POST", path(ns, "podgroups"), gang(name))
    status = path(ns, "podgroups", name) + "/status"
    conditions = [
        {
            "type": "PodGroupScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "m",
            "lastTransitionTime": STAMP,
        },
        {"type": "Admitted", "status": "True", "reason": "Enqueued", "lastTransitionTime": STAMP},
    ]
    code, patched = raw.json(
        "PATCH", status, {"status": {"conditions": conditions}}, content_type=STRATEGIC
    )
    assert code == 200, patched
    assert [c["type"] for c in patched["status"]["conditions"]] == ["PodGroupScheduled", "Admitted"]
    code, patched = raw.json(
        "PATCH",
        status,
        {"status": {"conditions": [{"type": "Admitted", "$patch": "delete"}]}},
        content_type=STRATEGIC,
    )
    assert [c["type"] for c in patched["status"]["conditions"]] == ["PodGroupScheduled"]
    code, patched = raw.json(
        "PATCH",
        status,
        {"spec": {"schedulingPolicy": {"gang": {"minCount": 5}}}},
        content_type=MERGE,
    )
    assert code == 200 and patched["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}


def test_a_podgroups_conditions_are_validated_as_metav1_conditions(raw: Raw, ns: str) -> None:
    name = unique("pg")
    raw.json("POST", path(ns, "podgroups"), gang(name))
    status = path(ns, "podgroups", name) + "/status"
    bad = {"type": "Bad", "status": "Maybe", "reason": "", "message": "m"}
    code, body = raw.json(
        "PATCH", status, {"status": {"conditions": [bad]}}, content_type=STRATEGIC
    )
    assert code == 422
    assert causes(body) == [
        (
            "status.conditions[0].status",
            'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"',
        ),
        ("status.conditions[0].lastTransitionTime", "Required value"),
        ("status.conditions[0].reason", "Required value"),
    ]
    bad = {
        "type": "Bad Type",
        "status": "True",
        "reason": "bad reason",
        "lastTransitionTime": STAMP,
    }
    code, body = raw.json("PATCH", status, {"status": {"conditions": [bad]}}, content_type=MERGE)
    assert code == 422
    fields = [field for field, _ in causes(body)]
    assert fields == ["status.conditions[0].type", "status.conditions[0].reason"]
    assert causes(body)[1][1].startswith(
        'Invalid value: "bad reason": a condition reason must start'
    )


@pytest.mark.parametrize(
    ("templates", "expected"),
    [
        pytest.param(None, [("spec.podGroupTemplates", "Required value")], id="none"),
        pytest.param([], [("spec.podGroupTemplates", "Required value")], id="empty"),
        pytest.param(
            [{"name": f"t{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)],
            [("spec.podGroupTemplates", "Too many: 9: must have at most 8 items")],
            id="nine",
        ),
    ],
)
def test_a_workload_holds_one_to_eight_templates(
    raw: Raw, ns: str, templates: list[Obj] | None, expected: list[tuple[str, str]]
) -> None:
    spec = {} if templates is None else {"podGroupTemplates": templates}
    code, body = raw.json(
        "POST", path(ns, "workloads"), {"metadata": {"name": unique("wl")}, "spec": spec}
    )
    assert code == 422
    assert causes(body) == expected


def test_a_workloads_templates_are_named_once_each_validated_and_immutable(
    raw: Raw, ns: str
) -> None:
    templates = [
        {"name": "t", "schedulingPolicy": {"basic": {}}},
        {"name": "t", "schedulingPolicy": {"basic": {}, "gang": {"minCount": 1}}},
        {"name": "Bad_Name", "schedulingPolicy": {"gang": {"minCount": -1}}},
    ]
    code, body = raw.json(
        "POST",
        path(ns, "workloads"),
        {"metadata": {"name": unique("wl")}, "spec": {"podGroupTemplates": templates}},
    )
    assert code == 422
    found = causes(body)
    assert found[0] == (
        "spec.podGroupTemplates[1]",
        'Duplicate value: {"name":"t","schedulingPolicy":{"basic":{},"gang":{"minCount":1}},'
        '"schedulingConstraints":null}',
    )
    assert found[1] == (
        "spec.podGroupTemplates[1].schedulingPolicy",
        'Invalid value: "{basic, gang}": must specify exactly one of: `basic`, `gang`',
    )
    assert found[2][0] == "spec.podGroupTemplates[2].name"
    assert found[3] == (
        "spec.podGroupTemplates[2].schedulingPolicy.gang.minCount",
        "Invalid value: -1: must be greater than or equal to 1",
    )
    name = unique("wl")
    good = [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}]
    raw.json(
        "POST",
        path(ns, "workloads"),
        {"metadata": {"name": name}, "spec": {"podGroupTemplates": good}},
    )
    changed = [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 3}}}]
    code, body = raw.json(
        "PATCH",
        path(ns, "workloads", name),
        {"spec": {"podGroupTemplates": changed}},
        content_type=MERGE,
    )
    assert code == 422
    assert causes(body) == [("spec.podGroupTemplates", "Invalid value: null: field is immutable")]


def test_a_pods_scheduling_group_names_a_podgroup_and_never_changes(raw: Raw, ns: str) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    code, body = raw.json("POST", pods, pod_body(unique("p"), schedulingGroup={}))
    assert code == 422
    assert causes(body) == [
        (
            "spec.schedulingGroup.podGroupName",
            "Invalid value: null: must specify one of: `podGroupName`",
        )
    ]
    code, body = raw.json(
        "POST", pods, pod_body(unique("p"), schedulingGroup={"podGroupName": "Bad_Name"})
    )
    assert code == 422
    assert causes(body)[0][1].startswith(
        'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'
    )
    name = unique("p")
    code, made = raw.json(
        "POST",
        pods,
        pod_body(name, schedulerName="nobody", schedulingGroup={"podGroupName": "later"}),
    )
    assert code == 201, made
    assert made["spec"]["schedulingGroup"] == {"podGroupName": "later"}
    code, body = raw.json(
        "PATCH",
        f"{pods}/{name}",
        {"spec": {"schedulingGroup": {"podGroupName": "other"}}},
        content_type=STRATEGIC,
    )
    assert code == 422
    assert body["message"].startswith(
        f'Pod "{name}" is invalid: spec: Forbidden: pod updates may not change fields'
    )


def test_a_deleted_podgroup_stays_while_a_live_pod_names_it_and_goes_after(
    raw: Raw, ns: str
) -> None:
    name = unique("pg")
    raw.json("POST", path(ns, "podgroups"), gang(name))
    pod = unique("p")
    pods = f"/api/v1/namespaces/{ns}/pods"
    raw.json(
        "POST", pods, pod_body(pod, schedulerName="nobody", schedulingGroup={"podGroupName": name})
    )
    code, _ = raw.json("DELETE", path(ns, "podgroups", name))
    assert code == 200
    code, kept = raw.json("GET", path(ns, "podgroups", name))
    assert code == 200 and kept["metadata"]["deletionTimestamp"]
    assert kept["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    raw.json("DELETE", f"{pods}/{pod}?gracePeriodSeconds=0")
    wait_for(lambda: raw.json("GET", path(ns, "podgroups", name))[0] == 404)


def test_a_deleted_podgroup_no_pod_names_goes_at_once(raw: Raw, ns: str) -> None:
    name = unique("pg")
    raw.json(
        "POST",
        path(ns, "podgroups"),
        {"metadata": {"name": name}, "spec": {"schedulingPolicy": {"basic": {}}}},
    )
    raw.json("DELETE", path(ns, "podgroups", name))
    wait_for(lambda: raw.json("GET", path(ns, "podgroups", name))[0] == 404)
