"""The fuzz counts a reference drawn at random as bad only when it names nothing."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

from chaos.fuzz import GROUP_NAME, Fuzzer


def fuzzer() -> Fuzzer:
    subject = Fuzzer("https://sim", None, None)
    subject.created = {"queues": {"f2"}, "podgroups": {"0"}}
    return subject


def queue(name: str, parent: str) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"parent": parent}}


def pod(group: str) -> dict[str, object]:
    return {"metadata": {"name": "p", "annotations": {GROUP_NAME: group}}, "spec": {}}


def test_a_parent_that_exists_is_a_valid_reference() -> None:
    assert fuzzer()._names_what_exists("/queues", queue("ff2", "f2"), "spec.parent")


def test_a_missing_parent_or_the_queue_itself_stays_bad() -> None:
    assert not fuzzer()._names_what_exists("/queues", queue("ff2", "nope"), "spec.parent")
    assert not fuzzer()._names_what_exists("/queues", queue("f2", "f2"), "spec.parent")


def test_a_pod_naming_an_existing_podgroup_is_valid_and_a_missing_one_bad() -> None:
    assert fuzzer()._names_what_exists("/pods", pod("0"), GROUP_NAME)
    assert not fuzzer()._names_what_exists("/pods", pod("100Gi"), GROUP_NAME)
