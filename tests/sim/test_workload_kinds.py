"""Workload objects on sim: Deployments, ReplicaSets, StatefulSets (apps/v1) and Jobs (batch/v1)
stored as the real API serves them (discovery, defaults, a Job's generated selector,
validation in kube's words, update rules, status subresource, garbage collection, RBAC)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import (
    Raw,
    create_namespace,
    pod_body,
    service_account_token,
    unique,
    wait_for,
)

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    return create_namespace(raw, "workloads")


def path(ns: str, plural: str) -> str:
    group = "batch" if plural == "jobs" else "apps"
    return f"/apis/{group}/v1/namespaces/{ns}/{plural}"


def template(
    labels: dict[str, str] | None = None, restart: str | None = None, cpu: str = "100m"
) -> Obj:
    spec: Obj = {
        "containers": [
            {"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": cpu}}}
        ]
    }
    if restart is not None:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": dict(labels or {})}, "spec": spec}


def controlled(name: str, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    """A Deployment, ReplicaSet or StatefulSet body: a selector its template's labels match."""
    labels = labels or {"app": name}
    body: Obj = {"selector": {"matchLabels": labels}, "template": template(labels)}
    body.update(spec)
    return {"metadata": {"name": name}, "spec": body}


def job(name: str, **spec: Any) -> Obj:
    body: Obj = {"template": template(restart="Never")}
    body.update(spec)
    return {"metadata": {"name": name}, "spec": body}


def test_discovery_serves_the_workload_kinds_with_status_and_short_names(raw: Raw) -> None:
    code, apps = raw.json("GET", "/apis/apps/v1")
    assert code == 200
    by_name = {r["name"]: r for r in apps["resources"]}
    assert {"deployments", "replicasets", "statefulsets"} <= set(by_name)
    assert by_name["deployments"]["shortNames"] == ["deploy"]
    assert by_name["statefulsets"]["namespaced"] is True
    assert {"deployments/status", "replicasets/status", "statefulsets/status"} <= set(by_name)
    code, batch = raw.json("GET", "/apis/batch/v1")
    assert code == 200
    assert {"jobs", "jobs/status"} <= {r["name"] for r in batch["resources"]}


