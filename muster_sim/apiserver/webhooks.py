"""Admission webhooks: call the stored Mutating/ValidatingWebhookConfigurations as kube does.

Matching (rules, namespaceSelector, objectSelector, matchConditions in CEL), the
AdmissionReview v1 exchange over HTTPS, JSON patches, failurePolicy, timeouts and the
errors a denial or a failed call answers with follow
staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook (kube 1.30, the version sim
reports).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import ssl
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import celpy
import msgspec
from celpy.adapter import json_to_cel

from muster_sim.apiserver.patch import PatchError, json_patch
from muster_sim.apiserver.resources import Kind
from muster_sim.apiserver.store import Store
from muster_sim.errors import ApiError, FieldError, internal_error
from muster_sim.selectors import label_selector_matches

Obj = dict[str, Any]
log = logging.getLogger("muster.sim.webhooks")

MUTATING = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
VALIDATING = "validatingwebhookconfigurations.admissionregistration.k8s.io"
NAMESPACES = "namespaces"
DEFAULT_TIMEOUT_SECONDS = 10
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class RequestUser:
    """The authenticated user an AdmissionReview names (until sim's authenticator hands one)."""

    name: str = "system:admin"
    uid: str = ""
    groups: tuple[str, ...] = ("system:masters", "system:authenticated")
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class AdmissionAttributes:
    """One write as admission sees it: what, where, who, and the objects before and after."""

    kind: Kind
    operation: str
    namespace: str | None
    name: str
    subresource: str | None
    object: Obj | None
    old_object: Obj | None
    user: Any = None
    options: Obj | None = None
    # the object's own group/version/kind when it is not the resource's (pods/binding: Binding)
    object_kind: tuple[str, str, str] | None = None
    warnings: list[str] = field(default_factory=list)


def _as_user_info(user: Any) -> Obj:
    user = user if user is not None else RequestUser()
    info: Obj = {"username": str(getattr(user, "name", ""))}
    if getattr(user, "uid", ""):
        info["uid"] = str(user.uid)
    groups = list(getattr(user, "groups", ()) or ())
    if groups:
        info["groups"] = groups
    extra = getattr(user, "extra", None) or {}
    if extra:
        info["extra"] = {k: list(v) for k, v in extra.items()}
    return info


class _CallFailed(Exception):
    """A webhook could not be called or answered nonsense (failurePolicy decides)."""


class WebhookDispatcher:
    """Finds the webhooks a write matches and calls them, mutating first, then validating."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._programs: dict[str, Any] = {}
        self._cel = celpy.Environment()

    def active(self) -> bool:
        """Whether any webhook configuration exists (else writes skip admission entirely)."""
        return bool(self.store.count(MUTATING) or self.store.count(VALIDATING))

    # -- the two phases ------------------------------------------------------

    async def mutate(self, attrs: AdmissionAttributes, reconcile: Callable[[Obj], None]) -> None:
        """Call matching mutating webhooks in name order, applying their JSON patches to
        attrs.object; `reconcile` re-prunes and re-defaults a patched object."""
        hooks = self._hooks(MUTATING)
        if not hooks:
            return
        ran: list[tuple[int, Obj]] = []
        last_change = -1
        for index, hook in enumerate(hooks):
            if await self._call_mutating(hook, attrs, reconcile):
                last_change = index
            ran.append((index, hook))
        # reinvocationPolicy IfNeeded: once more if a later webhook changed the object
        for index, hook in ran:
            if hook.get("reinvocationPolicy") == "IfNeeded" and index < last_change:
                await self._call_mutating(hook, attrs, reconcile)

    async def validate(self, attrs: AdmissionAttributes) -> None:
        """Call matching validating webhooks (sequentially; kube calls them in parallel)."""
        for hook in self._hooks(VALIDATING):
            if not self._matches(hook, attrs):
                continue
            response = await self._call_or_policy(hook, attrs)
            if response is not None and not response.get("allowed"):
                raise _denial(hook["name"], response)

    # -- matching ------------------------------------------------------------

    def _hooks(self, key: str) -> list[Obj]:
        configs = sorted(self.store.iter_all(key), key=lambda c: str(c["metadata"]["name"]))
        return [h for c in configs for h in c.get("webhooks") or [] if isinstance(h, dict)]

    def _matches(self, hook: Obj, attrs: AdmissionAttributes) -> bool:
        if not any(_rule_matches(r, attrs) for r in hook.get("rules") or []):
            return False
        if not self._namespace_matches(hook, attrs):
            return False
        selector = hook.get("objectSelector")
        if not selector:
            return True
        # an update matches on the labels before or after it
        return any(
            label_selector_matches(selector, (o.get("metadata") or {}).get("labels") or {})
            for o in (attrs.object, attrs.old_object)
            if o is not None
        )

    def _namespace_matches(self, hook: Obj, attrs: AdmissionAttributes) -> bool:
        selector = hook.get("namespaceSelector")
        if not selector:
            return True
        if attrs.kind.key == NAMESPACES:
            # a Namespace is matched on its own labels
            obj = attrs.object or attrs.old_object or {}
            labels = dict((obj.get("metadata") or {}).get("labels") or {})
            labels.setdefault(NAMESPACE_NAME_LABEL, attrs.name)
            return label_selector_matches(selector, labels)
        if not attrs.kind.namespaced or not attrs.namespace:
            return True
        ns = self.store.get(NAMESPACES, "", attrs.namespace)
        labels = dict(((ns or {}).get("metadata") or {}).get("labels") or {})
        # the namespace controller labels every namespace with its name
        labels[NAMESPACE_NAME_LABEL] = attrs.namespace
        return label_selector_matches(selector, labels)

    def _conditions_match(self, hook: Obj, attrs: AdmissionAttributes, review: Obj) -> bool:
        """matchConditions: all true to call; an evaluation error is a call failure."""
        conditions = hook.get("matchConditions") or []
        if not conditions:
            return True
        activation = {
            "object": json_to_cel(attrs.object),
            "oldObject": json_to_cel(attrs.old_object),
            "request": json_to_cel(
                {k: v for k, v in review.items() if k not in ("object", "oldObject")}
            ),
        }
        for condition in conditions:
            expression = str(condition.get("expression", ""))
            try:
                program = self._program(expression)
                result = program.evaluate(activation)
            except Exception as error:  # cel-python raises several unrelated types
                raise _CallFailed(
                    f"matchCondition {condition.get('name')!r} ({expression}) failed: {error}"
                ) from None
            if not isinstance(result, bool) and not hasattr(result, "__bool__"):
                raise _CallFailed(
                    f"matchCondition {condition.get('name')!r} ({expression}) is not a boolean"
                )
            if not bool(result):
                return False
        return True

    def _program(self, expression: str) -> Any:
        program = self._programs.get(expression)
        if program is None:
            program = self._programs[expression] = self._cel.program(self._cel.compile(expression))
        return program

    # -- calling -------------------------------------------------------------

    async def _call_mutating(
        self, hook: Obj, attrs: AdmissionAttributes, reconcile: Callable[[Obj], None]
    ) -> bool:
        if not self._matches(hook, attrs):
            return False
        response = await self._call_or_policy(hook, attrs)
        if response is None:
            return False
        if not response.get("allowed"):
            raise _denial(hook["name"], response)
        patch_text = response.get("patch")
        if not patch_text:
            return False
        try:
            if response.get("patchType") != "JSONPatch":
                raise _CallFailed(
                    f'the response patchType {response.get("patchType")!r} is not "JSONPatch"'
                )
            if attrs.object is None:
                raise _CallFailed(f"a patch for a {attrs.operation} request, which has no object")
            operations = json.loads(base64.b64decode(patch_text))
            patched = json_patch(attrs.object, operations)
        except (_CallFailed, PatchError, binascii.Error, ValueError) as error:
            if _fails_closed(hook):
                raise internal_error(f'failed calling webhook "{hook["name"]}": {error}') from None
            log.warning("webhook %s: patch ignored (failurePolicy Ignore): %s", hook["name"], error)
            return False
        if not isinstance(patched, dict):
            raise internal_error(
                f'failed calling webhook "{hook["name"]}": the patch did not produce an object'
            )
        changed = patched != attrs.object
        reconcile(patched)
        attrs.object.clear()
        attrs.object.update(patched)
        return changed

    async def _call_or_policy(self, hook: Obj, attrs: AdmissionAttributes) -> Obj | None:
        """The webhook's response, or None when it failed and failurePolicy is Ignore."""
        review = self._review(attrs)
        try:
            if not self._conditions_match(hook, attrs, review["request"]):
                return None
            response = await self._call(hook, review)
        except _CallFailed as error:
            if _fails_closed(hook):
                raise internal_error(f'failed calling webhook "{hook["name"]}": {error}') from None
            log.warning("webhook %s failed (failurePolicy Ignore): %s", hook["name"], error)
            return None
        attrs.warnings.extend(str(w) for w in response.get("warnings") or [])
        return response

    def _review(self, attrs: AdmissionAttributes) -> Obj:
        kind = attrs.kind
        group, version, kind_name = attrs.object_kind or (kind.group, kind.version, kind.kind)
        request: Obj = {
            "uid": str(uuid.uuid4()),
            "kind": {"group": group, "version": version, "kind": kind_name},
            "resource": {"group": kind.group, "version": kind.version, "resource": kind.plural},
        }
        if attrs.subresource:
            request["subResource"] = attrs.subresource
        request["requestKind"] = request["kind"]
        request["requestResource"] = request["resource"]
        if attrs.subresource:
            request["requestSubResource"] = attrs.subresource
        if attrs.name:
            request["name"] = attrs.name
        if attrs.namespace:
            request["namespace"] = attrs.namespace
        request["operation"] = attrs.operation
        request["userInfo"] = _as_user_info(attrs.user)
        request["object"] = attrs.object
        request["oldObject"] = attrs.old_object
        options = dict(attrs.options or {})
        request["dryRun"] = bool(options.get("dryRun"))
        options.setdefault("kind", _OPTIONS_KIND.get(attrs.operation, "CreateOptions"))
        options.setdefault("apiVersion", "meta.k8s.io/v1")
        request["options"] = options
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}

    async def _call(self, hook: Obj, review: Obj) -> Obj:
        config = hook.get("clientConfig") or {}
        timeout = int(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
        url = config.get("url")
        if not url:
            service = config.get("service") or {}
            target = (
                f"https://{service.get('name')}.{service.get('namespace')}.svc:"
                f"{service.get('port', 443)}{service.get('path', '')}?timeout={timeout}s"
            )
            # there is no service network behind sim: the real server would fail to dial
            raise _CallFailed(
                f'failed to call webhook: Post "{target}": muster sim has no service network '
                "to resolve clientConfig.service; give the webhook a clientConfig.url"
            )
        target = f"{url}{'&' if '?' in url else '?'}timeout={timeout}s"
        context = _ssl_context(config.get("caBundle"))
        body = _encode(review)
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
                session.post(
                    target,
                    data=body,
                    headers={"Content-Type": "application/json", "Accept": "application/json"},
                    ssl=context,
                ) as answer,
            ):
                raw = await answer.read()
                status = answer.status
        except TimeoutError:
            raise _CallFailed(
                f'failed to call webhook: Post "{target}": context deadline exceeded'
            ) from None
        except aiohttp.ClientError as error:
            raise _CallFailed(f'failed to call webhook: Post "{target}": {error}') from None
        if status != 200:
            raise _CallFailed(
                f"received invalid webhook response: the server responded with status {status}"
            )
        try:
            decoded = json.loads(raw)
        except ValueError as error:
            raise _CallFailed(f"received invalid webhook response: {error}") from None
        response = decoded.get("response") if isinstance(decoded, dict) else None
        if not isinstance(response, dict):
            raise _CallFailed("received invalid webhook response: the response is missing")
        if response.get("uid") != review["request"]["uid"]:
            raise _CallFailed(
                f'expected response.uid="{review["request"]["uid"]}", got "{response.get("uid")}"'
            )
        return response


