"""ResourceSlices as kube-apiserver 1.36 defaults and validates them: a driver's devices (or
counter sets) in one pool, reachable from one node, a node selector, all nodes, or per device.

Devices are limited to 128 a slice (64 when one uses taints or counters), 32 attributes and
capacities each; a slice's driver, pool name and node never change."""

from __future__ import annotations

import re
from typing import Any

from muster_sim.errors import FieldError
from muster_sim.timestamps import now_rfc3339
from muster_sim.validation import fields
from muster_sim.validation.dra import go_structs
from muster_sim.validation.dra.claim_specs import (
    TAINT_EFFECTS,
    label_value_errors,
    list_errors,
    qualified_attribute_errors,
    unique_list_errors,
)
from muster_sim.validation.names import (
    csi_driver_name_errors,
    label_problems,
    qualified_name_errors,
    subdomain_problems,
)
from muster_sim.validation.quantities import quantity
from muster_sim.validation.selector_fields import node_selector_errors
from muster_sim.validation.strategy import KindStrategy, WriteContext

Obj = dict[str, Any]

MAX_DEVICES = 128
MAX_DEVICES_WITH_ADVANCED_FEATURES = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_COUNTER_CONSUMPTIONS = 2
MAX_COUNTERS_PER_CONSUMPTION = 32
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_ATTRIBUTE_VALUES = 48
MAX_ATTRIBUTE_VALUE_LENGTH = 64
MAX_TAINTS = 16
MAX_BINDING_CONDITIONS = 4
MAX_POOL_NAME = 253
MAX_VALID_VALUES = 10
# a domain (63), a slash and an ID (32): longer keys are shortened in the middle in paths
_MAX_KEY_SHOWN = 96
_ONE_OF = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)
_DEVICE_ONE_OF = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)
_SCALAR_ATTRIBUTES = ("int", "bool", "string", "version")
# list-typed attributes need DRAListTypeAttributes, off in 1.36: the server drops them
_LIST_ATTRIBUTES = ("ints", "bools", "strings", "versions")
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
)


class ResourceSliceStrategy(KindStrategy):
    """ResourceSlice defaults (a taint's timeAdded) and rules."""

    group = "resource.k8s.io"
    kind = "ResourceSlice"

    def _default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        for device in spec.get("devices") or []:
            if not isinstance(device, dict):
                continue
            for attribute in (device.get("attributes") or {}).values():
                if isinstance(attribute, dict):
                    for name in _LIST_ATTRIBUTES:
                        attribute.pop(name, None)
            for taint in device.get("taints") or []:
                if isinstance(taint, dict) and not taint.get("timeAdded"):
                    taint["timeAdded"] = now_rfc3339()

    def validate_request(self, context: WriteContext, old: Obj | None, new: Obj) -> None:
        """422 listing every error of the spec, and on update the fields that never change."""
        spec = new.get("spec") or {}
        old_spec = (old or {}).get("spec") if old is not None else None
        self._refuse(new, slice_spec_errors(spec, old_spec))


def slice_spec_errors(spec: Obj, old: Obj | None) -> list[FieldError]:
    """validateResourceSliceSpec (`old` the stored spec on update, else None)."""
    errors = driver_name_errors(str(spec.get("driver") or ""), "spec.driver")
    pool: Obj = spec["pool"] if isinstance(spec.get("pool"), dict) else {}
    errors += pool_name_errors(str(pool.get("name") or ""), "spec.pool.name")
    if int(pool.get("resourceSliceCount") or 0) <= 0:
        errors.append(
            fields.invalid(
                "spec.pool.resourceSliceCount",
                int(pool.get("resourceSliceCount") or 0),
                "must be greater than zero",
            )
        )
    if int(pool.get("generation") or 0) < 0:
        errors.append(
            fields.invalid(
                "spec.pool.generation",
                int(pool["generation"]),
                "must be greater than or equal to zero",
            )
        )
    if old is not None:
        old_pool = old.get("pool") or {}
        for path, before, after in (
            ("spec.pool.name", old_pool.get("name"), pool.get("name")),
            ("spec.driver", old.get("driver"), spec.get("driver")),
            ("spec.nodeName", old.get("nodeName"), spec.get("nodeName")),
        ):
            if (before or "") != (after or "") or (before is None) != (after is None):
                errors.append(fields.immutable(path, after))
    errors += _node_selection_errors(spec)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errors.append(
            fields.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed")
        )
    devices = spec.get("devices")
    old_devices = {
        d.get("name"): d for d in (old or {}).get("devices") or [] if isinstance(d, dict)
    }
    per_device = spec.get("perDeviceNodeSelection")
    errors += unique_list_errors(
        devices,
        _device_limit(devices),
        "spec.devices",
        lambda device, path: _device_errors(
            device, old_devices.get(device.get("name")), path, per_device
        ),
        lambda device: str(device.get("name", "")),
    )
    errors += unique_list_errors(
        spec.get("sharedCounters"),
        MAX_COUNTER_SETS,
        "spec.sharedCounters",
        _counter_set_errors,
        lambda counter_set: str(counter_set.get("name", "")),
    )
    return errors


