"""User impersonation (`kubectl --as`): Impersonate-* headers, allowed by the `impersonate` verb.

As kube-apiserver's impersonation filter: the requester must be allowed `impersonate` on the
user (or the ServiceAccount), on each group, on the uid and on each extra value; the request then
runs as the impersonated user, who is authenticated (or unauthenticated, for system:anonymous).
"""

from __future__ import annotations

from collections.abc import Mapping

from multidict import CIMultiDictProxy

from muster_sim.access.authn import (
    ANONYMOUS_USER,
    AUTHENTICATED,
    UNAUTHENTICATED,
    UserInfo,
)
from muster_sim.access.rbac import Attributes, RbacAuthorizer, forbidden_error
from muster_sim.errors import bad_request

USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"
EXTRA_PREFIX = "impersonate-extra-"
_SA_PREFIX = "system:serviceaccount:"


def requested(headers: Mapping[str, str]) -> bool:
    """Whether the request asks to impersonate anyone."""
    return any(k.lower().startswith("impersonate-") for k in headers)


def impersonate(
    user: UserInfo, headers: CIMultiDictProxy[str], authorizer: RbacAuthorizer | None
) -> UserInfo:
    """The user the request acts as; 403 unless `user` may impersonate every part of it."""
    name = headers.get(USER_HEADER, "")
    groups = list(headers.getall(GROUP_HEADER, []))
    uid = headers.get(UID_HEADER, "")
    extra: dict[str, tuple[str, ...]] = {}
    for key in {k.lower() for k in headers if k.lower().startswith(EXTRA_PREFIX)}:
        extra[key.removeprefix(EXTRA_PREFIX)] = tuple(headers.getall(key, []))
    if not name:
        asked = [h for h in headers if h.lower().startswith("impersonate-")]
        raise bad_request(f"requested {sorted(asked)} without impersonating a user")
    checks: list[Attributes] = []
    if name.startswith(_SA_PREFIX) and name.count(":") == 3:
        namespace, account = name.removeprefix(_SA_PREFIX).split(":")
        checks.append(_acting_as("", "serviceaccounts", account, namespace))
        if not groups:
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    else:
        checks.append(_acting_as("", "users", name))
    checks.extend(_acting_as("", "groups", group) for group in groups)
    if uid:
        checks.append(_acting_as("authentication.k8s.io", "uids", uid))
    for key, values in extra.items():
        checks.extend(_acting_as("authentication.k8s.io", "userextras", v, sub=key) for v in values)
    if authorizer is not None and not user.is_master:
        for attrs in checks:
            allowed, reason = authorizer.authorize(user, attrs)
            if not allowed:
                raise forbidden_error(user, attrs, reason)
    marker = UNAUTHENTICATED if name == ANONYMOUS_USER else AUTHENTICATED
    if marker not in groups:
        groups.append(marker)
    return UserInfo(name, uid, tuple(groups), extra)


def _acting_as(
    group: str, resource: str, name: str, namespace: str = "", sub: str = ""
) -> Attributes:
    return Attributes(
        "impersonate",
        "",
        True,
        group,
        "v1",
        namespace,
        resource,
        sub,
        name,
    )
