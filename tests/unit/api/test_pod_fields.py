"""Pod-spec fields muster does not honour: decoded, classified, and refused or warned about."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes.client
import msgspec
import pytest

from scheduler.api import pod_fields, wire
from scheduler.api.pod_fields import POD_FIELDS, Verdict
from scheduler.api.task import TaskInfo
from scheduler.api.wire import decode

WORKLOADS_MD = Path(__file__).resolve().parents[3] / "docs" / "workloads.md"

TERM = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"a": "b"}}}
PREFERRED = [{"weight": 10, "podAffinityTerm": TERM}]
CLAIM_TEMPLATE = {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}


def decoded(spec: dict[str, Any]) -> wire.Pod:
    body = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec}
    return wire.decode_pod(msgspec.json.encode(body))


def containers(**extra: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **extra}


# (spec, refused field or "", warned field or "")
CASES: list[Any] = [
    pytest.param(containers(), "", "", id="plain-pod"),
    pytest.param(
        containers(
            dnsPolicy="ClusterFirst",
            serviceAccountName="sa",
            securityContext={"runAsUser": 1},
            volumes=[{"name": "cfg", "configMap": {"name": "c"}}],
        ),
        "",
        "",
        id="fields-not-relevant-to-placement",
    ),
    pytest.param(
        containers(
            affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
        ),
        "",
        "",
        id="required-anti-affinity-is-honoured",
    ),
    pytest.param(
        containers(
            affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}}
        ),
        "",
        "",
        id="required-affinity-is-honoured",
    ),
    pytest.param(
        containers(
            affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": PREFERRED}}
        ),
        "",
        "",
        id="preferred-affinity-is-honoured",
    ),
    pytest.param(
        containers(
            affinity={
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": PREFERRED}
            }
        ),
        "",
        "",
        id="preferred-anti-affinity-is-honoured",
    ),
    pytest.param(
        containers(
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
            ]
        ),
        "",
        "",
        id="spread-do-not-schedule-is-honoured",
    ),
    pytest.param(
        containers(
            topologySpreadConstraints=[
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ]
        ),
        "",
        "",
        id="spread-schedule-anyway-is-honoured",
    ),
    pytest.param(
        containers(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]),
        "",
        "",
        id="pvc-volume-is-honoured",
    ),
    pytest.param(
        containers(volumes=[{"name": "scratch", "ephemeral": CLAIM_TEMPLATE}]),
        "",
        "",
        id="ephemeral-volume-is-honoured",
    ),
    pytest.param(
        containers(resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}]),
        "",
        "",
        id="dra-claims-are-honoured",
    ),
    pytest.param(
        containers(resources={"requests": {"cpu": "2"}}),
        "",
        "",
        id="pod-level-resources-are-honoured",
    ),
    pytest.param(containers(resources={}), "", "", id="empty-pod-level-resources"),
    pytest.param(
        containers(schedulingGroup={"podGroupName": "g"}),
        "",
        "",
        id="scheduling-group-is-honoured",
    ),
    pytest.param(
        containers(evictionResponders=[{"name": "drainer"}]),
        "",
        "spec.evictionResponders",
        id="eviction-responders",
    ),
    pytest.param(containers(fancyNewField={"x": 1}), "", "spec.fancyNewField", id="unknown-field"),
]


@pytest.mark.parametrize(("spec", "refused", "warned"), CASES)
def test_each_pod_spec_gets_the_verdict_naming_its_field(
    spec: dict[str, Any], refused: str, warned: str
) -> None:
    task = TaskInfo.from_pod(decoded(spec))
    found = task.unhonoured
    if not refused and not warned:
        assert found is None
        assert not task.gated
        return
    assert found is not None
    if refused:
        assert len(found.refusals) == 1 and refused in found.refusals[0]
        assert task.gated and refused in task.refusal
    else:
        assert found.refusals == () and not task.gated and task.refusal == ""
    if warned:
        assert len(found.warnings) == 1 and warned in found.warnings[0]
    else:
        assert found.warnings == ()


def test_pod_terms_and_spread_become_the_tasks_topology_spec() -> None:
    spec = containers(
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [TERM]}},
        topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    )
    task = TaskInfo.from_pod(decoded(spec))
    assert task.topology is not None and not task.gated
    assert [t.topology_key for t in task.topology.required_anti_affinity] == [TERM["topologyKey"]]
    assert [(c.topology_key, c.hard) for c in task.topology.spread] == [("zone", True)]


def test_resource_claims_become_the_tasks_devices_and_a_templates_claim_waits() -> None:
    spec = containers(
        resourceClaims=[
            {"name": "shared", "resourceClaimName": "c"},
            {"name": "gpu", "resourceClaimTemplateName": "t"},
        ]
    )
    task = TaskInfo.from_pod(decoded(spec))
    assert task.devices is not None and not task.gated and not task.best_effort
    assert task.devices.waiting == 'pod "ns/p": ResourceClaim not created yet'
    made = decoded(spec)
    made.status.resource_claim_statuses = [
        wire.PodResourceClaimStatus(name="gpu", resource_claim_name="p-gpu-1")
    ]
    restated = task.restated(made)
    assert restated.devices is not None and restated.devices.waiting is None
    assert restated.devices.claims == ("ns/c", "ns/p-gpu-1")


def test_claim_volumes_become_the_pods_claims_by_namespace() -> None:
    spec = containers(
        volumes=[
            {"name": "data", "persistentVolumeClaim": {"claimName": "d"}},
            {"name": "scratch", "ephemeral": CLAIM_TEMPLATE},
            {"name": "cfg", "configMap": {"name": "c"}},
        ]
    )
    task = TaskInfo.from_pod(decoded(spec))
    assert task.placement.claims == ("ns/d", "ns/p-scratch")


def test_decoding_keeps_the_fields_the_rules_read() -> None:
    spec = containers(
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        **TERM,
                        "namespaces": ["a"],
                        "namespaceSelector": {"matchLabels": {"team": "x"}},
                        "matchLabelKeys": ["rev"],
                        "mismatchLabelKeys": ["tenant"],
                    }
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": PREFERRED,
            }
        },
        topologySpreadConstraints=[
            {
                "maxSkew": 2,
                "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
                "minDomains": 3,
                "nodeAffinityPolicy": "Honor",
                "nodeTaintsPolicy": "Ignore",
                "matchLabelKeys": ["pod-template-hash"],
            }
        ],
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "d", "readOnly": True}}],
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "t"}],
    )
    pod = decoded(spec).spec
    assert pod.affinity is not None and pod.affinity.pod_anti_affinity is not None
    term = pod.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution[0]
    assert term.topology_key == "kubernetes.io/hostname"
    assert term.label_selector is not None and term.label_selector.match_labels == {"a": "b"}
    assert term.namespaces == ["a"]
    assert term.namespace_selector is not None
    assert (term.match_label_keys, term.mismatch_label_keys) == (["rev"], ["tenant"])
    preferred = pod.affinity.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
    assert preferred[0].weight == 10
    spread = pod.topology_spread_constraints[0]
    assert (spread.max_skew, spread.min_domains, spread.node_taints_policy) == (2, 3, "Ignore")
    assert spread.label_selector is not None
    assert spread.label_selector.match_expressions[0].operator == "Exists"
    assert pod.volumes[0].persistent_volume_claim == wire.ClaimSource("d", True)
    assert pod.resource_claims[0].resource_claim_template_name == "t"


def test_unknown_fields_are_all_named_and_the_rest_still_decodes() -> None:
    pod = decoded(containers(nodeSelector={"a": "b"}, zeta=1, alpha={}))
    assert pod.unknown_spec_fields == ("alpha", "zeta")
    assert pod.spec.node_selector == {"a": "b"}


def test_a_malformed_known_field_is_still_an_error() -> None:
    with pytest.raises(msgspec.ValidationError, match="containers"):
        decoded({"containers": 5})


def test_the_strict_decoder_names_exactly_the_fields_the_list_classifies() -> None:
    assert frozenset(decode._FULL_SPEC_NAMES) == pod_fields.top_level_fields()


def test_the_list_covers_every_pod_spec_field_of_the_official_client() -> None:
    client_fields = set(kubernetes.client.V1PodSpec.attribute_map.values())
    assert client_fields <= pod_fields.top_level_fields()


def test_workloads_page_names_every_field_muster_does_not_honour() -> None:
    text = WORKLOADS_MD.read_text()
    missing = [path for path in pod_fields.not_honoured() if f"`{path}`" not in text]
    assert missing == []


def test_every_not_honoured_field_has_words_for_what_muster_does() -> None:
    for path, rule in POD_FIELDS.items():
        if rule.verdict in (Verdict.REFUSED, Verdict.WARNED):
            assert re.search(r"the pod is (not )?placed", pod_fields.message(path)), path
