"""The audit log: one record per write sim makes, with who asked, as kube-apiserver's audit does.

Records follow audit.k8s.io/v1 Event (stage ResponseComplete, level RequestResponse): verb,
objectRef with the resourceVersion the write produced, responseStatus.code, the authenticated
user (name, groups, extra: a ServiceAccount token's credential-id tells two holders of one
account apart), requestObject for bindings and evictions, responseObject (the stored object
after the write; not for core Events, whose volume would dwarf the rest). Writes sim makes on its
own (its kubelet, garbage collector, provisioner, which on a cluster are separate clients) are
recorded too, as user `muster-sim:internal`, and writes a request caused besides its own (a
cascade) carry the request's user and `annotations["sim.muster.dev/caused-by"]`.

Two sim-only fields make the log checkable: `seq`, a gapless sequence number (GET
/sim/audit?since=N resumes after record N), and `time`, the commit time in Unix seconds.
Records are kept in memory (the newest `capacity`) and optionally appended to a file, as
kube-apiserver's `--audit-log-path` does.
"""

from __future__ import annotations

import contextvars
import itertools
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import msgspec

from muster_sim.access.authn import UserInfo
from muster_sim.apiserver.store import Event
from muster_sim.errors import expired

Obj = dict[str, Any]

INTERNAL_USER = "muster-sim:internal"
CAUSED_BY = "sim.muster.dev/caused-by"
# the store event a record's write made: ADDED, MODIFIED or DELETED (a graceful delete only
# MODIFIES, setting deletionTimestamp; the object goes with a DELETED event later)
EVENT_TYPE = "sim.muster.dev/event-type"
# resources whose stored objects the log leaves out (level Metadata for them)
METADATA_ONLY = frozenset({"events"})
_EVENT_VERBS = {"ADDED": "create", "MODIFIED": "update", "DELETED": "delete"}

_encode = msgspec.json.Encoder().encode


