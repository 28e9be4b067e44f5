"""Events as the controllers and the kubelet record them: core/v1 Events about one object."""

from __future__ import annotations

import logging
import time
from typing import Any

from muster_sim.apiserver.verbs import ApiServer
from muster_sim.errors import ApiError
from muster_sim.timestamps import now_rfc3339

Obj = dict[str, Any]

log = logging.getLogger("muster.sim")


def record_event(
    api: ApiServer,
    involved: Obj,
    event_type: str,
    reason: str,
    message: str,
    component: str,
    host: str = "",
) -> None:
    """Create an Event about `involved` (cluster-scoped objects' events go to `default`)."""
    meta = involved.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    stamp = now_rfc3339()
    source: Obj = {"component": component}
    if host:
        source["host"] = host
    event: Obj = {
        # client-go's recorder names an event <object>.<unix nanoseconds in hex>
        "metadata": {"name": f"{meta.get('name')}.{time.time_ns():x}", "namespace": namespace},
        "involvedObject": {
            "kind": involved.get("kind"),
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "apiVersion": involved.get("apiVersion"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": reason,
        "message": message,
        "source": source,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": event_type,
        "eventTime": None,
        "reportingComponent": component,
        "reportingInstance": host,
    }
    if not event["involvedObject"]["namespace"]:
        del event["involvedObject"]["namespace"]
    try:
        api.create(api.kind("", "v1", "events"), namespace, event)
    except ApiError as error:
        # the real recorder drops an event it cannot write, too
        log.warning("event %s about %s not recorded: %s", reason, meta.get("name"), error.message)
