"""`muster whatif -f gang.yaml`: would this PodGroup and its pods run if submitted now?

The file's objects are added to a read-only copy of the cluster and one session runs with
the scheduler's config: admitted or not, placed or not and where, which pods preempt or
reclaim would evict for it, and why not in the words of its conditions. Nothing is sent
to the API server but GETs.

A pod's ResourceClaims are submitted too: a claim the file holds, or one it names that the
cluster has; a claim from a ResourceClaimTemplate (the file's, else the cluster's, read with
a GET) is made for the pod as the resourceclaim controller makes it, named
`<pod>-<claim>-whatif`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import yaml

from scheduler.api import dra, wire
from scheduler.api.errors import InvalidObject
from scheduler.api.job import JobInfo
from scheduler.api.names import GROUP, GROUP_NAME_ANNOTATION, VERSION
from scheduler.api.native import GROUP as NATIVE_GROUP
from scheduler.api.native import (
    PODGROUP_RESOURCE,
    V1ALPHA2,
    V1BETA1,
    PodGroupWire,
    QueueSource,
    decode_podgroup,
    native_key,
    read_podgroup,
)
from scheduler.api.native import PODGROUPS as NATIVE_PODGROUPS
from scheduler.api.pod_defaults import with_defaulted_requests
from scheduler.api.priority import PriorityRefused, admit_priority
from scheduler.api.snapshot import PriorityClassInfo, shadow_key
from scheduler.api.task import TaskInfo
from scheduler.api.timestamps import format_rfc3339
from scheduler.cache.kinds import native_podgroups, podgroups, pods, resourceclaims
from scheduler.cache.world import World
from scheduler.framework.decisions import Evict, ScaleUpReport
from scheduler.inspect.cluster import (
    Options,
    Session,
    add_cluster_arguments,
    connection,
    context_namespace,
    observe,
    run_session,
)
from scheduler.inspect.scale_up import scale_up_document, scale_up_lines, scale_up_of
from scheduler.inspect.views import (
    GroupView,
    device_words,
    group_view,
    member_nodes,
    pod_messages,
    verdict,
)
from scheduler.kube.client import KubeClient
from scheduler.kube.errors import NotFound, StatusError

POD_API = "v1"
PODGROUP_API = f"{GROUP}/{VERSION}"
# DRA's kinds a file may hold beside its pods.
DRA_KINDS = (("ResourceClaim", dra.API_VERSION), ("ResourceClaimTemplate", dra.API_VERSION))
# Kubernetes' own PodGroups, at either version muster reads.
NATIVE_APIS = (
    ("PodGroup", f"{NATIVE_GROUP}/{V1ALPHA2}"),
    ("PodGroup", f"{NATIVE_GROUP}/{V1BETA1}"),
)
# The uids the file's objects get: no real object has one of this shape.
UID_PREFIX = "whatif-"


class ManifestError(ValueError):
    """A document of the file that whatif cannot submit as written."""


@dataclass
class Submission:
    """What the file added to the World: its PodGroups' keys and its pods (ns/name)."""

    podgroups: list[str] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)
    # The one-pod groups of its pods that name no PodGroup.
    bare: list[str] = field(default_factory=list)
    # The namespaces its objects go in.
    namespaces: set[str] = field(default_factory=set)


def load_documents(text: str) -> list[dict[str, Any]]:
    """The documents of a multi-document YAML file (empty ones dropped; a List's items)."""
    docs: list[dict[str, Any]] = []
    for index, doc in enumerate(yaml.safe_load_all(text)):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ManifestError(f"document {index + 1} is not an object: {doc!r}")
        if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            docs.extend(item for item in doc["items"] if isinstance(item, dict))
            continue
        docs.append(doc)
    return docs


def _namespace_of(doc: dict[str, Any], label: str, namespace: str, explicit: bool) -> str:
    given = (doc.get("metadata") or {}).get("namespace")
    if given and explicit and given != namespace:
        # kubectl refuses the same way: the object and the flag disagree.
        raise ManifestError(
            f"{label} has metadata.namespace {given!r} but -n says {namespace!r}; "
            "remove one of them"
        )
    return str(given or namespace)


