"""The words muster writes for users: condition types, CamelCase reasons and the messages
that repeat, each defined once.

Reasons name why a gang waits (the PodGroup's Unschedulable condition, the pods'
PodScheduled=False condition and their events); the status writer, `muster explain` and
the e2e suites match on them, so a reason is spelt here and imported everywhere else.
Plain values only: the records in scheduler/api, the plugins, the actions and the
session's statuses (framework/job_status.py, podgroup_conditions.py, object_warnings.py)
all read them.
"""

from __future__ import annotations

from collections.abc import Iterable

# PodGroup condition types (Volcano's Scheduled and Unschedulable; muster's others).
SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
# True since the PodGroup was admitted (Inqueue); False with INQUEUE_TIMEOUT since it was
# sent back for not starting in time. Read back after a restart (api/podgroup.py).
ADMITTED = "Admitted"
# Says which spec fields are accepted but not honoured yet, and what muster does instead.
NOT_HONOURED_TYPE = "FieldsNotHonoured"
# True while the gang waits past its waiting time (since then): what is held for it, or
# why nothing is (framework/holds.py).
STARVING = "Starving"
# True while muster asks a cluster autoscaler for the gang's nodes (a ProvisioningRequest:
# asked, pending, provisioned, retrying), False once that failed for good
# (framework/scaleup.py).
SCALE_UP = "ScaleUp"
# True while the gang is partly bound (api/gang_state.py): room held for its missing
# members, or its bound members being evicted; False once it was completed or undone.
PARTLY_BOUND = "PartlyBound"

# Reasons on the Scheduled and Admitted conditions.
GANG_READY = "GangReady"
ENQUEUED = "Enqueued"
INQUEUE_TIMEOUT = "InqueueTimeout"
NOT_HONOURED_REASON = "NotHonouredYet"

# Why a gang waits (the Unschedulable condition's reason; the first cause found wins).
INVALID_PODGROUP = "InvalidPodGroup"
NOT_ENOUGH_TASKS = "NotEnoughTasks"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
QUEUE_SHARE_EXCEEDED = "QueueShareExceeded"
CLUSTER_FULL = "ClusterCapacityExceeded"
# A member uses a pod field muster does not honour yet (api/pod_fields.py); also the
# reason of the Warning event on a pod placed without honouring one.
FIELD_NOT_HONOURED = "FieldNotHonoured"
QUEUE_NOT_FOUND = "QueueNotFound"
QUEUE_NOT_OPEN = "QueueNotOpen"
QUEUE_NOT_LEAF = "QueueNotLeaf"
QUEUE_FULL = "QueueCapacityExceeded"
QUEUE_PARENT_INVALID = "QueueParentInvalid"
WAITING_FOR_EVICTIONS = "WaitingForEvictions"
# The Eviction API refused the evictions made for the gang (a PodDisruptionBudget).
EVICTION_REFUSED = "EvictionRefused"
# A PodGroup of a queue with spec.dequeueStrategy fifo, behind one that cannot go yet.
BEHIND_QUEUE_HEAD = "BehindQueueHead"
# A gang with spec.networkTopology: no admissible domain has room for all of it (hard
# mode, or a later member whose gang's domain is full); or the spec names no tier there is.
NO_TOPOLOGY_DOMAIN_FITS = "NoTopologyDomainFits"
INVALID_NETWORK_TOPOLOGY = "InvalidNetworkTopology"

# kube-scheduler's reasons on a native PodGroup's scheduled condition (PodGroupScheduled in
# scheduling.k8s.io/v1alpha2, PodGroupInitiallyScheduled in v1beta1), which muster writes
# on the native PodGroups it schedules: True with SCHEDULED once the gang is placed, False
# with NATIVE_UNSCHEDULABLE while it waits (the message says why, in muster's words) or
# with SCHEDULER_ERROR when its spec cannot be used.
NATIVE_UNSCHEDULABLE = "Unschedulable"
SCHEDULER_ERROR = "SchedulerError"
# The reason of the DisruptionTarget condition on a native PodGroup whose pods muster evicts.
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
# A Warning event on a pod that names a Volcano PodGroup (annotation
# scheduling.k8s.io/group-name) and a native one (spec.schedulingGroup): the annotation wins.
SCHEDULING_GROUP_IGNORED = "SchedulingGroupIgnored"