def test_deployment_gets_apps_v1_defaults_and_its_template_a_pod_specs(raw: Raw, ns: str) -> None:
    code, made = raw.json("POST", path(ns, "deployments"), controlled(unique("web")))
    assert code == 201, made
    spec = made["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod = spec["template"]["spec"]
    assert (pod["restartPolicy"], pod["schedulerName"], pod["dnsPolicy"]) == (
        "Always",
        "default-scheduler",
        "ClusterFirst",
    )
    assert "tolerations" not in pod, "DefaultTolerationSeconds admits pods, not templates"
    assert made["metadata"]["generation"] == 1
    assert "status" not in made


def test_statefulset_gets_ordered_ready_rolling_update_and_retained_claims(
    raw: Raw, ns: str
) -> None:
    code, made = raw.json("POST", path(ns, "statefulsets"), controlled(unique("db")))
    assert code == 201, made
    spec = made["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)


def test_job_gets_batch_v1_defaults_and_a_selector_generated_from_its_uid(
    raw: Raw, ns: str
) -> None:
    name = unique("train")
    code, made = raw.json("POST", path(ns, "jobs"), job(name))
    assert code == 201, made
    spec, uid = made["spec"], made["metadata"]["uid"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["manualSelector"]) == (
        "NonIndexed",
        False,
        False,
    )
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "controller-uid": uid,
        "batch.kubernetes.io/controller-uid": uid,
        "job-name": name,
        "batch.kubernetes.io/job-name": name,
    }


def test_indexed_job_keeps_its_counts_and_a_parallel_job_defaults_none(raw: Raw, ns: str) -> None:
    code, made = raw.json(
        "POST",
        path(ns, "jobs"),
        job(unique("idx"), completionMode="Indexed", completions=4, parallelism=4),
    )
    assert code == 201, made
    assert (made["spec"]["completions"], made["spec"]["parallelism"]) == (4, 4)
    code, made = raw.json("POST", path(ns, "jobs"), job(unique("queue"), parallelism=3))
    assert code == 201, made
    assert made["spec"]["parallelism"] == 3
    assert "completions" not in made["spec"], "a work queue Job has no completions"


INVALID = [
    pytest.param(
        "deployments",
        {"metadata": {"name": "d"}, "spec": {"template": template({"app": "d"})}},
        "spec.selector: Required value",
        id="deployment-without-selector",
    ),
    pytest.param(
        "deployments",
        controlled("d", selector={"matchLabels": {"app": "other"}}),
        'spec.template.metadata.labels: Invalid value: {"app":"d"}: `selector` does not match '
        "template `labels`",
        id="selector-not-matching-the-template",
    ),
    pytest.param(
        "replicasets",
        controlled("r", selector={}),
        "spec.selector: Invalid value: {}: empty selector is invalid for deployment",
        id="empty-replicaset-selector",
    ),
    pytest.param(
        "replicasets",
        {
            "metadata": {"name": "r"},
            "spec": {
                "selector": {"matchLabels": {"app": "r"}},
                "template": template({"app": "r"}, restart="Never"),
            },
        },
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
        id="replicaset-template-not-always",
    ),
    pytest.param(
        "deployments",
        controlled("d", replicas=-1),
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        id="negative-replicas",
    ),
    pytest.param(
        "deployments",
        controlled(
            "d",
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0},
            },
        ),
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when "
        "`maxSurge` is 0",
        id="rolling-update-of-nothing",
    ),
    pytest.param(
        "deployments",
        controlled("d", strategy={"type": "Recreate", "rollingUpdate": {}}),
        "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
        "'Recreate'",
        id="recreate-with-rolling-update",
    ),
    pytest.param(
        "deployments",
        {
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}}, "spec": {}},
            },
        },
        "spec.template.spec.containers: Required value",
        id="template-without-containers",
    ),
    pytest.param(
        "statefulsets",
        controlled("s", podManagementPolicy="Whenever"),
        'spec.podManagementPolicy: Invalid value: "Whenever": must be '
        "'OrderedReady' or 'Parallel'",
        id="unknown-pod-management-policy",
    ),
    pytest.param(
        "statefulsets",
        controlled("s.x"),
        'metadata.name: Invalid value: "s.x": a lowercase RFC 1123 label',
        id="statefulset-name-is-a-dns-label",
    ),
    pytest.param(
        "jobs",
        job("j", completionMode="Indexed", parallelism=2),
        "spec.completions: Required value: when completion mode is Indexed",
        id="indexed-job-without-completions",
    ),
    pytest.param(
        "jobs",
        {"metadata": {"name": "j"}, "spec": {"template": template()}},
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
        id="job-template-restarting-always",
    ),
    pytest.param(
        "jobs",
        job("j", parallelism=-2),
        "spec.parallelism: Invalid value: -2: must be greater than or equal to 0",
        id="negative-parallelism",
    ),
    pytest.param(
        "jobs",
        job("j", completionMode="Sometimes"),
        'spec.completionMode: Unsupported value: "Sometimes": supported values: '
        '"NonIndexed", "Indexed"',
        id="unknown-completion-mode",
    ),
    pytest.param(
        "jobs",
        job("j", manualSelector=True),
        "spec.selector: Required value",
        id="manual-selector-missing",
    ),
]


@pytest.mark.parametrize(("plural", "body", "message"), INVALID)
def test_an_invalid_workload_is_refused_with_kubes_field_and_words(
    raw: Raw, ns: str, plural: str, body: Obj, message: str
) -> None:
    code, answer = raw.json("POST", path(ns, plural), body)
    assert code == 422, answer
    assert answer["reason"] == "Invalid"
    assert message in answer["message"], answer["message"]
    code, _ = raw.json("GET", f"{path(ns, plural)}/{body['metadata']['name']}")
    assert code == 404, "nothing is stored"


