"""sim's stand-in cluster autoscaler: node groups that grow as cluster-autoscaler grows them,
for ProvisioningRequests and for unschedulable pods (scaler.py says how), its node groups
(node_groups.py), its flags (config.py) and its simulation of where pods fit (fitting.py)."""
