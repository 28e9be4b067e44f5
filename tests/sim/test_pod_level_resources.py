"""Pod-level resources (spec.resources) as kube-apiserver 1.36 takes them: the defaults it
writes, the QoS class they give, and its refusals word for word. Every expected answer here was
read off a real 1.36 server (PodLevelResources on by default), sent the same body."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw, pod_body, unique

PODS = "/api/v1/namespaces/default/pods"
Obj = dict[str, Any]


def container(name: str = "c", requests: Obj | None = None, limits: Obj | None = None) -> Obj:
    resources: Obj = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources}


def pod(containers: list[Obj], resources: Obj | None, **spec: Any) -> Obj:
    body: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": unique("plr")}}
    body["spec"] = {"containers": containers, **spec}
    if resources is not None:
        body["spec"]["resources"] = resources
    return body


def created(raw: Raw, body: Obj) -> Obj:
    code, answer = raw.json("POST", f"{PODS}?dryRun=All", body)
    assert code == 201, answer
    return dict(answer)


def refused(raw: Raw, body: Obj) -> list[tuple[str, str, str]]:
    """The 422's causes as (field, reason, message), after checking its message lists them."""
    code, answer = raw.json("POST", f"{PODS}?dryRun=All", body)
    assert code == 422, answer
    causes = [(c["field"], c["reason"], c["message"]) for c in answer["details"]["causes"]]
    listed = [f"{field}: {message}" for field, _, message in causes]
    joined = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    assert answer["message"] == f'Pod "{body["metadata"]["name"]}" is invalid: {joined}'
    return causes


# (pod, the pod-level resources the server stores, its qosClass)
DEFAULTS = [
    pytest.param(
        pod([container(requests={"cpu": "100m"})], {"requests": {"cpu": "4"}}),
        {"requests": {"cpu": "4"}},
        "Burstable",
        id="requests-alone-are-kept-as-written",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "500m"}), container("d", requests={"cpu": "250m"})],
            {"limits": {"cpu": "2", "memory": "1Gi"}},
        ),
        {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "750m", "memory": "1Gi"}},
        "Burstable",
        id="limits-give-requests-the-containers-sum-where-they-name-it-else-the-limit",
    ),
    pytest.param(
        pod(
            [container(requests={"memory": "1Gi"}), container("d", requests={"memory": "512Mi"})],
            {"limits": {"memory": "4Gi"}},
        ),
        {"limits": {"memory": "4Gi"}, "requests": {"memory": "1536Mi"}},
        "Burstable",
        id="a-binary-sum-is-written-in-binary-units",
    ),
    pytest.param(
        pod(
            [container(requests={"memory": "1G"}), container("d", requests={"memory": "1Gi"})],
            {"limits": {"memory": "4Gi"}},
        ),
        {"limits": {"memory": "4Gi"}, "requests": {"memory": "2073741824"}},
        "Burstable",
        id="a-sum-keeps-its-first-parts-format",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "500m"}), container("d", requests={"cpu": "500m"})],
            {"limits": {"cpu": "4"}},
        ),
        {"limits": {"cpu": "4"}, "requests": {"cpu": "1"}},
        "Burstable",
        id="a-whole-sum-of-millicores-is-written-whole",
    ),
    pytest.param(
        pod(
            [container(limits={"cpu": "1", "memory": "1Gi"})],
            {"limits": {"cpu": "2", "memory": "2Gi"}},
        ),
        {"limits": {"cpu": "2", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
        "Burstable",
        id="a-containers-limit-counts-as-its-request-first",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "1"})],
            {"limits": {"cpu": "8"}},
            initContainers=[container("i", requests={"cpu": "3"})],
        ),
        {"limits": {"cpu": "8"}, "requests": {"cpu": "3"}},
        "Burstable",
        id="an-init-container-larger-than-the-containers-sets-the-sum",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "1"})],
            {"limits": {"cpu": "8"}},
            initContainers=[
                {**container("s", requests={"cpu": "500m"}), "restartPolicy": "Always"}
            ],
        ),
        {"limits": {"cpu": "8"}, "requests": {"cpu": "1500m"}},
        "Burstable",
        id="a-sidecar-adds-to-the-containers",
    ),
    pytest.param(
        pod([container(requests={"cpu": "0"})], {"limits": {"cpu": "2"}}),
        {"limits": {"cpu": "2"}, "requests": {"cpu": "0"}},
        "Burstable",
        id="a-container-naming-zero-names-it",
    ),
    pytest.param(
        pod(
            [
                container(requests={"memory": "1Gi"}, limits={"hugepages-2Mi": "2Mi"}),
                container("d", requests={"memory": "1Gi"}, limits={"hugepages-2Mi": "2Mi"}),
            ],
            {"requests": {"cpu": "1"}},
        ),
        {
            "limits": {"hugepages-2Mi": "4Mi"},
            "requests": {"cpu": "1", "hugepages-2Mi": "4Mi", "memory": "2Gi"},
        },
        "Burstable",
        id="hugepages-limits-come-from-the-containers-and-then-requests-too",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "100m"})],
            {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        ),
        {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        "Guaranteed",
        id="pod-level-requests-equal-to-limits-are-guaranteed-whatever-the-containers",
    ),
    pytest.param(
        pod(
            [
                container(
                    requests={"cpu": "100m", "memory": "1Gi"},
                    limits={"cpu": "100m", "memory": "1Gi"},
                )
            ],
            {"requests": {"cpu": "1"}},
        ),
        {"requests": {"cpu": "1"}},
        "Burstable",
        id="guaranteed-containers-under-pod-level-requests-are-burstable",
    ),
    pytest.param(
        pod([container()], {"limits": {"cpu": "1"}}),
        {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}},
        "Burstable",
        id="a-pod-level-limit-of-cpu-alone-is-burstable",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {}}),
        {},
        "BestEffort",
        id="empty-pod-level-resources-are-best-effort-whatever-the-containers",
    ),
    pytest.param(
        pod([container()], {"requests": {"cpu": "0"}}),
        {"requests": {"cpu": "0"}},
        "BestEffort",
        id="a-pod-level-request-of-zero-is-best-effort",
    ),
]


