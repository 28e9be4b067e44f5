"""Fault injection: latency, error answers, dropped watches; changeable while the server runs.

A rule selects requests by verb, resource (a plural, or a subresource such as
"pods/binding") and the name of the object the request names; empty lists select all."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import msgspec

from muster_sim.apiserver.budgets import refused
from muster_sim.errors import ApiError, internal_error, too_many_requests

Obj = dict[str, Any]


class _Selector(msgspec.Struct, forbid_unknown_fields=True):
    """Which requests a rule applies to; empty lists mean every verb / resource / name."""

    # resources are plurals or subresources such as "pods/binding"
    verbs: list[str] = msgspec.field(default_factory=list)
    resources: list[str] = msgspec.field(default_factory=list)
    # the names of the objects the request names (a pod's, for its binding): a test stops a
    # gang's binds after exactly the members it names not
    names: list[str] = msgspec.field(default_factory=list)

    def matches(self, verb: str, resource: str, name: str = "") -> bool:
        """Whether this rule applies to the request."""
        if self.verbs and verb not in self.verbs:
            return False
        if self.names and name not in self.names:
            return False
        return not self.resources or resource in self.resources


class ErrorRule(_Selector, kw_only=True):
    """Answer `code` to a `rate` fraction of requests matching the verbs and resources;
    with `budget`, a 429 is the Eviction API's refusal naming that PodDisruptionBudget (a
    budget that changed between a scheduler's decision and its eviction)."""

    rate: float
    code: int = 500
    budget: str = ""


class LatencyRule(_Selector, kw_only=True):
    """Delay matching requests by `ms` milliseconds before they are served."""

    ms: float


class FaultConfig(msgspec.Struct, forbid_unknown_fields=True):
    """Every fault in force; the JSON shape of GET/PUT /sim/faults."""

    latency: list[LatencyRule] = msgspec.field(default_factory=list)
    errors: list[ErrorRule] = msgspec.field(default_factory=list)
    # close every watch connection after this many seconds (0: never)
    watch_drop_seconds: float = 0.0
    seed: int | None = None


def error_for(code: int) -> ApiError:
    """The Status a real server (or its front proxy) would send with this code."""
    if code == 429:
        return too_many_requests("Too many requests, please try again later.")
    if code == 503:
        return ApiError(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
            {"retryAfterSeconds": 1},
            headers={"Retry-After": "1"},
        )
    if code == 504:
        return ApiError(
            504,
            "Timeout",
            "the server was unable to return a response in the time "
            "allotted, but may still be processing the request",
            {},
        )
    if code == 500:
        return internal_error("injected fault")
    return ApiError(code, "InternalError", f"injected fault ({code})", {})


class FaultInjector:
    """Applies the current FaultConfig to each request."""

    def __init__(self, config: FaultConfig | None = None) -> None:
        self.config = config or FaultConfig()
        self._random = random.Random(self.config.seed)

    def replace(self, config: FaultConfig) -> None:
        """Put a new configuration in force (PUT /sim/faults)."""
        self.config = config
        self._random = random.Random(config.seed)

    @property
    def active(self) -> bool:
        """Whether any request-level fault is configured (the fast path skips them all)."""
        return bool(self.config.latency or self.config.errors)

    async def before(self, verb: str, resource: str, name: str = "") -> None:
        """Sleep for matching latency rules; raise the error of a matching rule that fires
        (`name`: the object the request names, "" for a collection)."""
        for rule in self.config.latency:
            if rule.matches(verb, resource, name):
                await asyncio.sleep(rule.ms / 1000)
        for error in self.config.errors:
            if error.matches(verb, resource, name) and self._random.random() < error.rate:
                if error.budget and error.code == 429:
                    raise refused(
                        f"The disruption budget {error.budget} needs 1 healthy pods and has "
                        "1 currently"
                    )
                raise error_for(error.code)

    def to_json(self) -> bytes:
        """The configuration as JSON."""
        return msgspec.json.encode(self.config)

    @staticmethod
    def parse(body: bytes) -> FaultConfig:
        """Decode a configuration, 400 when it is malformed."""
        try:
            return msgspec.json.decode(body, type=FaultConfig)
        except msgspec.ValidationError as error:
            raise ApiError(400, "BadRequest", f"invalid fault configuration: {error}") from None
        except msgspec.DecodeError as error:
            raise ApiError(400, "BadRequest", f"invalid fault configuration: {error}") from None
