"""In every installation, the scheduler, the controller and the pod webhook serve the same names.

A name the scheduler serves but the controller does not leaves a Deployment's or Job's
pods with that schedulerName waiting forever for a PodGroup no one makes; a name the
controller serves but the scheduler does not gets PodGroups that are never scheduled;
a name missing from the pod webhook's matchConditions goes unchecked.
"""

from __future__ import annotations

import re

import pytest

from scheduler.api.names import DEFAULT_SCHEDULER_NAME
from tests.manifests.conftest import KUSTOMIZATIONS, VOLCANO_COMPAT_WEBHOOKS, Doc, find, render

FLAG = "--scheduler-name"
# The overlays that exist to serve Volcano's clients, and what each must serve.
VOLCANO_COMPAT = ("deploy/overlays/volcano-compat", VOLCANO_COMPAT_WEBHOOKS)
POD_WEBHOOK = "pods.validate.muster.dev"


def served_names(deployment: Doc) -> set[str]:
    """The scheduler names a muster process serves: its --scheduler-name flags, else muster."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args: list[str] = container.get("args", [])
    names = {arg.partition("=")[2] for arg in args if arg.startswith(f"{FLAG}=")}
    names |= {args[i + 1] for i, arg in enumerate(args[:-1]) if arg == FLAG}
    return names or {DEFAULT_SCHEDULER_NAME}


def pod_webhook_names(docs: list[Doc]) -> set[str] | None:
    """The scheduler names the pod webhook's matchConditions send it, if it is installed."""
    configurations = [d for d in docs if d["kind"] == "ValidatingWebhookConfiguration"]
    if not configurations:
        return None
    (webhook,) = [w for c in configurations for w in c["webhooks"] if w["name"] == POD_WEBHOOK]
    (condition,) = webhook["matchConditions"]
    match = re.fullmatch(r"object\.spec\.schedulerName in \[(.*)\]", condition["expression"])
    assert match, f"{POD_WEBHOOK}: unexpected matchCondition {condition['expression']!r}"
    return set(re.findall(r"'([^']*)'", match.group(1)))


def names_by_process(kustomization: str) -> dict[str, set[str]]:
    docs = render(kustomization)
    names = {
        "scheduler": served_names(find(docs, "Deployment", "muster-scheduler")),
        "controller": served_names(find(docs, "Deployment", "muster-controller")),
    }
    webhook = pod_webhook_names(docs)
    if webhook is not None:
        names["pod webhook"] = webhook
    return names


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_scheduler_controller_and_pod_webhook_serve_the_same_names(kustomization: str) -> None:
    names = names_by_process(kustomization)
    assert len({frozenset(n) for n in names.values()}) == 1, names


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_volcano_compat_serves_volcano_besides_muster_and_the_others_muster_only(
    kustomization: str,
) -> None:
    expected = {"muster", "volcano"} if kustomization in VOLCANO_COMPAT else {"muster"}
    for process, names in names_by_process(kustomization).items():
        assert names == expected, f"{kustomization}: the {process} serves {sorted(names)}"


def test_the_webhooks_are_checked_with_volcano_compat_too() -> None:
    # Without this, the component's webhook patch (which matches nothing in the overlay
    # alone) would go untested.
    assert "pod webhook" in names_by_process(VOLCANO_COMPAT_WEBHOOKS)


def test_served_names_reads_both_flag_forms_and_defaults_to_muster() -> None:
    def deployment(*args: str) -> Doc:
        return {"spec": {"template": {"spec": {"containers": [{"args": list(args)}]}}}}

    assert served_names(deployment("scheduler")) == {"muster"}
    assert served_names(deployment("x", "--scheduler-name=a", "--scheduler-name", "b")) == {
        "a",
        "b",
    }
