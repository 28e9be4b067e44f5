"""ResourceClaims and ResourceClaimTemplates on sim as kube-apiserver 1.36 serves them: the
spec's defaults and rules, an immutable spec, the status rules that keep an allocation honest,
admin access, and the claim fields of pods.

Every answer below was checked against kube-apiserver 1.36: the same requests sent to both
gave the same status code, message and causes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.sim.conftest import Raw, create_namespace, unique
from tests.sim.test_dra_kinds import LABEL, NAME_PART, SUBDOMAIN, causes

RESOURCE = "/apis/resource.k8s.io/v1"
HOLD = "example.com/hold"
# a consumer the resourceclaim controller leaves alone (it only checks pods)
CONSUMER = {
    "apiGroup": "example.com",
    "resource": "foos",
    "name": "p",
    "uid": "11111111-1111-1111-1111-111111111111",
}
ALLOCATION = {
    "devices": {
        "results": [{"request": "r", "driver": "gpu.example.com", "pool": "p1", "device": "gpu-0"}]
    }
}
NOT_A_REQUEST = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
ADMIN = (
    "Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` "
    "label on the containing namespace"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
    "[A-Za-z0-9])?')"
)


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    return create_namespace(raw, "claims")


def claims_path(namespace: str) -> str:
    return f"{RESOURCE}/namespaces/{namespace}/resourceclaims"


def templates_path(namespace: str) -> str:
    return f"{RESOURCE}/namespaces/{namespace}/resourceclaimtemplates"


def exactly(**request: Any) -> dict[str, Any]:
    return {"deviceClassName": "gpu", **request}


def claim(requests: list[dict[str, Any]] | None = None, **devices: Any) -> dict[str, Any]:
    body: dict[str, Any] = dict(devices)
    if requests is not None:
        body["requests"] = requests
    return {"metadata": {"name": unique("claim")}, "spec": {"devices": body}}


def request(name: str = "r", **kind: Any) -> dict[str, Any]:
    return {"name": name, **kind}


# -- create ----------------------------------------------------------------------------


def test_a_claim_gets_exact_count_one_device_and_an_empty_status(raw: Raw, ns: str) -> None:
    body = claim([request(exactly=exactly())])
    body["status"] = {"reservedFor": [CONSUMER]}
    code, created = raw.json("POST", claims_path(ns), body)
    assert code == 201, created
    assert created["spec"] == {
        "devices": {
            "requests": [
                {
                    "name": "r",
                    "exactly": {
                        "deviceClassName": "gpu",
                        "allocationMode": "ExactCount",
                        "count": 1,
                    },
                }
            ]
        }
    }
    assert created["status"] == {}


def test_a_claim_without_requests_says_so_with_null(raw: Raw, ns: str) -> None:
    code, created = raw.json("POST", claims_path(ns), {"metadata": {"name": unique("claim")}})
    assert code == 201, created
    assert created["spec"] == {"devices": {"requests": None}}


def test_subrequests_are_defaulted_as_requests_are(raw: Raw, ns: str) -> None:
    subrequests = [
        {"name": "s", "deviceClassName": "gpu", "allocationMode": "All"},
        {"name": "t", "deviceClassName": "gpu"},
    ]
    code, created = raw.json("POST", claims_path(ns), claim([request(firstAvailable=subrequests)]))
    assert code == 201, created
    assert created["spec"]["devices"]["requests"][0]["firstAvailable"] == [
        {"name": "s", "deviceClassName": "gpu", "allocationMode": "All"},
        {"name": "t", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
    ]


def test_a_count_of_zero_means_one(raw: Raw, ns: str) -> None:
    code, created = raw.json("POST", claims_path(ns), claim([request(exactly=exactly(count=0))]))
    assert code == 201, created
    assert created["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_a_capacity_request_is_kept(raw: Raw, ns: str) -> None:
    capacity = {"requests": {"memory": "1Gi"}}
    body = claim([request(exactly=exactly(capacity=capacity))])
    code, created = raw.json("POST", claims_path(ns), body)
    assert code == 201, created
    assert created["spec"]["devices"]["requests"][0]["exactly"]["capacity"] == capacity


REQUESTS = "spec.devices.requests"
INVALID_CLAIMS = [
    pytest.param(
        claim([request()]),
        [
            (
                f"{REQUESTS}[0]",
                "Required value: exactly one of `exactly` or `firstAvailable` is required",
            )
        ],
        id="neither exactly nor firstAvailable",
    ),
    pytest.param(
        claim(
            [request(exactly=exactly(), firstAvailable=[{"name": "s", "deviceClassName": "gpu"}])]
        ),
        [
            (
                f"{REQUESTS}[0]",
                "Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
                "but multiple fields are set",
            )
        ],
        id="both",
    ),
    pytest.param(
        claim(
            [
                request("R_1", exactly=exactly()),
                request("", exactly=exactly()),
                request("a", exactly=exactly()),
                request("a", exactly=exactly()),
            ]
        ),
        [
            (f"{REQUESTS}[0].name", f'Invalid value: "R_1": {LABEL}'),
            (f"{REQUESTS}[1].name", f'Invalid value: "": {LABEL}'),
            (f"{REQUESTS}[3]", 'Duplicate value: "a"'),
        ],
        id="request names",
    ),
    pytest.param(
        claim([request(exactly={}), request("s", exactly=exactly(deviceClassName="Bad_Class"))]),
        [
            (f"{REQUESTS}[0].exactly.deviceClassName", "Required value"),
            (f"{REQUESTS}[1].exactly.deviceClassName", f'Invalid value: "Bad_Class": {SUBDOMAIN}'),
        ],
        id="class names",
    ),
    pytest.param(
        claim([request(exactly=exactly(allocationMode="All", count=2))]),
        [
            (
                f"{REQUESTS}[0].exactly.count",
                "Invalid value: 2: must not be specified when allocationMode is 'All'",
            )
        ],
        id="all with a count",
    ),
    pytest.param(
        claim([request(exactly=exactly(count=-1))]),
        [(f"{REQUESTS}[0].exactly.count", "Invalid value: -1: must be greater than zero")],
        id="negative count",
    ),
    pytest.param(
        claim([request(exactly=exactly(allocationMode="Some"))]),
        [
            (
                f"{REQUESTS}[0].exactly.allocationMode",
                'Unsupported value: "Some": supported values: "All", "ExactCount"',
            )
        ],
        id="allocation mode",
    ),
    pytest.param(
        claim(
            [
                request(
                    firstAvailable=[{"name": f"s{i}", "deviceClassName": "gpu"} for i in range(9)]
                )
            ]
        ),
        [(f"{REQUESTS}[0].firstAvailable", "Too many: 9: must have at most 8 items")],
        id="nine subrequests",
    ),
    pytest.param(
        claim(
            [
                request(
                    firstAvailable=[
                        {"name": "s", "deviceClassName": "gpu"},
                        {"name": "s", "deviceClassName": ""},
                    ]
                )
            ]
        ),
        [
            (f"{REQUESTS}[0].firstAvailable[1]", 'Duplicate value: "s"'),
            (f"{REQUESTS}[0].firstAvailable[1].deviceClassName", "Required value"),
        ],
        id="subrequests",
    ),
    pytest.param(
        claim(
            [request(exactly=exactly())],
            constraints=[
                {"requests": ["x", "r/y", "a/b/c"], "matchAttribute": "model"},
                {},
                {"matchAttribute": "a.com/m", "distinctAttribute": "a.com/n"},
            ],
        ),
        [
            (
                "spec.devices.constraints[0].matchAttribute",
                'Invalid value: "model": a fully qualified name must be a domain and a name '
                "separated by a slash",
            ),
            ("spec.devices.constraints[0].requests[0]", f'Invalid value: "x": {NOT_A_REQUEST}'),
            ("spec.devices.constraints[0].requests[1]", f'Invalid value: "r/y": {NOT_A_REQUEST}'),
            ("spec.devices.constraints[0].requests[2]", f'Invalid value: "a/b/c": {NOT_A_REQUEST}'),
            (
                "spec.devices.constraints[1]",
                'Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
                "required, but multiple fields are set",
            ),
        ],
        id="constraints",
    ),
    pytest.param(
        claim(
            [request(firstAvailable=[{"name": "s", "deviceClassName": "gpu"}])],
            constraints=[{"requests": ["r/s", "r", "r"], "matchAttribute": "a.com/m"}],
        ),
        [("spec.devices.constraints[0].requests[2]", 'Duplicate value: "r"')],
        id="constraint naming a request twice",
    ),
    pytest.param(
        claim(
            [
                request(
                    exactly=exactly(
                        tolerations=[
                            {"key": "k", "operator": "Exists", "value": "v"},
                            {"operator": "Bad"},
                            {"key": "k", "effect": "Bad"},
                            {"key": "k"},
                            {"key": "a b", "value": "c d"},
                        ]
                    )
                )
            ]
        ),
        [
            (
                f"{REQUESTS}[0].exactly.tolerations[0].value",
                'Invalid value: "v": must be empty for operator `Exists`',
            ),
            (
                f"{REQUESTS}[0].exactly.tolerations[1].operator",
                'Unsupported value: "Bad": supported values: "Equal", "Exists"',
            ),
            (
                f"{REQUESTS}[0].exactly.tolerations[2].effect",
                'Unsupported value: "Bad": supported values: "NoExecute", "NoSchedule", "None"',
            ),
            (f"{REQUESTS}[0].exactly.tolerations[4].key", f'Invalid value: "a b": {NAME_PART}'),
            (f"{REQUESTS}[0].exactly.tolerations[4].value", f'Invalid value: "c d": {LABEL_VALUE}'),
        ],
        id="tolerations",
    ),
    pytest.param(
        claim([request(exactly=exactly(adminAccess=True))]),
        [(f"{REQUESTS}[0].adminAccess", ADMIN)],
        id="admin access in an unlabelled namespace",
    ),
    pytest.param(
        claim([request(exactly=exactly(selectors=[{"cel": {"expression": "device.x"}}]))]),
        [
            (
                f"{REQUESTS}[0].exactly.selectors[0].cel.expression",
                'Invalid value: "device.x": compilation failed: ERROR: <input>:1:7: undefined '
                "field 'x'\n | device.x\n | ......^",
            )
        ],
        id="selector",
    ),
    pytest.param(
        claim(
            [request(exactly=exactly())],
            config=[{"requests": ["z"], "opaque": {"driver": "a.b", "parameters": {}}}],
        ),
        [("spec.devices.config[0].requests[0]", f'Invalid value: "z": {NOT_A_REQUEST}')],
        id="config of no request",
    ),
    pytest.param(
        claim([request(f"r{i}", exactly=exactly()) for i in range(33)]),
        [(REQUESTS, "Too many: 33: must have at most 32 items")],
        id="33 requests",
    ),
]


@pytest.mark.parametrize(("body", "expected"), INVALID_CLAIMS)
def test_an_invalid_claim_is_refused_in_kube_apiserver_s_words(
    raw: Raw, ns: str, body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    code, answer = raw.json("POST", claims_path(ns), body)
    assert code == 422, answer
    assert causes(answer) == sorted(expected)


def test_admin_access_is_allowed_in_a_namespace_labelled_for_it(raw: Raw) -> None:
    namespace = unique("admin")
    labels = {"resource.kubernetes.io/admin-access": "true"}
    body = {"metadata": {"name": namespace, "labels": labels}}
    assert raw.json("POST", "/api/v1/namespaces", body)[0] == 201
    admin = claim([request(exactly=exactly(adminAccess=True))])
    code, created = raw.json("POST", claims_path(namespace), admin)
    assert code == 201, created


# -- templates ---------------------------------------------------------------------------


def template(spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"spec": spec or {"devices": {"requests": [request(exactly=exactly())]}}}
    if meta:
        body["metadata"] = meta
    return {"metadata": {"name": unique("template")}, "spec": body}


def test_an_empty_template_gets_empty_metadata_and_no_requests(raw: Raw, ns: str) -> None:
    code, created = raw.json("POST", templates_path(ns), {"metadata": {"name": unique("t")}})
    assert code == 201, created
    assert created["spec"] == {"metadata": {}, "spec": {"devices": {"requests": None}}}


def test_a_template_keeps_its_labels_and_defaults_its_claim(raw: Raw, ns: str) -> None:
    code, created = raw.json("POST", templates_path(ns), template(labels={"team": "a"}))
    assert code == 201, created
    assert created["spec"]["metadata"] == {"labels": {"team": "a"}}
    assert created["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


INVALID_TEMPLATES = [
    pytest.param(
        template({"devices": {"requests": [request()]}}),
        [
            (
                "spec.spec.devices.requests[0]",
                "Required value: exactly one of `exactly` or `firstAvailable` is required",
            )
        ],
        id="request",
    ),
    pytest.param(
        template(labels={"a b": "c"}, name="x", finalizers=["a/b"]),
        [
            ("spec.metadata.finalizers", "Forbidden: cannot be set"),
            ("spec.metadata.labels", f'Invalid value: "a b": {NAME_PART}'),
            ("spec.metadata.name", "Forbidden: cannot be set"),
        ],
        id="metadata",
    ),
    pytest.param(
        template({"devices": {"requests": [request(exactly=exactly(adminAccess=True))]}}),
        # the path kube names is a claim's, without the template's spec.spec
        [("spec.devices.requests[0].adminAccess", ADMIN)],
        id="admin access",
    ),
]


@pytest.mark.parametrize(("body", "expected"), INVALID_TEMPLATES)
def test_an_invalid_template_is_refused_in_kube_apiserver_s_words(
    raw: Raw, ns: str, body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    code, answer = raw.json("POST", templates_path(ns), body)
    assert code == 422, answer
    assert causes(answer) == sorted(expected)


def test_a_template_s_spec_never_changes(raw: Raw, ns: str) -> None:
    body = template(
        {"devices": {"requests": [request("gpu", exactly=exactly(deviceClassName="drasim-gpu"))]}},
        labels={"team": "a"},
        annotations={"note": "x&y"},
    )
    code, created = raw.json("POST", templates_path(ns), body)
    assert code == 201, created
    created["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    code, answer = raw.json("PUT", f"{templates_path(ns)}/{created['metadata']['name']}", created)
    assert code == 422, answer
    # the value is the internal Go struct as json.Marshal prints it, `&` escaped
    assert causes(answer) == [
        (
            "spec",
            'Invalid value: {"labels":{"team":"a"},"annotations":{"note":"x\\u0026y"},"Spec":'
            '{"Devices":{"Requests":[{"Name":"gpu","Exactly":{"DeviceClassName":"drasim-gpu",'
            '"Selectors":null,"AllocationMode":"ExactCount","Count":2,"AdminAccess":null,'
            '"Tolerations":null,"Capacity":null},"FirstAvailable":null}],"Constraints":null,'
            '"Config":null}}}: field is immutable',
        )
    ]


def test_deleting_claims_and_templates_answers_with_the_object(raw: Raw, ns: str) -> None:
    for path, body, kind in (
        (claims_path(ns), claim([request(exactly=exactly())]), "ResourceClaim"),
        (templates_path(ns), template(), "ResourceClaimTemplate"),
    ):
        assert raw.json("POST", path, body)[0] == 201
        code, answer = raw.json("DELETE", f"{path}/{body['metadata']['name']}")
        assert code == 200, answer
        assert answer["kind"] == kind


# -- a claim's spec and status on update -----------------------------------------------


class Claim:
    """A stored claim (requests `r`, exactly, and `f` with subrequest `s`) and its writes."""

    def __init__(self, raw: Raw, namespace: str) -> None:
        self.raw = raw
        body = claim(
            [
                request("r", exactly=exactly()),
                request("f", firstAvailable=[{"name": "s", "deviceClassName": "gpu"}]),
            ]
        )
        # a finalizer of the test's own keeps a deleted claim to look at
        body["metadata"]["finalizers"] = [HOLD]
        self.path = f"{claims_path(namespace)}/{body['metadata']['name']}"
        code, created = raw.json("POST", claims_path(namespace), body)
        assert code == 201, created

    def get(self) -> dict[str, Any]:
        code, obj = self.raw.json("GET", self.path)
        assert code == 200, obj
        return dict(obj)

    def write_status(self, status: dict[str, Any]) -> tuple[int, Any]:
        obj = self.get()
        obj["status"] = status
        return self.raw.json("PUT", f"{self.path}/status", obj)

    def release(self) -> None:
        obj = self.get()
        obj["metadata"]["finalizers"] = []
        assert self.raw.json("PUT", self.path, obj)[0] == 200


@pytest.fixture
def stored(raw: Raw, ns: str) -> Claim:
    return Claim(raw, ns)


STATUS_REFUSED = [
    pytest.param(
        {"reservedFor": [CONSUMER]},
        [("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")],
        id="consumers without allocation",
    ),
    pytest.param(
        {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "x",
                            "driver": "Bad_Drv",
                            "pool": "",
                            "device": "D",
                            "shareID": "abc",
                        },
                        {
                            "request": "f/s",
                            "driver": "a.b",
                            "pool": "p",
                            "device": "d",
                            "shareID": "11111111-1111-1111-1111-11111111111A",
                        },
                        {"request": "f", "driver": "a.b", "pool": "p/Q", "device": "d"},
                    ],
                    "config": [
                        {"source": "Bad", "opaque": {"driver": "a.b", "parameters": {}}},
                        {"opaque": {"driver": "a.b", "parameters": {}}},
                    ],
                },
                "nodeSelector": {"nodeSelectorTerms": []},
            }
        },
        [
            (
                "status.allocation.devices.config[0].source",
                'Unsupported value: "Bad": supported values: "FromClaim", "FromClass"',
            ),
            ("status.allocation.devices.config[1].source", "Required value"),
            ("status.allocation.devices.results[0].device", f'Invalid value: "D": {LABEL}'),
            (
                "status.allocation.devices.results[0].driver",
                f'Invalid value: "Bad_Drv": {SUBDOMAIN}',
            ),
            ("status.allocation.devices.results[0].pool", "Required value"),
            (
                "status.allocation.devices.results[0].request",
                f'Invalid value: "x": {NOT_A_REQUEST}',
            ),
            (
                "status.allocation.devices.results[0].shareID",
                'Invalid value: "abc": error validating uid: invalid UUID length: 3',
            ),
            (
                "status.allocation.devices.results[1].shareID",
                'Invalid value: "11111111-1111-1111-1111-11111111111A": uid must be in RFC 4122 '
                "normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase "
                "hexadecimal characters",
            ),
            ("status.allocation.devices.results[2].pool", f'Invalid value: "Q": {SUBDOMAIN}'),
            (
                "status.allocation.nodeSelector.nodeSelectorTerms",
                "Required value: must have at least one node selector term",
            ),
        ],
        id="results",
    ),
    pytest.param(
        {"allocation": ALLOCATION, "reservedFor": [{}, CONSUMER, dict(CONSUMER, name="other")]},
        [
            ("status.reservedFor[0].name", "Required value"),
            ("status.reservedFor[0].resource", "Required value"),
            ("status.reservedFor[0].uid", "Required value"),
            ("status.reservedFor[2]", 'Duplicate value: "11111111-1111-1111-1111-111111111111"'),
        ],
        id="consumers",
    ),
    pytest.param(
        {
            "allocation": ALLOCATION,
            "reservedFor": [dict(CONSUMER, name=f"p{i}", uid=f"u{i}") for i in range(257)],
        },
        [("status.reservedFor", "Too many: 257: must have at most 256 items")],
        id="257 consumers",
    ),
    pytest.param(
        {
            "allocation": ALLOCATION,
            "devices": [{"driver": "gpu.example.com", "pool": "p1", "device": "gpu-9"}],
        },
        [
            (
                "status.devices[0]",
                'Invalid value: {"Driver":"gpu.example.com","Pool":"p1","Device":"gpu-9",'
                '"ShareID":""}: must be an allocated device in the claim',
            )
        ],
        id="status of a device not allocated",
    ),
]


@pytest.mark.parametrize(("status", "expected"), STATUS_REFUSED)
def test_a_status_kube_apiserver_refuses_is_refused(
    stored: Claim, status: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    code, answer = stored.write_status(status)
    assert code == 422, answer
    assert causes(answer) == sorted(expected)
    stored.release()


IMMUTABLE_ALLOCATION = (
    'Invalid value: {"Devices":{"Results":[{"Request":"r","Driver":"gpu.example.com","Pool":"p1",'
    '"Device":"gpu-1","AdminAccess":null,"Tolerations":null,"BindingConditions":null,'
    '"BindingFailureConditions":null,"ShareID":null,"ConsumedCapacity":null}],"Config":null},'
    '"NodeSelector":null,"AllocationTimestamp":null}: field is immutable'
)


def test_an_allocation_never_changes_once_set(stored: Claim) -> None:
    code, answer = stored.write_status({"allocation": ALLOCATION, "reservedFor": [CONSUMER]})
    assert code == 200, answer
    other = copy.deepcopy(ALLOCATION)
    other["devices"]["results"][0]["device"] = "gpu-1"
    code, answer = stored.write_status({"allocation": other, "reservedFor": [CONSUMER]})
    assert code == 422, answer
    assert causes(answer) == [("status.allocation", IMMUTABLE_ALLOCATION)]
    with_selector = dict(
        ALLOCATION,
        nodeSelector={
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
            ]
        },
    )
    code, answer = stored.write_status({"allocation": with_selector, "reservedFor": [CONSUMER]})
    assert code == 422, answer
    assert causes(answer)[0][0] == "status.allocation"
    # cleared, it may not keep its consumers
    code, answer = stored.write_status({"reservedFor": [CONSUMER]})
    assert code == 422, answer
    assert causes(answer) == [
        ("status.reservedFor", "Forbidden: may not be specified when `allocated` is not set")
    ]
    code, answer = stored.write_status({})
    assert code == 200, answer
    stored.release()


def test_the_status_of_a_device_goes_when_it_is_deallocated(stored: Claim) -> None:
    device = {"driver": "gpu.example.com", "pool": "p1", "device": "gpu-0"}
    code, answer = stored.write_status({"allocation": ALLOCATION, "devices": [device]})
    assert code == 200, answer
    assert answer["status"]["devices"] == [device]
    code, answer = stored.write_status({"devices": [device]})
    assert code == 200, answer
    assert answer["status"] == {}
    stored.release()


def test_a_claim_s_spec_never_changes_and_its_status_is_the_status_write_s(
    stored: Claim,
) -> None:
    assert stored.write_status({"allocation": ALLOCATION, "reservedFor": [CONSUMER]})[0] == 200
    obj = stored.get()
    obj["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    obj["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": "a < b && c > d"}}
    ]
    code, answer = stored.raw.json("PUT", stored.path, obj)
    assert code == 422, answer
    assert causes(answer) == [
        (
            "spec",
            'Invalid value: {"Devices":{"Requests":[{"Name":"r","Exactly":{"DeviceClassName":'
            '"gpu","Selectors":[{"CEL":{"Expression":"a \\u003c b \\u0026\\u0026 c \\u003e d"}}],'
            '"AllocationMode":"ExactCount","Count":2,"AdminAccess":null,"Tolerations":null,'
            '"Capacity":null},"FirstAvailable":null},{"Name":"f","Exactly":null,"FirstAvailable":'
            '[{"Name":"s","DeviceClassName":"gpu","Selectors":null,"AllocationMode":"ExactCount",'
            '"Count":1,"Tolerations":null,"Capacity":null}]}],"Constraints":null,"Config":null}}: '
            "field is immutable",
        )
    ]
    obj = stored.get()
    obj["status"] = {}
    obj["metadata"]["labels"] = {"a": "b"}
    code, updated = stored.raw.json("PUT", stored.path, obj)
    assert code == 200, updated
    assert updated["status"]["allocation"] == ALLOCATION
    assert updated["metadata"]["labels"] == {"a": "b"}
    stored.release()


def test_a_claim_being_deleted_takes_no_new_consumer_but_may_lose_them(stored: Claim) -> None:
    assert stored.write_status({"allocation": ALLOCATION, "reservedFor": [CONSUMER]})[0] == 200
    code, answer = stored.raw.json("DELETE", stored.path)
    assert code == 200, answer
    assert answer["kind"] == "ResourceClaim" and answer["metadata"]["deletionTimestamp"]
    another = dict(CONSUMER, name="q", uid="22222222-1111-1111-1111-111111111111")
    code, answer = stored.write_status(
        {"allocation": ALLOCATION, "reservedFor": [CONSUMER, another]}
    )
    assert code == 422, answer
    assert causes(answer) == [
        (
            "status.reservedFor",
            "Forbidden: new entries may not be added while `deallocationRequested` or "
            "`deletionTimestamp` are set",
        )
    ]
    code, answer = stored.write_status({"allocation": ALLOCATION})
    assert code == 200, answer
    code, answer = stored.write_status({})
    assert code == 200, answer
    # an allocation (with no consumer) may still be written
    code, answer = stored.write_status({"allocation": ALLOCATION})
    assert code == 200, answer
    stored.release()
    assert stored.raw.json("GET", stored.path)[0] == 404


def test_an_admin_result_needs_a_namespace_labelled_for_it(stored: Claim) -> None:
    admin = copy.deepcopy(ALLOCATION)
    admin["devices"]["results"][0]["adminAccess"] = True
    code, answer = stored.write_status({"allocation": admin})
    assert code == 422, answer
    assert causes(answer) == [("status.allocation.devices.results[0].adminAccess", ADMIN)]
    stored.release()


# -- pods --------------------------------------------------------------------------------


def pod_with(
    claims: list[dict[str, Any]], container_claims: list[dict[str, Any]]
) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"claims": container_claims}}
    return {
        "metadata": {"name": unique("pod")},
        "spec": {"schedulerName": "nobody", "resourceClaims": claims, "containers": [container]},
    }


GPU = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
CONTAINER_CLAIMS = "spec.containers[0].resources.claims"


@pytest.mark.parametrize(
    ("claims", "container_claims", "expected"),
    [
        pytest.param(
            GPU,
            [
                {"name": "other"},
                {"name": "gpu"},
                {"name": "gpu"},
                {"name": "gpu", "request": "Bad_R"},
            ],
            [
                (
                    f"{CONTAINER_CLAIMS}[0]",
                    'Not found: "other": must be one of the names in pod.spec.resourceClaims: gpu',
                ),
                (f"{CONTAINER_CLAIMS}[2]", 'Duplicate value: "gpu"'),
                (f"{CONTAINER_CLAIMS}[3]", 'Duplicate value: "gpu"'),
            ],
            id="unknown and repeated",
        ),
        pytest.param(
            GPU,
            [{"name": "gpu", "request": "Bad_R"}, {"name": "gpu", "request": "a"}, {"name": "gpu"}],
            [
                (f"{CONTAINER_CLAIMS}[0].request", f'Invalid value: "Bad_R": {LABEL}'),
                (f"{CONTAINER_CLAIMS}[2]", 'Duplicate value: "gpu"'),
                (f"{CONTAINER_CLAIMS}[2]", 'Duplicate value: "gpu"'),
            ],
            id="the whole claim after its requests",
        ),
        pytest.param(
            [],
            [{"name": "x"}, {"name": ""}],
            [
                (
                    f"{CONTAINER_CLAIMS}[0]",
                    'Not found: "x": must be one of the names in pod.spec.resourceClaims which '
                    "is empty",
                ),
                (f"{CONTAINER_CLAIMS}[1]", "Required value"),
            ],
            id="no pod claims",
        ),
    ],
)
def test_a_container_claims_only_its_pod_s_claims_once_each(
    raw: Raw,
    ns: str,
    claims: list[dict[str, Any]],
    container_claims: list[dict[str, Any]],
    expected: list[tuple[str, str]],
) -> None:
    body = pod_with(claims, container_claims)
    if not claims:
        del body["spec"]["resourceClaims"]
    code, answer = raw.json("POST", f"/api/v1/namespaces/{ns}/pods", body)
    assert code == 422, answer
    assert causes(answer) == sorted(expected)


def test_a_pod_s_claim_statuses_name_its_claims(raw: Raw, ns: str) -> None:
    body = pod_with([{"name": "gpu", "resourceClaimName": "shared"}], [{"name": "gpu"}])
    path = f"/api/v1/namespaces/{ns}/pods/{body['metadata']['name']}"
    code, pod = raw.json("POST", f"/api/v1/namespaces/{ns}/pods", body)
    assert code == 201, pod
    pod["status"]["resourceClaimStatuses"] = [
        {"name": "other", "resourceClaimName": "x"},
        {"name": "gpu", "resourceClaimName": "Bad_Name"},
        {"name": "gpu"},
    ]
    code, answer = raw.json("PUT", f"{path}/status", pod)
    assert code == 422, answer
    assert causes(answer) == [
        (
            "status.resourceClaimStatuses[0].name",
            'Invalid value: "other": must match the name of an entry in `spec.resourceClaims`',
        ),
        (
            "status.resourceClaimStatuses[1].resourceClaimName",
            f'Invalid value: "Bad_Name": {SUBDOMAIN}',
        ),
        ("status.resourceClaimStatuses[2].name", 'Duplicate value: "gpu"'),
    ]
    pod = raw.json("GET", path)[1]
    pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    code, answer = raw.json("PUT", f"{path}/status", pod)
    assert code == 200, answer
    assert answer["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": "shared"}
    ]
