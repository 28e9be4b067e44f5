"""Hostile objects through sim over HTTP: sim answers as kube-apiserver does, never with a 5xx."""

from __future__ import annotations

import ssl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from muster_sim.server import SimServer
from tests.sim.conftest import Raw, create_namespace, pod_body, sim_config, unique

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

from chaos import fuzz  # noqa: E402

SIM_CONFIG: dict[str, Any] = {"crds_dir": REPO / "crds", "nodes": 2}


@pytest.fixture(scope="module")
def crd_sim() -> Iterator[SimServer]:
    with SimServer(sim_config(**SIM_CONFIG)).running() as server:
        Raw.admin(server).json("POST", "/api/v1/namespaces", {"metadata": {"name": fuzz.NAMESPACE}})
        yield server


def test_annotations_over_256_kib_are_refused_naming_the_field(raw: Raw) -> None:
    namespace = create_namespace(raw)
    name = unique("big")
    body = pod_body(name, annotations={"big": "a" * (256 * 1024)})
    code, answer = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", body)
    assert code == 422, answer
    (cause,) = answer["details"]["causes"]
    assert cause["field"] == "metadata.annotations"
    # kube-apiserver 1.36's words (checked against it)
    assert cause["message"] == "Too long: may not be more than 262144 bytes"


def test_an_update_growing_annotations_past_256_kib_is_refused(raw: Raw) -> None:
    namespace = create_namespace(raw)
    name = unique("grows")
    code, created = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", pod_body(name))
    assert code == 201
    created["metadata"]["annotations"] = {"k": "v" * (200 * 1024), "l": "w" * (100 * 1024)}
    code, answer = raw.json("PUT", f"/api/v1/namespaces/{namespace}/pods/{name}", created)
    assert code == 422, answer
    assert answer["details"]["causes"][0]["field"] == "metadata.annotations"


def test_annotations_of_exactly_256_kib_are_accepted(raw: Raw) -> None:
    namespace = create_namespace(raw)
    body = pod_body(unique("edge"), annotations={"k": "a" * (256 * 1024 - 1)})
    code, answer = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", body)
    assert code == 201, answer


@pytest.mark.parametrize(
    ("containers", "field"),
    [
        (False, "PodSpec.spec.containers"),
        ("main", "PodSpec.spec.containers"),
        ([{"name": "c", "image": "i", "resources": "lots"}], "Container.spec.containers.resources"),
        ([0], "PodSpec.spec.containers"),
    ],
    ids=["bool", "string", "resources-string", "item-int"],
)
def test_a_pod_with_wrong_typed_containers_is_a_400_not_a_500(
    raw: Raw, containers: Any, field: str
) -> None:
    namespace = create_namespace(raw)
    body = pod_body(unique("typed"))
    body["spec"]["containers"] = containers
    code, answer = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", body)
    assert code == 400, answer
    assert answer["message"].startswith('Pod in version "v1" cannot be handled as a Pod: json: ')
    # the innermost struct and the whole path, as kube-apiserver 1.36 names them
    assert f"Go struct field {field} of type" in answer["message"]


@pytest.mark.parametrize(
    ("path", "field", "value"),
    [
        ("metadata", "labels", {"app": 7}),
        ("spec", "nodeSelector", ["zone"]),
        ("spec", "priority", "high"),
        ("spec", "tolerations", {"key": "k"}),
    ],
    ids=["label-number", "selector-list", "priority-string", "tolerations-object"],
)
def test_a_pod_field_of_the_wrong_json_type_is_a_400_naming_it(
    raw: Raw, path: str, field: str, value: Any
) -> None:
    namespace = create_namespace(raw)
    body = pod_body(unique("typed"))
    body[path][field] = value
    code, answer = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", body)
    assert code == 400, answer
    struct = "ObjectMeta" if path == "metadata" else "PodSpec"
    assert f"Go struct field {struct}.{path}.{field} of type" in answer["message"]


def test_quantities_may_be_json_numbers(raw: Raw) -> None:
    namespace = create_namespace(raw)
    body = pod_body(unique("numeric"))
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": 1, "memory": 1e9}}
    code, answer = raw.json("POST", f"/api/v1/namespaces/{namespace}/pods", body)
    assert code == 201, answer


@settings(
    max_examples=150,
    database=None,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.one_of(fuzz.podgroup(), fuzz.queue(), fuzz.pod()))
def test_sim_answers_every_hostile_object_with_a_success_or_a_4xx(
    crd_sim: SimServer, drawn: tuple[str, dict[str, Any], str]
) -> None:
    path, body, _ = drawn
    assert crd_sim.cert is not None
    context = ssl.create_default_context(cafile=str(crd_sim.cert.ca_path))
    sent = fuzz.Fuzzer(crd_sim.url, context, crd_sim.admin_token).send(path, body, "")
    assert 200 <= sent.code < 500, f"{path} {sent.code}: {sent.message}"
