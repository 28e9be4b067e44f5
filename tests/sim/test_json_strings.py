"""Request bodies decode as kube-apiserver's Go decoder does: invalid UTF-8 and lone UTF-16
surrogate escapes in strings become U+FFFD (not a 400), NaN and malformed JSON are refused.
(Checked by hand against kube-apiserver 1.24: the same bodies stored U+FFFD, NaN got 400.)"""

from __future__ import annotations

import json

from tests.sim.conftest import Raw, unique


def configmap(name: str, value: str) -> bytes:
    # Written by hand: json.dumps cannot produce what hostile clients send.
    meta = '"metadata": {"name": "' + name + '"}'
    return (
        '{"apiVersion": "v1", "kind": "ConfigMap", ' + meta + ', "data": {"k": "' + value + '"}}'
    ).encode()


def create(raw: Raw, body: bytes) -> tuple[int, dict[str, object]]:
    response = raw.request("POST", "/api/v1/namespaces/default/configmaps", body)
    return response.status, json.loads(response.data)


def test_a_lone_surrogate_escape_is_stored_as_the_replacement_character(raw: Raw) -> None:
    code, stored = create(raw, configmap(unique("sur"), "a\\udb53b"))
    assert code == 201, stored
    assert stored["data"] == {"k": "a\ufffdb"}


def test_invalid_utf8_bytes_are_stored_as_the_replacement_character(raw: Raw) -> None:
    name = unique("utf")
    body = configmap(name, "x").replace(b'"x"', b'"a\xffb"')
    code, stored = create(raw, body)
    assert code == 201, stored
    assert stored["data"] == {"k": "a\ufffdb"}


def test_a_surrogate_pair_stays_one_character(raw: Raw) -> None:
    code, stored = create(raw, configmap(unique("pair"), "\\ud83d\\ude00"))
    assert code == 201, stored
    assert stored["data"] == {"k": "\U0001f600"}


def test_nan_and_malformed_json_are_still_refused(raw: Raw) -> None:
    for body in (b'{"apiVersion": "v1", "kind": "ConfigMap", "data": NaN}', b'{"a": '):
        code, status = create(raw, body)
        assert code == 400 and status["reason"] == "BadRequest", status
