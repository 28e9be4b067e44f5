"""The field checks of selectors: metav1's ValidateLabelSelector and core's
ValidateNodeSelector, in the real server's words and field paths."""

from __future__ import annotations

from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.names import qualified_name_errors

Obj = dict[str, Any]

_NODE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
# the real server's words for the checks below
_IN_NEEDS_VALUES = "must be specified when `operator` is 'In' or 'NotIn'"
_EXISTS_NO_VALUES = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
_GT_ONE_VALUE = "must be specified single value when `operator` is 'Lt' or 'Gt'"
_LABEL_VALUE_TOO_LONG = "must be no more than 63 characters"
_BAD_FIELD_KEY = "not a valid field selector key"


def label_selector_errors(selector: Any, path: str) -> list[FieldError]:
    """metav1 ValidateLabelSelector: operators, values per operator, label keys and values."""
    if not isinstance(selector, dict):
        return []
    errors: list[FieldError] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        errors.extend(qualified_name_errors(str(key), f"{path}.matchLabels"))
        if value and len(str(value)) > 63:
            errors.append(fields.invalid(f"{path}.matchLabels", value, _LABEL_VALUE_TOO_LONG))
    for index, expr in enumerate(selector.get("matchExpressions") or []):
        at = f"{path}.matchExpressions[{index}]"
        operator = expr.get("operator", "")
        values = expr.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(fields.required(f"{at}.values", _IN_NEEDS_VALUES))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    fields.forbidden(
                        f"{at}.values",
                        _EXISTS_NO_VALUES,
                    )
                )
        else:
            errors.append(
                fields.invalid(f"{at}.operator", operator, "not a valid selector operator")
            )
        errors.extend(qualified_name_errors(str(expr.get("key", "")), f"{at}.key"))
    return errors


def node_selector_errors(selector: Any, path: str) -> list[FieldError]:
    """core ValidateNodeSelector: at least one term, each requirement's operator and values."""
    terms = (selector or {}).get("nodeSelectorTerms") if isinstance(selector, dict) else None
    if not terms:
        return [
            fields.required(
                f"{path}.nodeSelectorTerms", "must have at least one node selector term"
            )
        ]
    errors: list[FieldError] = []
    for t_index, term in enumerate(terms):
        term_path = f"{path}.nodeSelectorTerms[{t_index}]"
        for index, req in enumerate((term or {}).get("matchExpressions") or []):
            at = f"{term_path}.matchExpressions[{index}]"
            errors.extend(_node_requirement_errors(req, at))
            errors.extend(qualified_name_errors(str(req.get("key", "")), f"{at}.key"))
        for index, req in enumerate((term or {}).get("matchFields") or []):
            at = f"{term_path}.matchFields[{index}]"
            if req.get("key") != "metadata.name":
                errors.append(fields.invalid(f"{at}.key", req.get("key", ""), _BAD_FIELD_KEY))
            operator = req.get("operator", "")
            if operator not in ("In", "NotIn"):
                errors.append(
                    fields.invalid(f"{at}.operator", operator, "not a valid selector operator")
                )
            elif len(req.get("values") or []) != 1:
                errors.append(
                    fields.required(
                        f"{at}.values",
                        "must be only one value when `operator` is 'In' or 'NotIn' for node "
                        "field selector",
                    )
                )
    return errors


def _node_requirement_errors(req: Obj, at: str) -> list[FieldError]:
    operator = req.get("operator", "")
    values = req.get("values") or []
    if operator in ("In", "NotIn") and not values:
        return [fields.required(f"{at}.values", _IN_NEEDS_VALUES)]
    if operator in ("Exists", "DoesNotExist") and values:
        return [fields.forbidden(f"{at}.values", _EXISTS_NO_VALUES)]
    if operator in ("Gt", "Lt") and len(values) != 1:
        return [fields.required(f"{at}.values", _GT_ONE_VALUE)]
    if operator not in _NODE_OPERATORS:
        return [fields.invalid(f"{at}.operator", operator, "not a valid selector operator")]
    return []
