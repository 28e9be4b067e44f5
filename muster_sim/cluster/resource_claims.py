"""sim's stand-in for kube-controller-manager's resourceclaim controller.

For a pod whose `spec.resourceClaims` names a ResourceClaimTemplate it makes the claim as the
real controller does: generateName `<pod>-<claim>-` (both parts cut in proportion when longer
than 57 characters, and then no trailing dash), the template's labels and annotations plus
`resource.kubernetes.io/pod-claim-name`, a controller ownerReference to the pod, the template's
spec; a claim it made before that the pod's status does not name yet is reused. It records
each in the pod's `status.resourceClaimStatuses`. A missing template is a
FailedResourceClaimCreation event on the pod; the pod is tried again when the template appears.

For a pod bound to a node whose claim is allocated but not reserved for it, it adds the pod to
the claim's `reservedFor`. It removes from `reservedFor` the pods that are gone (or replaced by
another of the same name) or done (Succeeded, Failed, or deleted before being scheduled), and
keeps consumers that are not pods. When it removes the last consumer of a claim that carries
the `resource.kubernetes.io/delete-protection` finalizer it clears the allocation in the same
write, then removes the finalizer; an allocated claim nobody ever reserved stays allocated. A
claim being deleted with no consumers loses its allocation and that finalizer. A claim it made
for a pod that is done (or replaced) is deleted once nobody uses it; the garbage collector
deletes the rest with their pods.

Work is driven by events, one pass after each burst, and touches only the pods and claims the
events name, as the real controller's work queue does.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from muster_sim.apiserver.resources import PODS
from muster_sim.apiserver.store import Event, name_of, namespace_of
from muster_sim.apiserver.verbs import ApiServer
from muster_sim.cluster.pod_claims import (
    CLAIMS,
    DELETE_PROTECTION,
    POD_CLAIM_NAME,
    TEMPLATES,
    ClaimNameError,
    NotCreatedYet,
    claim_name,
    controlling_pod,
    owner_problem,
    pod_consumer,
    pod_done,
    reserved_for,
)
from muster_sim.cluster.recorder import record_event
from muster_sim.errors import ApiError

Obj = dict[str, Any]
Key = tuple[str, str]

log = logging.getLogger("muster.sim")

COMPONENT = "resource_claim"
RESOURCE_GROUP = "resource.k8s.io"
# generateName leaves room for the 5 random characters of a 63-character name
_MAX_BASE_LENGTH = 57
# the uids of deleted pods remembered, as the real controller's LRU cache
_DELETED_REMEMBERED = 10_000
_STEPS_PER_PASS = 100_000


class ResourceClaimController:
    """Claims from templates for pods, their reservations kept to live pods, and deallocation
    when the last consumer goes."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: asyncio.Handle | None = None
        self._pods: set[Key] = set()
        self._claims: set[Key] = set()
        # (namespace, claim) -> pods naming it; (namespace, template) -> pods naming it
        self._pods_by_claim: dict[Key, set[Key]] = {}
        self._pods_by_template: dict[Key, set[Key]] = {}
        self._indexed: dict[Key, tuple[list[Key], list[Key]]] = {}
        self._deleted: OrderedDict[str, None] = OrderedDict()
        self._reported: set[tuple[str, str]] = set()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start reacting to pod, claim and template events on `loop` (the server's loop)."""
        self._loop = loop
        self.api.store.listen(PODS, self._on_pod)
        self.api.store.listen(CLAIMS, self._on_claim)
        self.api.store.listen(TEMPLATES, self._on_template)

    def stop(self) -> None:
        """Cancel a pending pass."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    # -- events --------------------------------------------------------------------

    def _on_pod(self, event: Event) -> None:
        pod = event.obj
        key = (event.namespace, name_of(pod))
        deleted = event.type == "DELETED"
        self._index(key, None if deleted else pod)
        if not (pod.get("spec") or {}).get("resourceClaims"):
            return
        if deleted:
            self._deleted[str(pod["metadata"].get("uid"))] = None
            while len(self._deleted) > _DELETED_REMEMBERED:
                self._deleted.popitem(last=False)
        if deleted or pod_done(pod):
            # the claims it used may lose a consumer
            for pod_claim in pod["spec"]["resourceClaims"]:
                try:
                    name = claim_name(pod, pod_claim).name
                except ClaimNameError:
                    continue
                if name is not None:
                    self._claims.add((event.namespace, name))
        if not deleted and not pod["metadata"].get("deletionTimestamp"):
            self._pods.add(key)
        self._schedule()

    def _on_claim(self, event: Event) -> None:
        key = (event.namespace, name_of(event.obj))
        if event.type != "DELETED":
            self._claims.add(key)
        self._pods.update(self._pods_by_claim.get(key, ()))
        self._schedule()

    def _on_template(self, event: Event) -> None:
        key = (event.namespace, name_of(event.obj))
        self._pods.update(self._pods_by_template.get(key, ()))
        self._schedule()

    def _index(self, key: Key, pod: Obj | None) -> None:
        """Keep which claims and templates each pod names, to find its pods from them."""
        before = self._indexed.pop(key, ([], []))
        for claim in before[0]:
            self._pods_by_claim.get(claim, set()).discard(key)
        for template in before[1]:
            self._pods_by_template.get(template, set()).discard(key)
        if pod is None:
            return
        namespace = key[0]
        claims: list[Key] = []
        templates: list[Key] = []
        for pod_claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            if pod_claim.get("resourceClaimTemplateName"):
                templates.append((namespace, str(pod_claim["resourceClaimTemplateName"])))
            try:
                name = claim_name(pod, pod_claim).name
            except ClaimNameError:
                continue
            if name is not None:
                claims.append((namespace, name))
        for claim in claims:
            self._pods_by_claim.setdefault(claim, set()).add(key)
        for template in templates:
            self._pods_by_template.setdefault(template, set()).add(key)
        if claims or templates:
            self._indexed[key] = (claims, templates)

    def _schedule(self) -> None:
        # one pass after a burst of events: every write of a pass is an event of its own
        if self._loop is not None and self._pending is None:
            self._pending = self._loop.call_soon(self.sync)

    # -- the pass --------------------------------------------------------------------

    def sync(self) -> None:
        """Work off every pod and claim the events named, and what that work names in turn."""
        self._pending = None
        for _step in range(_STEPS_PER_PASS):
            if self._pods:
                self._guarded(self._sync_pod, self._pods.pop())
            elif self._claims:
                self._guarded(self._sync_claim, self._claims.pop())
            else:
                return
        # work that keeps making work (a client and the controller undoing each other) must
        # not hold the server's loop: the rest waits for the next pass
        log.warning("resourceclaim controller: more work than one pass does; going on shortly")
        if self._loop is not None:
            self._pending = self._loop.call_later(0.1, self.sync)

    def _guarded(self, step: Any, key: Key) -> None:
        try:
            step(key)
        except ApiError as error:
            # a lost race or a refused write: the next event about it tries again
            log.info("resourceclaim controller: %s/%s: %s", key[0], key[1], error.message)

    # -- pods ------------------------------------------------------------------------

    def _sync_pod(self, key: Key) -> None:
        pod = self.api.store.get(PODS, *key)
        if pod is None or pod["metadata"].get("deletionTimestamp") or pod_done(pod):
            # a pod that will not run needs no claim made nor reserved (the real controller,
            # checked on a cluster, does not make again the claim it deleted for a done pod)
            return
        created: dict[str, str] = {}
        for pod_claim in pod["spec"].get("resourceClaims") or []:
            problem = self._claim_for(pod, pod_claim, created)
            if problem is not None:
                self._event(pod, f"PodResourceClaim {pod_claim.get('name')}: {problem}")
                return
        if created:
            pod = self._record_claims(pod, created)
        if pod["spec"].get("nodeName"):
            self._reserve_claims(pod)

    def _claim_for(self, pod: Obj, pod_claim: Obj, created: dict[str, str]) -> str | None:
        """Make (or find) the claim of one pod claim made from a template; what went wrong."""
        try:
            found = claim_name(pod, pod_claim)
        except NotCreatedYet:
            found = None
        except ClaimNameError as error:
            return f"checking for claim before creating it: {error}"
        namespace = namespace_of(pod)
        if found is not None:
            if found.name is None:
                return None
            claim = self.api.store.get(CLAIMS, namespace, found.name)
            if claim is not None and (not found.generated or owner_problem(pod, claim) is None):
                return None
        template_name = pod_claim.get("resourceClaimTemplateName")
        if template_name is None:
            return None
        claim = self._orphan(pod, str(pod_claim.get("name", "")))
        if claim is None:
            template = self.api.store.get(TEMPLATES, namespace, str(template_name))
            if template is None:
                return (
                    f'resource claim template "{template_name}": resourceclaimtemplate.'
                    f'{RESOURCE_GROUP} "{template_name}" not found'
                )
            try:
                claim = self.api.create(
                    self.api.kind(RESOURCE_GROUP, "v1", "resourceclaims"),
                    namespace,
                    generated_claim(pod, pod_claim, template),
                )
            except ApiError as error:
                return f"create ResourceClaim : {error.message}"
        created[str(pod_claim.get("name", ""))] = name_of(claim)
        return None

    def _orphan(self, pod: Obj, pod_claim_name: str) -> Obj | None:
        """A claim made for this pod claim before the pod's status recorded it."""
        for key, namespace, name in self.api.store.dependents(str(pod["metadata"]["uid"])):
            if key != CLAIMS:
                continue
            claim = self.api.store.get(CLAIMS, namespace, name)
            annotations = (claim or {}).get("metadata", {}).get("annotations") or {}
            if claim is not None and annotations.get(POD_CLAIM_NAME) == pod_claim_name:
                return claim
        return None

    def _record_claims(self, pod: Obj, created: dict[str, str]) -> Obj:
        """Merge the claims made into the pod's status.resourceClaimStatuses (by name)."""
        status = dict(pod.get("status") or {})
        entries = [dict(e) for e in status.get("resourceClaimStatuses") or []]
        for name, claim in created.items():
            for entry in entries:
                if entry.get("name") == name:
                    entry["resourceClaimName"] = claim
                    break
            else:
                entries.append({"name": name, "resourceClaimName": claim})
        new = dict(pod, status=dict(status, resourceClaimStatuses=entries))
        return self.api.update(
            self.api.kind("", "v1", PODS), namespace_of(pod), name_of(pod), new, "status"
        )

    def _reserve_claims(self, pod: Obj) -> None:
        """A bound pod's allocated claims list it in reservedFor."""
        namespace = namespace_of(pod)
        for pod_claim in pod["spec"].get("resourceClaims") or []:
            try:
                found = claim_name(pod, pod_claim)
            except ClaimNameError:
                return
            if found.name is None:
                continue
            claim = self.api.store.get(CLAIMS, namespace, found.name)
            if claim is None:
                return
            if found.generated and owner_problem(pod, claim) is not None:
                return
            status = claim.get("status") or {}
            if status.get("allocation") is None or reserved_for(pod, claim):
                continue
            consumers = [*(status.get("reservedFor") or []), pod_consumer(pod)]
            self._write_status(claim, dict(status, reservedFor=consumers))

    # -- claims ----------------------------------------------------------------------

    def _sync_claim(self, key: Key) -> None:
        claim = self.api.store.get(CLAIMS, *key)
        if claim is None:
            return
        status = claim.get("status") or {}
        consumers = list(status.get("reservedFor") or [])
        remaining = [c for c in consumers if self._still_consumes(key[0], c)]
        protected = DELETE_PROTECTION in (claim["metadata"].get("finalizers") or [])
        if len(remaining) < len(consumers):
            new_status = {k: v for k, v in status.items() if k != "reservedFor"}
            if remaining:
                new_status["reservedFor"] = remaining
            elif protected:
                # its last consumer gone: deallocated, so a later one may go anywhere
                new_status.pop("allocation", None)
            claim = self._write_status(claim, new_status)
            if protected and (claim.get("status") or {}).get("allocation") is None:
                claim = self._drop_finalizer(claim)
        elif protected and claim["metadata"].get("deletionTimestamp") and not remaining:
            if status.get("allocation") is not None:
                new_status = {k: v for k, v in status.items() if k != "allocation"}
                claim = self._write_status(claim, new_status)
            claim = self._drop_finalizer(claim)
        if not remaining and claim is not None:
            self._delete_if_unneeded(claim)

    def _still_consumes(self, namespace: str, consumer: Obj) -> bool:
        if consumer.get("apiGroup") or consumer.get("resource") != "pods":
            # a consumer the controller does not know how to check is kept
            return True
        uid = str(consumer.get("uid", ""))
        if uid in self._deleted:
            return False
        pod = self.api.store.get(PODS, namespace, str(consumer.get("name", "")))
        return pod is not None and pod["metadata"].get("uid") == uid and not pod_done(pod)

    def _delete_if_unneeded(self, claim: Obj) -> None:
        """A claim made for a pod that is done or was replaced goes once nobody uses it."""
        owner = controlling_pod(claim)
        if owner is None:
            return
        pod = self.api.store.get(PODS, namespace_of(claim), owner[0])
        if pod is None:
            # the garbage collector deletes it with its pod
            return
        if pod["metadata"].get("uid") != owner[1] or pod_done(pod):
            self.api.delete(self._claims_kind(), namespace_of(claim), name_of(claim))

    def _write_status(self, claim: Obj, status: Obj) -> Obj:
        new = dict(claim, status=status)
        return self.api.update(
            self._claims_kind(), namespace_of(claim), name_of(claim), new, "status"
        )

    def _drop_finalizer(self, claim: Obj) -> Obj | None:
        meta = dict(claim["metadata"])
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != DELETE_PROTECTION]
        if not meta["finalizers"]:
            del meta["finalizers"]
        stored = self.api.update(
            self._claims_kind(), namespace_of(claim), name_of(claim), dict(claim, metadata=meta)
        )
        # with its last finalizer gone, a claim being deleted is gone
        return self.api.store.get(CLAIMS, namespace_of(stored), name_of(stored))

    def _claims_kind(self) -> Any:
        return self.api.kind(RESOURCE_GROUP, "v1", "resourceclaims")

    def _event(self, pod: Obj, message: str) -> None:
        key = (str(pod["metadata"].get("uid")), message)
        if key in self._reported:
            return
        self._reported.add(key)
        record_event(self.api, pod, "Warning", "FailedResourceClaimCreation", message, COMPONENT)


