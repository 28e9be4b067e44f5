"""The cluster around the API server: simulated nodes and kubelets, the PV controller and
provisioner, the disruption controller and a stand-in cluster autoscaler."""