def _stamp(seconds: float) -> str:
    """RFC 3339 with microseconds, as audit timestamps are written."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _user(user: UserInfo | None) -> Obj:
    if user is None:
        # --insecure: nobody authenticated; kube would not serve such a request at all
        return {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
    doc: Obj = {"username": user.name, "groups": list(user.groups)}
    if user.uid:
        doc["uid"] = user.uid
    if user.extra:
        doc["extra"] = {k: list(v) for k, v in user.extra.items()}
    return doc


@dataclass
class PendingRequest:
    """One write request being served: filled in as the route is parsed and the write lands."""

    method: str
    uri: str
    user: UserInfo | None
    user_agent: str
    received: float
    audit_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    verb: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    # the storage key of the resource (plural.group): store events of it are this request's
    key: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    request_object: Any = None
    # the first store event of the request's own resource: its resourceVersion and object
    primary: Event | None = None
    open: bool = True


_current: contextvars.ContextVar[PendingRequest | None] = contextvars.ContextVar(
    "muster_sim_audit_request", default=None
)


class AuditLog:
    """Every write as an audit Event: in memory for GET /sim/audit, and to a file if asked."""

    def __init__(self, capacity: int = 100_000, path: Path | None = None) -> None:
        self.capacity = capacity
        self.seq = 0
        self._lines: deque[bytes] = deque()
        self._file: IO[bytes] | None = path.open("ab") if path is not None else None

    # -- the request side (app.py, resource_requests.py) ----------------------

    def begin(
        self, method: str, uri: str, user: UserInfo | None, user_agent: str
    ) -> PendingRequest:
        """Start auditing a write request on the current task."""
        pending = PendingRequest(method, uri, user, user_agent, time.time())
        _current.set(pending)
        return pending

    def finish(self, pending: PendingRequest, code: int) -> None:
        """The request was answered `code`: write its record."""
        pending.open = False
        _current.set(None)
        event = pending.primary
        obj: Obj = {
            "verb": pending.verb or pending.method.lower(),
            "requestURI": pending.uri,
            "user": _user(pending.user),
            "userAgent": pending.user_agent,
            "objectRef": self._object_ref(pending, event),
            "responseStatus": {"code": code},
            "requestReceivedTimestamp": _stamp(pending.received),
        }
        if pending.request_object is not None:
            obj["requestObject"] = pending.request_object
        self._append(obj, pending.audit_id, event if code < 400 else None)

    @staticmethod
    def _object_ref(pending: PendingRequest, event: Event | None) -> Obj:
        ref: Obj = {"resource": pending.resource}
        for key, value in (
            ("subresource", pending.subresource),
            ("namespace", pending.namespace),
            ("apiGroup", pending.api_group),
            ("apiVersion", pending.api_version),
        ):
            if value:
                ref[key] = value
        name = pending.name
        if event is not None:
            name = name or str(event.obj["metadata"].get("name") or "")
            ref["resourceVersion"] = str(event.rv)
            ref["uid"] = event.obj["metadata"].get("uid")
        if name:
            ref["name"] = name
        return ref

    # -- the store side (every committed change) ------------------------------

    def observe(self, event: Event) -> None:
        """A change was committed: the current request's own, a cascade of it, or sim's own."""
        pending = _current.get()
        if pending is not None and not pending.open:
            # a timer scheduled while serving a request inherits its context: sim's own write
            pending = None
        if pending is not None and pending.primary is None and event.key == pending.key:
            pending.primary = event
            return
        user = pending.user if pending is not None else None
        meta = event.obj["metadata"]
        plural, _, group = event.key.partition(".")
        ref: Obj = {"resource": plural, "name": meta.get("name"), "uid": meta.get("uid")}
        if group:
            ref["apiGroup"] = group
        if event.namespace:
            ref["namespace"] = event.namespace
        ref["resourceVersion"] = str(event.rv)
        now = time.time()
        obj: Obj = {
            "verb": _EVENT_VERBS.get(event.type, event.type.lower()),
            "requestURI": "",
            "user": _user(user) if pending is not None else {"username": INTERNAL_USER},
            "objectRef": ref,
            "responseStatus": {"code": 200},
            "requestReceivedTimestamp": _stamp(now),
        }
        audit_id = str(uuid.uuid4())
        if pending is not None:
            obj["annotations"] = {CAUSED_BY: pending.audit_id}
        self._append(obj, audit_id, event)

    # -- records --------------------------------------------------------------

    def _append(self, obj: Obj, audit_id: str, event: Event | None) -> None:
        self.seq += 1
        now = time.time()
        obj.update(
            kind="Event",
            apiVersion="audit.k8s.io/v1",
            level="RequestResponse",
            auditID=audit_id,
            stage="ResponseComplete",
            stageTimestamp=_stamp(now),
            seq=self.seq,
            time=now,
        )
        if event is not None:
            obj.setdefault("annotations", {})[EVENT_TYPE] = event.type
        line = _encode(obj)
        if event is not None and event.key not in METADATA_ONLY:
            # splice in the stored object's JSON, encoded once for every watcher already
            line = line[:-1] + b',"responseObject":' + event.obj_bytes() + b"}"
        self._lines.append(line)
        if len(self._lines) > self.capacity:
            self._lines.popleft()
        if self._file is not None:
            self._file.write(line + b"\n")

    def since(self, seq: int, limit: int = 0) -> list[bytes]:
        """Records after `seq` (at most `limit`, 0: all); 410 Expired if some were dropped."""
        oldest = self.seq - len(self._lines) + 1
        if seq + 1 < oldest:
            raise expired(
                f"audit records up to {oldest - 1} were dropped (sim keeps the newest "
                f"{self.capacity}); resume from since={oldest - 1}"
            )
        start = max(0, seq + 1 - oldest)
        end = len(self._lines) if limit <= 0 else min(len(self._lines), start + limit)
        return list(itertools.islice(self._lines, start, end))

    def flush(self) -> None:
        """Push buffered file records to the OS."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Flush and close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


def current() -> PendingRequest | None:
    """The write request the running task serves, if any (for the front end to fill in)."""
    return _current.get()
