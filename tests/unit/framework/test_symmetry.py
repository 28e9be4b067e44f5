"""Symmetry.of: what anti-affinity terms can tell of a pod, worked out once per label set."""

from __future__ import annotations

from scheduler.framework.pod_shapes import Symmetry
from tests.unit.builders import task


def test_pods_sharing_a_label_set_get_one_answer_and_others_their_own() -> None:
    symmetry = Symmetry(frozenset({("gang", "a"), ("gang", "b")}))
    shared = {"gang": "a", "role": "worker"}
    first, second = task("w-0"), task("w-1")
    first.labels = second.labels = shared
    assert symmetry.of(first) == ("default", (("gang", "a"),), ())
    assert symmetry.of(second) == symmetry.of(first)
    # Another mapping is answered for itself, never from the shared one's entry.
    other = task("b-0")
    other.labels = {"gang": "b"}
    assert symmetry.of(other) == ("default", (("gang", "b"),), ())
    plain = task("p-0")
    plain.labels = {"gang": "c"}
    assert symmetry.of(plain) is None


def test_the_namespace_tells_pods_with_one_label_set_apart() -> None:
    symmetry = Symmetry(frozenset({("app", "db")}), ("tier",))
    shared = {"app": "db", "tier": "gold"}
    here, there = task("db-0"), task("db-1", namespace="other")
    here.labels = there.labels = shared
    assert symmetry.of(here) == ("default", (("app", "db"),), ("gold",))
    assert symmetry.of(there) == ("other", (("app", "db"),), ("gold",))


def test_a_pod_only_tested_by_key_is_told_apart_by_its_values() -> None:
    symmetry = Symmetry(keys=("tier",))
    gold, none = task("g"), task("n")
    gold.labels = {"tier": "gold"}
    none.labels = {"app": "web"}
    assert symmetry.of(gold) == ("default", (), ("gold",))
    assert symmetry.of(none) is None
