"""muster: a gang scheduler for Kubernetes that speaks Volcano's PodGroup and Queue API."""

__version__ = "0.1.0"
