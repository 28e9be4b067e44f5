"""Reads as kube-apiserver answers them: one object, or a list at a resourceVersion,
filtered by selectors and served in pages whose continue tokens carry where they stopped."""

from __future__ import annotations

import base64
import bisect
from typing import Any

import msgspec

from muster_sim.apiserver.options import ListOptions
from muster_sim.apiserver.resources import Kind, as_version
from muster_sim.apiserver.store import Store, key_of
from muster_sim.errors import ApiError, bad_request, expired, not_found

Obj = dict[str, Any]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


class Reads:
    """get and list over the store, keeping the last paged list of each kind and namespace."""

    def __init__(self, store: Store) -> None:
        self.store = store
        # The last paged list of each kind and namespace: its resourceVersion, its objects in
        # order and their keys (_listed).
        self._pages: dict[tuple[str, str | None], tuple[int, list[Obj], list[str]]] = {}

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        """One object, or 404."""
        obj = self.store.get(kind.key, namespace or "", name)
        if obj is None:
            raise not_found(kind.group, kind.plural, name)
        return as_version(kind, obj)

    # Above `list`: below it, `list[...]` in its annotations would name that method.
    def _listed(
        self, kind: Kind, namespace: str | None, rv: int, *, paged: bool
    ) -> tuple[list[Obj], list[str]]:
        """The kind's objects at `rv` in etcd's order (the store's), with their keys. The last
        paged list is kept: its next pages are slices of it, found by their continue key, as
        etcd serves each page from where the last ended. Rebuilding the list for every page
        made sim's 50,000-pod list quadratic, which a real server is not."""
        kept = self._pages.get((kind.key, namespace))
        if kept is not None and kept[0] == rv:
            return kept[1], kept[2]
        items = self.store.snapshot(kind.key, namespace, rv)
        keys = [key_of(o) for o in items]
        if paged:
            # An object at `rv` never changes (the store replaces objects, it never edits
            # one), and a compacted `rv` is refused before this is read.
            self._pages[(kind.key, namespace)] = (rv, items, keys)
        return items, keys

    def list(self, kind: Kind, namespace: str | None, options: ListOptions) -> Obj:
        """A `<Kind>List` with the list's resourceVersion, filtered and paginated."""
        start = ""
        if options.continue_token:
            rv, start = _decode_continue(options.continue_token)
            if rv < self.store.compacted_rv:
                raise expired(_CONTINUE_EXPIRED)
            items, keys = self._listed(kind, namespace, rv, paged=True)
        elif options.resource_version and options.resource_version_match == "Exact":
            rv = _parse_rv(options.resource_version)
            items, keys = self._listed(kind, namespace, rv, paged=options.limit > 0)
        else:
            rv = self.store.rv
            if options.resource_version not in ("", "0"):
                requested = _parse_rv(options.resource_version)
                if requested > rv:
                    raise ApiError(
                        504,
                        "Timeout",
                        f"Too large resource version: {requested}, current: {rv}",
                        {
                            "causes": [
                                {
                                    "reason": "ResourceVersionTooLarge",
                                    "message": "Too large resource version",
                                }
                            ],
                            "retryAfterSeconds": 1,
                        },
                    )
            items, keys = self._listed(kind, namespace, rv, paged=options.limit > 0)
        begin = bisect.bisect_right(keys, start) if start else 0
        rest = len(items) - begin
        selectors = [p for p in (options.label, options.field) if p is not None]
        metadata: Obj = {"resourceVersion": str(rv)}
        if selectors:
            # A page stops at its limit: the objects after it are filtered for the next page,
            # not for this one (filtering the whole rest on every page made a selective list
            # of 150,000 pods quadratic, which a real server's watch cache is not).
            picked: list[Obj] = []
            for index in range(begin, len(items)):
                obj = items[index]
                if all(p(obj) for p in selectors):
                    picked.append(obj)
                    if options.limit > 0 and len(picked) > options.limit:
                        break
            items = picked
        else:
            end = begin + options.limit + 1 if options.limit > 0 else len(items)
            items = items[begin:end]
        if options.limit > 0 and len(items) > options.limit:
            items = items[: options.limit]
            metadata["continue"] = _encode_continue(rv, key_of(items[-1]))
            if not selectors:
                metadata["remainingItemCount"] = rest - options.limit
        if kind.from_crd:
            items = [as_version(kind, o) for o in items]
        return {
            "kind": f"{kind.kind}List",
            "apiVersion": kind.api_version,
            "metadata": metadata,
            "items": items,
        }


def stored_object(store: Store, kind: Kind, namespace: str | None, name: str) -> Obj:
    """The object as stored, or 404."""
    current = store.get(kind.key, namespace or "", name)
    if current is None:
        raise not_found(kind.group, kind.plural, name)
    return current


def _parse_rv(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise bad_request(f'invalid resource version "{text}"') from None


def _encode_continue(rv: int, start: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": start}
    return base64.urlsafe_b64encode(_encode(token)).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        decoded = _decode(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(decoded["rv"]), str(decoded["start"])
    except (ValueError, KeyError, TypeError, msgspec.DecodeError):
        raise bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)"
        ) from None
