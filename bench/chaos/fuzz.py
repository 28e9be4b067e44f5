"""Fuzz: hostile and malformed objects sent through sim over HTTP, and what muster makes of them.

Hypothesis strategies draw PodGroups, Queues and pods with one field made bad (wrong types,
bad and huge quantities, negative and enormous minMember, unknown queues, queue parents in a
cycle, unicode and 253-character names, megabyte annotations) and pods with every scheduling
field at once. Each goes to sim as its admin; sim answers as kube-apiserver would (a
refusal is fine, a 5xx is not). Afterwards: the scheduler and the controller are alive and
healthy, a canary gang still gets bound, and every accepted bad object has an event or a
condition that names its bad field.
"""

from __future__ import annotations

import json
import math
import ssl
import string
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from chaos.cluster import ChaosCluster
from scheduler.api.quantity import InvalidQuantity, parse_quantity
from tests.e2e.harness import GROUP, VERSION, kubeconfig_access, make_gang, make_pod

Obj = dict[str, Any]
NAMESPACE = "fuzz"
GROUP_NAME = "scheduling.k8s.io/group-name"
# how long muster has to say something about an accepted bad object
EXPLAIN_SECONDS = 15.0

names = st.one_of(
    st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=20).map(
        lambda s: f"f{s}"
    ),
    st.just("x" * 253),
    st.just("y" * 254),
    st.text(min_size=1, max_size=12),  # unicode: refused as a name
)
bad_quantities = st.one_of(
    st.sampled_from(["-1", "abc", "1e999", "99999999999999999999999Ti", "", "1.5.5", "0x10"]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)
wrong_types = st.one_of(
    st.none(), st.booleans(), st.text(max_size=5), st.lists(st.integers(), max_size=2), st.just({})
)
min_members = st.one_of(
    st.integers(min_value=-(2**63), max_value=-1),
    st.integers(min_value=10**6, max_value=2**63),
    st.just(0),
    wrong_types,
)


def is_quantity(value: Any) -> bool:
    """Whether kube would take `value` as a quantity: a string or a JSON number whose text
    parses (resource.Quantity unmarshals a number from its JSON text, 1e7 as well as 7)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return False
        value = json.dumps(value)
    if isinstance(value, bool) or not isinstance(value, str | int):
        return False
    try:
        parse_quantity(value)
    except InvalidQuantity:
        return False
    return True


# words that name a bad field in a message, besides the field's own last segment
ALSO_NAMED = {
    GROUP_NAME: ("PodGroup",),
    "spec.containers[0].resources.requests": ("cpu", "memory"),
}


@dataclass
class Sent:
    """One fuzzed object: where it went, the field made bad ("" for none), and the answer."""

    path: str
    name: str
    bad_field: str
    code: int
    message: str = ""


@st.composite
def podgroup(draw: Any) -> tuple[str, Obj, str]:
    name = draw(names)
    body: Obj = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": 1},
    }
    bad = draw(st.sampled_from(["minMember", "queue", "minResources", "priorityClassName", "name"]))
    if bad == "minMember":
        body["spec"]["minMember"] = draw(min_members)
        if body["spec"]["minMember"] in (0, None) and not isinstance(
            body["spec"]["minMember"], bool
        ):
            # 0 releases a gang (KubeRay's finish); null is pruned, as for any CRD field
            bad = "name"
    elif bad == "queue":
        body["spec"]["queue"] = draw(st.one_of(st.text(min_size=1, max_size=30), wrong_types))
    elif bad == "minResources":
        body["spec"]["minResources"] = {"cpu": draw(bad_quantities), "memory": draw(bad_quantities)}
    elif bad == "priorityClassName":
        body["spec"]["priorityClassName"] = draw(st.text(min_size=1, max_size=20))
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/podgroups"
    return path, body, "" if bad == "name" else f"spec.{bad}"


@st.composite
def queue(draw: Any) -> tuple[str, Obj, str]:
    name = draw(names)
    spec: Obj = {"weight": 1}
    bad = draw(st.sampled_from(["weight", "capability", "parent", "reclaimable"]))
    if bad == "weight":
        spec["weight"] = draw(
            st.one_of(st.integers(-(2**40), 0), st.integers(2**31, 2**64), wrong_types)
        )
        if spec["weight"] is None:
            bad = ""  # pruned
    elif bad == "capability":
        spec["capability"] = {"cpu": draw(bad_quantities)}
        if is_quantity(spec["capability"]["cpu"]):
            # huge but a quantity all the same: hostile, not malformed
            bad = ""
    elif bad == "parent":
        # a parent that names the queue itself, or one that does not exist
        spec["parent"] = draw(st.one_of(st.just(name), st.text(min_size=1, max_size=20)))
    else:
        spec["reclaimable"] = draw(wrong_types)
        if spec["reclaimable"] is None or isinstance(spec["reclaimable"], bool):
            bad = ""  # a boolean is right; a null CRD field is pruned: nothing bad is left
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }
    return f"/apis/{GROUP}/{VERSION}/queues", body, f"spec.{bad}" if bad else ""


EVERY_FIELD: Obj = {
    "nodeSelector": {"kubernetes.io/os": "linux", "fuzz/absent": "x"},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}
                        ]
                    }
                ]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"fuzz": "x"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        },
    },
    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"fuzz": "x"}},
        }
    ],
    "priorityClassName": "chaos-high",
    "preemptionPolicy": "Never",
    "runtimeClassName": "absent-runtime",
    "schedulingGates": [{"name": "fuzz/gate"}],
    "hostNetwork": True,
    "overhead": {"cpu": "10m"},
}


@st.composite
def pod(draw: Any) -> tuple[str, Obj, str]:
    name = draw(names)
    body = make_pod(name, cpu="100m", memory="64Mi")
    bad = draw(
        st.sampled_from(["requests", "annotations", "group", "every-field", "containers", "name"])
    )
    field_name = ""
    if bad == "requests":
        requests = {"cpu": draw(bad_quantities), "memory": draw(bad_quantities)}
        body["spec"]["containers"][0]["resources"] = {"requests": requests}
        if not all(v is None or is_quantity(v) for v in requests.values()):
            # (huge but valid quantities only make the pod unschedulable)
            field_name = "spec.containers[0].resources.requests"
    elif bad == "annotations":
        size = draw(st.sampled_from([300 * 1024, 1024 * 1024]))
        body["metadata"]["annotations"]["fuzz/big"] = "a" * size
        field_name = "metadata.annotations"
    elif bad == "group":
        body["metadata"]["annotations"][GROUP_NAME] = draw(st.text(min_size=1, max_size=40))
        field_name = GROUP_NAME
    elif bad == "every-field":
        body["spec"].update(json.loads(json.dumps(EVERY_FIELD)))
        body["metadata"]["labels"] = {"fuzz": "x"}
    else:
        body["spec"]["containers"] = draw(wrong_types)
        field_name = "spec.containers"
    return f"/api/v1/namespaces/{NAMESPACE}/pods", body, field_name


@dataclass
class Fuzzer:
    """Sends fuzzed objects to sim as its admin and keeps the answers."""

    url: str
    context: ssl.SSLContext | None
    token: str | None
    sent: list[Sent] = field(default_factory=list)
    # Names created so far, by resource ("queues", "podgroups", "pods").
    created: dict[str, set[str]] = field(default_factory=dict)

    def send(self, path: str, body: Obj, bad_field: str) -> Sent:
        if self._names_what_exists(path, body, bad_field):
            bad_field = ""  # drawn at random, it names an object sent before: nothing bad
        data = json.dumps(body, allow_nan=True).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.url + path, data=data, method="POST", headers=headers)
        name = str(body.get("metadata", {}).get("name", ""))
        try:
            with urllib.request.urlopen(request, timeout=30, context=self.context) as answer:
                result = Sent(path, name, bad_field, answer.status)
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            try:
                message = str(json.loads(text).get("message", ""))
            except ValueError:
                message = text[:200]
            result = Sent(path, name, bad_field, error.code, message)
        except OSError as error:
            result = Sent(path, name, bad_field, 0, str(error))
        if 200 <= result.code < 300:
            self.created.setdefault(path.rsplit("/", 1)[-1], set()).add(name)
        self.sent.append(result)
        return result

    def _names_what_exists(self, path: str, body: Obj, bad_field: str) -> bool:
        """Whether the field drawn as bad (a queue's parent, a pod's PodGroup) names an
        object that exists: a valid reference, however it was drawn."""
        if bad_field == "spec.parent":
            parent = body["spec"].get("parent")
            own = body["metadata"]["name"]
            return parent != own and parent in self.created.get("queues", set())
        if bad_field == GROUP_NAME:
            group = body["metadata"]["annotations"].get(GROUP_NAME)
            return group in self.created.get("podgroups", set())
        return False


def queue_cycle(fuzzer: Fuzzer) -> None:
    """Two queues naming each other as parent: the second write closes the cycle."""
    path = f"/apis/{GROUP}/{VERSION}/queues"
    for me, parent in (("cycle-a", "cycle-b"), ("cycle-b", "cycle-a")):
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Queue",
            "metadata": {"name": me},
            "spec": {"weight": 1, "parent": parent},
        }
        fuzzer.send(path, body, "spec.parent")


def send_fuzz(fuzzer: Fuzzer, count: int, seed: int) -> None:
    """Draw `count` objects (seeded) and send each."""
    objects = st.one_of(podgroup(), queue(), pod())

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(objects)
    def run(drawn: tuple[str, Obj, str]) -> None:
        path, body, bad_field = drawn
        fuzzer.send(path, body, bad_field)

    run()


def explained(chaos: ChaosCluster, sent: Sent) -> bool:
    """Whether an event about the object, or a condition on it, names its bad field."""
    # an annotation key is named whole; a field path by its last segment ("minMember")
    bad = sent.bad_field
    leaf = bad if "/" in bad else bad.rsplit(".", 1)[-1].split("[")[0]
    namespace = "" if "/queues" in sent.path else NAMESPACE
    texts: list[str] = []
    try:
        response = chaos.cluster.core.list_event_for_all_namespaces(
            field_selector=f"involvedObject.name={sent.name}", _preload_content=False
        )
        texts += [e.get("message", "") for e in json.loads(response.data)["items"]]
        if "/pods" in sent.path:
            obj = chaos.cluster.core.read_namespaced_pod(
                sent.name, namespace, _preload_content=False
            )
        elif "/queues" in sent.path:
            obj = None
            found = chaos.cluster.queue(sent.name)
            texts += [
                c.get("message", "")
                for c in (found or {}).get("status", {}).get("conditions") or []
            ]
        else:
            obj = None
            group = chaos.cluster.podgroup(namespace, sent.name)
            texts += [c.get("message", "") for c in group.get("status", {}).get("conditions") or []]
        if obj is not None:
            doc = json.loads(obj.data)
            texts += [c.get("message", "") for c in doc.get("status", {}).get("conditions") or []]
    except Exception:  # the object went away: nothing to explain any more
        return True
    words = (leaf, *ALSO_NAMED.get(bad, ()))
    return any(word and word in text for word in words for text in texts)


def run_fuzz(count: int, seed: int, work_dir: Path, nodes: int = 20) -> dict[str, Any]:
    """A fresh cluster (one replica, the controller), `count` fuzzed objects, the checks."""
    chaos = ChaosCluster(work_dir / f"fuzz-{seed}", nodes=min(nodes, 20), replicas=1)
    chaos.start()
    try:
        chaos.cluster.ensure_namespace(NAMESPACE)
        url, context, token = kubeconfig_access(chaos.sim.kubeconfig)
        fuzzer = Fuzzer(url, context, token)
        queue_cycle(fuzzer)
        began = time.time()
        send_fuzz(fuzzer, count, seed)
        sending = time.time() - began
        # the rest of the cluster keeps scheduling: a canary gang is bound
        podgroup_body, pods = make_gang("canary", 3, cpu="100m")
        chaos.cluster.submit(NAMESPACE, podgroup_body, pods)
        deadline = time.time() + 30
        canary = False
        while time.time() < deadline and not canary:
            placed = chaos.cluster.placements(NAMESPACE)
            canary = all(placed.get(f"canary-{i}") for i in range(3))
            time.sleep(0.2)
        alive = {
            "scheduler": all(r.alive and r.scheduler.healthy() for r in chaos.members),
            "controller": chaos.controller is not None
            and chaos.controller.process.alive
            and chaos.controller.healthy(),
        }
        time.sleep(min(EXPLAIN_SECONDS, 5.0))
        accepted_bad = [s for s in fuzzer.sent if 200 <= s.code < 300 and s.bad_field]
        unexplained = [s for s in accepted_bad if not explained(chaos, s)]
        server_errors = [s for s in fuzzer.sent if s.code >= 500 or s.code == 0]
        # muster's part: a process down or unhealthy, or the canary left unbound
        crashes = (0 if canary else 1) + sum(1 for ok in alive.values() if not ok)
        return {
            "sent": len(fuzzer.sent),
            "seconds": round(sending, 1),
            "accepted": sum(1 for s in fuzzer.sent if 200 <= s.code < 300),
            "refused": sum(1 for s in fuzzer.sent if 400 <= s.code < 500),
            "sim_5xx": len(server_errors),
            "sim_5xx_examples": [
                (s.path, s.name[:40], s.code, s.message[:200]) for s in server_errors[:10]
            ],
            "canary_bound": canary,
            "alive": alive,
            "crashes": crashes,
            "accepted_bad": len(accepted_bad),
            "unexplained": [
                (s.path.rsplit("/", 1)[-1], s.name[:60], s.bad_field) for s in unexplained
            ],
        }
    finally:
        chaos.stop()