def driver_name_errors(name: str, path: str) -> list[FieldError]:
    """A DRA driver's name: CSI driver names' rules (required, 63 characters, a subdomain)."""
    return csi_driver_name_errors(name, path)


def pool_name_errors(name: str, path: str) -> list[FieldError]:
    """validatePoolName: required, at most 253 characters, DNS subdomains separated by '/'."""
    if not name:
        return [fields.required(path)]
    errors = [fields.too_long(path, MAX_POOL_NAME)] if len(name) > MAX_POOL_NAME else []
    for part in name.split("/"):
        errors += [fields.invalid(path, part, problem) for problem in subdomain_problems(part)]
    return errors


def binding_condition_errors(holder: Obj, path: str) -> list[FieldError]:
    """A device's (or result's) binding conditions: at most 4 of each, label names, no
    duplicates or overlap, and the one kind needs the other."""
    conditions = list(holder.get("bindingConditions") or [])
    failures = list(holder.get("bindingFailureConditions") or [])
    errors = list_errors(
        conditions,
        MAX_BINDING_CONDITIONS,
        f"{path}.bindingConditions",
        lambda c, p: qualified_name_errors(str(c), p),
    )
    errors += list_errors(
        failures,
        MAX_BINDING_CONDITIONS,
        f"{path}.bindingFailureConditions",
        lambda c, p: qualified_name_errors(str(c), p),
    )
    for index, condition in enumerate(conditions):
        if condition in conditions[:index]:
            errors.append(fields.duplicate(f"{path}.bindingConditions[{index}]", condition))
    for index, condition in enumerate(failures):
        at = f"{path}.bindingFailureConditions[{index}]"
        if condition in failures[:index]:
            errors.append(fields.duplicate(at, condition))
        if condition in conditions:
            errors.append(
                fields.invalid(
                    at,
                    condition,
                    "bindingFailureConditions must not overlap with bindingConditions",
                )
            )
    if not conditions and failures:
        errors.append(
            fields.invalid(
                f"{path}.bindingConditions",
                holder.get("bindingConditions"),
                "bindingConditions are required to use bindingFailureConditions",
            )
        )
    if not failures and conditions:
        errors.append(
            fields.invalid(
                f"{path}.bindingFailureConditions",
                holder.get("bindingFailureConditions"),
                "bindingFailureConditions are required to use bindingConditions",
            )
        )
    return errors


