"""RBAC: Roles, ClusterRoles and their bindings decide what a ServiceAccount may do."""

from __future__ import annotations

from typing import Any

from tests.sim.conftest import Raw, create_namespace, pod_body, service_account_token, unique

RBAC = "/apis/rbac.authorization.k8s.io/v1"
GROUP = "rbac.authorization.k8s.io"


def role(raw: Raw, rules: list[dict[str, Any]], namespace: str | None = None) -> str:
    """Create a Role (in `namespace`) or a ClusterRole with `rules`; its name."""
    name = unique("role")
    path = f"{RBAC}/namespaces/{namespace}/roles" if namespace else f"{RBAC}/clusterroles"
    code, body = raw.json("POST", path, {"metadata": {"name": name}, "rules": rules})
    assert code == 201, body
    return name


def bind(
    raw: Raw,
    role_name: str,
    account: tuple[str, str],
    *,
    kind: str = "ClusterRole",
    namespace: str | None = None,
) -> str:
    """Bind a role to the ServiceAccount (namespace, name): a RoleBinding when `namespace`."""
    name = unique("binding")
    path = (
        f"{RBAC}/namespaces/{namespace}/rolebindings"
        if namespace
        else f"{RBAC}/clusterrolebindings"
    )
    body = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role_name},
        "subjects": [{"kind": "ServiceAccount", "namespace": account[0], "name": account[1]}],
    }
    code, answer = raw.json("POST", path, body)
    assert code == 201, answer
    return name


def robot(raw: Raw, namespace: str, name: str = "robot") -> Raw:
    """Raw as a fresh ServiceAccount of `namespace` with no permissions yet."""
    return raw.as_token(service_account_token(raw, namespace, name))


def test_forbidden_body_is_the_real_servers(raw: Raw) -> None:
    ns = create_namespace(raw)
    code, body = robot(raw, ns, "sa").json("GET", f"/api/v1/namespaces/{ns}/pods/x")
    assert code == 403
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "x" is forbidden: User "system:serviceaccount:{ns}:sa" cannot get '
        f'resource "pods" in API group "" in the namespace "{ns}"',
        "reason": "Forbidden",
        "details": {"name": "x", "kind": "pods"},
        "code": 403,
    }


def test_forbidden_at_cluster_scope_names_group_and_subresource(raw: Raw) -> None:
    ns = create_namespace(raw)
    sa = robot(raw, ns)
    code, body = sa.json("GET", "/apis/scheduling.k8s.io/v1/priorityclasses")
    assert code == 403
    assert body["message"] == (
        f'priorityclasses.scheduling.k8s.io is forbidden: User "system:serviceaccount:{ns}:robot" '
        'cannot list resource "priorityclasses" in API group "scheduling.k8s.io" at the cluster '
        "scope"
    )
    assert body["details"] == {"group": "scheduling.k8s.io", "kind": "priorityclasses"}
    code, body = sa.json("PATCH", "/api/v1/nodes/sim-node-0000/status", {})
    assert body["message"].endswith(
        'cannot patch resource "nodes/status" in API group "" at the cluster scope'
    )
    assert body["details"] == {"name": "sim-node-0000", "kind": "nodes"}


def test_role_allows_in_its_own_namespace_only(raw: Raw) -> None:
    home, other = create_namespace(raw), create_namespace(raw)
    sa = robot(raw, home)
    reader = role(raw, [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}], home)
    bind(raw, reader, (home, "robot"), kind="Role", namespace=home)
    assert sa.json("GET", f"/api/v1/namespaces/{home}/configmaps")[0] == 200
    assert sa.json("GET", f"/api/v1/namespaces/{other}/configmaps")[0] == 403
    assert sa.json("GET", "/api/v1/configmaps")[0] == 403


