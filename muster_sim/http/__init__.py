"""The HTTP front end: kube-apiserver's paths routed to the API verbs, watch streams,
discovery, the audit log, fault injection and sim's own /sim/ endpoints."""
