"""sim refuses invalid pod scheduling fields (spread, pod affinity, resource claims) with
kube-apiserver's 422 and field errors, and accepts the valid ones muster reads."""

from __future__ import annotations

from typing import Any

import pytest

from muster_sim.errors import ApiError
from muster_sim.validation.pods import validate_pod

TERM = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"a": "b"}}}


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
    }


def spread(**fields: Any) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **fields}


VALID: list[Any] = [
    pytest.param({"topologySpreadConstraints": [spread(minDomains=2)]}, id="spread"),
    pytest.param(
        {
            "topologySpreadConstraints": [
                spread(),
                spread(whenUnsatisfiable="ScheduleAnyway", nodeTaintsPolicy="Honor"),
            ]
        },
        id="two-spreads-differing-in-action",
    ),
    pytest.param(
        {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [TERM],
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": TERM}
                    ],
                }
            }
        },
        id="anti-affinity",
    ),
    pytest.param(
        {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]},
        id="claim",
    ),
]


@pytest.mark.parametrize("spec", VALID)
def test_valid_scheduling_fields_are_accepted(spec: dict[str, Any]) -> None:
    validate_pod(pod(**spec))


INVALID: list[Any] = [
    pytest.param(
        {"topologySpreadConstraints": [spread(maxSkew=0)]},
        "spec.topologySpreadConstraints[0].maxSkew",
        "Invalid value: 0: must be greater than zero",
        id="max-skew-zero",
    ),
    pytest.param(
        {"topologySpreadConstraints": [spread(topologyKey="")]},
        "spec.topologySpreadConstraints[0].topologyKey",
        "Required value: can not be empty",
        id="spread-without-key",
    ),
    pytest.param(
        {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]},
        "spec.topologySpreadConstraints[0].whenUnsatisfiable",
        'Unsupported value: "": supported values: "DoNotSchedule", "ScheduleAnyway"',
        id="spread-without-action",
    ),
    pytest.param(
        {"topologySpreadConstraints": [spread(), spread()]},
        "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
        'Duplicate value: "{zone, DoNotSchedule}"',
        id="repeated-spread",
    ),
    pytest.param(
        {"topologySpreadConstraints": [spread(whenUnsatisfiable="ScheduleAnyway", minDomains=2)]},
        "spec.topologySpreadConstraints[0].minDomains",
        "Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
        "not ScheduleAnyway",
        id="min-domains-with-schedule-anyway",
    ),
    pytest.param(
        {"topologySpreadConstraints": [spread(nodeAffinityPolicy="Always")]},
        "spec.topologySpreadConstraints[0].nodeAffinityPolicy",
        'Unsupported value: "Always": supported values: "Honor", "Ignore"',
        id="bad-node-affinity-policy",
    ),
    pytest.param(
        {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]
                }
            }
        },
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey",
        "Required value: can not be empty",
        id="affinity-term-without-key",
    ),
    pytest.param(
        {
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 101, "podAffinityTerm": TERM}
                    ]
                }
            }
        },
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
        "Invalid value: 101: must be in the range 1-100",
        id="weight-out-of-range",
    ),
    pytest.param(
        {"resourceClaims": [{"name": "gpu"}]},
        "spec.resourceClaims[0]",
        "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
        id="claim-without-source",
    ),
    pytest.param(
        {
            "resourceClaims": [
                {"name": "gpu", "resourceClaimName": "a"},
                {"name": "gpu", "resourceClaimName": "b"},
            ]
        },
        "spec.resourceClaims[1].name",
        'Duplicate value: "gpu"',
        id="claim-names-repeat",
    ),
]


@pytest.mark.parametrize(("spec", "field", "message"), INVALID)
def test_invalid_scheduling_fields_are_422_naming_the_field(
    spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ApiError) as raised:
        validate_pod(pod(**spec))
    assert raised.value.code == 422
    assert raised.value.details is not None
    found = [c["message"] for c in raised.value.details["causes"] if c["field"] == field]
    (cause,) = [m for m in found if message in m] or [raised.value.details["causes"]]
    assert f"{field}: {cause}" in raised.value.message
