"""Authentication: 401s, token-file users, client certificates and ServiceAccount tokens."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from kubernetes import client, config

from muster_sim.access.authn import TokenFileError
from muster_sim.access.tls import make_ca
from muster_sim.server import SimConfig, SimServer
from tests.sim.conftest import (
    Raw,
    ca_of,
    create_namespace,
    service_account_token,
    sim_config,
    unique,
)

UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimServer]:
    """A sim with a token file: alice in group `readers`, bob in no group."""
    directory = tmp_path_factory.mktemp("authn")
    tokens = directory / "tokens.csv"
    tokens.write_text('alice-token,alice,uid-1,"readers,devs"\nbob-token,bob,uid-2\n')
    with SimServer(sim_config(token_auth_file=tokens, work_dir=directory)).running() as server:
        yield server


def node_reader_binding(raw: Raw, kind: str, name: str, namespace: str | None = None) -> str:
    """Bind a ClusterRole that lists nodes to one subject; returns the binding's name."""
    role = unique("node-reader")
    raw.json(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "metadata": {"name": role},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}],
        },
    )
    subject = {"kind": kind, "name": name}
    if namespace is not None:
        subject["namespace"] = namespace
    else:
        subject["apiGroup"] = "rbac.authorization.k8s.io"
    code, body = raw.json(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        {
            "metadata": {"name": role},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [subject],
        },
    )
    assert code == 201, body
    return role


def test_request_without_credentials_is_401_with_status_body(raw: Raw) -> None:
    code, body = raw.as_token(None).json("GET", "/api/v1/namespaces")
    assert (code, body) == (401, UNAUTHORIZED)


def test_unknown_token_is_401(raw: Raw) -> None:
    assert raw.as_token("not-a-token").json("GET", "/api/v1/namespaces") == (401, UNAUTHORIZED)


def test_unknown_token_is_401_on_health_paths_too(raw: Raw) -> None:
    assert raw.as_token("not-a-token").json("GET", "/healthz")[0] == 401


def test_health_paths_are_open_without_credentials_but_version_is_not(raw: Raw) -> None:
    anonymous = raw.as_token(None)
    for path in ("/healthz", "/livez", "/readyz"):
        assert anonymous.request("GET", path).status == 200, path
    assert anonymous.json("GET", "/version")[0] == 401
    assert anonymous.json("GET", "/api")[0] == 401


def test_token_file_user_is_authenticated_with_its_groups(raw: Raw) -> None:
    alice, bob = raw.as_token("alice-token"), raw.as_token("bob-token")
    code, body = alice.json("GET", "/api/v1/nodes")
    assert code == 403
    assert 'User "alice" cannot list resource "nodes"' in body["message"]
    node_reader_binding(raw, "Group", "devs")
    assert alice.json("GET", "/api/v1/nodes")[0] == 200
    code, body = bob.json("GET", "/api/v1/nodes")
    assert code == 403 and 'User "bob"' in body["message"]


def test_token_file_with_fewer_than_three_columns_is_refused(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("only-token,user\n")
    with pytest.raises(TokenFileError, match="at least 3 columns"):
        SimServer(SimConfig(token_auth_file=tokens, work_dir=tmp_path)).running().__enter__()


def test_client_certificate_user_is_its_cn_and_groups_its_o(sim: SimServer, raw: Raw) -> None:
    admin = sim.client_certificate("carol", ("system:masters",))
    carol = Raw(sim.url, ca_certs=ca_of(sim), cert=admin)
    assert carol.json("GET", "/api/v1/namespaces/kube-system")[0] == 200
    plain = Raw(sim.url, ca_certs=ca_of(sim), cert=sim.client_certificate("dave", ("ops",)))
    code, body = plain.json("GET", "/api/v1/nodes")
    assert code == 403 and 'User "dave"' in body["message"]
    node_reader_binding(raw, "Group", "ops")
    assert plain.json("GET", "/api/v1/nodes")[0] == 200


def test_client_certificate_of_another_ca_is_refused_at_tls(sim: SimServer, tmp_path: Path) -> None:
    other = make_ca(tmp_path, "127.0.0.1")
    foreign = other.client_cert(tmp_path, "mallory", ("system:masters",))
    raw = Raw(sim.url, ca_certs=ca_of(sim), cert=foreign)
    with pytest.raises((urllib3.exceptions.SSLError, urllib3.exceptions.ProtocolError)):
        raw.request("GET", "/api/v1/namespaces")


def test_token_request_round_trip_through_the_official_client(
    sim: SimServer, core: client.CoreV1Api, raw: Raw, tmp_path: Path
) -> None:
    namespace = create_namespace(raw)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "robot"}})
    answer = core.create_namespaced_service_account_token(
        "robot",
        namespace,
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    assert answer.spec.expiration_seconds == 3600
    assert answer.spec.audiences == ["https://kubernetes.default.svc.cluster.local"]
    lifetime = answer.status.expiration_timestamp.timestamp() - time.time()
    assert 3500 < lifetime <= 3600
    kubeconfig = sim.write_kubeconfig(tmp_path / "robot.kubeconfig", answer.status.token)
    api = config.new_client_from_config(str(kubeconfig))
    try:
        robot = client.CoreV1Api(api)
        with pytest.raises(client.ApiException) as denied:
            robot.list_node()
        assert denied.value.status == 403
        message = json.loads(denied.value.body)["message"]
        assert f'User "system:serviceaccount:{namespace}:robot"' in message
        node_reader_binding(raw, "ServiceAccount", "robot", namespace)
        assert len(robot.list_node().items) == 3
    finally:
        api.close()


def test_service_account_user_has_the_service_account_groups(raw: Raw) -> None:
    namespace = create_namespace(raw)
    robot = raw.as_token(service_account_token(raw, namespace, "grouped"))
    assert robot.json("GET", "/api/v1/nodes")[0] == 403
    node_reader_binding(raw, "Group", f"system:serviceaccounts:{namespace}")
    assert robot.json("GET", "/api/v1/nodes")[0] == 200


def test_token_request_for_a_missing_service_account_is_404(raw: Raw) -> None:
    code, body = raw.json(
        "POST", "/api/v1/namespaces/default/serviceaccounts/ghost/token", {"spec": {}}
    )
    assert code == 404
    assert body["message"] == 'serviceaccounts "ghost" not found'
    assert body["details"] == {"name": "ghost", "kind": "serviceaccounts"}


def test_token_request_shorter_than_ten_minutes_is_invalid(raw: Raw) -> None:
    raw.json("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": "brief"}})
    code, body = raw.json(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/brief/token",
        {"spec": {"expirationSeconds": 60}},
    )
    assert code == 422
    assert body["message"] == (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: '
        "Invalid value: 60: may not specify a duration less than 10 minutes"
    )