def add_manifests(
    world: World,
    docs: Iterable[dict[str, Any]],
    namespace: str,
    now: float,
    *,
    explicit_namespace: bool = False,
    templates: dict[str, dra.ResourceClaimTemplate] | None = None,
) -> Submission:
    """Add the file's PodGroups, pods and ResourceClaims to the World as the API server would
    create them (a fresh uid, creationTimestamp now, requests defaulted from limits, the
    priority of its class, no status), and the claims of the pods' templates as the
    resourceclaim controller makes them (`templates`: the cluster's, by "namespace/name",
    beside the file's); raises ManifestError on a document that could not be created or
    that the scheduler would not see."""
    submission = Submission()
    created = format_rfc3339(now)
    existing_pods = {f"{t.namespace}/{t.name}" for t in world.tasks.values()}
    groups: list[wire.PodGroup] = []
    native_groups: list[tuple[PodGroupWire, str]] = []
    new_pods: list[wire.Pod] = []
    claims: list[dra.ResourceClaim] = []
    known_templates = dict(templates or {})
    # Pods whose template claims are made once every template of the file is read.
    pending_claims: list[tuple[str, dict[str, Any]]] = []
    for index, doc in enumerate(docs):
        kind, api = doc.get("kind"), doc.get("apiVersion")
        name = (doc.get("metadata") or {}).get("name")
        label = f"document {index + 1} ({kind} {name or '<no name>'})"
        if (kind, api) in DRA_KINDS and name:
            ns = _namespace_of(doc, label, namespace, explicit_namespace)
            submission.namespaces.add(ns)
            meta = {
                **(doc.get("metadata") or {}),
                "namespace": ns,
                "uid": f"{UID_PREFIX}{ns}-{name}",
            }
            body = {**doc, "metadata": meta}
            body.pop("status", None)
            try:
                if kind == "ResourceClaim":
                    claims.append(msgspec.convert(body, dra.ResourceClaim))
                else:
                    known_templates[f"{ns}/{name}"] = msgspec.convert(
                        body, dra.ResourceClaimTemplate
                    )
            except msgspec.ValidationError as error:
                raise ManifestError(f"{label}: {error}") from error
            continue
        if (kind, api) not in (("Pod", POD_API), ("PodGroup", PODGROUP_API), *NATIVE_APIS):
            raise ManifestError(
                f"{label}: apiVersion {api!r} kind {kind!r} is not one whatif submits; "
                f"give {POD_API} Pod and {PODGROUP_API} or {NATIVE_GROUP}/{V1ALPHA2} or "
                f"{NATIVE_GROUP}/{V1BETA1} PodGroup documents, and {dra.API_VERSION} "
                "ResourceClaims and ResourceClaimTemplates, only"
            )
        if not name:
            raise ManifestError(
                f"{label}: metadata.name is required (metadata.generateName is not "
                "supported: the answer must name the pods)"
            )
        ns = _namespace_of(doc, label, namespace, explicit_namespace)
        submission.namespaces.add(ns)
        body = {k: v for k, v in doc.items() if k != "status"}
        body["metadata"] = {
            **(doc.get("metadata") or {}),
            "namespace": ns,
            "uid": f"{UID_PREFIX}{str(kind).lower()}-{ns}-{name}",
            "creationTimestamp": created,
        }
        try:
            if kind == "PodGroup" and api != PODGROUP_API:
                version = str(api).partition("/")[2]
                native_groups.append((decode_podgroup(msgspec.json.encode(body)), version))
            elif kind == "PodGroup":
                groups.append(wire.from_dict(body, wire.PodGroup))
            else:
                # the requests the API server writes into a new pod (limits as requests)
                body["spec"] = with_defaulted_requests(dict(body.get("spec") or {}))
                _admit_priority(world, body)
                pending_claims.append((label, body))
                new_pods.append(wire.from_dict(body, wire.Pod))
        except (msgspec.ValidationError, InvalidObject) as error:
            raise ManifestError(f"{label}: {error}") from error
    if pending_claims:
        made = [_made_claims(label, body, known_templates) for label, body in pending_claims]
        claims.extend(claim for found in made for claim in found)
        new_pods = [wire.from_dict(body, wire.Pod) for _, body in pending_claims]
    for group in groups:
        key = f"{group.metadata.namespace}/{group.metadata.name}"
        known = world.live.jobs.get(key)
        if key in submission.podgroups or (known is not None and not known.shadow):
            raise ManifestError(f"PodGroup {key} exists already; give the new one another name")
        try:
            JobInfo.from_podgroup(group)
        except InvalidObject as error:
            raise ManifestError(str(error)) from error
        submission.podgroups.append(key)
    for native, version in native_groups:
        record = read_podgroup(native, version)
        if record.key in submission.podgroups or record.key in world.native_podgroups:
            raise ManifestError(
                f"{PODGROUP_RESOURCE} {record.namespace}/{record.name} exists already; give "
                "the new one another name"
            )
        try:
            JobInfo.from_native(record, 0, "", QueueSource.DEFAULT)
        except InvalidObject as error:
            raise ManifestError(str(error)) from error
        submission.podgroups.append(record.key)
    for pod in new_pods:
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if key in existing_pods or key in submission.pods:
            raise ManifestError(f"Pod {key} exists already; give the new one another name")
        if not pods.keeps(world, pod):
            names = ", ".join(sorted(world.scheduler_names))
            raise ManifestError(
                f"Pod {key}: spec.schedulerName {pod.spec.scheduler_name!r} is not one the "
                f"scheduler serves ({names}); set spec.schedulerName or pass --scheduler-name"
            )
        try:
            task = TaskInfo.from_pod(pod)
        except InvalidObject as error:
            raise ManifestError(str(error)) from error
        submission.pods.append(key)
        if (
            not pod.metadata.annotations.get(GROUP_NAME_ANNOTATION)
            and not pod.spec.scheduling_group
        ):
            submission.bare.append(shadow_key(task))
    for group in groups:
        podgroups.upsert(world, group)
    for native, version in native_groups:
        # As the server it was written for would serve it (a version the cluster serves).
        world.served_versions[NATIVE_PODGROUPS] = version
        native_podgroups.upsert(world, native)
        # Submitted for muster: its pods come below, but a gang with none yet is claimed.
        record = world.native_podgroups[native_key(native.metadata.namespace, native.metadata.name)]
        if not world.owns(record.key):
            world.owners.adopt(record.key, record, spec_changed=True)
    for claim in claims:
        resourceclaims.upsert(world, claim)
    for pod in new_pods:
        pods.upsert(world, pod)
    return submission