def _node_selection_errors(spec: Obj) -> list[FieldError]:
    """Exactly one of nodeName, nodeSelector, allNodes (true), perDeviceNodeSelection (true)."""
    errors: list[FieldError] = []
    chosen: list[str] = []
    node_name = spec.get("nodeName")
    if node_name is not None:
        if node_name:
            chosen.append("`nodeName`")
            errors += [
                fields.invalid("spec.nodeName", node_name, p)
                for p in subdomain_problems(str(node_name))
            ]
        else:
            errors.append(
                fields.invalid(
                    "spec.nodeName", "", "must be either unset or set to a non-empty string"
                )
            )
    selector = spec.get("nodeSelector")
    if selector is not None:
        chosen.append("`nodeSelector`")
        errors += node_selector_errors(selector, "spec.nodeSelector")
        terms = (selector or {}).get("nodeSelectorTerms") if isinstance(selector, dict) else None
        terms = terms if isinstance(terms, list) else []
        if len(terms) != 1:
            shown = go_structs.go_json(terms, go_structs.NODE_SELECTOR_TERMS)
            errors.append(
                FieldError(
                    "spec.nodeSelector.nodeSelectorTerms",
                    f"Invalid value: {shown}: must have exactly one node selector term",
                )
            )
    for key, label in (
        ("allNodes", "`allNodes`"),
        ("perDeviceNodeSelection", "`perDeviceNodeSelection`"),
    ):
        value = spec.get(key)
        if value is None:
            continue
        if value:
            chosen.append(label)
        else:
            errors.append(
                fields.invalid(f"spec.{key}", False, "must be either unset or set to true")
            )
    if not chosen:
        errors.append(fields.required("spec", _ONE_OF))
    elif len(chosen) > 1:
        errors.append(
            fields.invalid(
                "spec", "{" + ", ".join(chosen) + "}", f"{_ONE_OF}, but multiple fields are set"
            )
        )
    return errors


def _device_limit(devices: Any) -> int:
    for device in devices or []:
        if isinstance(device, dict) and (device.get("taints") or device.get("consumesCounters")):
            return MAX_DEVICES_WITH_ADVANCED_FEATURES
    return MAX_DEVICES