def test_cluster_role_through_a_role_binding_is_scoped_to_the_binding(raw: Raw) -> None:
    home, other = create_namespace(raw), create_namespace(raw)
    sa = robot(raw, home)
    reader = role(raw, [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}])
    bind(raw, reader, (home, "robot"), namespace=other)
    assert sa.json("GET", f"/api/v1/namespaces/{other}/configmaps")[0] == 200
    assert sa.json("GET", f"/api/v1/namespaces/{home}/configmaps")[0] == 403
    assert sa.json("GET", "/api/v1/configmaps")[0] == 403


def test_cluster_role_binding_allows_in_every_namespace(raw: Raw) -> None:
    home = create_namespace(raw)
    sa = robot(raw, home)
    bind(
        raw,
        role(raw, [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
        (home, "robot"),
    )
    assert sa.json("GET", "/api/v1/configmaps")[0] == 200
    assert sa.json("GET", "/api/v1/namespaces/kube-system/configmaps")[0] == 200


def test_pods_binding_rule_does_not_allow_updating_pods(raw: Raw) -> None:
    ns = create_namespace(raw)
    sa = robot(raw, ns)
    binder = role(
        raw,
        [
            {"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        ],
    )
    bind(raw, binder, (ns, "robot"))
    name = unique("pod")
    assert raw.json("POST", f"/api/v1/namespaces/{ns}/pods", pod_body(name))[0] == 201
    code, pod = sa.json("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    assert code == 200
    code, body = sa.json("PUT", f"/api/v1/namespaces/{ns}/pods/{name}", pod)
    assert code == 403 and 'cannot update resource "pods"' in body["message"]
    code, body = sa.json("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status", {})
    assert code == 403 and 'cannot patch resource "pods/status"' in body["message"]
    binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": "sim-node-0000"}}
    code, body = sa.json("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", binding)
    assert code == 201, body


def test_wildcard_subresource_rule_covers_that_subresource_of_every_resource(raw: Raw) -> None:
    ns = create_namespace(raw)
    sa = robot(raw, ns)
    bind(
        raw,
        role(raw, [{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}]),
        (ns, "robot"),
    )
    assert sa.json("GET", "/api/v1/nodes/sim-node-0000/status")[0] == 200
    assert sa.json("GET", "/api/v1/nodes/sim-node-0000")[0] == 403


def test_resource_names_limit_a_rule_to_those_objects(raw: Raw) -> None:
    ns = create_namespace(raw)
    sa = robot(raw, ns)
    for name in ("allowed", "hidden"):
        raw.json("POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": name}})
    named = role(
        raw,
        [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": ["allowed"],
                "verbs": ["get", "list"],
            }
        ],
        ns,
    )
    bind(raw, named, (ns, "robot"), kind="Role", namespace=ns)
    assert sa.json("GET", f"/api/v1/namespaces/{ns}/configmaps/allowed")[0] == 200
    assert sa.json("GET", f"/api/v1/namespaces/{ns}/configmaps/hidden")[0] == 403
    assert sa.json("GET", f"/api/v1/namespaces/{ns}/configmaps")[0] == 403
    # a list of one name (fieldSelector metadata.name) is authorized for that name
    one = f"/api/v1/namespaces/{ns}/configmaps?fieldSelector=metadata.name%3Dallowed"
    assert sa.json("GET", one)[0] == 200


def test_non_resource_urls_are_granted_by_cluster_roles(raw: Raw) -> None:
    ns = create_namespace(raw)
    sa = robot(raw, ns)
    code, body = sa.json("GET", "/logs/kube-apiserver.log")
    assert code == 403
    assert body["message"] == (
        f'forbidden: User "system:serviceaccount:{ns}:robot" cannot get path '
        '"/logs/kube-apiserver.log"'
    )
    assert body["details"] == {}
    bind(raw, role(raw, [{"nonResourceURLs": ["/logs/*"], "verbs": ["get"]}]), (ns, "robot"))
    # allowed now: the path is then simply not served
    assert sa.json("GET", "/logs/kube-apiserver.log")[0] == 404


def test_any_authenticated_user_may_read_discovery(raw: Raw) -> None:
    sa = robot(raw, create_namespace(raw))
    for path in ("/api", "/api/v1", "/apis", "/apis/scheduling.k8s.io/v1", "/version"):
        assert sa.json("GET", path)[0] == 200, path
    assert sa.json("GET", "/api/v1/pods")[0] == 403


def test_watch_is_a_verb_of_its_own(raw: Raw) -> None:
    ns = create_namespace(raw)
    sa = robot(raw, ns)
    bind(
        raw,
        role(raw, [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]),
        (ns, "robot"),
    )
    assert sa.json("GET", f"/api/v1/namespaces/{ns}/pods")[0] == 200
    code, body = sa.json("GET", f"/api/v1/namespaces/{ns}/pods?watch=true")
    assert code == 403 and 'cannot watch resource "pods"' in body["message"]
    code, body = sa.json("GET", f"/api/v1/watch/namespaces/{ns}/pods")
    assert code == 403 and 'cannot watch resource "pods"' in body["message"]
    code, body = sa.json("DELETE", f"/api/v1/namespaces/{ns}/pods")
    assert code == 403 and 'cannot deletecollection resource "pods"' in body["message"]


def test_binding_to_a_missing_role_says_so_in_the_reason(raw: Raw) -> None:
    ns = create_namespace(raw)
    sa = robot(raw, ns)
    bind(raw, "nope", (ns, "robot"))
    code, body = sa.json("GET", "/api/v1/nodes")
    assert code == 403
    assert body["message"].endswith(
        'at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found'
    )


def test_rbac_changes_apply_to_the_next_request(raw: Raw) -> None:
    ns = create_namespace(raw)
    sa = robot(raw, ns)
    assert sa.json("GET", "/api/v1/nodes")[0] == 403
    binding = bind(
        raw, role(raw, [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["*"]}]), (ns, "robot")
    )
    assert sa.json("GET", "/api/v1/nodes")[0] == 200
    assert raw.json("DELETE", f"{RBAC}/clusterrolebindings/{binding}")[0] == 200
    assert sa.json("GET", "/api/v1/nodes")[0] == 403


def test_role_binding_role_ref_is_immutable(raw: Raw) -> None:
    ns = create_namespace(raw)
    name = bind(raw, "first", (ns, "robot"), namespace=ns)
    path = f"{RBAC}/namespaces/{ns}/rolebindings/{name}"
    code, current = raw.json("GET", path)
    current["roleRef"]["name"] = "second"
    code, body = raw.json("PUT", path, current)
    assert code == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        f'RoleBinding.rbac.authorization.k8s.io "{name}" is invalid: roleRef: Invalid value: '
        'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"second"}: '
        "cannot change roleRef"
    )


