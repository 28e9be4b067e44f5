"""Authorization as kube-apiserver's RBAC authorizer decides it, from the RBAC objects in the store.

Request attributes come from the method and path the way the server's RequestInfoFactory derives
them (verb, API group, namespace, resource, subresource, name; or a non-resource path). Members of
system:masters are allowed before RBAC is asked, as kube-apiserver's privileged-group authorizer
does. A user's rules are gathered once and cached until an RBAC object changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from muster_sim.access.authn import AUTHENTICATED, MASTERS, UNAUTHENTICATED, UserInfo
from muster_sim.apiserver.store import Store
from muster_sim.errors import ApiError
from muster_sim.selectors import label_selector_matches
from muster_sim.validation.strategy import Denied, Permission

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
ROLES = f"roles.{GROUP}"
CLUSTER_ROLES = f"clusterroles.{GROUP}"
ROLE_BINDINGS = f"rolebindings.{GROUP}"
CLUSTER_ROLE_BINDINGS = f"clusterrolebindings.{GROUP}"
RBAC_KEYS = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)

_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_CACHE_LIMIT = 10_000


class Attributes(NamedTuple):
    """What a request asks to do, as an authorizer sees it (a tuple: made on every request)."""

    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """The attributes kube-apiserver's RequestInfoFactory derives from a request."""
    parts = [p for p in path.strip("/").split("/") if p]
    non_resource = Attributes(method.lower(), path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix == "apis":
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    by_path_prefix = parts[0] in _SPECIAL_VERBS
    if by_path_prefix:
        verb, parts = parts[0], parts[1:]
        if not parts:
            return Attributes(verb, path, True, group, version)
    else:
        verb = _METHOD_VERBS.get(method, "")
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "") in _TRUE else "list"
        # a list or watch of one name (fieldSelector=metadata.name=x) is authorized for it
        for term in query.get("fieldSelector", "").split(","):
            key, _, value = term.partition("=")
            if key.strip() == "metadata.name":
                name = value.removeprefix("=").strip()
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb, path, True, group, version, namespace, resource, subresource, name)


# -- rules -------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """One PolicyRule with its lists as sets, for matching many requests."""

    verbs: frozenset[str]
    groups: frozenset[str]
    resources: frozenset[str]
    names: frozenset[str]
    urls: tuple[str, ...]

    @classmethod
    def of(cls, rule: Obj) -> Rule:
        """Compile a PolicyRule object."""
        return cls(
            frozenset(rule.get("verbs") or ()),
            frozenset(rule.get("apiGroups") or ()),
            frozenset(rule.get("resources") or ()),
            frozenset(rule.get("resourceNames") or ()),
            tuple(rule.get("nonResourceURLs") or ()),
        )

    def allows(self, attrs: Attributes) -> bool:
        """Whether the rule covers the request (rbac's RuleAllows)."""
        if "*" not in self.verbs and attrs.verb not in self.verbs:
            return False
        if not attrs.resource_request:
            return any(
                url == "*"
                or url == attrs.path
                or (url.endswith("*") and attrs.path.startswith(url[:-1]))
                for url in self.urls
            )
        if "*" not in self.groups and attrs.api_group not in self.groups:
            return False
        resources = self.resources
        if "*" not in resources:
            if attrs.subresource:
                combined = f"{attrs.resource}/{attrs.subresource}"
                if combined not in resources and f"*/{attrs.subresource}" not in resources:
                    return False
            elif attrs.resource not in resources:
                return False
        return not self.names or attrs.name in self.names