def generated_claim(pod: Obj, pod_claim: Obj, template: Obj) -> Obj:
    """The ResourceClaim the real controller makes from `template` for one of a pod's claims."""
    pod_name = str(pod["metadata"]["name"])
    claim_name_in_pod = str(pod_claim.get("name", ""))
    template_spec = template.get("spec") or {}
    template_meta = template_spec.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    annotations[POD_CLAIM_NAME] = claim_name_in_pod
    metadata: Obj = {
        "generateName": generate_name(pod_name, claim_name_in_pod),
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod_name,
                "uid": pod["metadata"]["uid"],
                "controller": True,
            }
        ],
        "annotations": annotations,
    }
    if template_meta.get("labels"):
        metadata["labels"] = dict(template_meta["labels"])
    return {"metadata": metadata, "spec": template_spec.get("spec") or {}}


def generate_name(pod_name: str, claim: str) -> str:
    """`<pod>-<claim>-`, or both cut in proportion to their length when that is longer than
    57 characters (the real controller then leaves out the trailing dash)."""
    base = f"{pod_name}-{claim}-"
    if len(base) <= _MAX_BASE_LENGTH:
        return base
    total = len(base)
    return (
        pod_name[: len(pod_name) * _MAX_BASE_LENGTH // total]
        + "-"
        + claim[: len(claim) * _MAX_BASE_LENGTH // total]
    )
