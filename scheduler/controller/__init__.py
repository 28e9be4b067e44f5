"""`muster controller`: PodGroups for bare pods, Queue state, admission webhooks (kopf).

The pure rules live in `podgroups`, `queues` and `webhooks`; `objects` is the
controller's only HTTP; `operator` registers the rules as kopf handlers and
`settings` says how kopf persists, peers and serves; `cli` is the process.
"""
