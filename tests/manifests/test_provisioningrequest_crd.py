"""crds/autoscaler/provisioningrequest.yaml has every field of cluster-autoscaler's
autoscaling.x-k8s.io/v1 ProvisioningRequest CRD, typed and constrained as theirs, and
nothing more: a cluster may run either CRD, and what muster writes must be stored, not
pruned or refused, by both. The autoscaler's side is tests/manifests/autoscaler_fields.txt
(facts read from its CRD; the header says from which commit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.manifests.conftest import CRDS
from tests.manifests.crd_fields import crd_schema, fields_of_crd, read_field_list

AUTOSCALER_FIELDS = Path(__file__).with_name("autoscaler_fields.txt")
CRD = CRDS / "autoscaler" / "provisioningrequest.yaml"


def ours() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load(CRD.read_text())
    return crd


def test_every_field_is_the_autoscalers_with_its_type_and_constraints_and_none_more() -> None:
    theirs = {f.path: f for f in read_field_list(AUTOSCALER_FIELDS)}
    mine = {f.path: f for f in fields_of_crd(ours())}
    assert sorted(set(theirs) - set(mine)) == [], "fields the API server would prune"
    assert sorted(set(mine) - set(theirs)) == [], "fields the autoscaler's CRD lacks"
    wrong = [
        f"{path}: {mine[path].type} {mine[path].constraints} != "
        f"{theirs[path].type} {theirs[path].constraints}"
        for path in sorted(theirs)
        if (mine[path].type, mine[path].constraints)
        != (theirs[path].type, theirs[path].constraints)
    ]
    assert not wrong, "\n".join(wrong)
    # What muster reads and writes is among them.
    for path in (
        "spec.provisioningClassName",
        "spec.podSets[].podTemplateRef.name",
        "spec.podSets[].count",
        "spec.parameters.*",
        "status.conditions[].type",
        "status.conditions[].lastTransitionTime",
    ):
        assert path in mine, path


def test_names_scope_version_and_status_subresource_are_the_autoscalers() -> None:
    crd = ours()
    (version,) = crd["spec"]["versions"]
    assert crd["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
    assert crd["spec"]["group"] == "autoscaling.x-k8s.io"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["kind"] == "ProvisioningRequest"
    assert crd["spec"]["names"]["shortNames"] == ["provreq", "provreqs"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    assert crd_schema(crd)["required"] == ["spec"]


def test_a_request_as_muster_writes_it_validates_against_the_schema() -> None:
    request = {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": "big-scaleup-1", "namespace": "ml"},
        "spec": {
            "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
            "podSets": [{"podTemplateRef": {"name": "big-scaleup-1-0"}, "count": 8}],
            "parameters": {"ValidUntilSeconds": "3600"},
        },
    }
    schema = {k: v for k, v in crd_schema(ours()).items() if not k.startswith("x-")}
    jsonschema.Draft4Validator(schema).validate(request)


def test_it_is_not_installed_with_crds_nor_with_deploy() -> None:
    # On a cluster with cluster-autoscaler it would replace the autoscaler's own CRD.
    kustomization = (CRDS / "Kustomization").read_text()
    assert "provisioningrequest" not in kustomization
    assert not list(CRDS.glob("provisioningrequest*"))