def template_names(docs: Iterable[dict[str, Any]], namespace: str) -> list[str]:
    """The ResourceClaimTemplates ("namespace/name") the file's pods name that the file does
    not hold: whatif reads them from the cluster."""
    held = {
        f"{(doc.get('metadata') or {}).get('namespace') or namespace}/"
        f"{(doc.get('metadata') or {}).get('name')}"
        for doc in docs
        if doc.get("kind") == "ResourceClaimTemplate"
    }
    named: list[str] = []
    for doc in docs:
        if doc.get("kind") != "Pod":
            continue
        ns = (doc.get("metadata") or {}).get("namespace") or namespace
        for entry in (doc.get("spec") or {}).get("resourceClaims") or []:
            template = entry.get("resourceClaimTemplateName") if isinstance(entry, dict) else None
            key = f"{ns}/{template}"
            if template and key not in held and key not in named:
                named.append(key)
    return named


async def fetch_templates(
    options: Options, keys: list[str]
) -> dict[str, dra.ResourceClaimTemplate]:
    """The cluster's ResourceClaimTemplates of `keys` that exist."""
    found: dict[str, dra.ResourceClaimTemplate] = {}
    async with KubeClient(connection(options)) as client:
        for key in keys:
            namespace, name = key.split("/", 1)
            path = f"/apis/{dra.API_VERSION}/namespaces/{namespace}/resourceclaimtemplates/{name}"
            try:
                answer = await client.request("GET", path, retry=False)
            except StatusError:
                continue
            found[key] = msgspec.json.decode(answer, type=dra.ResourceClaimTemplate)
    return found


