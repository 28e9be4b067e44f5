"""A ResourceClaim's spec (its device requests, constraints and configuration) as
kube-apiserver 1.36 defaults and validates it, in a ResourceClaim and in a
ResourceClaimTemplate alike; and the pieces other kinds share with it: device selectors,
tolerations, opaque driver configuration, request names and qualified attribute names."""

from __future__ import annotations

import json
import re
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.dra.cel_selectors import selector_errors
from muster_sim.validation.names import (
    csi_driver_name_errors,
    label_problems,
    qualified_name_errors,
    subdomain_problems,
)

Obj = dict[str, Any]

MAX_REQUESTS = 32
MAX_SUBREQUESTS = 8
MAX_SELECTORS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIGS = 32
MAX_OPAQUE_PARAMETERS = 10 * 1024
MAX_ID_LENGTH = 32
EXACT_COUNT, ALL = "ExactCount", "All"
ALLOCATION_MODES = (ALL, EXACT_COUNT)
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")

_C_IDENTIFIER = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_RE = re.compile(f"^{_C_IDENTIFIER}$")
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used "
    f"for validation is '{_C_IDENTIFIER}')"
)
_LABEL_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE}$")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE}')"
)
_NOT_A_REQUEST = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)


# -- defaults --------------------------------------------------------------------


def default_claim_spec(spec: Any) -> None:
    """The v1 defaults of a claim spec, in place: allocationMode ExactCount, count 1 for
    ExactCount, a toleration's operator Equal; `devices.requests` is null when absent, as the
    server's JSON has it."""
    if not isinstance(spec, dict):
        return
    devices = spec.setdefault("devices", {})
    if not isinstance(devices, dict):
        return
    devices.setdefault("requests", None)
    for request in devices.get("requests") or []:
        if not isinstance(request, dict):
            continue
        if isinstance(request.get("exactly"), dict):
            default_device_request(request["exactly"])
        for subrequest in request.get("firstAvailable") or []:
            if isinstance(subrequest, dict):
                default_device_request(subrequest)


def default_device_request(request: Obj) -> None:
    """An exact request's or subrequest's defaults."""
    if not request.get("allocationMode"):
        request["allocationMode"] = EXACT_COUNT
    if request["allocationMode"] == EXACT_COUNT and not request.get("count"):
        request["count"] = 1
    default_tolerations(request.get("tolerations"))


def default_tolerations(tolerations: Any) -> None:
    """A device toleration's operator defaults to Equal."""
    for toleration in tolerations or []:
        if isinstance(toleration, dict) and not toleration.get("operator"):
            toleration["operator"] = "Equal"


# -- validation ------------------------------------------------------------------


def request_names(spec: Obj) -> dict[str, set[str] | None]:
    """Each request's name -> its subrequests' names (None for an `exactly` request)."""
    names: dict[str, set[str] | None] = {}
    devices = spec.get("devices") if isinstance(spec, dict) else None
    for request in (devices or {}).get("requests") or []:
        subrequests = request.get("firstAvailable") or []
        if subrequests:
            names[str(request.get("name", ""))] = {str(s.get("name", "")) for s in subrequests}
        else:
            names[str(request.get("name", ""))] = None
    return names


def claim_spec_errors(spec: Any, path: str) -> list[FieldError]:
    """validateResourceClaimSpec: the requests, constraints and config at `path`."""
    devices = (spec or {}).get("devices") if isinstance(spec, dict) else None
    devices = devices if isinstance(devices, dict) else {}
    at = f"{path}.devices"
    names = request_names(spec)
    errors = unique_list_errors(
        devices.get("requests"),
        MAX_REQUESTS,
        f"{at}.requests",
        _request_errors,
        lambda request: str(request.get("name", "")),
    )
    errors += list_errors(
        devices.get("constraints"),
        MAX_CONSTRAINTS,
        f"{at}.constraints",
        lambda constraint, p: _constraint_errors(constraint, p, names),
    )
    errors += list_errors(
        devices.get("config"),
        MAX_CONFIGS,
        f"{at}.config",
        lambda config, p: (
            request_refs_errors(config.get("requests"), f"{p}.requests", names)
            + configuration_errors(config, p)
        ),
    )
    return errors


def _request_errors(request: Obj, path: str) -> list[FieldError]:
    errors = _request_name_errors(request.get("name", ""), f"{path}.name")
    exactly = request.get("exactly")
    first_available = request.get("firstAvailable") or []
    if exactly is None and not first_available:
        errors.append(
            fields.required(path, "exactly one of `exactly` or `firstAvailable` is required")
        )
    elif exactly is not None and first_available:
        errors.append(
            fields.invalid(
                path,
                None,
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields "
                "are set",
            )
        )
    elif first_available:
        errors += unique_list_errors(
            first_available,
            MAX_SUBREQUESTS,
            f"{path}.firstAvailable",
            _subrequest_errors,
            lambda subrequest: str(subrequest.get("name", "")),
        )
    else:
        errors += _exact_errors(exactly if isinstance(exactly, dict) else {}, f"{path}.exactly")
    return errors


