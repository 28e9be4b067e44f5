"""Names other programs rely on: annotations, API group, defaults (docs/design.md, Contracts)."""

from __future__ import annotations

GROUP = "scheduling.volcano.sh"
VERSION = "v1beta1"

# A pod joins a PodGroup in its namespace through this annotation.
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
# A pod's role inside its group (KubeRay: "head", "worker"; Volcano jobs: task names).
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
# The HyperNode a PodGroup placed by network topology runs in (Volcano's name for it).
ALLOCATED_HYPERNODE_ANNOTATION = "volcano.sh/job-allocated-hypernode"
# A bare pod (or a namespace) names its queue here.
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
# A PodGroup with no pods yet names the scheduler it is for here (cache/ownership.py).
SCHEDULER_NAME_ANNOTATION = "muster.dev/scheduler-name"

# The largest value of an int32 field of Volcano's API (minMember, minTaskMember,
# subGroupSize, minSubGroups).
INT32_MAX = 2**31 - 1
# On a pending pod: the ProvisioningRequest whose capacity it waits for (cluster-autoscaler
# leaves such pods out of its ordinary scale-up; api/provisioning.py).
CONSUME_PROVISIONING_REQUEST = "autoscaling.x-k8s.io/consume-provisioning-request"

DEFAULT_SCHEDULER_NAME = "muster"
DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"

# Pods in these namespaces or classes are never preemption victims.
SYSTEM_NAMESPACE = "kube-system"
SYSTEM_PRIORITY = 2_000_000_000

# On a PodGroup `muster controller` made: the rule that set its size, in words (kind, field,
# value), which `muster explain` prints; and where its minMember came from ("rule", or an
# annotation on the "owner" or the "pod"), which decides whether a change of the owner's
# spec moves it.
GROUPING_RULE_ANNOTATION = "muster.dev/grouping-rule"
MIN_MEMBER_FROM_ANNOTATION = "muster.dev/min-member-from"
