"""Authentication as kube-apiserver does it: client certificates, static and ServiceAccount tokens.

The chain, in kube-apiserver's order: a client certificate the TLS layer verified against sim's
CA (CN = user, O = groups), then a bearer token from the token file (or sim's admin token), then a
ServiceAccount token sim issued through TokenRequest. Every authenticated user gets the group
`system:authenticated`. A request with no credential is anonymous only on the health paths (as an
AuthenticationConfiguration with `anonymous.conditions` for /healthz, /livez, /readyz makes it);
anywhere else it is a 401, as with `--anonymous-auth=false`.
"""

from __future__ import annotations

import csv
import logging
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("muster.sim.authn")

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
MASTERS = "system:masters"
ANONYMOUS_USER = "system:anonymous"
ADMIN_USER = "muster-sim-admin"
# the paths an unauthenticated request may reach (system:public-info-viewer then allows them)
ANONYMOUS_PATHS = frozenset({"/healthz", "/livez", "/readyz"})


@dataclass(frozen=True)
class UserInfo:
    """Who sent a request: name, uid, groups and extra, as authorizers see it."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_master(self) -> bool:
        """Members of system:masters are allowed everything, before RBAC is asked."""
        return MASTERS in self.groups

    def with_authenticated_group(self) -> UserInfo:
        """The user as the authenticator chain hands it on: with system:authenticated."""
        if AUTHENTICATED in self.groups:
            return self
        return UserInfo(self.name, self.uid, (*self.groups, AUTHENTICATED), self.extra)


ANONYMOUS = UserInfo(ANONYMOUS_USER, "", (UNAUTHENTICATED,))


class TokenFileError(ValueError):
    """The --token-auth-file is unreadable or not in kube-apiserver's CSV format."""


def load_token_file(path: Path) -> dict[str, UserInfo]:
    """Read `token,user,uid[,"group1,group2"]` lines, kube-apiserver's --token-auth-file format."""
    try:
        text = path.read_text()
    except OSError as error:
        raise TokenFileError(f"--token-auth-file {path}: {error.strerror}") from None
    tokens: dict[str, UserInfo] = {}
    for number, record in enumerate(csv.reader(text.splitlines()), start=1):
        if not record:
            continue
        if len(record) < 3:
            raise TokenFileError(
                f"token file '{path}' must have at least 3 columns (token, user name, user uid), "
                f"found {len(record)} on line {number}"
            )
        token, name, uid = record[0], record[1], record[2]
        if not token:
            log.warning("empty token in token file %s, line %d: skipped", path, number)
            continue
        if token in tokens:
            log.warning("duplicate token in token file %s, line %d: the last wins", path, number)
        groups = tuple(record[3].split(",")) if len(record) >= 4 else ()
        tokens[token] = UserInfo(name, uid, groups)
    return tokens


# a token authenticator: the user (with system:authenticated) or None for a token it rejects
TokenCheck = Callable[[str], UserInfo | None]


class Authenticator:
    """Maps a request's certificate or bearer token to a UserInfo, or says it has none."""

    def __init__(
        self,
        static_tokens: Mapping[str, UserInfo],
        token_checks: Iterable[TokenCheck] = (),
    ) -> None:
        self._static = {t: u.with_authenticated_group() for t, u in static_tokens.items()}
        self._checks = list(token_checks)

    @staticmethod
    def admin_token(token: str | None) -> tuple[str, UserInfo]:
        """sim's admin credential: the given token (or a fresh one) as a system:masters user."""
        return token or secrets.token_urlsafe(32), UserInfo(ADMIN_USER, ADMIN_USER, (MASTERS,))

    def authenticate(self, headers: Mapping[str, str], peercert: Any) -> UserInfo | bool | None:
        """The user; None when the request carries no credential; False when one is invalid."""
        user = _certificate_user(peercert)
        if user is not None:
            return user
        header = headers.get("Authorization")
        if not header:
            return None
        scheme, _, value = header.partition(" ")
        token = value.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        found = self._static.get(token)
        if found is not None:
            return found
        for check in self._checks:
            checked = check(token)
            if checked is not None:
                return checked
        return False


def _certificate_user(peercert: Any) -> UserInfo | None:
    # ssl's getpeercert(): {"subject": ((("organizationName", "g"),), (("commonName", "u"),))}
    if not peercert:
        return None
    name = ""
    groups: list[str] = []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    if not name:
        return None
    return UserInfo(name, "", tuple(groups)).with_authenticated_group()
