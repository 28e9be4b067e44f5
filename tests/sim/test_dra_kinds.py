"""resource.k8s.io/v1 on sim: DeviceClasses and ResourceSlices as kube-apiserver 1.36 serves
them (discovery, defaults, validation in its words and field paths, updates, deletes).

Every answer below was checked against kube-apiserver 1.36: the same request sent to both
gave the same status code, message and causes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw, unique

RESOURCE = "/apis/resource.k8s.io/v1"
CLASSES = f"{RESOURCE}/deviceclasses"
SLICES = f"{RESOURCE}/resourceslices"

# the real server's words, shared by many answers
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
C_IDENTIFIER = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
    "validation is '[A-Za-z_][A-Za-z0-9_]*')"
)
ONE_OF = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)
DEVICE_ONE_OF = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)
EFFECTS = 'supported values: "NoExecute", "NoSchedule", "None"'


def device_class(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def selector(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def resource_slice(name: str = "s", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": "gpu.example.com",
        "pool": {"name": "p1", "generation": 0, "resourceSliceCount": 1},
    }
    body.update(spec)
    return {"metadata": {"name": name}, "spec": body}


def everywhere(*devices: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A slice for all nodes with these devices."""
    return resource_slice(allNodes=True, devices=list(devices), **spec)


def causes(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((c["field"], c["message"]) for c in answer["details"]["causes"])


def test_resource_k8s_io_v1_is_discovered_as_kube_apiserver_serves_it(raw: Raw) -> None:
    code, groups = raw.json("GET", "/apis")
    assert code == 200
    group = next(g for g in groups["groups"] if g["name"] == "resource.k8s.io")
    assert group["preferredVersion"]["version"] == "v1"
    code, listing = raw.json("GET", RESOURCE)
    assert code == 200
    found = {r["name"]: r for r in listing["resources"]}
    assert set(found) == {
        "deviceclasses",
        "resourceclaims",
        "resourceclaims/status",
        "resourceclaimtemplates",
        "resourceslices",
    }
    assert not found["deviceclasses"]["namespaced"]
    assert not found["resourceslices"]["namespaced"]
    assert found["resourceclaims"]["namespaced"]
    assert found["resourceclaimtemplates"]["namespaced"]
    assert found["resourceclaims/status"]["verbs"] == ["get", "patch", "update"]
    assert not any(r.get("shortNames") for r in listing["resources"])


def test_a_class_without_spec_gets_an_empty_one(raw: Raw) -> None:
    code, created = raw.json("POST", CLASSES, {"metadata": {"name": unique("class")}})
    assert code == 201, created
    assert created["spec"] == {}
    assert created["metadata"]["generation"] == 1


def test_a_class_with_a_good_selector_and_an_extended_resource_name_is_stored(raw: Raw) -> None:
    expression = (
        'device.attributes["gpu.sim.muster.dev"].model == "h100" && '
        'device.capacity["gpu.sim.muster.dev"].memory.compareTo(quantity("40Gi")) >= 0'
    )
    body = device_class(
        unique("class"), selectors=[selector(expression)], extendedResourceName="example.com/gpu"
    )
    code, created = raw.json("POST", CLASSES, body)
    assert code == 201, created
    assert created["spec"] == body["spec"]


def _cel(expression: str, column: int, detail: str) -> str:
    caret = "." * (column - 1) + "^"
    return f"compilation failed: ERROR: <input>:1:{column}: {detail}\n | {expression}\n | {caret}"


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"'


def _uncompiled(expression: str, column: int, detail: str) -> str:
    """A selector's refusal: the expression, then cel-go's error at its column."""
    return f"Invalid value: {_quoted(expression)}: " + _cel(expression, column, detail)


EXPRESSION = "spec.selectors[0].cel.expression"
INVALID_CLASSES = [
    pytest.param(
        {"selectors": [selector("device.driver ==")]},
        [
            (
                EXPRESSION,
                'Invalid value: "device.driver ==": '
                + _cel(
                    "device.driver ==",
                    17,
                    "Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', "
                    "'!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
                    "IDENTIFIER}",
                ),
            )
        ],
        id="syntax error",
    ),
    pytest.param(
        {"selectors": [selector("device.driver")]},
        [
            (
                EXPRESSION,
                'Invalid value: "device.driver": must evaluate to bool or the unknown type, not '
                "string",
            )
        ],
        id="a string",
    ),
    pytest.param(
        {"selectors": [selector('device.attributes["a"]')]},
        [
            (
                EXPRESSION,
                'Invalid value: "device.attributes[\\"a\\"]": must evaluate to bool or the unknown '
                "type, not map(string, google.protobuf.Any)",
            )
        ],
        id="a map",
    ),
    pytest.param(
        {"selectors": [selector('device.capacity["a"].m')]},
        [
            (
                EXPRESSION,
                'Invalid value: "device.capacity[\\"a\\"].m": must evaluate to bool or the unknown '
                "type, not kubernetes.Quantity",
            )
        ],
        id="a quantity",
    ),
    pytest.param(
        {"selectors": [selector("device.foo == 1")]},
        [
            (
                EXPRESSION,
                'Invalid value: "device.foo == 1": '
                + _cel("device.foo == 1", 7, "undefined field 'foo'"),
            )
        ],
        id="no such field",
    ),
    pytest.param(
        {"selectors": [selector('dev.driver == "a"')]},
        [
            (
                EXPRESSION,
                _uncompiled(
                    'dev.driver == "a"', 1, "undeclared reference to 'dev' (in container '')"
                ),
            )
        ],
        id="no such variable",
    ),
    pytest.param(
        {"selectors": [selector("device.driver == 1")]},
        [
            (
                EXPRESSION,
                'Invalid value: "device.driver == 1": '
                + _cel(
                    "device.driver == 1",
                    15,
                    "found no matching overload for '_==_' applied to '(string, int)'",
                ),
            )
        ],
        id="string compared with int",
    ),
    pytest.param(
        {"selectors": [selector('device.attributes["a"].b == 1 || device.driver')]},
        [
            (
                EXPRESSION,
                _uncompiled(
                    'device.attributes["a"].b == 1 || device.driver',
                    40,
                    "expected type 'bool' but found 'string'",
                ),
            )
        ],
        id="or of a string",
    ),
    pytest.param(
        {"selectors": [selector('device.attributes["a"].b.includes(1)')]},
        [
            (
                EXPRESSION,
                _uncompiled(
                    'device.attributes["a"].b.includes(1)',
                    34,
                    # list-typed attributes are an alpha feature, off in 1.36
                    "undeclared reference to 'includes' (in container '')",
                ),
            )
        ],
        id="includes",
    ),
    pytest.param(
        {"selectors": [selector("true && " * 1500 + "true")]},
        [(EXPRESSION, "Too long: may not be more than 10240 bytes")],
        id="over 10 KiB",
    ),
    pytest.param({"selectors": [{}]}, [("spec.selectors[0].cel", "Required value")], id="no cel"),
    pytest.param(
        {"selectors": [selector("true")] * 33},
        [("spec.selectors", "Too many: 33: must have at most 32 items")],
        id="33 selectors",
    ),
    pytest.param(
        {"extendedResourceName": "gpu"},
        [
            (
                "spec.extendedResourceName",
                'Invalid value: "gpu": must be a valid extended resource name',
            )
        ],
        id="extended resource without domain",
    ),
    pytest.param(
        {"extendedResourceName": "kubernetes.io/gpu"},
        [
            (
                "spec.extendedResourceName",
                'Invalid value: "kubernetes.io/gpu": must be a valid extended resource name',
            )
        ],
        id="extended resource of kubernetes.io",
    ),
    pytest.param(
        {"extendedResourceName": "requests.example.com/gpu"},
        [
            (
                "spec.extendedResourceName",
                'Invalid value: "requests.example.com/gpu": must be a valid extended resource name',
            )
        ],
        id="extended resource named requests",
    ),
    pytest.param(
        {"config": [{"opaque": {"driver": "x.example.com"}}]},
        [("spec.config[0].opaque.parameters", "Required value")],
        id="config without parameters",
    ),
    pytest.param(
        {"config": [{"opaque": {"driver": "x.example.com", "parameters": [1]}}]},
        [
            (
                "spec.config[0].opaque.parameters",
                'Invalid value: "<value omitted>": must be a valid JSON object',
            )
        ],
        id="config parameters not an object",
    ),
    pytest.param(
        {"config": [{}]}, [("spec.config[0].opaque", "Required value")], id="config not opaque"
    ),
    pytest.param(
        {"config": [{"opaque": {"driver": "", "parameters": {}}}]},
        [("spec.config[0].opaque.driver", "Required value")],
        id="config without driver",
    ),
    pytest.param(
        {"config": [{"opaque": {"driver": "x.example.com", "parameters": {"a": "x" * 10240}}}]},
        [("spec.config[0].opaque.parameters", "Too long: may not be more than 10240 bytes")],
        id="config over 10 KiB",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), INVALID_CLASSES)
def test_an_invalid_class_is_refused_in_kube_apiserver_s_words(
    raw: Raw, spec: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    code, answer = raw.json("POST", CLASSES, device_class(unique("class"), **spec))
    assert code == 422, answer
    assert answer["reason"] == "Invalid"
    assert causes(answer) == sorted(expected)


def test_an_invalid_class_name_is_refused(raw: Raw) -> None:
    code, answer = raw.json("POST", CLASSES, device_class("Bad_Name"))
    assert code == 422, answer
    assert answer["message"] == (
        f'DeviceClass.resource.k8s.io "Bad_Name" is invalid: metadata.name: Invalid value: '
        f'"Bad_Name": {SUBDOMAIN}'
    )


def test_a_class_field_of_the_wrong_json_type_is_a_400_naming_it(raw: Raw) -> None:
    code, answer = raw.json("POST", CLASSES, device_class(unique("class"), selectors="x"))
    assert code == 400, answer
    assert answer["message"] == (
        'DeviceClass in version "v1" cannot be handled as a DeviceClass: json: cannot unmarshal '
        "string into Go struct field DeviceClassSpec.spec.selectors of type []v1.DeviceSelector"
    )


def test_a_class_update_to_a_selector_that_does_not_compile_is_refused(raw: Raw) -> None:
    name = unique("class")
    code, created = raw.json("POST", CLASSES, device_class(name, selectors=[selector("true")]))
    assert code == 201, created
    created["spec"]["selectors"] = [selector("device.nope")]
    code, answer = raw.json("PUT", f"{CLASSES}/{name}", created)
    assert code == 422, answer
    assert causes(answer) == [
        (
            EXPRESSION,
            'Invalid value: "device.nope": ' + _cel("device.nope", 7, "undefined field 'nope'"),
        )
    ]


def test_deleting_a_class_answers_with_the_class(raw: Raw) -> None:
    name = unique("class")
    assert raw.json("POST", CLASSES, device_class(name))[0] == 201
    code, answer = raw.json("DELETE", f"{CLASSES}/{name}")
    assert code == 200, answer
    assert answer["kind"] == "DeviceClass"


# -- ResourceSlices -------------------------------------------------------------------


def test_a_slice_of_a_node_s_devices_is_stored_as_sent(raw: Raw) -> None:
    device = {
        "name": "gpu-0",
        "attributes": {
            "model": {"string": "a100"},
            "index": {"int": 0},
            "drv": {"version": "1.2.3"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
    body = resource_slice(unique("slice"), nodeName="n1", devices=[device])
    code, created = raw.json("POST", SLICES, body)
    assert code == 201, created
    assert created["spec"] == body["spec"]


def test_a_device_taint_gets_the_time_it_was_added(raw: Raw) -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    body = everywhere({"name": "d", "taints": [taint]}, **{})
    body["metadata"]["name"] = unique("slice")
    code, created = raw.json("POST", SLICES, body)
    assert code == 201, created
    (stored,) = created["spec"]["devices"][0]["taints"]
    assert stored.pop("timeAdded")
    assert stored == taint


def _devices(count: int, **device: Any) -> list[dict[str, Any]]:
    return [{"name": f"d{i}", **device} for i in range(count)]


INVALID_SLICES = [
    pytest.param(resource_slice(), [("spec", f"Required value: {ONE_OF}")], id="no node"),
    pytest.param(
        resource_slice(nodeName="n1", allNodes=True),
        [
            (
                "spec",
                f'Invalid value: "{{`nodeName`, `allNodes`}}": {ONE_OF}, but multiple fields '
                "are set",
            )
        ],
        id="node name and all nodes",
    ),
    pytest.param(
        resource_slice(nodeName="n1", allNodes=True, perDeviceNodeSelection=True),
        [
            (
                "spec",
                'Invalid value: "{`nodeName`, `allNodes`, `perDeviceNodeSelection`}": '
                f"{ONE_OF}, but multiple fields are set",
            )
        ],
        id="three of them",
    ),
    pytest.param(
        resource_slice(allNodes=False),
        [
            ("spec", f"Required value: {ONE_OF}"),
            ("spec.allNodes", "Invalid value: false: must be either unset or set to true"),
        ],
        id="all nodes false",
    ),
    pytest.param(
        resource_slice(nodeName=""),
        [
            ("spec", f"Required value: {ONE_OF}"),
            (
                "spec.nodeName",
                'Invalid value: "": must be either unset or set to a non-empty string',
            ),
        ],
        id="empty node name",
    ),
    pytest.param(
        resource_slice(nodeName="Bad_Node"),
        [("spec.nodeName", f'Invalid value: "Bad_Node": {SUBDOMAIN}')],
        id="bad node name",
    ),
    pytest.param(
        resource_slice(
            nodeSelector={
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]},
                    {"matchExpressions": [{"key": "k", "operator": "Exists"}]},
                ]
            }
        ),
        [
            (
                "spec.nodeSelector.nodeSelectorTerms",
                'Invalid value: [{"MatchExpressions":null,"MatchFields":[{"Key":"metadata.name",'
                '"Operator":"In","Values":["a"]}]},{"MatchExpressions":[{"Key":"k","Operator":'
                '"Exists","Values":null}],"MatchFields":null}]: must have exactly one node '
                "selector term",
            )
        ],
        id="two selector terms",
    ),
    pytest.param(
        resource_slice(nodeSelector={"nodeSelectorTerms": []}),
        [
            (
                "spec.nodeSelector.nodeSelectorTerms",
                "Invalid value: []: must have exactly one node selector term",
            ),
            (
                "spec.nodeSelector.nodeSelectorTerms",
                "Required value: must have at least one node selector term",
            ),
        ],
        id="no selector term",
    ),
    pytest.param(
        resource_slice(allNodes=True, pool={"name": "", "generation": -1, "resourceSliceCount": 0}),
        [
            ("spec.pool.generation", "Invalid value: -1: must be greater than or equal to zero"),
            ("spec.pool.name", "Required value"),
            ("spec.pool.resourceSliceCount", "Invalid value: 0: must be greater than zero"),
        ],
        id="pool",
    ),
    pytest.param(
        resource_slice(
            allNodes=True, pool={"name": "a/B_c", "generation": 0, "resourceSliceCount": 1}
        ),
        [("spec.pool.name", f'Invalid value: "B_c": {SUBDOMAIN}')],
        id="pool name part",
    ),
    pytest.param(
        resource_slice(
            allNodes=True, pool={"name": "a" * 254, "generation": 0, "resourceSliceCount": 1}
        ),
        [
            (
                "spec.pool.name",
                f'Invalid value: "{"a" * 254}": must be no more than 253 characters',
            ),
            ("spec.pool.name", "Too long: may not be more than 253 bytes"),
        ],
        id="pool name too long",
    ),
    pytest.param(
        resource_slice(allNodes=True, driver="Bad_Driver"),
        [("spec.driver", f'Invalid value: "Bad_Driver": {SUBDOMAIN}')],
        id="driver",
    ),
    pytest.param(
        resource_slice(allNodes=True, driver=""),
        [("spec.driver", "Required value")],
        id="no driver",
    ),
    pytest.param(
        resource_slice(allNodes=True, driver="a" * 64),
        [("spec.driver", "Too long: may not be more than 63 bytes")],
        id="driver too long",
    ),
    pytest.param(
        everywhere(
            {"name": "d"}, sharedCounters=[{"name": "c", "counters": {"x": {"value": "1"}}}]
        ),
        [("spec", 'Invalid value: "": only one of `sharedCounters` or `devices` is allowed')],
        id="devices and counters",
    ),
    pytest.param(
        everywhere({"name": "Bad"}, {"name": "d"}, {"name": "d"}),
        [
            ("spec.devices[0].name", f'Invalid value: "Bad": {LABEL}'),
            ("spec.devices[2]", 'Duplicate value: "d"'),
        ],
        id="device names",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"a": {}}}),
        [
            (
                "spec.devices[0].attributes[a]",
                'Invalid value: "": exactly one value must be specified',
            )
        ],
        id="attribute without value",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"a": {"int": 1, "bool": True}}}),
        [
            (
                "spec.devices[0].attributes[a]",
                'Invalid value: {"IntValue":1,"BoolValue":true,"StringValue":null,"VersionValue":'
                'null,"IntValues":null,"BoolValues":null,"StringValues":null,"VersionValues":null}'
                ": exactly one value must be specified",
            )
        ],
        id="attribute with two values",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"a": {"ints": [1]}}}),
        # list-typed attributes are an alpha feature, off in 1.36: the value is dropped
        [
            (
                "spec.devices[0].attributes[a]",
                'Invalid value: "": exactly one value must be specified',
            )
        ],
        id="list attribute",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"a": {"version": "1.2"}}}),
        [
            (
                "spec.devices[0].attributes[a].version",
                'Invalid value: "1.2": must be a string compatible with semver.org spec 2.0.0',
            )
        ],
        id="version not semver",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"a": {"string": "x" * 65}}}),
        [("spec.devices[0].attributes[a].string", "Too long: may not be more than 64 bytes")],
        id="string too long",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"1a": {"int": 1}}}),
        [("spec.devices[0].attributes", f'Invalid value: "1a": {C_IDENTIFIER}')],
        id="attribute name",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"x.com/b-c": {"int": 1}}}),
        [("spec.devices[0].attributes", f'Invalid value: "b-c": {C_IDENTIFIER}')],
        id="qualified attribute name",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"/n": {"int": 1}}}),
        [("spec.devices[0].attributes", 'Invalid value: "": the domain must not be empty')],
        id="attribute domain",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {"a" * 33: {"int": 1}}}),
        [("spec.devices[0].attributes", "Too long: may not be more than 32 bytes")],
        id="attribute name too long",
    ),
    pytest.param(
        everywhere({"name": "d", "attributes": {f"a{i}": {"int": i} for i in range(33)}}),
        [
            (
                "spec.devices[0]",
                "Invalid value: 33: the total number of attributes and capacities must not "
                "exceed 32",
            )
        ],
        id="33 attributes",
    ),
    pytest.param(
        everywhere(
            {"name": "d", "capacity": {"m": {"value": "1", "requestPolicy": {"default": "1"}}}}
        ),
        [
            (
                "spec.devices[0].capacity[m].requestPolicy",
                "Forbidden: allowMultipleAllocations must be true",
            )
        ],
        id="request policy of a device not shared",
    ),
    pytest.param(
        everywhere(
            {
                "name": "d",
                "allowMultipleAllocations": True,
                "capacity": {
                    "m": {
                        "value": "10",
                        "requestPolicy": {
                            "default": "3",
                            "validRange": {"min": "2", "max": "20", "step": "2"},
                        },
                    }
                },
            }
        ),
        [
            (
                "spec.devices[0].capacity[m].requestPolicy.validRange.max",
                'Invalid value: "20": max is larger than capacity value: 10',
            ),
            (
                "spec.devices[0].capacity[m].requestPolicy.validRange.step",
                'Invalid value: "3": value is not a multiple of a given step (2) from (2)',
            ),
        ],
        id="request policy range",
    ),
    pytest.param(
        everywhere(
            {
                "name": "d",
                "allowMultipleAllocations": True,
                "capacity": {
                    "m": {
                        "value": "10",
                        "requestPolicy": {"default": "3", "validValues": ["4", "2", "20"]},
                    }
                },
            }
        ),
        [
            (
                "spec.devices[0].capacity[m].requestPolicy.validValues",
                'Invalid value: "3": default value is not valid according to the requestPolicy',
            ),
            (
                "spec.devices[0].capacity[m].requestPolicy.validValues[1]",
                'Invalid value: "2": values must be sorted in ascending order',
            ),
            (
                "spec.devices[0].capacity[m].requestPolicy.validValues[2]",
                'Invalid value: "20": option is larger than capacity value: 10',
            ),
        ],
        id="request policy values",
    ),
    pytest.param(
        everywhere(*_devices(129)),
        [("spec.devices", "Too many: 129: must have at most 128 items")],
        id="129 devices",
    ),
    pytest.param(
        everywhere(*_devices(65, taints=[{"key": "k", "effect": "NoSchedule"}])),
        [("spec.devices", "Too many: 65: must have at most 64 items")],
        id="65 tainted devices",
    ),
    pytest.param(
        everywhere(
            {"name": "d", "taints": [{"key": "", "effect": "Bad"}, {"key": "k", "effect": ""}]}
        ),
        [
            ("spec.devices[0].taints[0].effect", f'Unsupported value: "Bad": {EFFECTS}'),
            ("spec.devices[0].taints[0].key", 'Invalid value: "": name part must be non-empty'),
            ("spec.devices[0].taints[0].key", f'Invalid value: "": {NAME_PART}'),
            ("spec.devices[0].taints[1].effect", "Required value"),
        ],
        id="taints",
    ),
    pytest.param(
        everywhere(
            {"name": "d", "taints": [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(17)]}
        ),
        [("spec.devices[0].taints", "Too many: 17: must have at most 16 items")],
        id="17 taints",
    ),
    pytest.param(
        everywhere({"name": "d", "nodeName": "n1"}),
        [
            (
                "spec.devices[0]",
                "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )
        ],
        id="device node without per-device selection",
    ),
    pytest.param(
        resource_slice(perDeviceNodeSelection=True, devices=[{"name": "d"}]),
        [("spec.devices[0]", f"Required value: {DEVICE_ONE_OF}")],
        id="per-device selection without node",
    ),
    pytest.param(
        resource_slice(
            perDeviceNodeSelection=True, devices=[{"name": "d", "nodeName": "n", "allNodes": True}]
        ),
        [("spec.devices[0]", f'Invalid value: "{{`nodeName`, `allNodes`}}": {DEVICE_ONE_OF}')],
        id="per-device selection with two",
    ),
    pytest.param(
        everywhere({"name": "d", "bindingConditions": ["a"]}),
        [
            (
                "spec.devices[0].bindingFailureConditions",
                "Invalid value: null: bindingFailureConditions are required to use "
                "bindingConditions",
            )
        ],
        id="binding conditions alone",
    ),
    pytest.param(
        everywhere(
            {"name": "d", "bindingConditions": ["a", "a"], "bindingFailureConditions": ["a"]}
        ),
        [
            ("spec.devices[0].bindingConditions[1]", 'Duplicate value: "a"'),
            (
                "spec.devices[0].bindingFailureConditions[0]",
                'Invalid value: "a": bindingFailureConditions must not overlap with '
                "bindingConditions",
            ),
        ],
        id="binding conditions overlap",
    ),
    pytest.param(
        resource_slice(allNodes=True, sharedCounters=[{"name": "", "counters": {}}]),
        [
            ("spec.sharedCounters[0].counters", "Required value"),
            ("spec.sharedCounters[0].name", "Required value"),
        ],
        id="counter set",
    ),
    pytest.param(
        everywhere({"name": "d", "consumesCounters": [{"counterSet": "c", "counters": {}}]}),
        [("spec.devices[0].consumesCounters[0].counters", "Required value")],
        id="counter consumption",
    ),
    pytest.param(
        everywhere(
            {
                "name": "d",
                "consumesCounters": [
                    {"counterSet": f"c{i}", "counters": {"x": {"value": "1"}}} for i in range(3)
                ],
            }
        ),
        [("spec.devices[0].consumesCounters", "Too many: 3: must have at most 2 items")],
        id="three counter consumptions",
    ),
]


