"""The controller's admission webhooks, called by the API server as in a cluster.

The suite registers deploy/'s webhook configurations, pointed at the test's
controller by URL with its CA bundle, and then only talks to the API server:
the answers users see come through the server's own admission chain (CRD
defaults, then mutating webhooks, then schema validation, then validating
webhooks).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import StartController
from tests.e2e.harness import (
    GROUP,
    QUEUE_NAME,
    REPO,
    VERSION,
    Cluster,
    Controller,
    make_pod,
    make_podgroup,
    wait_for,
)
from tests.e2e.test_controller import create_queue, muster_queue, queue_state

WEBHOOKS = REPO / "deploy" / "base" / "controller" / "webhooks"
Obj = dict[str, Any]


def pointed_at(path: Path, controller: Controller, suffix: str) -> Obj:
    """deploy/'s webhook configuration, calling the test's controller by URL."""
    configuration: Obj = yaml.safe_load(path.read_text())
    configuration["metadata"] = {"name": f"muster-e2e-{suffix}"}
    bundle = base64.b64encode(controller.ca.read_bytes()).decode()
    for webhook in configuration["webhooks"]:
        webhook_path = webhook["clientConfig"]["service"]["path"]
        webhook["clientConfig"] = {"url": controller.webhooks + webhook_path, "caBundle": bundle}
    return configuration


@pytest.fixture
def admission(
    cluster: Cluster, start_controller: StartController
) -> Iterator[tuple[Cluster, Controller]]:
    """A controller whose webhooks the API server calls; removed after the test."""
    controller = start_controller()
    api = client.AdmissionregistrationV1Api(cluster.api)
    suffix = uuid.uuid4().hex[:6]
    mutating = pointed_at(WEBHOOKS / "mutating.yaml", controller, suffix)
    validating = pointed_at(WEBHOOKS / "validating.yaml", controller, suffix)
    api.create_mutating_webhook_configuration(mutating)
    api.create_validating_webhook_configuration(validating)
    # kube-apiserver reads webhook configurations through an informer: they take effect
    # a moment after they are stored, so wait until the validating one answers
    wait_for(
        lambda: refused_dry_run(cluster, make_podgroup("probe", 1, queue=f"ghost-{suffix}")),
        10,
        message="the validating webhook in force",
    )
    try:
        yield cluster, controller
    finally:
        api.delete_mutating_webhook_configuration(mutating["metadata"]["name"])
        api.delete_validating_webhook_configuration(validating["metadata"]["name"])


def create_podgroup(
    cluster: Cluster, namespace: str, podgroup: Obj, dry_run: str | None = None
) -> Obj:
    created: Obj = cluster.custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups", podgroup, dry_run=dry_run
    )
    return created


def refused_dry_run(cluster: Cluster, podgroup: Obj) -> bool:
    try:
        create_podgroup(cluster, "default", podgroup, dry_run="All")
    except ApiException as error:
        return error.status == 400
    return False


def refusal(error: ApiException) -> str:
    return str(json.loads(error.body)["message"])


def test_a_podgroup_without_queue_or_with_the_default_takes_its_namespaces_queue(
    admission: tuple[Cluster, Controller], namespace: str
) -> None:
    cluster, _ = admission
    # Queues are cluster-scoped: on a real cluster they outlive the test, so each is unique
    ml, mine = f"ml-{namespace[-5:]}", f"mine-{namespace[-5:]}"
    create_queue(cluster, ml)
    wait_for(lambda: queue_state(cluster, ml) == "Open", 10, message="ml Open")
    cluster.core.patch_namespace(namespace, {"metadata": {"annotations": {QUEUE_NAME: ml}}})

    # The CRD defaults spec.queue to "default" before mutating admission runs.
    wait_for(
        lambda: (
            create_podgroup(cluster, namespace, make_podgroup("probe", 1), dry_run="All")["spec"][
                "queue"
            ]
            == ml
        ),
        10,
        message="the mutating webhook in force",
    )
    unset = create_podgroup(cluster, namespace, make_podgroup("unset", 1))
    assert unset["spec"]["queue"] == ml
    named_default = create_podgroup(cluster, namespace, make_podgroup("dflt", 1, queue="default"))
    assert named_default["spec"]["queue"] == ml
    create_queue(cluster, mine)
    wait_for(lambda: queue_state(cluster, mine) == "Open", 10, message="mine Open")
    kept = create_podgroup(cluster, namespace, make_podgroup("mine", 1, queue=mine))
    assert kept["spec"]["queue"] == mine


def test_the_api_server_refuses_what_the_webhooks_refuse_with_their_words(
    admission: tuple[Cluster, Controller], namespace: str
) -> None:
    cluster, _ = admission
    with pytest.raises(ApiException) as caught:
        create_podgroup(cluster, namespace, make_podgroup("lost", 1, queue="ghost"))
    assert caught.value.status == 400
    message = refusal(caught.value)
    assert 'admission webhook "podgroups.validate.muster.dev" denied the request' in message
    assert "queue 'ghost' does not exist" in message

    shut = f"shut-{namespace[-5:]}"
    create_queue(cluster, shut)
    wait_for(lambda: queue_state(cluster, shut) == "Open", 10, message="shut Open")
    muster_queue(cluster, "close", shut)
    wait_for(lambda: queue_state(cluster, shut) == "Closed", 10, message="shut Closed")
    pod = make_pod("p", annotations={QUEUE_NAME: shut})
    with pytest.raises(ApiException) as caught:
        cluster.core.create_namespaced_pod(namespace, pod)
    assert f"queue '{shut}' is Closed" in refusal(caught.value)
    # pods of other schedulers are not the webhook's business (matchConditions)
    other = make_pod("q", annotations={QUEUE_NAME: shut}, scheduler_name="default-scheduler")
    cluster.core.create_namespaced_pod(namespace, other)

    with pytest.raises(ApiException) as caught:
        cluster.custom.patch_cluster_custom_object(
            GROUP, VERSION, "queues", shut, {"spec": {"weight": 0}}
        )
    # The CRD schema (minimum 1) or the webhook refuses it; either way it never lands.
    assert caught.value.status in (400, 422)
    assert (cluster.queue(shut) or {})["spec"]["weight"] == 1