def test_rules_and_subjects_are_validated(raw: Raw) -> None:
    code, body = raw.json(
        "POST",
        f"{RBAC}/clusterroles",
        {"metadata": {"name": unique("bad")}, "rules": [{"apiGroups": [""], "resources": ["x"]}]},
    )
    assert code == 422
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: verbs must contain at least one value",
            "field": "rules[0].verbs",
        }
    ]
    code, body = raw.json(
        "POST",
        f"{RBAC}/namespaces/default/roles",
        {
            "metadata": {"name": unique("bad")},
            "rules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}],
        },
    )
    assert code == 422
    assert "namespaced rules cannot apply to non-resource URLs" in body["message"]
    code, body = raw.json(
        "POST",
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": unique("bad")},
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}],
        },
    )
    assert code == 422
    assert {c["field"] for c in body["details"]["causes"]} == {
        "roleRef.kind",
        "subjects[0].namespace",
    }


def test_bootstrap_cluster_roles_are_served(raw: Raw) -> None:
    code, body = raw.json("GET", f"{RBAC}/clusterroles/system:discovery")
    assert code == 200
    assert body["rules"][0]["verbs"] == ["get"] and "/apis/*" in body["rules"][0]["nonResourceURLs"]
    code, body = raw.json("GET", f"{RBAC}/clusterrolebindings/cluster-admin")
    assert body["subjects"] == [{"apiGroup": GROUP, "kind": "Group", "name": "system:masters"}]