def _made_claims(
    label: str, body: dict[str, Any], templates: dict[str, dra.ResourceClaimTemplate]
) -> list[dra.ResourceClaim]:
    """The claims of the pod's templates, made as the resourceclaim controller makes them
    (owned by the pod, its name in the pod's status.resourceClaimStatuses)."""
    meta = body["metadata"]
    namespace, pod_name, uid = meta["namespace"], meta["name"], meta["uid"]
    made: list[dra.ResourceClaim] = []
    statuses: list[dict[str, str]] = []
    for entry in (body.get("spec") or {}).get("resourceClaims") or []:
        template_name = entry.get("resourceClaimTemplateName") if isinstance(entry, dict) else None
        if not template_name:
            continue
        template = templates.get(f"{namespace}/{template_name}")
        if template is None:
            raise ManifestError(
                f"{label}: ResourceClaimTemplate {namespace}/{template_name} is neither in the "
                "file nor in the cluster"
            )
        claim_name = f"{pod_name}-{entry.get('name')}-whatif"
        claim = dra.ResourceClaim(
            metadata=dra.ClaimMeta(
                name=claim_name,
                namespace=namespace,
                uid=f"{UID_PREFIX}claim-{namespace}-{claim_name}",
                labels=dict(template.spec.metadata.labels),
                annotations={
                    **template.spec.metadata.annotations,
                    dra.POD_CLAIM_NAME_ANNOTATION: str(entry.get("name")),
                },
                owner_references=[
                    wire.OwnerReference(
                        api_version="v1", kind="Pod", name=pod_name, uid=uid, controller=True
                    )
                ],
            ),
            spec=template.spec.spec,
        )
        made.append(claim)
        statuses.append({"name": str(entry.get("name")), "resourceClaimName": claim_name})
    if statuses:
        body["status"] = {"resourceClaimStatuses": statuses}
    return made


def _admit_priority(world: World, pod: dict[str, Any]) -> None:
    """Fill spec.priority as the API server's Priority admission does on create (the same
    rule muster sim applies), from the PriorityClasses the cluster lists."""

    def as_object(info: PriorityClassInfo) -> dict[str, Any]:
        return {
            "metadata": {"name": info.name},
            "value": info.value,
            "globalDefault": info.global_default,
            "preemptionPolicy": info.preemption_policy,
        }

    classes = world.live.priority_classes
    defaults = [as_object(pc) for pc in classes.values() if pc.global_default]
    try:
        admit_priority(
            pod,
            lambda name: as_object(classes[name]) if name in classes else None,
            # with several defaults the real admission picks the lowest value
            lambda: min(defaults, key=lambda pc: int(pc["value"])) if defaults else None,
        )
    except PriorityRefused as refused:
        # the API server's 403 in its words: pods "NAME" is forbidden: WHY
        raise ManifestError(
            f'the API server would refuse it: pods "{refused.pod_name}" is forbidden: '
            f"{refused.message}"
        ) from refused


@dataclass
class Answer:
    """What the session says of one submitted group."""

    view: GroupView
    verdict: str
    placements: dict[str, tuple[str, str]]
    pending: dict[str, str]
    evictions: list[Evict]
    # Whether muster would ask an autoscaler for its nodes, and for what.
    scale_up: ScaleUpReport | None = None
    # Per pod, muster's words for why its ResourceClaims found no devices.
    devices: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self, now: float) -> dict[str, Any]:
        """The answer as JSON."""
        return {
            "podgroup": self.view.key,
            "verdict": self.verdict,
            "admitted": self.view.phase != "Pending",
            "phase": self.view.phase,
            "placements": {
                pod: {"node": n, "status": s} for pod, (n, s) in self.placements.items()
            },
            "pending": self.pending,
            "evictions": [
                {"namespace": e.namespace, "name": e.name, "node": e.node, "reason": e.reason}
                for e in self.evictions
            ],
            "reason": self.view.waiting_reason,
            "conditions": self.view.as_dict(now)["conditions"],
            "scaleUp": scale_up_document(self.scale_up),
            "devices": self.devices,
        }


def answers(
    session: Session, baseline: Session, world: World, submission: Submission
) -> list[Answer]:
    """Per submitted group: the session's verdict, placements, pending messages, and the
    evictions the submission causes (those the session without it would not make)."""
    updates = {u.key: u for u in session.result.podgroups}
    already = {e.uid for e in baseline.result.evictions}
    caused = [e for e in session.result.evictions if e.uid not in already]
    found = []
    for key in [*submission.podgroups, *submission.bare]:
        job = session.snapshot.jobs.get(key)
        if job is None:
            continue
        view = group_view(job, updates.get(key), world.live.jobs.get(key))
        found.append(
            Answer(
                view=view,
                verdict=verdict(view, session.result),
                placements=member_nodes(session, key),
                pending=pod_messages(session.result, key),
                evictions=caused,
                scale_up=scale_up_of(session.result, key),
                devices=device_words(session.result, key),
            )
        )
    return found


