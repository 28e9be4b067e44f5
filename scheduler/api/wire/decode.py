"""How JSON becomes wire structs: a Pod strictly first, through a spec that names every
field muster knows, so that a newer field is named rather than skipped (decode_pod); any
kind from an already-decoded document (from_dict)."""

from __future__ import annotations

from typing import Any, TypeVar, cast

import msgspec

from scheduler.api.wire.common import ABSENT
from scheduler.api.wire.pod import Pod, PodSpec


class _FullPodSpec(PodSpec, forbid_unknown_fields=True):
    """A pod spec that names every PodSpec field muster knows (api/pod_fields.py), so
    decoding fails on a newer field. The fields scheduling does not read are skipped as
    Raw (not parsed), or decoded as the scalars they are where that is cheaper (a bool or
    a small int allocates nothing)."""

    active_deadline_seconds: int | None = None
    automount_service_account_token: bool | None = None
    dns_config: msgspec.Raw = ABSENT
    dns_policy: str | None = None
    enable_service_links: bool | None = None
    ephemeral_containers: msgspec.Raw = ABSENT
    host_aliases: msgspec.Raw = ABSENT
    host_ipc: bool | None = msgspec.field(default=None, name="hostIPC")
    host_network: bool | None = None
    host_pid: bool | None = msgspec.field(default=None, name="hostPID")
    host_users: bool | None = None
    hostname: str | None = None
    hostname_override: str | None = None
    image_pull_secrets: msgspec.Raw = ABSENT
    os: msgspec.Raw = ABSENT
    readiness_gates: msgspec.Raw = ABSENT
    runtime_class_name: str | None = None
    security_context: msgspec.Raw = ABSENT
    service_account: str | None = None
    service_account_name: str | None = None
    set_hostname_as_fqdn: msgspec.Raw = msgspec.field(default=ABSENT, name="setHostnameAsFQDN")
    share_process_namespace: bool | None = None
    subdomain: str | None = None
    termination_grace_period_seconds: int | None = None


# The JSON names of every PodSpec field muster knows (api/pod_fields.py lists the same).
_FULL_SPEC_NAMES = frozenset(_FullPodSpec.__struct_encode_fields__)


class _FullPod(Pod):
    """A Pod decoded through _FullPodSpec."""

    spec: _FullPodSpec = msgspec.field(default_factory=_FullPodSpec)


class _SpecKeys(msgspec.Struct):
    """Only the names of a pod's spec fields (the slow path of decode_pod)."""

    spec: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)


T = TypeVar("T")


_full_pod = msgspec.json.Decoder(_FullPod)


_lenient_pod = msgspec.json.Decoder(Pod)


_spec_keys = msgspec.json.Decoder(_SpecKeys)


def decode_pod(data: bytes | msgspec.Raw) -> Pod:
    """A Pod from JSON, naming in `unknown_spec_fields` any spec field muster does not know.

    The common pod decodes once, strictly; only a pod with a field newer than muster's
    list pays a second, lenient decode and a look at its spec's keys.
    """
    try:
        return _full_pod.decode(data)
    except msgspec.ValidationError as strict_error:
        if "unknown field" not in str(strict_error):
            raise
    pod = _lenient_pod.decode(data)
    pod.unknown_spec_fields = tuple(
        sorted(key for key in _spec_keys.decode(data).spec if key not in _FULL_SPEC_NAMES)
    )
    return pod


def from_dict(value: dict[str, Any], kind: type[T]) -> T:
    """A wire struct from an already-decoded JSON document (the controller, kopf handlers,
    `muster whatif`'s manifests, tests).

    It goes through JSON, not `msgspec.convert`: a field kept as `msgspec.Raw` (read for
    its presence only: a generic ephemeral volume, `evictionResponders`) has no Python value
    to be converted from, and convert refuses every such field. A Pod decodes as the
    watch decodes it (`decode_pod`), so a spec field newer than muster's list is named,
    never an error.
    """
    data = msgspec.json.encode(value)
    if kind is Pod:
        return cast(T, decode_pod(data))
    return msgspec.json.decode(data, type=kind)
