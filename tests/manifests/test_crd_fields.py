"""crds/ has every field of Volcano's PodGroup, Queue and HyperNode CRDs, typed and
constrained as theirs (CEL rules included).

What Volcano's clients write (KubeRay's spec.networkTopology, Kubeflow Trainer's
server-side apply, kubectl) must be stored, not pruned or refused: the API server drops
a field the schema lacks and refuses a value outside the schema's constraints. The
Volcano side is tests/manifests/volcano_fields.txt (facts read from Volcano's CRDs; its
header says from which commit).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.manifests.conftest import CRDS
from tests.manifests.crd_fields import (
    Field,
    Schema,
    crd_schema,
    fields_of_crd,
    parse_line,
    read_field_list,
)

VOLCANO_FIELDS = Path(__file__).with_name("volcano_fields.txt")

# (kind, path, constraint) -> (Volcano's value, ours, why ours differs). None: not set.
DELIBERATE_DIFFERENCES: dict[tuple[str, str, str], tuple[str | None, str | None, str]] = {
    ("Queue", "spec.reclaimable", "default"): (
        None,
        "true",
        "Volcano's mutating webhook sets reclaimable: true on create; muster's schema"
        " default stores the same without needing a webhook",
    ),
}

# Facts about the CRDs themselves, from the same Volcano files.
VOLCANO_RESOURCES = {
    "PodGroup": {
        "name": "podgroups.scheduling.volcano.sh",
        "group": "scheduling.volcano.sh",
        "version": "v1beta1",
        "scope": "Namespaced",
        "shortNames": ["pg", "podgroup-v1beta1"],
        "status_subresource": False,
    },
    "Queue": {
        "name": "queues.scheduling.volcano.sh",
        "group": "scheduling.volcano.sh",
        "version": "v1beta1",
        "scope": "Cluster",
        "shortNames": ["q", "queue-v1beta1"],
        "status_subresource": True,
    },
    "HyperNode": {
        "name": "hypernodes.topology.volcano.sh",
        "group": "topology.volcano.sh",
        "version": "v1alpha1",
        "scope": "Cluster",
        "shortNames": ["hn"],
        "status_subresource": True,
    },
}


def our_crds() -> dict[str, Schema]:
    """muster's CRDs by kind."""
    crds = [yaml.safe_load(p.read_text()) for p in sorted(CRDS.glob("*.yaml"))]
    return {crd["spec"]["names"]["kind"]: crd for crd in crds}


def by_path(fields: list[Field]) -> dict[tuple[str, str], Field]:
    return {(f.kind, f.path): f for f in fields}


def ours() -> dict[tuple[str, str], Field]:
    return by_path([f for crd in our_crds().values() for f in fields_of_crd(crd)])


def volcanos() -> dict[tuple[str, str], Field]:
    return by_path(read_field_list(VOLCANO_FIELDS))


def differences(volcano: Field, mine: Field) -> list[tuple[str, str | None, str | None]]:
    """(constraint, Volcano's value, ours) for each constraint the two fields disagree on."""
    theirs_by_name = dict(volcano.constraints) | {"type": volcano.type}
    mine_by_name = dict(mine.constraints) | {"type": mine.type}
    return [
        (name, theirs_by_name.get(name), mine_by_name.get(name))
        for name in sorted(set(theirs_by_name) | set(mine_by_name))
        if theirs_by_name.get(name) != mine_by_name.get(name)
    ]


def test_the_volcano_field_list_covers_every_kind_and_the_fields_clients_write() -> None:
    volcano = volcanos()
    assert {kind for kind, _ in volcano} == set(VOLCANO_RESOURCES)
    # Read by the scheduler, or written by KubeRay (network-topology labels) and kubectl.
    for path in (
        "spec.minMember",
        "spec.minResources.*",
        "spec.networkTopology.mode",
        "spec.networkTopology.highestTierAllowed",
        "spec.subGroupPolicy[].subGroupSize",
    ):
        assert ("PodGroup", path) in volcano, path
    for path in ("spec.weight", "spec.dequeueStrategy", "spec.affinity.nodeGroupAffinity"):
        assert ("Queue", path) in volcano, path
    # Read by the scheduler (api/hypernode.py).
    for path in (
        "spec.tier",
        "spec.tierName",
        "spec.members[].type",
        "spec.members[].selector.exactMatch.name",
        "spec.members[].selector.regexMatch.pattern",
        "spec.members[].selector.labelMatch.matchLabels.*",
        "spec.members[].selector.labelMatch.matchExpressions[].operator",
    ):
        assert ("HyperNode", path) in volcano, path


