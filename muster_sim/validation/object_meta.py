"""ObjectMeta's JSON fields in Go's order: what a decoded `metadata` may hold (anything else
is an unknown field), and the order kube prints those an object sets."""

from __future__ import annotations

OBJECT_META_FIELDS = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)
