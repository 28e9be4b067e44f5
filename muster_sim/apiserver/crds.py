"""CustomResourceDefinitions as the apiextensions server serves them: a CRD created is
Established and its resource served at once, with a watch cache of its own; a CRD deleted
takes its resource and every object of it away."""

from __future__ import annotations

from typing import Any

from muster_sim.apiserver.resources import CRDS, Registry
from muster_sim.apiserver.store import Store, name_of, namespace_of
from muster_sim.timestamps import now_rfc3339

Obj = dict[str, Any]


def establish_crd(store: Store, registry: Registry, crd: Obj) -> Obj:
    """Serve a new CRD's resource from now on, and mark the CRD as the apiextensions
    controllers do: its names accepted, Established, its storage versions."""
    for added in registry.add_crd(crd)[:1]:
        # a new resource's cacher starts now, from an empty list
        store.start_watch_cache(added.key)
    names = (crd.get("spec") or {}).get("names") or {}
    accepted = dict(names)
    accepted.setdefault("singular", str(names.get("kind", "")).lower())
    accepted.setdefault("listKind", f"{names.get('kind', '')}List")
    stamp = now_rfc3339()
    new = dict(crd)
    new["metadata"] = dict(crd["metadata"])
    new["status"] = {
        "acceptedNames": accepted,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": stamp,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": stamp,
            },
        ],
        "storedVersions": [
            v["name"] for v in (crd.get("spec") or {}).get("versions") or [] if v.get("storage")
        ],
    }
    return store.put(CRDS, new, "MODIFIED")


def drop_crd(store: Store, registry: Registry, crd: Obj) -> None:
    """Stop serving a deleted CRD's resource; its objects go with it."""
    served = [
        k
        for k in registry.all_kinds()
        if k.from_crd
        and k.group == (crd.get("spec") or {}).get("group")
        and k.plural == ((crd.get("spec") or {}).get("names") or {}).get("plural")
    ]
    registry.remove_crd(crd)
    if served:
        store.drop_watch_cache(served[0].key)
        for obj in list(store.iter_all(served[0].key)):
            store.remove(served[0].key, namespace_of(obj), name_of(obj))
