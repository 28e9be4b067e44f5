"""`muster controller`: PodGroups from each workload's spec, Queue state, admission webhooks.

The pure rules live in `groupers/` (one gang rule per workload kind), `plan`
(the PodGroup a pod needs), `queues` and `webhooks`; `objects` is the
controller's HTTP for single objects, `pending`, `census` and `follow` its
lists and watches (pods to group, PodGroups, the owners groups follow);
`podgroups` groups one pod, `queue_states` moves queues; `operator` registers
the kopf handlers and `settings` says how kopf persists, peers and serves;
`cli` is the process.
"""