def test_token_of_a_deleted_service_account_is_401_even_after_recreation(raw: Raw) -> None:
    namespace = create_namespace(raw)
    token = service_account_token(raw, namespace, "doomed")
    robot = raw.as_token(token)
    assert robot.json("GET", "/version")[0] == 200
    assert raw.json("DELETE", f"/api/v1/namespaces/{namespace}/serviceaccounts/doomed")[0] == 200
    assert robot.json("GET", "/version") == (401, UNAUTHORIZED)
    service_account_token(raw, namespace, "doomed")  # same name, new uid
    assert robot.json("GET", "/version")[0] == 401


def test_token_for_another_audience_is_401(raw: Raw) -> None:
    namespace = create_namespace(raw)
    token = service_account_token(raw, namespace, "vault", audiences=["vault"])
    assert raw.as_token(token).json("GET", "/version")[0] == 401


def test_tampered_token_is_401(raw: Raw) -> None:
    namespace = create_namespace(raw)
    header, payload, signature = service_account_token(raw, namespace, "honest").split(".")
    forged = f"{header}.{payload}.{signature[::-1]}"
    assert raw.as_token(forged).json("GET", "/version")[0] == 401


def test_sim_admin_endpoints_need_system_masters(raw: Raw) -> None:
    namespace = create_namespace(raw)
    robot = raw.as_token(service_account_token(raw, namespace, "curious"))
    code, body = robot.json("POST", "/sim/compact")
    assert code == 403
    assert body["message"] == (
        f'forbidden: User "system:serviceaccount:{namespace}:curious" cannot post path '
        '"/sim/compact"'
    )
    assert raw.json("POST", "/sim/compact")[0] == 200


def test_admin_may_impersonate_and_then_acts_as_that_user(raw: Raw) -> None:
    namespace = create_namespace(raw)
    service_account_token(raw, namespace, "imitated")
    user = f"system:serviceaccount:{namespace}:imitated"
    code, body = raw.json("GET", "/api/v1/nodes", headers={"Impersonate-User": user})
    assert code == 403
    assert f'User "{user}" cannot list resource "nodes"' in body["message"]
    # the impersonated ServiceAccount has its accounts' groups
    node_reader_binding(raw, "Group", f"system:serviceaccounts:{namespace}")
    headers = {"Impersonate-User": user}
    assert raw.json("GET", "/api/v1/nodes", headers=headers)[0] == 200


def test_impersonation_needs_the_impersonate_verb(raw: Raw) -> None:
    alice = raw.as_token("alice-token")
    headers = {"Impersonate-User": "root"}
    code, body = alice.json("GET", "/api/v1/namespaces", headers=headers)
    assert code == 403
    assert body["message"] == (
        'users "root" is forbidden: User "alice" cannot impersonate resource "users" in API '
        'group "" at the cluster scope'
    )
    assert body["details"] == {"name": "root", "kind": "users"}
    code, body = alice.json("GET", "/api/v1/namespaces", headers={"Impersonate-Group": "x"})
    assert code == 400


def test_the_harness_asks_for_tokens_that_outlive_an_hour_long_soak(
    core: client.CoreV1Api, raw: Raw
) -> None:
    # The campaign's soak ran an hour; its processes' tokens, of the default lifetime,
    # expired with it and every write became a 401 (no kubelet rotates them here).
    from tests.e2e.harness import TOKEN_SECONDS, token_request

    namespace = create_namespace(raw)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "soak"}})
    answer = core.create_namespaced_service_account_token("soak", namespace, token_request())
    lifetime = answer.status.expiration_timestamp.timestamp() - time.time()
    assert lifetime > 2 * 3600
    assert answer.spec.expiration_seconds == TOKEN_SECONDS
