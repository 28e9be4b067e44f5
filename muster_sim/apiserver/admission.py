"""Admission webhooks around writes, in kube-apiserver's order: mutating webhooks, then the
write's own validation, then validating webhooks, then the commit; an update or patch whose
object changed while the webhooks answered is prepared and admitted again, as kube's
GuaranteedUpdate does. Writes stored elsewhere (deletes, bindings, evictions) are admitted
on their own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from muster_sim.apiserver import webhooks
from muster_sim.apiserver.options import WriteOptions
from muster_sim.apiserver.resources import Kind
from muster_sim.apiserver.store import Store, clone
from muster_sim.apiserver.write_rules import reconcile_patched
from muster_sim.apiserver.writes import PendingWrite, StaleWrite, Writes
from muster_sim.errors import STALE, conflict

Obj = dict[str, Any]

# how often an update or patch is retried when the object changed while webhooks answered
_ADMITTED_RETRIES = 5


class AdmittedWrites:
    """create, update and patch with the stored admission webhooks called, and the admission
    of the writes the API server stores otherwise."""

    def __init__(
        self, store: Store, writes: Writes, dispatcher: webhooks.WebhookDispatcher
    ) -> None:
        self.store = store
        self.writes = writes
        self.webhooks = dispatcher

    async def create(
        self, kind: Kind, namespace: str | None, body: Any, options: WriteOptions
    ) -> Obj:
        """Writes.create, with the admission webhooks called between defaulting and storing."""
        if not self.webhooks.active():
            return self.writes.create(kind, namespace, body, options)
        pending = self.writes.prepare_create(kind, namespace, body, options)
        await self._admit(pending, "CREATE", options)
        return self.writes.commit_create(pending)

    async def update(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        body: Any,
        subresource: str | None,
        options: WriteOptions,
    ) -> Obj:
        """Writes.update, with the admission webhooks called before storing."""
        if not self.webhooks.active():
            return self.writes.update(kind, namespace, name, body, subresource, options)
        return await self._replace_admitted(
            lambda: self.writes.prepare_update(
                kind, namespace, name, clone(body), subresource, options
            ),
            options,
        )

    async def patch(
        self,
        kind: Kind,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str | None,
        options: WriteOptions,
    ) -> Obj:
        """Writes.patch, with the admission webhooks called before storing."""
        if not self.webhooks.active():
            return self.writes.patch(
                kind, namespace, name, content_type, patch, subresource, options
            )
        return await self._replace_admitted(
            lambda: self.writes.prepare_patch(
                kind, namespace, name, content_type, clone(patch), subresource, options
            ),
            options,
        )

    async def admit_other(
        self,
        kind: Kind,
        operation: str,
        namespace: str | None,
        name: str,
        subresource: str | None,
        obj: Obj | None,
        options: WriteOptions,
        object_kind: tuple[str, str, str] | None = None,
    ) -> None:
        """Webhook admission for a write stored elsewhere (delete, pods/binding, eviction)."""
        if not self.webhooks.active():
            return
        old = self.store.get(kind.key, namespace or "", name) if operation != "CREATE" else None
        attrs = webhooks.AdmissionAttributes(
            kind=kind,
            operation=operation,
            namespace=namespace,
            name=name,
            subresource=subresource,
            object=obj,
            old_object=old,
            user=options.user,
            options=options.review_options(operation),
            object_kind=object_kind,
        )
        try:
            await self.webhooks.mutate(attrs, lambda _obj: None)
            await self.webhooks.validate(attrs)
        finally:
            options.warnings.extend(attrs.warnings)

    async def _admit(self, pending: PendingWrite, operation: str, options: WriteOptions) -> None:
        """Mutating webhooks, validation, validating webhooks: kube's order for one write."""
        attrs = webhooks.AdmissionAttributes(
            kind=pending.kind,
            operation=operation,
            namespace=pending.namespace,
            name=pending.name,
            subresource=pending.subresource,
            object=pending.obj,
            old_object=pending.old,
            user=options.user,
            options=options.review_options(),
        )
        hide_namespace = not pending.namespace_in_body and pending.namespace is not None
        if hide_namespace:
            pending.obj["metadata"].pop("namespace", None)
        try:
            await self.webhooks.mutate(attrs, lambda obj: reconcile_patched(pending.kind, obj))
            if hide_namespace:
                pending.obj["metadata"]["namespace"] = pending.namespace
            self.writes.identify(pending)
            self.writes.validate(pending)
            await self.webhooks.validate(attrs)
        finally:
            if hide_namespace:
                pending.obj["metadata"]["namespace"] = pending.namespace
            options.warnings.extend(attrs.warnings)

    async def _replace_admitted(
        self, prepare: Callable[[], PendingWrite], options: WriteOptions
    ) -> Obj:
        # the object may change while webhooks answer: like kube's GuaranteedUpdate, try
        # again from the fresh object, unless the client named the resourceVersion it meant
        for _attempt in range(_ADMITTED_RETRIES):
            pending = prepare()
            warnings_before = len(options.warnings)
            await self._admit(pending, "UPDATE", options)
            try:
                return self.writes.commit_replace(pending)
            except StaleWrite:
                if pending.expected_rv is not None:
                    raise conflict(
                        pending.kind.group, pending.kind.plural, pending.name, STALE
                    ) from None
                del options.warnings[warnings_before:]
        raise conflict(pending.kind.group, pending.kind.plural, pending.name, STALE)
