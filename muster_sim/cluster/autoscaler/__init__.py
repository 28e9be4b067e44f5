"""sim's stand-in cluster autoscaler: node groups that grow as cluster-autoscaler grows them,
for ProvisioningRequests and for unschedulable pods (`scaler.py` says how)."""