def _device_errors(device: Obj, old: Obj | None, path: str, per_device: Any) -> list[FieldError]:
    name = str(device.get("name") or "")
    errors = [fields.invalid(f"{path}.name", name, p) for p in label_problems(name)]
    attributes = device.get("attributes") or {}
    capacity = device.get("capacity") or {}
    total = len(attributes) + len(capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        errors.append(
            fields.invalid(
                path,
                total,
                "the total number of attributes and capacities must not exceed "
                f"{MAX_ATTRIBUTES_AND_CAPACITIES}",
            )
        )
    if len(attributes) > MAX_ATTRIBUTE_VALUES:
        errors.append(
            fields.invalid(
                path,
                len(attributes),
                f"the total number of attribute values must not exceed {MAX_ATTRIBUTE_VALUES}",
            )
        )
    for key, attribute in attributes.items():
        errors += qualified_attribute_errors(str(key), f"{path}.attributes")
        errors += _attribute_errors(attribute, f"{path}.attributes[{_shown_key(str(key))}]")
    shared = device.get("allowMultipleAllocations") is True
    for key, entry in capacity.items():
        errors += qualified_attribute_errors(str(key), f"{path}.capacity")
        errors += _capacity_errors(entry, f"{path}.capacity[{_shown_key(str(key))}]", shared)
    if old is None or old.get("taints") != device.get("taints"):
        errors += list_errors(device.get("taints"), MAX_TAINTS, f"{path}.taints", _taint_errors)
    errors += unique_list_errors(
        device.get("consumesCounters"),
        MAX_COUNTER_CONSUMPTIONS,
        f"{path}.consumesCounters",
        _consumption_errors,
        lambda consumption: str(consumption.get("counterSet", "")),
    )
    errors += _device_node_errors(device, path, per_device is True)
    return errors + binding_condition_errors(device, path)


def _device_node_errors(device: Obj, path: str, per_device: bool) -> list[FieldError]:
    fields_set = [k for k in ("nodeName", "nodeSelector", "allNodes") if device.get(k) is not None]
    if not per_device:
        if fields_set:
            return [
                fields.invalid(
                    path,
                    None,
                    "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
                )
            ]
        return []
    errors: list[FieldError] = []
    chosen: list[str] = []
    if device.get("nodeName") is not None:
        node_name = str(device["nodeName"])
        if node_name:
            chosen.append("`nodeName`")
            errors += [
                fields.invalid(f"{path}.nodeName", node_name, p)
                for p in subdomain_problems(node_name)
            ]
        else:
            errors.append(fields.invalid(f"{path}.nodeName", "", "must not be empty"))
    if device.get("nodeSelector") is not None:
        chosen.append("`nodeSelector`")
        errors += node_selector_errors(device["nodeSelector"], f"{path}.nodeSelector")
    if device.get("allNodes") is not None:
        if device["allNodes"]:
            chosen.append("`allNodes`")
        else:
            errors.append(
                fields.invalid(f"{path}.allNodes", False, "must be either unset or set to true")
            )
    if not chosen:
        errors.append(fields.required(path, _DEVICE_ONE_OF))
    elif len(chosen) > 1:
        errors.append(fields.invalid(path, "{" + ", ".join(chosen) + "}", _DEVICE_ONE_OF))
    return errors


def _attribute_errors(attribute: Any, path: str) -> list[FieldError]:
    attribute = attribute if isinstance(attribute, dict) else {}
    errors: list[FieldError] = []
    present = [name for name in _SCALAR_ATTRIBUTES if attribute.get(name) is not None]
    if "string" in present and len(str(attribute["string"])) > MAX_ATTRIBUTE_VALUE_LENGTH:
        errors.append(fields.too_long(f"{path}.string", MAX_ATTRIBUTE_VALUE_LENGTH))
    if "version" in present:
        version = str(attribute["version"])
        if not _SEMVER.match(version):
            errors.append(
                fields.invalid(
                    f"{path}.version",
                    version,
                    "must be a string compatible with semver.org spec 2.0.0",
                )
            )
        if len(version) > MAX_ATTRIBUTE_VALUE_LENGTH:
            errors.append(fields.too_long(f"{path}.version", MAX_ATTRIBUTE_VALUE_LENGTH))
    if not present:
        errors.append(fields.invalid(path, "", "exactly one value must be specified"))
    elif len(present) > 1:
        shown = go_structs.go_json(attribute, go_structs.ATTRIBUTE)
        errors.append(
            FieldError(path, f"Invalid value: {shown}: exactly one value must be specified")
        )
    return errors


def _capacity_errors(entry: Any, path: str, shared: bool) -> list[FieldError]:
    entry = entry if isinstance(entry, dict) else {}
    policy = entry.get("requestPolicy")
    if policy is None:
        return []
    if not shared:
        return [fields.forbidden(f"{path}.requestPolicy", "allowMultipleAllocations must be true")]
    return _request_policy_errors(entry.get("value"), policy, f"{path}.requestPolicy")


def _request_policy_errors(capacity: Any, policy: Obj, path: str) -> list[FieldError]:
    """validateRequestPolicy: one of validValues (sorted, at most 10, within the capacity,
    holding the default) or validRange (min, max, step within the capacity, the default
    inside), the default required with either."""
    maximum = quantity(capacity) or 0
    values = list(policy.get("validValues") or [])
    valid_range = policy.get("validRange")
    if values and valid_range is not None:
        return [
            fields.forbidden(
                path,
                'exactly one policy can be specified, cannot specify "validValues" and '
                '"validRange" at the same time',
            )
        ]
    default = policy.get("default")
    if values:
        if default is None:
            return [fields.required(f"{path}.default", "required when validValues is defined")]
        return _valid_values_errors(values, default, maximum, capacity, f"{path}.validValues")
    if valid_range is not None:
        if default is None:
            return [fields.required(f"{path}.default", "required when validRange is defined")]
        return _valid_range_errors(valid_range, default, maximum, capacity, f"{path}.validRange")
    return []


def _valid_values_errors(
    values: list[Any], default: Any, maximum: Any, capacity: Any, path: str
) -> list[FieldError]:
    errors: list[FieldError] = []
    parsed = [quantity(v) or 0 for v in values]
    for index in range(len(parsed) - 1):
        if parsed[index] > parsed[index + 1]:
            errors.append(
                fields.invalid(
                    f"{path}[{index + 1}]",
                    str(values[index + 1]),
                    "values must be sorted in ascending order",
                )
            )
    if len(values) > MAX_VALID_VALUES:
        errors.append(fields.too_many(path, len(values), MAX_VALID_VALUES))
        return errors
    for index, value in enumerate(parsed):
        if value > maximum:
            errors.append(
                fields.invalid(
                    f"{path}[{index}]",
                    str(values[index]),
                    f"option is larger than capacity value: {capacity}",
                )
            )
    seen: set[Any] = set()
    for index, value in enumerate(parsed):
        if value in seen:
            errors.append(fields.duplicate(f"{path}[{index}]", str(int(value))))
        seen.add(value)
    if quantity(default) not in parsed:
        errors.append(
            fields.invalid(
                path, str(default), "default value is not valid according to the requestPolicy"
            )
        )
    return errors


def _valid_range_errors(
    valid_range: Obj, default: Any, maximum: Any, capacity: Any, path: str
) -> list[FieldError]:
    low = valid_range.get("min")
    if low is None:
        return [fields.required(f"{path}.min", "required when validRange is defined")]
    errors: list[FieldError] = []
    low_value, default_value = quantity(low) or 0, quantity(default) or 0
    if low_value > maximum:
        errors.append(
            fields.invalid(
                f"{path}.min", str(low), f"min is larger than capacity value: {capacity}"
            )
        )
    if default_value < low_value:
        errors.append(
            fields.invalid(f"{path}.min", str(default), f"default is less than min: {low}")
        )
    high = valid_range.get("max")
    if high is not None:
        high_value = quantity(high) or 0
        if low_value > high_value:
            errors.append(
                fields.invalid(f"{path}.max", str(low), f"min is larger than max: {high}")
            )
        if high_value > maximum:
            errors.append(
                fields.invalid(
                    f"{path}.max", str(high), f"max is larger than capacity value: {capacity}"
                )
            )
        if default_value > high_value:
            errors.append(
                fields.invalid(f"{path}.max", str(default), f"default is more than max: {high}")
            )
    step = valid_range.get("step")
    if step is not None:
        step_value = quantity(step) or 0
        if low_value + step_value > maximum:
            errors.append(
                fields.invalid(
                    f"{path}.step",
                    str(step),
                    f"one step {low_value + step_value} is larger than capacity value: {capacity}",
                )
            )
        for value, shown in (
            (default_value, default),
            *(((quantity(high) or 0, high),) if high is not None else ()),
        ):
            if step_value and (int(value) - int(low_value)) % int(step_value):
                errors.append(
                    fields.invalid(
                        f"{path}.step",
                        str(shown),
                        f"value is not a multiple of a given step ({step}) from ({low})",
                    )
                )
    return errors


def _taint_errors(taint: Obj, path: str) -> list[FieldError]:
    errors = qualified_name_errors(str(taint.get("key") or ""), f"{path}.key")
    value = str(taint.get("value") or "")
    if value:
        errors += label_value_errors(value, f"{path}.value")
    effect = taint.get("effect") or ""
    if not effect:
        errors.append(fields.required(f"{path}.effect"))
    elif effect not in TAINT_EFFECTS:
        errors.append(fields.not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return errors


def _counter_set_errors(counter_set: Obj, path: str) -> list[FieldError]:
    name = str(counter_set.get("name") or "")
    errors = (
        [fields.required(f"{path}.name")]
        if not name
        else [fields.invalid(f"{path}.name", name, p) for p in label_problems(name)]
    )
    return errors + _counters_errors(
        counter_set.get("counters"), f"{path}.counters", MAX_COUNTERS_PER_SET
    )


def _consumption_errors(consumption: Obj, path: str) -> list[FieldError]:
    name = str(consumption.get("counterSet") or "")
    errors = (
        [fields.required(f"{path}.counterSet")]
        if not name
        else [fields.invalid(f"{path}.counterSet", name, p) for p in label_problems(name)]
    )
    return errors + _counters_errors(
        consumption.get("counters"), f"{path}.counters", MAX_COUNTERS_PER_CONSUMPTION
    )


def _counters_errors(counters: Any, path: str, limit: int) -> list[FieldError]:
    if not counters:
        return [fields.required(path)]
    if len(counters) > limit:
        return [fields.too_many(path, len(counters), limit)]
    errors: list[FieldError] = []
    for name in counters:
        errors += [fields.invalid(path, name, p) for p in label_problems(str(name))]
    return errors


def _shown_key(key: str) -> str:
    """A map key as kube's paths show it: cut in the middle when longer than a domain, a
    slash and an ID."""
    if len(key) <= _MAX_KEY_SHOWN:
        return key
    remaining = _MAX_KEY_SHOWN - 3
    return key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2 :]