@pytest.mark.parametrize(("body", "stored", "qos"), DEFAULTS)
def test_pod_level_resources_are_defaulted_and_classed_as_the_real_server_does(
    raw: Raw, body: Obj, stored: Obj, qos: str
) -> None:
    answer = created(raw, body)
    assert answer["spec"]["resources"] == stored
    assert answer["status"]["qosClass"] == qos


NOT_SUPPORTED = 'Unsupported value: "{}": supported values: "cpu", "hugepages-", "memory"'
LIMIT_REQUIRED = (
    "spec.resources.limits",
    "FieldValueRequired",
    "Required value: Limit must be set for non overcommitable resources",
)

# (pod, the causes of the real server's 422)
REFUSALS = [
    pytest.param(
        pod(
            [container(requests={"cpu": "1"}), container("d", requests={"cpu": "1"})],
            {"requests": {"cpu": "1"}},
        ),
        [
            (
                "spec.resources.requests[cpu]",
                "FieldValueInvalid",
                'Invalid value: "1": must be greater than or equal to aggregate container '
                "requests of 2",
            )
        ],
        id="below-the-containers-requests",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {"nvidia.com/gpu": "1", "cpu": "2"}}),
        [
            (
                "spec.resources.requests[nvidia.com/gpu]",
                "FieldValueNotSupported",
                NOT_SUPPORTED.format("nvidia.com/gpu"),
            ),
            LIMIT_REQUIRED,
        ],
        id="an-extended-resource",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {"ephemeral-storage": "1Gi"}}),
        [
            (
                "spec.resources.requests[ephemeral-storage]",
                "FieldValueNotSupported",
                NOT_SUPPORTED.format("ephemeral-storage"),
            )
        ],
        id="ephemeral-storage",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {"pods": "2"}}),
        [("spec.resources.requests[pods]", "FieldValueNotSupported", NOT_SUPPORTED.format("pods"))],
        id="pods",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}),
        [
            (
                "spec.resources.requests",
                "FieldValueInvalid",
                'Invalid value: "4": must be less than or equal to cpu limit of 2',
            )
        ],
        id="request-above-limit",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"}, limits={"cpu": "2"})], {"limits": {"cpu": "1500m"}}),
        [
            (
                "spec.resources.containers[0][cpu].limits",
                "FieldValueInvalid",
                'Invalid value: "2": must be less than or equal to pod limits of 1500m',
            )
        ],
        id="a-containers-limit-above-the-pods",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {"cpu": "-1"}}),
        [
            (
                "spec.resources.requests[cpu]",
                "FieldValueInvalid",
                'Invalid value: "-1": must be greater than or equal to 0',
            ),
            (
                "spec.resources.requests[cpu]",
                "FieldValueInvalid",
                'Invalid value: "-1": must be greater than or equal to aggregate container '
                "requests of 1",
            ),
        ],
        id="negative",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {"cpu": "1", "hugepages-2Mi": "2Mi"}}),
        [LIMIT_REQUIRED],
        id="hugepages-requested-without-a-limit",
    ),
    pytest.param(
        pod(
            [container()],
            {"requests": {"hugepages-2Mi": "2Mi"}, "limits": {"hugepages-2Mi": "2Mi"}},
        ),
        [("spec.resources", "FieldValueForbidden", "Forbidden: HugePages require cpu or memory")],
        id="hugepages-without-cpu-or-memory",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "1"})],
            {"requests": {"cpu": "1", "hugepages-2Mi": "2Mi"}, "limits": {"hugepages-2Mi": "4Mi"}},
        ),
        [
            (
                "spec.resources.requests",
                "FieldValueInvalid",
                'Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi',
            )
        ],
        id="hugepages-request-unequal-to-its-limit",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "1"})],
            {"requests": {"cpu": "1"}, "limits": {"hugepages-2Mi": "3Mi"}},
        ),
        [
            (
                f"spec.resources.{section}[hugepages-2Mi]",
                "FieldValueInvalid",
                'Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi',
            )
            for section in ("limits", "requests")
        ],
        id="hugepages-not-a-whole-number-of-pages",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "1"}, limits={"hugepages-2Mi": "4Mi", "cpu": "1"})],
            {"limits": {"hugepages-2Mi": "2Mi"}},
        ),
        [
            (
                "spec.resources.requests[hugepages-2Mi]",
                "FieldValueInvalid",
                'Invalid value: "2Mi": must be greater than or equal to aggregate container '
                "requests of 4Mi",
            ),
            (
                "spec.resources.limits[hugepages-2Mi]",
                "FieldValueInvalid",
                'Invalid value: "2Mi": must be greater than or equal to aggregate container '
                "limits of 4Mi",
            ),
            (
                "spec.resources.containers[0][hugepages-2Mi].limits",
                "FieldValueInvalid",
                'Invalid value: "4Mi": must be less than or equal to pod limits of 2Mi',
            ),
        ],
        id="hugepages-below-the-containers",
    ),
    pytest.param(
        pod(
            [container(requests={"cpu": "1"})],
            {"requests": {"cpu": "2"}, "claims": [{"name": "x"}]},
        ),
        [
            (
                "spec.resources.claims",
                "FieldValueForbidden",
                "Forbidden: claims may not be set for Resources at pod-level",
            ),
            (
                "spec.resources.claims[0]",
                "FieldValueNotFound",
                'Not found: "x": must be one of the names in pod.spec.resourceClaims '
                "which is empty",
            ),
        ],
        id="claims",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {"cpu": "2"}}, os={"name": "windows"}),
        [("spec.resources", "FieldValueForbidden", "Forbidden: may not be set for a windows pod")],
        id="a-windows-pod",
    ),
    pytest.param(
        pod([container(requests={"cpu": "1"})], {"requests": {"Cpu!": "2"}}),
        [
            (
                "spec.resources.requests[Cpu!]",
                "FieldValueInvalid",
                "Invalid value: \"Cpu!\": name part must consist of alphanumeric characters, '-', "
                "'_' or '.', and must start and end with an alphanumeric character (e.g. "
                "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            )
        ],
        id="a-name-that-is-no-resource-name",
    ),
]