def _subrequest_errors(subrequest: Obj, path: str) -> list[FieldError]:
    return _request_name_errors(subrequest.get("name", ""), f"{path}.name") + _exact_errors(
        subrequest, path
    )


def _exact_errors(request: Obj, path: str) -> list[FieldError]:
    """An exact request's (or a subrequest's) class, selectors, mode and count, tolerations."""
    errors = device_class_name_errors(request.get("deviceClassName", ""), f"{path}.deviceClassName")
    errors += selectors_errors(request.get("selectors"), f"{path}.selectors")
    mode = request.get("allocationMode", "")
    count = request.get("count") or 0
    if mode == ALL:
        if count != 0:
            errors.append(
                fields.invalid(
                    f"{path}.count", count, "must not be specified when allocationMode is 'All'"
                )
            )
    elif mode == EXACT_COUNT:
        if count <= 0:
            errors.append(fields.invalid(f"{path}.count", count, "must be greater than zero"))
    else:
        errors.append(fields.not_supported(f"{path}.allocationMode", mode, ALLOCATION_MODES))
    for index, toleration in enumerate(request.get("tolerations") or []):
        errors += toleration_errors(toleration, f"{path}.tolerations[{index}]")
    return errors


def _constraint_errors(
    constraint: Obj, path: str, names: dict[str, set[str] | None]
) -> list[FieldError]:
    errors = request_refs_errors(constraint.get("requests"), f"{path}.requests", names)
    match = constraint.get("matchAttribute")
    distinct = constraint.get("distinctAttribute")
    if match is not None:
        errors += fully_qualified_name_errors(str(match), f"{path}.matchAttribute")
    elif distinct is not None:
        errors += fully_qualified_name_errors(str(distinct), f"{path}.distinctAttribute")
    else:
        # kube's wording, with DRAConsumableCapacity on, for neither of the two
        errors.append(
            fields.required(
                path,
                'exactly one of "matchAttribute" or "distinctAttribute" is required, but '
                "multiple fields are set",
            )
        )
    return errors


def request_refs_errors(
    refs: Any, path: str, names: dict[str, set[str] | None]
) -> list[FieldError]:
    """A list of request references ("req" or "req/sub"): at most 32, unique, each naming a
    request of the claim."""
    return unique_list_errors(
        refs, MAX_REQUESTS, path, lambda ref, p: request_ref_errors(ref, p, names), str
    )


def request_ref_errors(ref: Any, path: str, names: dict[str, set[str] | None]) -> list[FieldError]:
    """One request reference: "req" or "req/sub", each part a DNS label, naming a request."""
    ref = str(ref)
    segments = ref.split("/")
    if len(segments) > 2:
        return [fields.invalid(path, ref, _NOT_A_REQUEST)]
    errors: list[FieldError] = []
    for segment in segments:
        errors += _request_name_errors(segment, path)
    if not _names_request(names, segments):
        errors.append(fields.invalid(path, ref, _NOT_A_REQUEST))
    return errors


def _names_request(names: dict[str, set[str] | None], segments: list[str]) -> bool:
    if segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    subrequests = names[segments[0]]
    return subrequests is not None and segments[1] in subrequests


def _request_name_errors(name: Any, path: str) -> list[FieldError]:
    name = str(name or "")
    return [fields.invalid(path, name, problem) for problem in label_problems(name)]


def device_class_name_errors(name: Any, path: str) -> list[FieldError]:
    """A device class reference: required, a DNS subdomain."""
    name = str(name or "")
    if not name:
        return [fields.required(path)]
    return [fields.invalid(path, name, problem) for problem in subdomain_problems(name)]


def selectors_errors(selectors: Any, path: str) -> list[FieldError]:
    """At most 32 selectors, each with a `cel` expression that compiles."""

    def one(selector: Obj, at: str) -> list[FieldError]:
        cel = selector.get("cel")
        if not isinstance(cel, dict):
            return [fields.required(f"{at}.cel")]
        return selector_errors(str(cel.get("expression", "")), f"{at}.cel.expression")

    return list_errors(selectors, MAX_SELECTORS, path, one)


