"""DeviceClasses as kube-apiserver 1.36 validates them: the selectors every device of the
class meets, driver configuration, and the extended resource name a pod may ask for the
class by."""

from __future__ import annotations

from typing import Any

from muster_sim.errors import FieldError
from muster_sim.validation import fields
from muster_sim.validation.dra.claim_specs import (
    MAX_CONFIGS,
    configuration_errors,
    list_errors,
    selectors_errors,
)
from muster_sim.validation.names import qualified_name_errors
from muster_sim.validation.strategy import KindStrategy, WriteContext

Obj = dict[str, Any]

# the prefix a quota puts before a resource name; an extended resource name must take it
_REQUESTS_PREFIX = "requests."


class DeviceClassStrategy(KindStrategy):
    """DeviceClass: selectors that compile, driver configuration, an extended resource name."""

    group = "resource.k8s.io"
    kind = "DeviceClass"

    def _default(self, obj: Obj) -> None:
        obj.setdefault("spec", {})

    def validate_request(self, context: WriteContext, old: Obj | None, new: Obj) -> None:
        """422 listing every error; on update, selectors and config that did not change are
        taken as stored (a config's parameters may then be over today's size limit)."""
        spec = new.get("spec") or {}
        old_spec = (old or {}).get("spec") or {} if old is not None else None
        errors: list[FieldError] = []
        if old_spec is None or old_spec.get("selectors") != spec.get("selectors"):
            errors += selectors_errors(spec.get("selectors"), "spec.selectors")
        stored = old_spec is not None and old_spec.get("config") == spec.get("config")
        errors += list_errors(
            spec.get("config"),
            MAX_CONFIGS,
            "spec.config",
            lambda config, path: configuration_errors(config, path, stored),
        )
        name = spec.get("extendedResourceName")
        if name is not None and not is_extended_resource_name(str(name)):
            errors.append(
                fields.invalid(
                    "spec.extendedResourceName", name, "must be a valid extended resource name"
                )
            )
        self._refuse(new, errors)


def is_extended_resource_name(name: str) -> bool:
    """core's IsExtendedResourceName: a domain-prefixed name outside kubernetes.io that is a
    qualified name once a quota prefixes it with `requests.`."""
    native = "/" not in name or "kubernetes.io/" in name
    if native or name.startswith(_REQUESTS_PREFIX):
        return False
    return not qualified_name_errors(_REQUESTS_PREFIX + name, "")
