"""muster sim: an emulated Kubernetes API server with simulated nodes and kubelets."""

from scheduler.sim.server import SimConfig, SimServer

__all__ = ["SimConfig", "SimServer"]