def _fails_closed(hook: Obj) -> bool:
    return bool(hook.get("failurePolicy", "Fail") != "Ignore")


def _ssl_context(ca_bundle: Any) -> ssl.SSLContext:
    if ca_bundle:
        try:
            pem = base64.b64decode(str(ca_bundle)).decode()
            return ssl.create_default_context(cadata=pem)
        except (binascii.Error, UnicodeDecodeError, ssl.SSLError) as error:
            raise _CallFailed(f"failed to call webhook: clientConfig.caBundle: {error}") from None
    return ssl.create_default_context()


def _denial(name: str, response: Obj) -> ApiError:
    """A rejection as kube 1.30's ToStatusErr words it."""
    status = response.get("status") if isinstance(response.get("status"), dict) else {}
    assert isinstance(status, dict)
    code = int(status.get("code") or 0)
    if code < 400:
        code = 400
    denied = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message = f"{denied}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied}: {status['reason']}"
    else:
        message = f"{denied} without explanation"
    return ApiError(code, str(status.get("reason") or ""), message, status.get("details"))


def _rule_matches(rule: Obj, attrs: AdmissionAttributes) -> bool:
    kind = attrs.kind
    operations = rule.get("operations") or []
    if "*" not in operations and attrs.operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and kind.group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if "*" not in versions and kind.version not in versions:
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and kind.namespaced:
        return False
    if scope == "Namespaced" and not kind.namespaced:
        return False
    sub = attrs.subresource or ""
    for resource in rule.get("resources") or []:
        base, _, wanted_sub = str(resource).partition("/")
        if base not in ("*", kind.plural):
            continue
        if not wanted_sub and not sub:
            return True
        if wanted_sub and (wanted_sub == "*" or wanted_sub == sub):
            return True
    return False


