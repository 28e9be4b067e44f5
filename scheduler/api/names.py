"""Names other programs rely on: annotations, API group, defaults (docs/design.md, Contracts)."""

from __future__ import annotations

GROUP = "scheduling.volcano.sh"
VERSION = "v1beta1"

# A pod joins a PodGroup in its namespace through this annotation.
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
# A pod's role inside its group (KubeRay: "head", "worker"; Volcano jobs: task names).
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
# A bare pod (or a namespace) names its queue here.
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
# A PodGroup with no pods yet names the scheduler it is for here (cache/ownership.py).
SCHEDULER_NAME_ANNOTATION = "muster.dev/scheduler-name"

DEFAULT_SCHEDULER_NAME = "muster"
DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"

# Pods in these namespaces or classes are never preemption victims.
SYSTEM_NAMESPACE = "kube-system"
SYSTEM_PRIORITY = 2_000_000_000
