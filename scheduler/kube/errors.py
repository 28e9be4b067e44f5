"""Errors from the API server, as a small hierarchy callers catch at the right level."""

from __future__ import annotations

from typing import Any

import msgspec

from scheduler.api.errors import ApiError


class StatusError(ApiError):
    """The API server answered with an error Status (4xx/5xx)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        method: str,
        path: str,
        causes: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.method = method
        self.path = path
        # The Status's details.causes, as (reason, message): an Eviction refused by a
        # PodDisruptionBudget says which budget here ("DisruptionBudget").
        self.causes = causes
        super().__init__(f"{method} {path}: {code} {reason}: {message}")

    @classmethod
    def from_response(cls, code: int, body: bytes, method: str, path: str) -> StatusError:
        """Build the error from a Status body when there is one."""
        reason, message = "", body[:500].decode("utf-8", "replace")
        causes: tuple[tuple[str, str], ...] = ()
        try:
            status: Any = msgspec.json.decode(body)
        except msgspec.DecodeError:
            status = None
        if isinstance(status, dict):
            reason = str(status.get("reason", ""))
            message = str(status.get("message", message))
            causes = _causes(status.get("details"))
        kind = _BY_CODE.get(code, cls)
        return kind(code, reason, message, method, path, causes)


class NotFound(StatusError):
    """404: the object is gone."""


class Conflict(StatusError):
    """409: a stale resourceVersion, an existing object, or a pod already bound."""


class Gone(StatusError):
    """410: the resourceVersion is too old; relist."""


class Retryable(StatusError):
    """429 or 5xx: the request may succeed later."""


class TransportError(ApiError):
    """The connection failed before an answer came back."""


class Fenced(ApiError):
    """A request its gate stopped at the last moment before it was written (a bind of a
    replica that lost its lease while the bind waited): nothing reached the API server."""


def _causes(details: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(details, dict) or not isinstance(details.get("causes"), list):
        return ()
    return tuple(
        (str(cause.get("reason", "")), str(cause.get("message", "")))
        for cause in details["causes"]
        if isinstance(cause, dict)
    )


_BY_CODE: dict[int, type[StatusError]] = {404: NotFound, 409: Conflict, 410: Gone, 429: Retryable}


def is_retryable(code: int) -> bool:
    """Whether an answer with this code is worth retrying."""
    return code == 429 or code >= 500


def status_error(code: int, body: bytes, method: str, path: str) -> StatusError:
    """The right StatusError subclass for a response."""
    if code >= 500:
        error = StatusError.from_response(code, body, method, path)
        return Retryable(error.code, error.reason, error.message, method, path, error.causes)
    return StatusError.from_response(code, body, method, path)