def toleration_errors(toleration: Obj, path: str) -> list[FieldError]:
    """A device toleration: its key a label name, operator Exists (no value) or Equal (a
    label value), effect one of the taint effects when set."""
    errors: list[FieldError] = []
    key = str(toleration.get("key") or "")
    if key:
        errors += qualified_name_errors(key, f"{path}.key")
    operator = toleration.get("operator") or ""
    value = str(toleration.get("value") or "")
    if operator == "Exists":
        if value:
            errors.append(
                fields.invalid(f"{path}.value", value, "must be empty for operator `Exists`")
            )
    elif operator == "Equal":
        errors += label_value_errors(value, f"{path}.value")
    elif not operator:
        errors.append(fields.required(f"{path}.operator"))
    else:
        errors.append(fields.not_supported(f"{path}.operator", operator, TOLERATION_OPERATORS))
    effect = toleration.get("effect") or ""
    if effect and effect not in TAINT_EFFECTS:
        errors.append(fields.not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return errors


def label_value_errors(value: str, path: str) -> list[FieldError]:
    """apimachinery's IsValidLabelValue, one error per problem."""
    return [fields.invalid(path, value, problem) for problem in label_value_problems(value)]


def label_value_problems(value: str) -> list[str]:
    """apimachinery's IsValidLabelValue messages for `value` (none when it is one)."""
    problems = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _LABEL_VALUE_RE.match(value):
        problems.append(_LABEL_VALUE_MSG)
    return problems


def configuration_errors(config: Obj, path: str, stored: bool = False) -> list[FieldError]:
    """A DeviceConfiguration: its `opaque` driver configuration is required."""
    opaque = config.get("opaque")
    if not isinstance(opaque, dict):
        return [fields.required(f"{path}.opaque")]
    at = f"{path}.opaque"
    errors = csi_driver_name_errors(str(opaque.get("driver") or ""), f"{at}.driver")
    return errors + raw_object_errors(
        opaque.get("parameters"), f"{at}.parameters", MAX_OPAQUE_PARAMETERS, stored
    )


def raw_object_errors(value: Any, path: str, limit: int, stored: bool = False) -> list[FieldError]:
    """A RawExtension that must hold a JSON object of at most `limit` bytes (the limit only
    for new values: stored ones from before it are kept)."""
    if value is None:
        return [fields.required(path)]
    if not stored and len(json.dumps(value, separators=(",", ":"))) > limit:
        return [fields.too_long(path, limit)]
    if not isinstance(value, dict):
        return [fields.invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


def qualified_attribute_errors(name: str, path: str) -> list[FieldError]:
    """validateQualifiedName: a C identifier, or `<domain>/<C identifier>` (a name with more
    slashes is let through, as kube 1.36 lets it through)."""
    parts = name.split("/")
    if len(parts) == 1:
        return c_identifier_errors(parts[0], path)
    if len(parts) != 2:
        return []
    errors: list[FieldError] = []
    domain, ident = parts
    if not domain:
        errors.append(fields.invalid(path, "", "the domain must not be empty"))
    else:
        errors += csi_driver_name_errors(domain, path)
    if not ident:
        errors.append(fields.invalid(path, "", "the name must not be empty"))
    else:
        errors += c_identifier_errors(ident, path)
    return errors


def fully_qualified_name_errors(name: str, path: str) -> list[FieldError]:
    """A qualified name that must have its domain."""
    errors = qualified_attribute_errors(name, path)
    if "/" not in name:
        errors.append(
            fields.invalid(
                path,
                name,
                "a fully qualified name must be a domain and a name separated by a slash",
            )
        )
    return errors


def c_identifier_errors(ident: str, path: str) -> list[FieldError]:
    """At most 32 characters, a C identifier."""
    errors: list[FieldError] = []
    if len(ident) > MAX_ID_LENGTH:
        errors.append(fields.too_long(path, MAX_ID_LENGTH))
    if not _C_IDENTIFIER_RE.match(ident):
        errors.append(fields.invalid(path, ident, _C_IDENTIFIER_MSG))
    return errors


# -- lists -----------------------------------------------------------------------


def list_errors(items: Any, limit: int, path: str, check: Any) -> list[FieldError]:
    """validateSlice: too many (and nothing more said), else each item's errors."""
    items = items if isinstance(items, list) else []
    if 0 <= limit < len(items):
        return [fields.too_many(path, len(items), limit)]
    errors: list[FieldError] = []
    for index, item in enumerate(items):
        errors += check(item if item is not None else {}, f"{path}[{index}]")
    return errors


def unique_list_errors(
    items: Any, limit: int, path: str, check: Any, key: Any, render: Any = None
) -> list[FieldError]:
    """validateSet: validateSlice, then a Duplicate for each item whose key came before (the
    key shown by `render` when it is a Go struct rather than a string)."""
    items = items if isinstance(items, list) else []
    errors = list_errors(items, limit, path, check)
    if 0 <= limit < len(items):
        return errors
    seen: set[Any] = set()
    for index, item in enumerate(items):
        value = key(item if item is not None else {})
        if value in seen:
            at = f"{path}[{index}]"
            errors.append(
                fields.duplicate(at, value)
                if render is None
                else FieldError(at, f"Duplicate value: {render(value)}", "FieldValueDuplicate")
            )
        seen.add(value)
    return errors