# Reasons on the Starving condition.
STARVING_HOLDING = "HoldingResources"
STARVING_QUEUE_OVER_SHARE = "QueueOverDeservedShare"
STARVING_CANNOT_FIT = "CannotEverFit"
STARVING_NOT_HOLDING = "HoldingTurnedOff"
STARVING_WAITS_TO_HOLD = "OlderGangsHoldFirst"

# Reasons on the ScaleUp condition.
SCALE_UP_REQUESTED = "CapacityRequested"
SCALE_UP_NOT_FOUND = "CapacityNotFound"
SCALE_UP_PROVISIONED = "CapacityProvisioned"
SCALE_UP_RETRYING = "ScaleUpRetrying"
SCALE_UP_FAILED = "ScaleUpFailed"
# A Warning event on a PodGroup whose ProvisioningRequest or PodTemplates could not be
# written (the message names the object and the API server's answer).
SCALE_UP_WRITE_FAILED = "ScaleUpRequestFailed"

# A Warning event on an object muster cannot use (its message names the field and value).
INVALID_OBJECT = "InvalidObject"
# Reasons on the PartlyBound condition, and of the events on the PodGroup that say the same
# (actions/partly_bound.py decides, framework/podgroup_conditions.py writes). UNDOING is also the
# reason of the event on each pod an undo evicts.
PARTLY_BOUND_COMPLETED = "PartlyBoundCompleted"
PARTLY_BOUND_HOLDING = "PartlyBoundHolding"
PARTLY_BOUND_UNDOING = "PartlyBoundUndoing"
PARTLY_BOUND_UNDO_REFUSED = "PartlyBoundUndoRefused"
PARTLY_BOUND_UNDONE = "PartlyBoundUndone"

# The event on a pod that preempt or reclaim evicts.
PREEMPTED = "Preempted"

# A Warning event on a PodGroup or pod whose Volcano label or annotation cannot be read.
INVALID_ANNOTATION = "InvalidAnnotation"

# Warning events on Queues.
DESERVED_EXCEEDS_PARENT = "DeservedExceedsParent"

# kube-scheduler's PodScheduled=False reasons and its message for a gated pod.
POD_UNSCHEDULABLE = "Unschedulable"
POD_GATED = "SchedulingGated"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"

# The fix a message gives for a PodGroup whose queue is not Open.
MOVE_OR_REOPEN = "move the PodGroup to an Open queue (spec.queue) or reopen the queue"
# What a gang held back by its queue's share waits for.
_WAITS_FOR_QUEUE = "the gang waits for the queue's running jobs to finish"


def gang_unschedulable(members: int, ready: int, cause: str) -> str:
    """The message of a waiting gang's Unschedulable condition and of its pending pods."""
    return f"{members - ready}/{members} tasks in gang unschedulable: {cause}"


def queue_not_found(queue: str) -> str:
    """Why a PodGroup whose spec.queue names no Queue waits."""
    return f"queue {queue!r} does not exist; create it or set spec.queue to an existing queue"


def queue_not_leaf(queue: str, leaves: Iterable[str]) -> str:
    """Why a PodGroup in a queue that has child queues waits, naming the leaves to use."""
    listed = ", ".join(sorted(leaves)) or "none yet"
    return (
        f"queue {queue!r} has child queues and only leaf queues hold PodGroups; "
        f"set spec.queue to one of its leaves ({listed})"
    )


def queue_share_held(queue: str) -> str:
    """Why allocate passes over every job of a queue that holds its deserved share."""
    return f"queue {queue!r} holds its deserved share of the cluster; {_WAITS_FOR_QUEUE}"


def queue_share_would_exceed(queue: str) -> str:
    """Why allocate stops placing a gang whose next pod would take its queue over its share."""
    return f"queue {queue!r} would exceed its deserved share of the cluster; {_WAITS_FOR_QUEUE}"


def behind_queue_head(queue: str, head: str) -> str:
    """Why a PodGroup of a fifo queue waits behind the one ahead of it."""
    return (
        f"queue {queue!r} dequeues in order (spec.dequeueStrategy fifo) and PodGroup {head} "
        f"ahead of it cannot go yet; it waits its turn (set dequeueStrategy: traverse to let "
        f"it pass)"
    )
