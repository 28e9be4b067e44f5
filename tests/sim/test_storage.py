"""Storage objects on sim: PVCs, PVs, StorageClasses, CSINodes and CSIDrivers as the real API
serves them (discovery, defaults, validation in kube's words, watch, RBAC)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.conftest import Raw, create_namespace, service_account_token, unique

# the provisioner would bind and change the objects under test; these tests look at the API alone
SIM_CONFIG = {"provisioner": False}

SC_PATH = "/apis/storage.k8s.io/v1/storageclasses"
PV_PATH = "/api/v1/persistentvolumes"
CSINODE_PATH = "/apis/storage.k8s.io/v1/csinodes"
CSIDRIVER_PATH = "/apis/storage.k8s.io/v1/csidrivers"


def pvc_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"


def claim(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    body.update(spec)
    return {"metadata": {"name": name}, "spec": body}


def volume(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "10Gi"},
        "csi": {"driver": "disk.example.com", "volumeHandle": name},
    }
    body.update(spec)
    return {"metadata": {"name": name}, "spec": {k: v for k, v in body.items() if v is not None}}


ZONE_AFFINITY = {
    "required": {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
                ]
            }
        ]
    }
}


@pytest.fixture(scope="module")
def ns(raw: Raw) -> str:
    return create_namespace(raw, "storage")


def test_discovery_lists_storage_kinds_with_scope_short_names_and_status(raw: Raw) -> None:
    code, core = raw.json("GET", "/api/v1")
    assert code == 200
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["persistentvolumeclaims"]["namespaced"] is True
    assert by_name["persistentvolumeclaims"]["shortNames"] == ["pvc"]
    assert by_name["persistentvolumes"]["namespaced"] is False
    assert by_name["persistentvolumes"]["shortNames"] == ["pv"]
    assert "persistentvolumeclaims/status" in by_name
    assert "persistentvolumes/status" in by_name
    code, storage = raw.json("GET", "/apis/storage.k8s.io/v1")
    assert code == 200
    by_name = {r["name"]: r for r in storage["resources"]}
    assert by_name["storageclasses"]["shortNames"] == ["sc"]
    assert {"csinodes", "csidrivers"} <= set(by_name)
    assert not any(by_name[n]["namespaced"] for n in ("storageclasses", "csinodes", "csidrivers"))


def test_claim_is_defaulted_filesystem_and_pending_whatever_status_is_sent(
    raw: Raw, ns: str
) -> None:
    body = claim(unique("pvc"))
    body["status"] = {"phase": "Bound"}
    code, created = raw.json("POST", pvc_path(ns), body)
    assert code == 201, created
    assert created["spec"]["volumeMode"] == "Filesystem"
    assert created["status"] == {"phase": "Pending"}


def test_volume_defaults_retain_filesystem_and_starts_pending(raw: Raw) -> None:
    code, created = raw.json("POST", PV_PATH, volume(unique("pv")))
    assert code == 201, created
    assert created["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert created["spec"]["volumeMode"] == "Filesystem"
    assert created["status"]["phase"] == "Pending"
    assert created["status"]["lastPhaseTransitionTime"]


def test_storage_class_defaults_delete_and_immediate(raw: Raw) -> None:
    code, created = raw.json(
        "POST", SC_PATH, {"metadata": {"name": unique("sc")}, "provisioner": "disk.example.com"}
    )
    assert code == 201, created
    assert created["reclaimPolicy"] == "Delete"
    assert created["volumeBindingMode"] == "Immediate"


def test_csidriver_is_defaulted(raw: Raw) -> None:
    code, created = raw.json("POST", CSIDRIVER_PATH, {"metadata": {"name": "d.example.com"}})
    assert code == 201, created
    assert created["spec"]["attachRequired"] is True
    assert created["spec"]["fsGroupPolicy"] == "ReadWriteOnceWithFSType"
    assert created["spec"]["volumeLifecycleModes"] == ["Persistent"]


INVALID_CLAIMS = [
    (
        "no access modes",
        {"accessModes": []},
        "spec.accessModes",
        "Required value: at least 1 access mode is required",
    ),
    (
        "unknown access mode",
        {"accessModes": ["ReadWriteSometimes"]},
        "spec.accessModes",
        'Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", '
        '"ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
    ),
    (
        "ReadWriteOncePod with another mode",
        {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]},
        "spec.accessModes",
        "Forbidden: may not use ReadWriteOncePod with other access modes",
    ),
    (
        "no storage request",
        {"resources": {"requests": {}}},
        "spec.resources[storage]",
        "Required value",
    ),
    (
        "zero storage request",
        {"resources": {"requests": {"storage": "0"}}},
        "spec.resources[storage]",
        'Invalid value: "0": must be greater than zero',
    ),
    (
        "unknown volume mode",
        {"volumeMode": "Tape"},
        "spec.volumeMode",
        'Unsupported value: "Tape": supported values: "Block", "Filesystem"',
    ),
    (
        "bad selector operator",
        {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
        "spec.selector.matchExpressions[0].operator",
        'Invalid value: "Near": not a valid selector operator',
    ),
]


@pytest.mark.parametrize(("case", "spec", "field", "message"), INVALID_CLAIMS)
def test_invalid_claim_is_422_naming_the_field(
    raw: Raw, ns: str, case: str, spec: dict[str, Any], field: str, message: str
) -> None:
    name = unique("pvc")
    code, body = raw.json("POST", pvc_path(ns), claim(name, **spec))
    assert code == 422, (case, body)
    assert body["reason"] == "Invalid"
    causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert (field, message) in causes, causes
    assert body["message"].startswith(f'PersistentVolumeClaim "{name}" is invalid: ')


def test_unparseable_storage_quantity_is_400_as_a_decode_error(raw: Raw, ns: str) -> None:
    body = claim(unique("pvc"), resources={"requests": {"storage": "lots"}})
    code, status = raw.json("POST", pvc_path(ns), body)
    assert code == 400
    assert "quantities must match the regular expression" in status["message"]


INVALID_VOLUMES = [
    (
        "no capacity",
        {"capacity": None},
        "spec.capacity",
        "Required value",
    ),
    (
        "zero capacity",
        {"capacity": {"storage": "0"}},
        "spec.capacity[storage]",
        'Invalid value: "0": must be greater than zero',
    ),
    ("no access modes", {"accessModes": None}, "spec.accessModes", "Required value"),
    ("no volume source", {"csi": None}, "spec", "Required value: must specify a volume type"),
    (
        "two volume sources",
        {"hostPath": {"path": "/data"}},
        "spec.csi",
        "Forbidden: may not specify more than 1 volume type",
    ),
    (
        "local without node affinity",
        {"csi": None, "local": {"path": "/mnt/disk"}},
        "spec.nodeAffinity",
        "Required value: Local volume requires node affinity",
    ),
    (
        "nfs with a relative path",
        {"csi": None, "nfs": {"server": "nfs.example.com", "path": "export"}},
        "spec.nfs.path",
        'Invalid value: "export": must be an absolute path',
    ),
    (
        "csi without a volume handle",
        {"csi": {"driver": "disk.example.com"}},
        "spec.csi.volumeHandle",
        "Required value",
    ),
    (
        "unknown reclaim policy",
        {"persistentVolumeReclaimPolicy": "Shred"},
        "spec.persistentVolumeReclaimPolicy",
        'Unsupported value: "Shred": supported values: "Delete", "Recycle", "Retain"',
    ),
    (
        "node affinity without terms",
        {"nodeAffinity": {"required": {"nodeSelectorTerms": []}}},
        "spec.nodeAffinity.required.nodeSelectorTerms",
        "Required value: must have at least one node selector term",
    ),
]


@pytest.mark.parametrize(("case", "spec", "field", "message"), INVALID_VOLUMES)
def test_invalid_volume_is_422_naming_the_field(
    raw: Raw, case: str, spec: dict[str, Any], field: str, message: str
) -> None:
    code, body = raw.json("POST", PV_PATH, volume(unique("pv"), **spec))
    assert code == 422, (case, body)
    causes = [(c["field"], c["message"]) for c in body["details"]["causes"]]
    assert (field, message) in causes, causes


@pytest.mark.parametrize(
    "spec",
    [
        {},
        {"csi": None, "hostPath": {"path": "/data"}},
        {"csi": None, "nfs": {"server": "nfs.example.com", "path": "/export"}},
        {"csi": None, "local": {"path": "/mnt/disk"}, "nodeAffinity": ZONE_AFFINITY},
    ],
    ids=["csi", "hostPath", "nfs", "local"],
)
def test_volume_with_one_supported_source_is_created(raw: Raw, spec: dict[str, Any]) -> None:
    code, body = raw.json("POST", PV_PATH, volume(unique("pv"), **spec))
    assert code == 201, body


INVALID_CLASSES = [
    ("no provisioner", {"provisioner": ""}, "provisioner", "Required value"),
    (
        "unknown binding mode",
        {"volumeBindingMode": "Eventually"},
        "volumeBindingMode",
        'Unsupported value: "Eventually": supported values: "Immediate", "WaitForFirstConsumer"',
    ),
    (
        "unknown reclaim policy",
        {"reclaimPolicy": "Recycle"},
        "reclaimPolicy",
        'Unsupported value: "Recycle": supported values: "Delete", "Retain"',
    ),
    (
        "topology term without values",
        {"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]},
        "allowedTopologies[0].matchLabelExpressions[0].values",
        "Required value",
    ),
]


@pytest.mark.parametrize(("case", "fields", "field", "message"), INVALID_CLASSES)
def test_invalid_storage_class_is_422_naming_the_field(
    raw: Raw, case: str, fields: dict[str, Any], field: str, message: str
) -> None:
    body = {"metadata": {"name": unique("sc")}, "provisioner": "disk.example.com", **fields}
    code, status = raw.json("POST", SC_PATH, body)
    assert code == 422, (case, status)
    assert status["details"]["group"] == "storage.k8s.io"
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    assert (field, message) in causes, causes


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            {"provisioner": "other.example.com"},
            "provisioner",
            "Forbidden: updates to provisioner are forbidden.",
        ),
        (
            {"parameters": {"type": "ssd"}},
            "parameters",
            "Forbidden: updates to parameters are forbidden.",
        ),
        (
            {"reclaimPolicy": "Retain"},
            "reclaimPolicy",
            "Forbidden: updates to reclaimPolicy are forbidden.",
        ),
        (
            {"volumeBindingMode": "WaitForFirstConsumer"},
            "volumeBindingMode",
            'Invalid value: "WaitForFirstConsumer": field is immutable',
        ),
    ],
)
def test_storage_class_fields_are_immutable(
    raw: Raw, change: dict[str, Any], field: str, message: str
) -> None:
    name = unique("sc")
    code, created = raw.json(
        "POST", SC_PATH, {"metadata": {"name": name}, "provisioner": "disk.example.com"}
    )
    assert code == 201, created
    code, status = raw.json(
        "PATCH", f"{SC_PATH}/{name}", change, content_type="application/merge-patch+json"
    )
    assert code == 422, status
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    assert (field, message) in causes, causes


def test_storage_class_labels_may_change(raw: Raw) -> None:
    name = unique("sc")
    raw.json("POST", SC_PATH, {"metadata": {"name": name}, "provisioner": "disk.example.com"})
    code, body = raw.json(
        "PATCH",
        f"{SC_PATH}/{name}",
        {"metadata": {"labels": {"tier": "fast"}}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, body


def _patch(raw: Raw, path: str, change: Any, sub: str = "") -> tuple[int, Any]:
    return raw.json("PATCH", path + sub, change, content_type="application/merge-patch+json")


def test_claim_spec_is_immutable_but_volume_name_may_be_set_once(raw: Raw, ns: str) -> None:
    name = unique("pvc")
    path = f"{pvc_path(ns)}/{name}"
    assert raw.json("POST", pvc_path(ns), claim(name))[0] == 201
    code, status = _patch(raw, path, {"spec": {"accessModes": ["ReadWriteMany"]}})
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "spec"
    assert status["details"]["causes"][0]["message"].startswith(
        "Forbidden: spec is immutable after creation except resources.requests"
    )
    code, body = _patch(raw, path, {"spec": {"volumeName": "pv-one"}})
    assert code == 200, body
    code, status = _patch(raw, path, {"spec": {"volumeName": "pv-two"}})
    assert code == 422, status


def test_unbound_claim_may_not_change_its_request(raw: Raw, ns: str) -> None:
    name = unique("pvc")
    assert raw.json("POST", pvc_path(ns), claim(name))[0] == 201
    code, status = _patch(
        raw, f"{pvc_path(ns)}/{name}", {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}
    )
    assert code == 422, status


def test_bound_claim_may_grow_but_not_shrink(raw: Raw, ns: str) -> None:
    name = unique("pvc")
    path = f"{pvc_path(ns)}/{name}"
    assert raw.json("POST", pvc_path(ns), claim(name))[0] == 201
    code, body = _patch(raw, path, {"status": {"phase": "Bound"}}, "/status")
    assert code == 200 and body["status"]["phase"] == "Bound", body
    code, body = _patch(raw, path, {"spec": {"resources": {"requests": {"storage": "5Gi"}}}})
    assert code == 200, body
    assert body["spec"]["resources"]["requests"]["storage"] == "5Gi"
    code, status = _patch(raw, path, {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    assert code == 422
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    assert (
        "spec.resources.requests.storage",
        "Forbidden: field can not be less than previous value",
    ) in causes


def test_volume_node_affinity_is_immutable_once_set(raw: Raw) -> None:
    name = unique("pv")
    path = f"{PV_PATH}/{name}"
    assert raw.json("POST", PV_PATH, volume(name))[0] == 201
    code, body = _patch(raw, path, {"spec": {"nodeAffinity": ZONE_AFFINITY}})
    assert code == 200, body
    other = {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}
                    ]
                }
            ]
        }
    }
    code, status = _patch(raw, path, {"spec": {"nodeAffinity": other}})
    assert code == 422, status
    assert status["details"]["causes"][0]["field"] == "nodeAffinity"


def test_volume_source_is_immutable(raw: Raw) -> None:
    name = unique("pv")
    assert raw.json("POST", PV_PATH, volume(name))[0] == 201
    code, status = _patch(
        raw, f"{PV_PATH}/{name}", {"spec": {"csi": {"volumeHandle": "another-disk"}}}
    )
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "spec.persistentvolumesource"


def test_writing_volume_status_stamps_the_phase_transition(raw: Raw) -> None:
    name = unique("pv")
    assert raw.json("POST", PV_PATH, volume(name))[0] == 201
    code, body = _patch(raw, f"{PV_PATH}/{name}", {"status": {"phase": "Available"}}, "/status")
    assert code == 200, body
    assert body["status"]["phase"] == "Available"
    assert body["status"]["lastPhaseTransitionTime"]


@pytest.mark.parametrize(
    ("driver", "field", "message"),
    [
        ({"name": "", "nodeID": "n1"}, "spec.drivers[0].name", "Required value"),
        ({"name": "d.example.com", "nodeID": ""}, "spec.drivers[0].nodeID", "Required value"),
        (
            {"name": "d.example.com", "nodeID": "n1", "allocatable": {"count": -1}},
            "spec.drivers[0].allocatable.count",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
    ],
)
def test_invalid_csinode_driver_is_422(
    raw: Raw, driver: dict[str, Any], field: str, message: str
) -> None:
    body = {"metadata": {"name": unique("node")}, "spec": {"drivers": [driver]}}
    code, status = raw.json("POST", CSINODE_PATH, body)
    assert code == 422, status
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    assert (field, message) in causes, causes


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "Required value"), ("a" * 64, "Too long: may not be more than 63 bytes")],
    ids=["empty", "64 characters"],
)
def test_a_csinode_driver_name_gets_exactly_kube_1_36s_one_error(
    raw: Raw, name: str, message: str
) -> None:
    # checked against kube-apiserver 1.36: an empty name is said to be required, nothing more
    body = {
        "metadata": {"name": unique("node")},
        "spec": {"drivers": [{"name": name, "nodeID": "n"}]},
    }
    code, status = raw.json("POST", CSINODE_PATH, body)
    assert code == 422, status
    causes = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    assert causes == [("spec.drivers[0].name", message)]


def test_csinode_driver_entry_is_immutable(raw: Raw) -> None:
    name = unique("node")
    driver = {"name": "d.example.com", "nodeID": name, "allocatable": {"count": 4}}
    code, body = raw.json(
        "POST", CSINODE_PATH, {"metadata": {"name": name}, "spec": {"drivers": [driver]}}
    )
    assert code == 201, body
    changed = dict(driver, allocatable={"count": 8})
    code, status = _patch(raw, f"{CSINODE_PATH}/{name}", {"spec": {"drivers": [changed]}})
    assert code == 422
    assert status["details"]["causes"][0]["field"] == "CSINodeDriver"


def test_default_storage_class_is_filled_into_a_claim_naming_none(raw: Raw) -> None:
    namespace = create_namespace(raw, "defaultsc")
    name = unique("sc")
    code, body = raw.json(
        "POST",
        SC_PATH,
        {
            "metadata": {
                "name": name,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "disk.example.com",
        },
    )
    assert code == 201, body
    try:
        code, created = raw.json("POST", pvc_path(namespace), claim(unique("pvc")))
        assert code == 201, created
        assert created["spec"]["storageClassName"] == name
        code, explicit = raw.json(
            "POST", pvc_path(namespace), claim(unique("pvc"), storageClassName="")
        )
        assert explicit["spec"]["storageClassName"] == ""
    finally:
        raw.json("DELETE", f"{SC_PATH}/{name}")


def test_claims_are_listed_by_label_and_watched(raw: Raw, ns: str) -> None:
    name = unique("pvc")
    body = claim(name)
    body["metadata"]["labels"] = {"app": "db"}
    code, created = raw.json("POST", pvc_path(ns), body)
    assert code == 201
    code, listed = raw.json("GET", f"{pvc_path(ns)}?labelSelector=app%3Ddb")
    assert [i["metadata"]["name"] for i in listed["items"]] == [name]
    assert listed["kind"] == "PersistentVolumeClaimList"
    rv = created["metadata"]["resourceVersion"]
    frames = raw.watch(
        f"{pvc_path(ns)}?watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3D{name}"
    )
    _patch(raw, f"{pvc_path(ns)}/{name}", {"metadata": {"labels": {"app": "db", "v": "2"}}})
    frame = next(frames)
    assert frame["type"] == "MODIFIED"
    assert frame["object"]["metadata"]["labels"]["v"] == "2"


def test_unknown_field_selector_on_claims_is_400(raw: Raw, ns: str) -> None:
    code, status = raw.json("GET", f"{pvc_path(ns)}?fieldSelector=spec.volumeName%3Dx")
    assert code == 400
    assert status["message"] == "field label not supported: spec.volumeName"


def test_rbac_grants_claims_without_granting_volumes(raw: Raw, ns: str) -> None:
    role = {
        "metadata": {"name": "claims"},
        "rules": [
            {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "list"]}
        ],
    }
    raw.json("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", role)
    token = service_account_token(raw, ns, "reader")
    binding = {
        "metadata": {"name": "claims"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "claims"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
    }
    raw.json("POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings", binding)
    reader = raw.as_token(token)
    assert reader.json("GET", pvc_path(ns))[0] == 200
    assert reader.json("GET", PV_PATH)[0] == 403
    assert reader.json("GET", SC_PATH)[0] == 403
