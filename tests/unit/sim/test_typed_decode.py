"""sim's typed decoding of built-in kinds (muster_sim/validation/typed_decode.py), with no
server."""

from __future__ import annotations

from typing import Any

import pytest

from muster_sim.apiserver.resources import BUILTIN_KINDS
from muster_sim.errors import ApiError
from muster_sim.validation import typed_decode


def test_every_built_in_kind_sim_serves_has_a_client_model() -> None:
    for kind in BUILTIN_KINDS:
        model = typed_decode._model(kind.kind, kind.api_version)
        assert model is not None, f"{kind.api_version} {kind.kind} has no client model"


@pytest.mark.parametrize(
    ("body", "field", "go_type"),
    [
        pytest.param({"spec": {"containers": "main"}}, "PodSpec.spec.containers", "[]v1.Container"),
        pytest.param({"metadata": {"labels": {"a": 1}}}, "ObjectMeta.metadata.labels", "string"),
        pytest.param({"spec": {"priority": 1.5}}, "PodSpec.spec.priority", "int"),
        pytest.param({"spec": {"hostNetwork": "yes"}}, "PodSpec.spec.hostNetwork", "bool"),
        pytest.param(
            {"spec": {"containers": [{"name": "c", "resources": "lots"}]}},
            "Container.spec.containers.resources",
            "v1.ResourceRequirements",
        ),
    ],
    # the innermost struct with the whole path, as kube-apiserver 1.36's decoder names it
    ids=["list", "map-value", "int-from-float", "bool", "nested-struct"],
)
def test_a_wrong_json_type_is_a_400_naming_the_field_and_the_go_type(
    body: dict[str, Any], field: str, go_type: str
) -> None:
    with pytest.raises(ApiError) as raised:
        typed_decode.check("Pod", "v1", body)
    assert raised.value.code == 400
    message = str(raised.value)
    assert f"Go struct field {field}" in message and go_type in message, message


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"spec": {"overhead": {"cpu": 1}}}, id="quantity-as-number"),
        pytest.param({"spec": {"containers": None}}, id="null"),
        pytest.param({"spec": {"someFutureField": [1]}}, id="unknown-field"),
    ],
)
def test_what_the_go_decoder_takes_passes(body: dict[str, Any]) -> None:
    typed_decode.check("Pod", "v1", body)