@dataclass
class UserRules:
    """The rules bound to one user: cluster-wide, per namespace, and the roles that were missing."""

    cluster: list[Rule] = field(default_factory=list)
    namespaced: dict[str, list[Rule]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # decisions by attributes without the name, kept only while no rule names objects
    decisions: dict[tuple[str, ...], tuple[bool, str]] | None = field(default_factory=dict)

    @property
    def names_objects(self) -> bool:
        """Whether some rule has resourceNames, which make decisions depend on the name."""
        rules = [*self.cluster, *(r for each in self.namespaced.values() for r in each)]
        return any(rule.names for rule in rules)


def _applies(subject: Obj, user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        # a RoleBinding's subject without a namespace means the binding's namespace
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.name == f"system:serviceaccount:{namespace}:{name}"
    return False


class RbacAuthorizer:
    """Allows or forbids requests by the RBAC objects in the store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: dict[tuple[str, tuple[str, ...]], UserRules] = {}
        for key in RBAC_KEYS:
            store.listen(key, self._invalidate)

    def _invalidate(self, _event: object) -> None:
        self._cache.clear()

    def authorize(self, user: UserInfo, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason): the reason names roles a binding referenced that do not exist."""
        if MASTERS in user.groups:
            return True, ""
        rules = self.rules_for(user)
        key = (
            attrs.verb,
            attrs.path if not attrs.resource_request else "",
            attrs.api_group,
            attrs.namespace,
            attrs.resource,
            attrs.subresource,
        )
        if rules.decisions is not None:
            known = rules.decisions.get(key)
            if known is None:
                known = rules.decisions[key] = self._decide(rules, attrs)
            return known
        return self._decide(rules, attrs)

    def denial(self, user: UserInfo) -> Denied:
        """This authorizer's answer to `user` for permissions besides the request's own, which
        some writes need (a ResourceClaim's binding): None when granted, else the message of
        the 403 it would give."""

        def denied(permission: Permission) -> str | None:
            attrs = Attributes(
                permission.verb,
                "",
                True,
                permission.group,
                "",
                permission.namespace,
                permission.resource,
                permission.subresource,
                permission.name,
            )
            allowed, reason = self.authorize(user, attrs)
            return None if allowed else forbidden_error(user, attrs, reason).message

        return denied

    @staticmethod
    def _decide(rules: UserRules, attrs: Attributes) -> tuple[bool, str]:
        for rule in rules.cluster:
            if rule.allows(attrs):
                return True, ""
        if attrs.namespace:
            for rule in rules.namespaced.get(attrs.namespace, ()):
                if rule.allows(attrs):
                    return True, ""
        reason = ""
        if rules.errors:
            joined = rules.errors[0] if len(rules.errors) == 1 else f"[{', '.join(rules.errors)}]"
            reason = f"RBAC: {joined}"
        return False, reason

    def rules_for(self, user: UserInfo) -> UserRules:
        """Every rule bound to the user, gathered from the bindings (cached)."""
        key = (user.name, user.groups)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        rules = UserRules()
        for binding in self.store.iter_all(CLUSTER_ROLE_BINDINGS):
            if any(_applies(s, user, "") for s in binding.get("subjects") or ()):
                rules.cluster.extend(self._role_rules(binding, "", rules.errors))
        for binding in self.store.iter_all(ROLE_BINDINGS):
            namespace = str(binding["metadata"].get("namespace") or "")
            if any(_applies(s, user, namespace) for s in binding.get("subjects") or ()):
                found = self._role_rules(binding, namespace, rules.errors)
                rules.namespaced.setdefault(namespace, []).extend(found)
        if rules.names_objects:
            rules.decisions = None
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = rules
        return rules

    def _role_rules(self, binding: Obj, namespace: str, errors: list[str]) -> list[Rule]:
        ref = binding.get("roleRef") or {}
        name = str(ref.get("name", ""))
        if ref.get("kind") == "Role":
            role = self.store.get(ROLES, namespace, name)
            if role is None:
                errors.append(f'role.{GROUP} "{name}" not found')
                return []
            return [Rule.of(r) for r in role.get("rules") or ()]
        role = self.store.get(CLUSTER_ROLES, "", name)
        if role is None:
            errors.append(f'clusterrole.{GROUP} "{name}" not found')
            return []
        return [Rule.of(r) for r in self._cluster_role_rules(role)]

    def _cluster_role_rules(self, role: Obj) -> Iterable[Obj]:
        # an aggregated ClusterRole's rules are those of the ClusterRoles its selectors pick,
        # which the real clusterrole-aggregation controller copies into it
        aggregation = role.get("aggregationRule")
        if not aggregation:
            return list(role.get("rules") or ())
        selectors = aggregation.get("clusterRoleSelectors") or []
        rules: list[Obj] = []
        for other in self.store.iter_all(CLUSTER_ROLES):
            if other is role or other.get("aggregationRule"):
                continue
            labels = other["metadata"].get("labels") or {}
            if any(label_selector_matches(s, labels) for s in selectors):
                rules.extend(other.get("rules") or ())
        return rules


# -- the 403 -----------------------------------------------------------------


def _sanitize(text: str) -> str:
    # the server escapes what could pass for HTML; quotes stay
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def forbidden_error(user: UserInfo, attrs: Attributes, reason: str = "") -> ApiError:
    """403 with the Status body kube-apiserver's authorization filter writes."""
    if not attrs.resource_request:
        why = f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        resource = attrs.resource
        if attrs.subresource:
            resource = f"{resource}/{attrs.subresource}"
        where = (
            f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
        )
        why = (
            f'User "{user.name}" cannot {attrs.verb} resource "{resource}" in API group '
            f'"{attrs.api_group}" {where}'
        )
    why = _sanitize(why)
    if reason:
        why = f"{why}: {reason}"
    details: Obj = {}
    if not attrs.resource_request or not attrs.resource:
        message = f"forbidden: {why}"
    else:
        qualified = attrs.resource if not attrs.api_group else f"{attrs.resource}.{attrs.api_group}"
        message = (
            f'{qualified} "{attrs.name}" is forbidden: {why}'
            if attrs.name
            else f"{qualified} is forbidden: {why}"
        )
        if attrs.name:
            details["name"] = attrs.name
        if attrs.api_group:
            details["group"] = attrs.api_group
        details["kind"] = attrs.resource
    return ApiError(403, "Forbidden", message, details)


# -- bootstrap policy ----------------------------------------------------------


def _meta(name: str) -> Obj:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def _cluster_role(name: str, rules: list[Obj]) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": _meta(name),
        "rules": rules,
    }


def _binding_to_groups(name: str, groups: list[str]) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": g} for g in groups],
    }


def bootstrap_policy() -> list[tuple[str, Obj]]:
    """The default ClusterRoles and bindings kube-apiserver creates that muster's clients use."""
    health = ["/livez", "/readyz", "/healthz", "/version", "/version/"]
    discovery = [*health, "/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"]
    roles = [
        _cluster_role(
            "cluster-admin",
            [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        ),
        _cluster_role("system:discovery", [{"nonResourceURLs": discovery, "verbs": ["get"]}]),
        _cluster_role("system:public-info-viewer", [{"nonResourceURLs": health, "verbs": ["get"]}]),
        _cluster_role(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"],
                },
            ],
        ),
    ]
    bindings = [
        _binding_to_groups("cluster-admin", [MASTERS]),
        _binding_to_groups("system:discovery", [AUTHENTICATED]),
        _binding_to_groups("system:public-info-viewer", [AUTHENTICATED, UNAUTHENTICATED]),
        _binding_to_groups("system:basic-user", [AUTHENTICATED]),
    ]
    return [(CLUSTER_ROLES, r) for r in roles] + [(CLUSTER_ROLE_BINDINGS, b) for b in bindings]