async def missing_namespaces(options: Options, submission: Submission) -> list[str]:
    """The submission's namespaces that do not exist (a user who may not read namespaces
    is not refused: the API server is the judge of that)."""
    wanted = sorted(submission.namespaces)
    missing = []
    async with KubeClient(connection(options)) as client:
        for namespace in wanted:
            try:
                await client.request("GET", f"/api/v1/namespaces/{namespace}", retry=False)
            except NotFound:
                missing.append(namespace)
            except StatusError:
                continue
    return missing


def answer_text(answer: Answer) -> str:
    """One group's answer in words."""
    view = answer.view
    lines = [f"{view.title}: {answer.verdict}"]
    admitted = "yes" if view.phase != "Pending" else "no"
    lines.append(f"  admitted: {admitted} (phase {view.phase})")
    if answer.placements:
        lines.append("  placed:")
        lines += [
            f"    {pod} -> {node} ({status})" for pod, (node, status) in answer.placements.items()
        ]
    else:
        lines.append("  placed: no")
    if answer.evictions:
        lines.append(f"  evicts {len(answer.evictions)} pods:")
        lines += [f"    {e.namespace}/{e.name} on {e.node}: {e.reason}" for e in answer.evictions]
    if answer.verdict == "waits":
        lines.append("  why not:")
        for condition in view.conditions:
            lines.append(
                f"    {condition.type}={condition.status} ({condition.reason}): {condition.message}"
            )
        for pod, message in sorted(answer.pending.items()):
            lines.append(f"    pod {pod}: {message}")
            lines += [f"      {line}" for line in answer.devices.get(pod, [])]
    lines += [f"  {line}" if line else line for line in scale_up_lines(answer.scale_up, would=True)]
    return "\n".join(lines)


def add_parser(subparsers: Any) -> None:
    """The `muster whatif` subcommand."""
    parser = subparsers.add_parser(
        "whatif", help="would this PodGroup run if submitted now (nothing is created)"
    )
    parser.add_argument(
        "-f", "--filename", required=True, type=Path, help="YAML of a PodGroup and its pods"
    )
    parser.add_argument("-n", "--namespace", help="namespace of documents that name none")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    add_cluster_arguments(parser)
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    """Entry point of `muster whatif`: 0 when everything submitted would run, 1 when not,
    2 when the question cannot be answered."""
    options = Options.from_args(args)
    try:
        docs = load_documents(args.filename.read_text())
    except OSError as error:
        print(f"muster whatif: {error}", file=sys.stderr)
        return 2
    except (ManifestError, yaml.YAMLError) as error:
        print(f"muster whatif: {args.filename}: {error}", file=sys.stderr)
        return 2
    observed = observe(options, "whatif")
    if isinstance(observed, int):
        return observed
    world, configuration = observed.world, observed.configuration
    config = configuration.config
    baseline = run_session(world, config)
    namespace = args.namespace or context_namespace(options)
    wanted = template_names(docs, namespace)
    templates = asyncio.run(fetch_templates(options, wanted)) if wanted else {}
    try:
        submission = add_manifests(
            world,
            docs,
            namespace,
            baseline.now,
            explicit_namespace=args.namespace is not None,
            templates=templates,
        )
    except ManifestError as error:
        print(f"muster whatif: {args.filename}: {error}", file=sys.stderr)
        return 2
    if not submission.pods and not submission.podgroups:
        print(f"muster whatif: {args.filename} holds no PodGroup or Pod", file=sys.stderr)
        return 2
    missing = asyncio.run(missing_namespaces(options, submission))
    if missing:
        print(
            f"muster whatif: namespace {', '.join(missing)} does not exist: the API server "
            "would refuse these objects; create it or pass another -n",
            file=sys.stderr,
        )
        return 2
    session = run_session(world, config, baseline.now)
    found = answers(session, baseline, world, submission)
    if args.output == "json":
        doc = {
            "configuration": configuration.as_dict(),
            "podgroups": [a.as_dict(session.now) for a in found],
        }
        print(json.dumps(doc, indent=2))
    else:
        print(f"configuration: {configuration.describe()}\n")
        print("\n\n".join(answer_text(a) for a in found))
    return 0 if found and all(a.verdict != "waits" for a in found) else 1