def test_every_volcano_field_is_in_our_crds() -> None:
    missing = sorted(set(volcanos()) - set(ours()))
    assert not missing, "crds/ lacks Volcano's fields (the API server would prune them):\n" + (
        "\n".join(f"{kind} {path}" for kind, path in missing)
    )


def test_every_field_has_volcanos_type_and_constraints_bar_the_deliberate_differences() -> None:
    mine = ours()
    wrong = []
    for key, volcano in sorted(volcanos().items()):
        if key not in mine:
            continue  # test_every_volcano_field_is_in_our_crds reports it
        for name, theirs, our_value in differences(volcano, mine[key]):
            deliberate = DELIBERATE_DIFFERENCES.get((*key, name))
            if deliberate is not None and deliberate[:2] == (theirs, our_value):
                continue
            wrong.append(f"{key[0]} {key[1]}: {name} is {our_value!r}, Volcano's is {theirs!r}")
    assert not wrong, "\n".join(wrong)


def test_every_deliberate_difference_is_still_a_difference() -> None:
    # A difference fixed on either side must leave the list, or it would excuse a new one.
    mine, volcano = ours(), volcanos()
    for (kind, path, name), (theirs, our_value, _) in DELIBERATE_DIFFERENCES.items():
        assert (name, theirs, our_value) in differences(
            volcano[(kind, path)], mine[(kind, path)]
        ), f"{kind} {path} {name} no longer differs as listed"


def test_our_crds_have_no_field_volcano_lacks() -> None:
    # A field of our own would be refused or pruned by a cluster running Volcano's CRDs.
    extra = sorted(set(ours()) - set(volcanos()))
    assert not extra, "\n".join(f"{kind} {path}" for kind, path in extra)


@pytest.mark.parametrize("kind", sorted(VOLCANO_RESOURCES))
def test_names_scope_and_status_subresource_are_volcanos(kind: str) -> None:
    crd = our_crds()[kind]
    facts = VOLCANO_RESOURCES[kind]
    (version,) = crd["spec"]["versions"]
    assert crd["metadata"]["name"] == facts["name"]
    assert crd["spec"]["group"] == facts["group"]
    assert crd["spec"]["scope"] == facts["scope"]
    assert crd["spec"]["names"]["shortNames"] == facts["shortNames"]
    assert version["name"] == facts["version"] and version["served"] and version["storage"]
    subresources = version.get("subresources") or {}
    assert ("status" in subresources) == facts["status_subresource"]


