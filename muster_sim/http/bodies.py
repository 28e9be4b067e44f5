"""Bodies over HTTP: a request's JSON decoded as kube-apiserver's Go decoder reads it (where
msgspec is stricter: invalid UTF-8, lone surrogate escapes), and JSON responses, Status
errors and warnings as kube-apiserver writes them."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
from aiohttp import web

from muster_sim.apiserver.options import WriteOptions
from muster_sim.errors import ApiError, bad_request

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_JSON = "application/json"
_SUCCESS_201 = _encode(
    {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
)


def json_response(obj: Any, status: int = 200) -> web.Response:
    """A JSON body encoded with msgspec."""
    return web.Response(body=_encode(obj), status=status, content_type=_JSON)


def error_response(error: ApiError) -> web.Response:
    """The Status body and code of an ApiError."""
    response = json_response(error.status(), error.code)
    response.headers.update(error.headers)
    return response


def created_status() -> web.Response:
    """The 201 Status a created binding or eviction is answered with."""
    return web.Response(body=_SUCCESS_201, status=201, content_type=_JSON)


def with_warnings(response: web.Response, options: WriteOptions) -> web.Response:
    """One RFC 7234 `Warning: 299 - "..."` header per warning, as kube-apiserver sends them."""
    for text in options.warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')
    return response


async def read_body(request: web.Request) -> Any:
    """The request's JSON body, decoded as kube-apiserver's Go decoder reads it; a 400 when
    it is not JSON."""
    raw = await request.read()
    try:
        return _decode(raw)
    except msgspec.DecodeError as error:
        body = _decode_as_go(raw)
        if body is _MALFORMED:
            raise bad_request(f"couldn't get version/kind; json parse error: {error}") from None
        return body


_MALFORMED = object()
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _decode_as_go(raw: bytes) -> Any:
    """What kube-apiserver's decoder (Go's encoding/json) makes of a body msgspec refuses
    for its strings alone: invalid UTF-8 and lone UTF-16 surrogate escapes ("\\udb53") are
    not errors there but U+FFFD. _MALFORMED when the JSON is malformed for Go too."""

    def refuse_constant(name: str) -> Any:
        raise ValueError(f"invalid character {name!r}")  # NaN, Infinity: not JSON to Go

    try:
        body = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=refuse_constant)
    except ValueError:
        return _MALFORMED
    return _replace_surrogates(body)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def decoded(raw: bytes) -> Any:
    """A JSON body already read, or None for an empty one."""
    return _decode(raw) if raw else None
