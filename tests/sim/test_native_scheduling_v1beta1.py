"""Kubernetes' own gang API on sim at v1beta1 (`--native-api v1beta1`), as 1.37's types
describe it (no 1.37 server could be built to read its answers off, so what differs from
v1alpha2 follows staging/src/k8s.io/api/scheduling/v1beta1/types.go of the 1.37 cycle): the
template reference is workloadRef, disruptionMode an object defaulting to single, the
Priority admission fills preemptionPolicy, gang.minCount is mutable while the policy's
variant is not; a Workload's templates are neither added nor removed, their minCount may
change. The rules both versions share are test_native_scheduling.py's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw, create_namespace, unique

SIM_CONFIG = {"native_api": "v1beta1"}
Obj = dict[str, Any]
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    return create_namespace(raw, "native-beta")


def path(ns: str, plural: str, name: str = "") -> str:
    base = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/{plural}"
    return f"{base}/{name}" if name else base


def gang(name: str, min_count: int = 2, **spec: Any) -> Obj:
    policy = {"gang": {"minCount": min_count}}
    return {"metadata": {"name": name}, "spec": {"schedulingPolicy": policy, **spec}}


def causes(body: Obj) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


def test_v1beta1_is_served_and_v1alpha2_is_not(raw: Raw) -> None:
    code, group = raw.json("GET", "/apis/scheduling.k8s.io")
    assert code == 200
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    assert raw.json("GET", "/apis/scheduling.k8s.io/v1alpha2")[0] == 404


def test_a_v1beta1_podgroup_defaults_single_disruption_and_its_preemption_policy(
    raw: Raw, ns: str
) -> None:
    workload = unique("wl")
    templates = [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}]
    raw.json(
        "POST",
        path(ns, "workloads"),
        {"metadata": {"name": workload}, "spec": {"podGroupTemplates": templates}},
    )
    code, made = raw.json(
        "POST",
        path(ns, "podgroups"),
        gang(unique("pg"), workloadRef={"workloadName": workload, "templateName": "t"}),
    )
    assert code == 201, made
    assert made["spec"] == {
        "workloadRef": {"workloadName": workload, "templateName": "t"},
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "disruptionMode": {"single": {}},
        "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    assert made["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]


def test_a_v1beta1_workload_reference_is_checked_by_workload_exists(raw: Raw, ns: str) -> None:
    name = unique("pg")
    reference = {"workloadName": "nope", "templateName": "t"}
    code, body = raw.json("POST", path(ns, "podgroups"), gang(name, workloadRef=reference))
    assert code == 403
    assert body["message"].endswith('PodGroup rejected: Workload "nope" not found')


def test_a_v1beta1_disruption_mode_is_one_of_single_and_all(raw: Raw, ns: str) -> None:
    code, body = raw.json(
        "POST", path(ns, "podgroups"), gang(unique("pg"), disruptionMode={"single": {}, "all": {}})
    )
    assert code == 422
    assert causes(body) == [
        (
            "spec.disruptionMode",
            'Invalid value: "{single, all}": must specify exactly one of: `single`, `all`',
        )
    ]
    code, made = raw.json(
        "POST", path(ns, "podgroups"), gang(unique("pg"), disruptionMode={"all": {}})
    )
    assert code == 201 and made["spec"]["disruptionMode"] == {"all": {}}


def test_a_v1beta1_gangs_min_count_may_change_and_its_variant_may_not(raw: Raw, ns: str) -> None:
    name = unique("pg")
    raw.json("POST", path(ns, "podgroups"), gang(name, 4))
    code, patched = raw.json(
        "PATCH",
        path(ns, "podgroups", name),
        {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}},
        content_type=MERGE,
    )
    assert code == 200, patched
    assert patched["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    code, body = raw.json(
        "PATCH",
        path(ns, "podgroups", name),
        {"spec": {"schedulingPolicy": {"gang": None, "basic": {}}}},
        content_type=MERGE,
    )
    assert code == 422
    assert causes(body) == [("spec.schedulingPolicy", "Invalid value: null: field is immutable")]
    code, body = raw.json(
        "PATCH",
        path(ns, "podgroups", name),
        {"spec": {"schedulingPolicy": {"gang": {"minCount": 0}}}},
        content_type=MERGE,
    )
    assert code == 422
    assert causes(body) == [("spec.schedulingPolicy.gang.minCount", "Required value")]


def test_a_v1beta1_workloads_template_min_count_may_change_its_templates_may_not(
    raw: Raw, ns: str
) -> None:
    name = unique("wl")
    templates = [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}]
    raw.json(
        "POST",
        path(ns, "workloads"),
        {"metadata": {"name": name}, "spec": {"podGroupTemplates": templates}},
    )
    resized = [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 3}}}]
    code, patched = raw.json(
        "PATCH",
        path(ns, "workloads", name),
        {"spec": {"podGroupTemplates": resized}},
        content_type=MERGE,
    )
    assert code == 200, patched
    added = [*resized, {"name": "u", "schedulingPolicy": {"basic": {}}}]
    code, body = raw.json(
        "PATCH",
        path(ns, "workloads", name),
        {"spec": {"podGroupTemplates": added}},
        content_type=MERGE,
    )
    assert code == 422
    assert causes(body) == [("spec.podGroupTemplates", "Invalid value: null: field is immutable")]


def test_a_v1beta1_podgroup_is_decoded_as_its_go_type(raw: Raw, ns: str) -> None:
    code, body = raw.json("POST", path(ns, "podgroups"), gang(unique("pg"), priority="high"))
    assert code == 400
    assert 'PodGroup in version "v1beta1" cannot be handled as a PodGroup' in body["message"]
