"""API errors carried as kube-apiserver `Status` bodies."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def qualified_resource(group: str, plural: str) -> str:
    """The resource as messages name it: `pods`, `leases.coordination.k8s.io`."""
    return plural if not group else f"{plural}.{group}"


class ApiError(Exception):
    """A failed request, rendered as a `Status` body with the matching HTTP code."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Obj | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> Obj:
        """The `Status` object exactly as kube-apiserver writes it."""
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        # Status.reason is omitempty: a webhook's denial may carry none
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(group: str, plural: str, name: str) -> Obj:
    details: Obj = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = plural
    return details


def not_found(group: str, plural: str, name: str) -> ApiError:
    """404 for a named object that does not exist."""
    what = qualified_resource(group, plural)
    return ApiError(404, "NotFound", f'{what} "{name}" not found', _details(group, plural, name))


def already_exists(group: str, plural: str, name: str) -> ApiError:
    """409 for a create whose name is taken."""
    what = qualified_resource(group, plural)
    return ApiError(
        409, "AlreadyExists", f'{what} "{name}" already exists', _details(group, plural, name)
    )


def conflict(group: str, plural: str, name: str, why: str) -> ApiError:
    """409 for a write that lost a race (stale resourceVersion, pod already bound)."""
    what = qualified_resource(group, plural)
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {what} "{name}": {why}',
        _details(group, plural, name),
    )


STALE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def forbidden(group: str, plural: str, name: str, why: str) -> ApiError:
    """403 for a request an admission rule refuses."""
    what = qualified_resource(group, plural)
    return ApiError(
        403, "Forbidden", f'{what} "{name}" is forbidden: {why}', _details(group, plural, name)
    )


class FieldError:
    """One invalid field of an object, as listed in an Invalid status' causes."""

    def __init__(self, field: str, message: str, reason: str = "FieldValueInvalid") -> None:
        self.field = field
        self.message = message
        self.reason = reason


def invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 for an object that fails validation; the message lists every field error."""
    parts = [f"{e.field}: {e.message}" for e in errors]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    kind_label = kind if not group else f"{kind}.{group}"
    details: Obj = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [
        {"reason": e.reason, "message": e.message, "field": e.field} for e in errors
    ]
    return ApiError(422, "Invalid", f'{kind_label} "{name}" is invalid: {joined}', details)


def bad_request(message: str) -> ApiError:
    """400 for a request the server cannot decode or understand."""
    return ApiError(400, "BadRequest", message)


def expired(message: str) -> ApiError:
    """410 for a resourceVersion or continue token older than the kept history."""
    return ApiError(410, "Expired", message)


def too_old(requested: int, oldest: int) -> ApiError:
    """410 with the message the watch cache gives for a compacted resourceVersion."""
    return expired(f"too old resource version: {requested} ({oldest})")


def method_not_allowed() -> ApiError:
    """405 for a verb the resource does not support."""
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def path_not_found() -> ApiError:
    """404 for a path that names no resource."""
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def unauthorized() -> ApiError:
    """401 for a missing or wrong bearer token."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def too_many_requests(message: str, retry_after: int = 1, details: Obj | None = None) -> ApiError:
    """429 with Retry-After, as the server's flow control or a PDB answers."""
    body = details if details is not None else {"retryAfterSeconds": retry_after}
    # kube sends Retry-After only with a delay (a budget's refusal names none).
    headers = {"Retry-After": str(retry_after)} if retry_after > 0 else {}
    return ApiError(429, "TooManyRequests", message, body, headers=headers)


def internal_error(message: str) -> ApiError:
    """500 as the server answers an unexpected failure."""
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def unsupported_media_type(accepted: str) -> ApiError:
    """415 for a patch type the resource does not accept."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + accepted,
    )