def test_a_template_quantity_that_does_not_parse_is_the_decoders_400(raw: Raw, ns: str) -> None:
    body = job(unique("q"))
    body["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    code, answer = raw.json("POST", path(ns, "jobs"), body)
    assert code == 400, answer
    assert (
        'Job in version "v1" cannot be handled as a Job: quantities must match' in answer["message"]
    )


def test_a_deployments_selector_is_immutable_and_its_replicas_are_not(raw: Raw, ns: str) -> None:
    name = unique("web")
    code, made = raw.json("POST", path(ns, "deployments"), controlled(name))
    assert code == 201, made
    code, scaled = raw.json(
        "PATCH",
        f"{path(ns, 'deployments')}/{name}",
        {"spec": {"replicas": 5}},
        content_type=MERGE,
    )
    assert code == 200, scaled
    assert scaled["spec"]["replicas"] == 5
    assert scaled["metadata"]["generation"] == 2
    new_labels = {"app": name, "tier": "web"}
    code, answer = raw.json(
        "PATCH",
        f"{path(ns, 'deployments')}/{name}",
        {
            "spec": {
                "selector": {"matchLabels": new_labels},
                "template": {"metadata": {"labels": new_labels}},
            }
        },
        content_type=MERGE,
    )
    assert code == 422, answer
    assert "spec.selector: Invalid value" in answer["message"]
    assert "field is immutable" in answer["message"]


def test_a_statefulset_update_may_change_replicas_but_not_its_service(raw: Raw, ns: str) -> None:
    name = unique("db")
    code, made = raw.json("POST", path(ns, "statefulsets"), controlled(name, serviceName="db"))
    assert code == 201, made
    url = f"{path(ns, 'statefulsets')}/{name}"
    code, answer = raw.json("PATCH", url, {"spec": {"replicas": 3}}, content_type=MERGE)
    assert code == 200, answer
    code, answer = raw.json("PATCH", url, {"spec": {"serviceName": "other"}}, content_type=MERGE)
    assert code == 422, answer
    assert (
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas'"
        in (answer["message"])
    )


def test_an_indexed_job_scales_elastically_only_with_parallelism_in_tandem(
    raw: Raw, ns: str
) -> None:
    name = unique("elastic")
    code, made = raw.json(
        "POST", path(ns, "jobs"), job(name, completionMode="Indexed", completions=2, parallelism=2)
    )
    assert code == 201, made
    url = f"{path(ns, 'jobs')}/{name}"
    code, answer = raw.json("PATCH", url, {"spec": {"completions": 4}}, content_type=MERGE)
    assert code == 422, answer
    assert (
        "spec.completions: Invalid value: 4: can only be modified in tandem with spec.parallelism"
        in (answer["message"])
    )
    code, answer = raw.json(
        "PATCH", url, {"spec": {"completions": 4, "parallelism": 4}}, content_type=MERGE
    )
    assert code == 200, answer
    code, answer = raw.json(
        "PATCH",
        url,
        {
            "spec": {
                "template": {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}
            }
        },
        content_type=MERGE,
    )
    assert code == 422, answer
    assert (
        "spec.template: Invalid value" in answer["message"]
        and "field is immutable" in answer["message"]
    )


def test_status_goes_through_its_subresource_only(raw: Raw, ns: str) -> None:
    name = unique("rs")
    code, made = raw.json("POST", path(ns, "replicasets"), controlled(name))
    assert code == 201, made
    url = f"{path(ns, 'replicasets')}/{name}"
    code, answer = raw.json("PATCH", url, {"status": {"replicas": 1}}, content_type=MERGE)
    assert code == 200 and "status" not in answer, "a main-resource write keeps the status"
    code, answer = raw.json(
        "PATCH", url + "/status", {"status": {"replicas": 1}}, content_type=MERGE
    )
    assert code == 200, answer
    assert answer["status"] == {"replicas": 1}


def test_deleting_a_replicaset_collects_the_pods_it_controls(raw: Raw, ns: str) -> None:
    name = unique("rs")
    code, made = raw.json("POST", path(ns, "replicasets"), controlled(name))
    assert code == 201, made
    reference = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": name,
        "uid": made["metadata"]["uid"],
        "controller": True,
    }
    pod = pod_body(f"{name}-0", labels={"app": name}, ownerReferences=[reference])
    code, answer = raw.json("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    assert code == 201, answer
    code, answer = raw.json("DELETE", f"{path(ns, 'replicasets')}/{name}")
    assert code == 200, answer
    wait_for(lambda: raw.json("GET", f"/api/v1/namespaces/{ns}/pods/{name}-0")[0] == 404)


def test_a_service_account_needs_rbac_to_read_jobs(raw: Raw, ns: str) -> None:
    token = service_account_token(raw, ns, unique("reader"))
    code, answer = raw.as_token(token).json("GET", path(ns, "jobs"))
    assert code == 403, answer
    assert "jobs.batch is forbidden" in answer["message"]


def test_a_crd_cannot_take_over_a_built_in_group(raw: Raw) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "jobs.batch"},
        "spec": {
            "group": "batch",
            "scope": "Namespaced",
            "names": {"kind": "Job", "plural": "jobs"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    code, answer = raw.json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 422, answer
    assert (
        'spec.group: Invalid value: "batch": should be a domain with at least one dot'
        in (answer["message"])
    )


def _crd(group: str, annotations: dict[str, str] | None = None) -> dict[str, object]:
    plural = unique("widgets")
    metadata: dict[str, object] = {"name": f"{plural}.{group}"}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": plural},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }


def test_a_crd_in_a_group_kubernetes_protects_needs_the_approval_annotation(raw: Raw) -> None:
    # As kube-apiserver answered the Spark operator's group (KEP 1111): *.k8s.io and
    # *.kubernetes.io need api-approved.kubernetes.io; x-k8s.io is not theirs.
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    code, answer = raw.json("POST", path, _crd("sparkoperator.k8s.io"))
    assert code == 422, answer
    assert "protected groups must have approval annotation" in answer["message"]
    approved = _crd("sparkoperator.k8s.io", {"api-approved.kubernetes.io": "https://example.org/1"})
    assert raw.json("POST", path, approved)[0] == 201
    assert raw.json("POST", path, _crd("jobset.x-k8s.io"))[0] == 201
