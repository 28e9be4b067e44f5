"""Fault injection, switched on and off at run time through /sim/faults."""

from __future__ import annotations

import time

from tests.sim.conftest import Raw, unique


def _set(raw: Raw, config: dict[str, object]) -> None:
    code, _ = raw.json("PUT", "/sim/faults", config)
    assert code == 200


def test_error_rate_by_verb_and_resource_turns_on_and_off(raw: Raw) -> None:
    _set(
        raw,
        {"errors": [{"rate": 1.0, "code": 503, "verbs": ["create"], "resources": ["configmaps"]}]},
    )
    try:
        code, body = raw.json(
            "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("f")}}
        )
        assert code == 503 and body["kind"] == "Status"
        assert raw.json("GET", "/api/v1/namespaces/default/configmaps")[0] == 200
        assert (
            raw.json(
                "POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": unique("s")}}
            )[0]
            == 201
        )
        _, current = raw.json("GET", "/sim/faults")
        assert current["errors"][0]["code"] == 503
    finally:
        _set(raw, {})
    assert (
        raw.json(
            "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("f")}}
        )[0]
        == 201
    )


def test_429_carries_retry_after_and_a_fraction_fails(raw: Raw) -> None:
    _set(raw, {"errors": [{"rate": 0.5, "code": 429, "resources": ["pods/binding"]}], "seed": 7})
    try:
        codes = [
            raw.request(
                "POST", "/api/v1/namespaces/default/pods/x/binding", {"target": {"name": "n"}}
            )
            for _ in range(40)
        ]
        throttled = [r for r in codes if r.status == 429]
        assert 5 < len(throttled) < 35
        assert throttled[0].headers["Retry-After"] == "1"
        assert {r.status for r in codes} == {429, 404}
    finally:
        _set(raw, {})


def test_an_error_rule_may_select_the_objects_it_refuses_by_name(raw: Raw) -> None:
    # A test stops a gang's binds after the members it does not name.
    _set(raw, {"errors": [{"rate": 1.0, "code": 503, "names": ["held"]}]})
    try:
        path = "/api/v1/namespaces/default/configmaps"
        assert raw.json("POST", path, {"metadata": {"name": "held"}})[0] == 201
        assert raw.json("GET", f"{path}/held")[0] == 503
        assert raw.json("POST", f"{path}", {"metadata": {"name": unique("free")}})[0] == 201
        assert raw.json("GET", path)[0] == 200
    finally:
        _set(raw, {})
        raw.json("DELETE", "/api/v1/namespaces/default/configmaps/held")


def test_a_get_with_watch_true_is_the_watch_verb_not_a_list(raw: Raw) -> None:
    # kube-apiserver's request info: a GET of a collection with watch=true is a watch.
    _set(raw, {"errors": [{"rate": 1.0, "code": 500, "verbs": ["watch"], "resources": ["pods"]}]})
    try:
        path = "/api/v1/namespaces/default/pods"
        assert raw.json("GET", path)[0] == 200
        assert raw.request("GET", f"{path}?watch=true&timeoutSeconds=1").status == 500
    finally:
        _set(raw, {})


def test_latency_delays_matching_requests(raw: Raw) -> None:
    _set(raw, {"latency": [{"ms": 200, "verbs": ["list"]}]})
    try:
        began = time.monotonic()
        raw.json("GET", "/api/v1/namespaces/default/configmaps")
        assert time.monotonic() - began >= 0.2
        began = time.monotonic()
        raw.json("GET", "/api/v1/namespaces/default")
        assert time.monotonic() - began < 0.2
    finally:
        _set(raw, {})


def test_watch_drop_closes_watches_early(raw: Raw) -> None:
    _set(raw, {"watch_drop_seconds": 0.2})
    try:
        began = time.monotonic()
        list(raw.watch("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=30"))
        assert time.monotonic() - began < 3
    finally:
        _set(raw, {})


def test_bad_fault_config_is_400(raw: Raw) -> None:
    code, body = raw.json("PUT", "/sim/faults", {"errors": [{"code": 500}]})
    assert code == 400 and body["reason"] == "BadRequest"


def test_compaction_forces_410_on_resume(raw: Raw) -> None:
    _, listed = raw.json("GET", "/api/v1/namespaces/default/configmaps")
    raw.json("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": unique("c")}})
    code, body = raw.json("POST", "/sim/compact")
    assert code == 200 and body["compactedResourceVersion"] > int(
        listed["metadata"]["resourceVersion"]
    )
    frames = list(
        raw.watch(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="
            + listed["metadata"]["resourceVersion"]
        )
    )
    assert [f["object"]["code"] for f in frames] == [410]
