"""ServiceAccount tokens: the TokenRequest API (serviceaccounts/token) and their authentication.

Tokens are JWTs with the claims kube-apiserver puts in bound tokens (iss, sub, aud, exp, iat, nbf,
jti and `kubernetes.io`), signed with a key sim keeps in memory (HS256: clients never verify a
ServiceAccount token themselves, only the API server does). Like bound tokens, one stops working
when it expires, when its ServiceAccount (or the Pod or Secret it is bound to) is deleted, and
when its audiences do not include the API server's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import uuid
from typing import Any

import msgspec

from muster_sim.access.authn import UserInfo
from muster_sim.apiserver.store import Store
from muster_sim.errors import ApiError, FieldError, bad_request, conflict, invalid, not_found

Obj = dict[str, Any]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

# kubeadm's --service-account-issuer; --api-audiences defaults to it
ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32
GROUP = "authentication.k8s.io"
SERVICEACCOUNTS = "serviceaccounts"
_BOUND_KINDS = {"Pod": "pods", "Secret": "secrets"}


def service_account_user(namespace: str, name: str) -> str:
    """The user name a ServiceAccount's tokens authenticate as."""
    return f"system:serviceaccount:{namespace}:{name}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class ServiceAccountTokens:
    """Issues tokens for ServiceAccounts in the store and authenticates them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._key = secrets.token_bytes(32)
        self._kid = secrets.token_hex(8)
        # token -> (claims, user): signature, JSON and audiences are checked once per token
        self._verified: dict[str, tuple[Obj, UserInfo | None]] = {}

    # -- TokenRequest --------------------------------------------------------

    def request(self, namespace: str, name: str, body: Any) -> Obj:
        """Answer POST .../serviceaccounts/NAME/token with a TokenRequest carrying a token."""
        if not isinstance(body, dict):
            raise bad_request("Object 'TokenRequest' is invalid: expected a JSON object")
        if body.get("kind") not in (None, "", "TokenRequest"):
            raise bad_request(
                f"the kind in the data ({body['kind']}) does not match the expected kind "
                "(TokenRequest)"
            )
        spec = dict(body.get("spec") or {})
        seconds = spec.get("expirationSeconds")
        seconds = DEFAULT_EXPIRATION_SECONDS if seconds is None else seconds
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise bad_request(f"spec.expirationSeconds must be an integer, got {seconds!r}")
        field = "spec.expirationSeconds"
        if seconds < MIN_EXPIRATION_SECONDS:
            raise _invalid(
                f"Invalid value: {seconds}: may not specify a duration less than 10 minutes", field
            )
        if seconds > MAX_EXPIRATION_SECONDS:
            raise _invalid(
                f"Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds",
                field,
            )
        account = self.store.get(SERVICEACCOUNTS, namespace, name)
        if account is None:
            raise not_found("", SERVICEACCOUNTS, name)
        audiences = spec.get("audiences") or list(API_AUDIENCES)
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise bad_request(f"spec.audiences must be a list of strings, got {audiences!r}")
        bound = self._bound_object(namespace, name, spec.get("boundObjectRef"))
        now = int(time.time())
        jti = str(uuid.uuid4())
        k8s: Obj = {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": account["metadata"]["uid"]},
        }
        if bound is not None:
            k8s[bound["kind"].lower()] = {"name": bound["name"], "uid": bound["uid"]}
        claims: Obj = {
            "aud": audiences,
            "exp": now + seconds,
            "iat": now,
            "iss": ISSUER,
            "jti": jti,
            "kubernetes.io": k8s,
            "nbf": now,
            "sub": service_account_user(namespace, name),
        }
        token = self._sign(claims)
        spec.update(audiences=audiences, expirationSeconds=seconds)
        spec.setdefault("boundObjectRef", None)
        return {
            "kind": "TokenRequest",
            "apiVersion": f"{GROUP}/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": spec,
            "status": {
                "token": token,
                "expirationTimestamp": time.strftime(
                    "%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + seconds)
                ),
            },
        }

    def _bound_object(self, namespace: str, account: str, ref: Any) -> Obj | None:
        if not ref:
            return None
        if not isinstance(ref, dict):
            raise bad_request(f"spec.boundObjectRef must be an object, got {ref!r}")
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        group, _, version = api_version.rpartition("/")
        key = _BOUND_KINDS.get(kind) if not group else None
        if key is None:
            raise bad_request(f"cannot bind token to object of type {group}/{version}, Kind={kind}")
        obj_name = str(ref.get("name") or "")
        obj = self.store.get(key, namespace, obj_name)
        if obj is None:
            raise not_found("", key, obj_name)
        if key == "pods":
            pod_account = (obj.get("spec") or {}).get("serviceAccountName") or "default"
            if pod_account != account:
                raise bad_request(
                    f'cannot bind token for serviceaccount "{account}" to pod running with '
                    f'serviceaccount "{pod_account}"'
                )
        uid = obj["metadata"]["uid"]
        if ref.get("uid") and ref["uid"] != uid:
            raise conflict(
                "",
                kind,
                obj_name,
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                f"in record ({uid}). The object might have been deleted and then recreated",
            )
        return {"kind": kind, "key": key, "name": obj_name, "uid": uid}

    def _sign(self, claims: Obj) -> str:
        header = _b64(_encode({"alg": "HS256", "kid": self._kid, "typ": "JWT"}))
        payload = _b64(_encode(claims))
        signing_input = f"{header}.{payload}".encode()
        signature = _b64(hmac.new(self._key, signing_input, hashlib.sha256).digest())
        return f"{header}.{payload}.{signature}"

    # -- authentication ------------------------------------------------------

    def authenticate(self, token: str) -> UserInfo | None:
        """The ServiceAccount user of a valid, unexpired token whose objects still exist."""
        verified = self._verified.get(token)
        if verified is None:
            claims = self._verify(token)
            if claims is None:
                return None
            verified = claims, _user_of(claims)
            self._verified[token] = verified
        claims, user = verified
        now = time.time()
        if claims["exp"] <= now:
            del self._verified[token]
            return None
        if user is None or claims["nbf"] > now + 60:
            return None
        # bound tokens die with their ServiceAccount (and the Pod or Secret they are bound to)
        k8s = claims["kubernetes.io"]
        namespace = k8s["namespace"]
        account = k8s["serviceaccount"]
        stored = self.store.get(SERVICEACCOUNTS, namespace, account["name"])
        if stored is None or stored["metadata"]["uid"] != account["uid"]:
            return None
        for kind, key in _BOUND_KINDS.items():
            ref = k8s.get(kind.lower())
            if ref is not None:
                obj = self.store.get(key, namespace, ref["name"])
                if obj is None or obj["metadata"]["uid"] != ref["uid"]:
                    return None
        return user

    def _verify(self, token: str) -> Obj | None:
        parts = token.split(".")
        if len(parts) != 3:
            return None
        header, payload, signature = parts
        expected = hmac.new(self._key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64(signature), expected):
                return None
            claims = _decode(_unb64(payload))
        except (ValueError, msgspec.DecodeError):
            return None
        return claims if isinstance(claims, dict) else None


def _user_of(claims: Obj) -> UserInfo | None:
    """The user a token's claims name; None when its audiences exclude the API server."""
    if not set(claims["aud"]) & set(API_AUDIENCES):
        return None
    k8s = claims["kubernetes.io"]
    namespace = k8s["namespace"]
    extra = {"authentication.kubernetes.io/credential-id": (f"JTI={claims['jti']}",)}
    pod = k8s.get("pod")
    if pod is not None:
        extra["authentication.kubernetes.io/pod-name"] = (pod["name"],)
        extra["authentication.kubernetes.io/pod-uid"] = (pod["uid"],)
    user = UserInfo(
        claims["sub"],
        k8s["serviceaccount"]["uid"],
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
        extra,
    )
    return user.with_authenticated_group()


def _invalid(message: str, field: str) -> ApiError:
    return invalid(GROUP, "TokenRequest", "", [FieldError(field, message)])