@pytest.mark.parametrize(("body", "expected"), INVALID_SLICES)
def test_an_invalid_slice_is_refused_in_kube_apiserver_s_words(
    raw: Raw, body: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    body["metadata"]["name"] = unique("slice")
    code, answer = raw.json("POST", SLICES, body)
    assert code == 422, answer
    assert causes(answer) == sorted(expected)


def test_a_capacity_may_be_a_json_number(raw: Raw) -> None:
    body = everywhere({"name": "d", "capacity": {"m": {"value": 8}}})
    body["metadata"]["name"] = unique("slice")
    code, created = raw.json("POST", SLICES, body)
    assert code == 201, created


def test_a_slice_field_of_the_wrong_json_type_is_a_400_naming_it(raw: Raw) -> None:
    body = resource_slice(unique("slice"), allNodes=True)
    body["spec"]["pool"]["generation"] = "0"
    code, answer = raw.json("POST", SLICES, body)
    assert code == 400, answer
    # kube says "of type int64": sim's client models do not tell int widths apart
    assert answer["message"].startswith(
        'ResourceSlice in version "v1" cannot be handled as a ResourceSlice: json: cannot '
        "unmarshal string into Go struct field ResourcePool.spec.pool.generation of type int"
    )


def test_a_slice_s_driver_pool_and_node_never_change(raw: Raw) -> None:
    name = unique("slice")
    code, created = raw.json("POST", SLICES, resource_slice(name, nodeName="n1"))
    assert code == 201, created
    created["spec"].update(driver="other.example.com", nodeName="n2")
    created["spec"]["pool"]["name"] = "p2"
    code, answer = raw.json("PUT", f"{SLICES}/{name}", created)
    assert code == 422, answer
    assert causes(answer) == [
        ("spec.driver", 'Invalid value: "other.example.com": field is immutable'),
        ("spec.nodeName", 'Invalid value: "n2": field is immutable'),
        ("spec.pool.name", 'Invalid value: "p2": field is immutable'),
    ]


def test_a_slice_spec_change_bumps_its_generation(raw: Raw) -> None:
    name = unique("slice")
    code, created = raw.json("POST", SLICES, resource_slice(name, nodeName="n1"))
    assert code == 201, created
    assert created["metadata"]["generation"] == 1
    created["spec"]["pool"]["generation"] = 1
    code, updated = raw.json("PUT", f"{SLICES}/{name}", created)
    assert code == 200, updated
    assert updated["metadata"]["generation"] == 2


def test_a_slice_cannot_drop_its_node_name(raw: Raw) -> None:
    name = unique("slice")
    code, created = raw.json("POST", SLICES, resource_slice(name, nodeName="n1"))
    assert code == 201, created
    del created["spec"]["nodeName"]
    created["spec"]["allNodes"] = True
    code, answer = raw.json("PUT", f"{SLICES}/{name}", created)
    assert code == 422, answer
    assert causes(answer) == [("spec.nodeName", "Invalid value: null: field is immutable")]


def test_deleting_a_slice_answers_with_the_slice(raw: Raw) -> None:
    name = unique("slice")
    assert raw.json("POST", SLICES, resource_slice(name, nodeName="n1"))[0] == 201
    code, answer = raw.json("DELETE", f"{SLICES}/{name}")
    assert code == 200, answer
    assert answer["kind"] == "ResourceSlice"


def test_slices_are_selected_by_node_and_driver_and_nothing_else(raw: Raw) -> None:
    mine, other = unique("slice"), unique("slice")
    assert raw.json("POST", SLICES, resource_slice(mine, nodeName="n-select"))[0] == 201
    assert raw.json("POST", SLICES, resource_slice(other, nodeName="n-other"))[0] == 201
    code, listed = raw.json("GET", f"{SLICES}?fieldSelector=spec.nodeName=n-select")
    assert code == 200, listed
    assert [s["metadata"]["name"] for s in listed["items"]] == [mine]
    code, listed = raw.json("GET", f"{SLICES}?fieldSelector=spec.driver=nope.example.com")
    assert (code, listed["items"]) == (200, [])
    code, answer = raw.json("GET", f"{SLICES}?fieldSelector=spec.pool.name=p1")
    assert code == 400, answer
    assert answer["message"] == (
        "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool.name"
    )
    code, answer = raw.json("GET", f"{CLASSES}?fieldSelector=spec.driver=x")
    assert code == 400, answer
    assert answer["message"] == (
        '"spec.driver" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
