"""Who may do what: authentication (tokens, client certificates, ServiceAccount tokens),
impersonation and RBAC, sim's certificate authority and the kubeconfigs it writes."""
