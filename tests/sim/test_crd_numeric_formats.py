"""CRD integer and number formats as kube-apiserver 1.36+ checks them (it stripped them
before): a PodGroup's int32 minMember past 2147483647 is refused naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.sim.conftest import Raw, create_namespace, unique

REPO = Path(__file__).resolve().parents[2]
SIM_CONFIG: dict[str, Any] = {"crds_dir": REPO / "crds", "nodes": 1}


def podgroups(namespace: str) -> str:
    return f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{namespace}/podgroups"


@pytest.mark.parametrize(
    ("min_member", "code"),
    [
        pytest.param(2**31 - 1, 201, id="int32-max-accepted"),
        pytest.param(2**31, 422, id="past-int32-refused"),
        pytest.param(2**53, 422, id="far-past-int32-refused"),
    ],
)
def test_int32_min_member_is_bounded(raw: Raw, min_member: int, code: int) -> None:
    namespace = create_namespace(raw)
    body = {"metadata": {"name": unique("pg")}, "spec": {"minMember": min_member}}
    answer_code, answer = raw.json("POST", podgroups(namespace), body)
    assert answer_code == code, answer
    if code == 422:
        (cause,) = answer["details"]["causes"]
        assert cause["field"] == "spec.minMember"
        assert "must be of type int32" in cause["message"]