# -- the configurations themselves ------------------------------------------------


def default_configuration(obj: Obj, mutating: bool) -> None:
    """Fill the defaults admissionregistration.k8s.io/v1 gives every webhook."""
    for hook in obj.get("webhooks") or []:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
        if mutating:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def configuration_errors(obj: Obj, cel: celpy.Environment | None = None) -> list[FieldError]:
    """Why a webhook configuration would be refused (the checks sim can make), as 422 causes."""
    cel = cel or celpy.Environment()
    errors: list[FieldError] = []
    names: set[str] = set()
    for i, hook in enumerate(obj.get("webhooks") or []):
        path = f"webhooks[{i}]"
        if not isinstance(hook, dict):
            errors.append(FieldError(path, "Invalid value: must be an object"))
            continue
        name = hook.get("name")
        if not name:
            errors.append(FieldError(f"{path}.name", "Required value", "FieldValueRequired"))
        elif name in names:
            errors.append(
                FieldError(f"{path}.name", f'Duplicate value: "{name}"', "FieldValueDuplicate")
            )
        names.add(str(name))
        config = hook.get("clientConfig") or {}
        if bool(config.get("url")) == bool(config.get("service")):
            errors.append(
                FieldError(
                    f"{path}.clientConfig",
                    "Required value: exactly one of url or service is required",
                    "FieldValueRequired",
                )
            )
        elif config.get("url") and not str(config["url"]).startswith("https://"):
            errors.append(
                FieldError(
                    f"{path}.clientConfig.url",
                    f"Invalid value: \"{config['url']}\": 'https' is the only allowed URL scheme",
                )
            )
        versions = hook.get("admissionReviewVersions") or []
        if "v1" not in versions:
            errors.append(
                FieldError(
                    f"{path}.admissionReviewVersions",
                    f"Invalid value: {json.dumps(versions)}: must include v1 "
                    "(muster sim speaks AdmissionReview v1 only)",
                )
            )
        side_effects = hook.get("sideEffects")
        if side_effects not in ("None", "NoneOnDryRun"):
            errors.append(
                FieldError(
                    f"{path}.sideEffects",
                    f"Unsupported value: {json.dumps(side_effects)}: supported values: "
                    '"None", "NoneOnDryRun"',
                    "FieldValueNotSupported" if side_effects else "FieldValueRequired",
                )
            )
        timeout = hook.get("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
        if not isinstance(timeout, int) or not 1 <= timeout <= 30:
            errors.append(
                FieldError(
                    f"{path}.timeoutSeconds",
                    f"Invalid value: {timeout}: the timeout value must be between 1 and 30 seconds",
                )
            )
        policy = hook.get("failurePolicy", "Fail")
        if policy not in ("Fail", "Ignore"):
            errors.append(
                FieldError(
                    f"{path}.failurePolicy",
                    f'Unsupported value: "{policy}": supported values: "Fail", "Ignore"',
                    "FieldValueNotSupported",
                )
            )
        if hook.get("matchPolicy", "Equivalent") != "Equivalent" and hook["matchPolicy"] != "Exact":
            errors.append(
                FieldError(
                    f"{path}.matchPolicy",
                    f'Unsupported value: "{hook["matchPolicy"]}": supported values: '
                    '"Equivalent", "Exact"',
                    "FieldValueNotSupported",
                )
            )
        for j, condition in enumerate(hook.get("matchConditions") or []):
            expression = str((condition or {}).get("expression", ""))
            try:
                cel.compile(expression)
            except Exception as error:  # cel-python's parse errors share no base class
                errors.append(
                    FieldError(
                        f"{path}.matchConditions[{j}].expression",
                        f"Invalid value: {json.dumps(expression)}: compilation failed: {error}",
                    )
                )
        for j, rule in enumerate(hook.get("rules") or []):
            for op in (rule or {}).get("operations") or []:
                if op not in ("*", "CREATE", "UPDATE", "DELETE", "CONNECT"):
                    errors.append(
                        FieldError(
                            f"{path}.rules[{j}].operations",
                            f'Unsupported value: "{op}": supported values: "*", "CONNECT", '
                            '"CREATE", "DELETE", "UPDATE"',
                            "FieldValueNotSupported",
                        )
                    )
    return errors
