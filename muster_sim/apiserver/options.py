"""What a request asks for beyond its body: a list's selectors, pages and resourceVersion;
a write's fieldValidation, dryRun and user; a delete's grace period, propagation and
preconditions. Each is read from the query string (and DeleteOptions body) as
kube-apiserver reads it, with its 4xx for a value it does not take."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from muster_sim.errors import FieldError, bad_request, invalid
from muster_sim.selectors import Predicate
from muster_sim.validation.strategy import Denied

Obj = dict[str, Any]

_FIELD_VALIDATIONS = ("Ignore", "Strict", "Warn")


@dataclass
class ListOptions:
    """The query parameters of a list request."""

    label: Predicate | None = None
    field: Predicate | None = None
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""


@dataclass
class WriteOptions:
    """What a create, update or patch request asked for beyond its body, and what it is told."""

    # internal writes (kubelet, garbage collector) have no client to warn
    field_validation: str = "Ignore"
    # the authenticated user, for admission webhooks; None until authentication hands one
    user: Any = None
    # `Warning` response headers: unknown fields, webhook warnings
    warnings: list[str] = field(default_factory=list)
    operation_options: str = "CreateOptions"
    # `dryRun=All`: admitted, defaulted and validated as usual, then not stored
    dry_run: bool = False
    # the request's verb ("create", "update", "patch"), and what the authorizer answers its
    # user for another permission, for the rules that ask (None: sim's own writes)
    verb: str = ""
    denied: Denied | None = None

    @classmethod
    def from_query(
        cls,
        query: Any,
        operation_options: str,
        user: Any = None,
        verb: str = "",
        denied: Denied | None = None,
    ) -> WriteOptions:
        """Read `fieldValidation` (default Warn, as kube-apiserver) and `dryRun`; 4xx if bad."""
        dry_run = dry_run_of(query, operation_options)
        directive = query.get("fieldValidation") or "Warn"
        if directive not in _FIELD_VALIDATIONS:
            raise invalid(
                "meta.k8s.io",
                operation_options,
                "",
                [
                    FieldError(
                        "fieldValidation",
                        f'Unsupported value: "{directive}": supported values: "Ignore", '
                        '"Strict", "Warn"',
                        "FieldValueNotSupported",
                    )
                ],
            )
        return cls(directive, user, [], operation_options, dry_run, verb, denied)

    def review_options(self, operation: str | None = None) -> Obj:
        """The `options` an AdmissionReview carries."""
        kind = "DeleteOptions" if operation == "DELETE" else self.operation_options
        options: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if kind != "DeleteOptions" and self.field_validation != "Ignore":
            options["fieldValidation"] = self.field_validation
        if self.dry_run:
            options["dryRun"] = ["All"]
        return options


def dry_run_of(query: Any, operation_options: str) -> bool:
    """Whether the request asked for `dryRun=All`; 422 for any other value, as kube answers."""
    values = list(query.getall("dryRun", [])) if hasattr(query, "getall") else []
    if not values:
        return False
    if values == ["All"]:
        return True
    shown = "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
    raise invalid(
        "meta.k8s.io",
        operation_options,
        "",
        [
            FieldError(
                "dryRun",
                f'Unsupported value: {shown}: supported values: "All"',
                "FieldValueNotSupported",
            )
        ],
    )


@dataclass
class DeleteOptions:
    """A DeleteOptions body merged with its query parameters."""

    grace_period: int | None = None
    propagation: str | None = None
    uid: str | None = None
    resource_version: str | None = None

    @classmethod
    def from_body(cls, body: Obj | None, query: dict[str, str]) -> DeleteOptions:
        """Read the body (if any) and the query string; the query wins, as the real server."""
        body = body or {}
        options = cls()
        grace = query.get("gracePeriodSeconds", body.get("gracePeriodSeconds"))
        if grace is not None and grace != "":
            try:
                options.grace_period = int(grace)
            except ValueError:
                raise bad_request(f"invalid gracePeriodSeconds: {grace!r}") from None
        options.propagation = query.get("propagationPolicy") or body.get("propagationPolicy")
        orphan = query.get("orphanDependents", body.get("orphanDependents"))
        if options.propagation is None and orphan is not None:
            options.propagation = "Orphan" if str(orphan).lower() == "true" else "Background"
        if options.propagation not in (None, "Orphan", "Background", "Foreground"):
            raise bad_request(f"propagationPolicy {options.propagation} is not supported")
        preconditions = body.get("preconditions") or {}
        options.uid = preconditions.get("uid")
        options.resource_version = preconditions.get("resourceVersion")
        return options