@pytest.mark.parametrize(("body", "causes"), REFUSALS)
def test_pod_level_resources_are_refused_in_the_real_servers_words(
    raw: Raw, body: Obj, causes: list[tuple[str, str, str]]
) -> None:
    assert refused(raw, body) == causes


def test_a_templates_pod_level_resources_are_validated_but_not_defaulted(
    raw: Raw,
) -> None:
    def deployment(name: str, spec: Obj) -> Obj:
        template = {"metadata": {"labels": {"a": "b"}}, "spec": spec}
        selector = {"matchLabels": {"a": "b"}}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": selector, "template": template},
        }

    path = "/apis/apps/v1/namespaces/default/deployments?dryRun=All"
    below = {
        "containers": [container(requests={"cpu": "2"})],
        "resources": {"requests": {"cpu": "1"}},
    }
    code, answer = raw.json("POST", path, deployment("below", below))
    assert code == 422
    assert answer["message"] == (
        'Deployment.apps "below" is invalid: spec.template.spec.resources.requests[cpu]: '
        'Invalid value: "1": must be greater than or equal to aggregate container requests of 2'
    )
    limits = {
        "containers": [container(requests={"cpu": "500m"})],
        "resources": {"limits": {"cpu": "2"}},
    }
    code, answer = raw.json("POST", path, deployment("limits", limits))
    assert code == 201, answer
    assert answer["spec"]["template"]["spec"]["resources"] == {"limits": {"cpu": "2"}}


def test_pod_level_resources_cannot_change_on_update(raw: Raw) -> None:
    name = unique("upd")
    body = pod_body(name, resources={"requests": {"cpu": "1"}})
    code, stored = raw.json("POST", PODS, body)
    assert code == 201, stored
    stored["spec"]["resources"] = {"requests": {"cpu": "2"}}
    code, answer = raw.json("PUT", f"{PODS}/{name}", stored)
    assert code == 422
    # the real server appends a diff of the specs to this
    assert answer["message"].startswith(
        f'Pod "{name}" is invalid: spec: Forbidden: pod updates may not change fields other '
        "than `spec.containers[*].image`"
    )