def schema_nodes(node: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every schema node that describes a value: properties, items, map values."""
    yield path or "<root>", node
    for name, child in (node.get("properties") or {}).items():
        yield from schema_nodes(child, f"{path}.{name}" if path else name)
    if isinstance(node.get("items"), dict):
        yield from schema_nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from schema_nodes(node["additionalProperties"], f"{path}.*")


def our_schema_nodes() -> Iterator[tuple[str, str, Schema]]:
    for kind, crd in sorted(our_crds().items()):
        for path, node in schema_nodes(crd_schema(crd)):
            yield kind, path, node


@pytest.mark.parametrize("kind", sorted(VOLCANO_RESOURCES))
def test_the_schemas_are_structural(kind: str) -> None:
    # The rules kube-apiserver applies to a CRD's schema (it refuses the CRD otherwise):
    # every node typed (a quantity is int-or-string), properties and additionalProperties
    # never together, metadata nothing but an object, anyOf only for int-or-string.
    schema = crd_schema(our_crds()[kind])
    wrong = []
    for path, node in schema_nodes(schema):
        if node.get("x-kubernetes-int-or-string"):
            if node.get("anyOf") != [{"type": "integer"}, {"type": "string"}] or "type" in node:
                wrong.append(f"{path}: int-or-string takes anyOf [integer, string] and no type")
            continue
        if not node.get("type"):
            wrong.append(f"{path}: no type")
        if "properties" in node and "additionalProperties" in node:
            wrong.append(f"{path}: both properties and additionalProperties")
        for combinator in ("anyOf", "allOf", "oneOf", "not"):
            if combinator in node:
                wrong.append(f"{path}: {combinator} outside an int-or-string")
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert not wrong, "\n".join(wrong)


def _without_defaults(node: Any) -> Any:
    """A schema without `default` or x-kubernetes-* keys, for jsonschema to check values."""
    if isinstance(node, dict):
        return {
            k: _without_defaults(v)
            for k, v in node.items()
            if k != "default" and not k.startswith("x-kubernetes-")
        }
    if isinstance(node, list):
        return [_without_defaults(v) for v in node]
    return node


def test_every_default_is_valid_for_its_field() -> None:
    # kube-apiserver refuses a CRD whose default fails its own schema.
    defaults = [(k, p, n) for k, p, n in our_schema_nodes() if "default" in n]
    assert defaults, "the schemas lost their defaults"
    for kind, path, node in defaults:
        validator = jsonschema.Draft4Validator(_without_defaults(node))
        errors = [e.message for e in validator.iter_errors(node["default"])]
        assert not errors, f"{kind} {path}: default {node['default']!r}: {errors}"


def test_a_podgroup_as_kuberay_writes_it_keeps_its_network_topology() -> None:
    # KubeRay's volcano batch scheduler sets spec.networkTopology from the RayCluster's
    # volcano.sh/network-topology-mode and -highest-tier-allowed labels. Pruning keeps
    # only what the schema declares; the object must validate against the schema too.
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "ray-demo-pg", "namespace": "default"},
        "spec": {
            "minMember": 3,
            "minResources": {"cpu": "3", "memory": "6Gi"},
            "queue": "team-a",
            "networkTopology": {"mode": "soft", "highestTierAllowed": 2},
        },
        "status": {"phase": "Pending"},
    }
    schema = crd_schema(our_crds()["PodGroup"])
    assert prune(podgroup, schema) == podgroup
    jsonschema.Draft4Validator(_without_defaults(schema)).validate(podgroup)


def test_a_network_topology_mode_outside_hard_and_soft_is_refused() -> None:
    schema = crd_schema(our_crds()["PodGroup"])
    podgroup = {"spec": {"networkTopology": {"mode": "strict"}}}
    with pytest.raises(jsonschema.ValidationError, match="strict"):
        jsonschema.Draft4Validator(_without_defaults(schema)).validate(podgroup)


def test_the_hypernode_member_selector_keeps_volcanos_cel_rules() -> None:
    # Exactly one of exactMatch, regexMatch and labelMatch: the API server refuses the
    # rest, and api/hypernode.py relies on it for a selector that is there.
    selector = crd_schema(our_crds()["HyperNode"])["properties"]["spec"]["properties"]["members"][
        "items"
    ]["properties"]["selector"]
    rules = [v["rule"] for v in selector["x-kubernetes-validations"]]
    assert rules == [
        "has(self.exactMatch) || has(self.regexMatch) || has(self.labelMatch)",
        "(has(self.exactMatch) ? 1 : 0) + (has(self.regexMatch) ? 1 : 0)"
        " + (has(self.labelMatch) ? 1 : 0) <= 1",
    ]
    assert all(v["message"] for v in selector["x-kubernetes-validations"])


def test_a_hypernode_of_each_selector_is_stored_whole() -> None:
    # Tier-2 spine over two racks: by exact name, by regular expression, by labels.
    hypernode = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "spine-0"},
        "spec": {
            "tier": 2,
            "tierName": "spine",
            "members": [
                {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-0"}}},
                {"type": "Node", "selector": {"regexMatch": {"pattern": "^gpu-[0-9]+$"}}},
                {
                    "type": "Node",
                    "selector": {
                        "labelMatch": {
                            "matchLabels": {"example.com/rack": "1"},
                            "matchExpressions": [
                                {"key": "gpu", "operator": "In", "values": ["h100"]}
                            ],
                        }
                    },
                },
            ],
        },
        "status": {"nodeCount": 12},
    }
    schema = crd_schema(our_crds()["HyperNode"])
    assert prune(hypernode, schema) == hypernode
    jsonschema.Draft4Validator(_without_defaults(schema)).validate(hypernode)


def prune(value: Any, node: Schema, root: bool = True) -> Any:
    """What kube-apiserver's pruning keeps of `value` under a structural schema."""
    if node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string"):
        return value
    if isinstance(value, dict):
        props = node.get("properties") or {}
        values = node.get("additionalProperties")
        kept = {}
        for key, child in value.items():
            if root and key == "metadata":
                kept[key] = child  # ObjectMeta is the API server's, never pruned
            elif key in props:
                kept[key] = prune(child, props[key], root=False)
            elif isinstance(values, dict):
                kept[key] = prune(child, values, root=False)
        return kept
    if isinstance(value, list) and isinstance(node.get("items"), dict):
        return [prune(v, node["items"], root=False) for v in value]
    return value


def test_a_field_line_reads_back_as_the_same_field() -> None:
    # The Volcano side is read from lines, ours from the CRDs: a lossy line format would
    # make the two differ (or agree) for the wrong reason.
    for field in ours().values():
        assert parse_line(field.line()) == field, field.line()
