"""The cluster benchmark's parts: workload, processes, observers, runners, report."""
