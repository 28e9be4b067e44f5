"""The reliability campaign's parts: invariants over sim's audit log, the cluster, faults, fuzz."""
