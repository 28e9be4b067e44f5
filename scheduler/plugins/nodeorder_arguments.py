"""nodeorder's arguments, apart from nodeorder.py because nodeorder is compiled with mypyc in
the image (setup.py), and a compiled module keeps only the plain types of a class's fields:
pydantic would lose the aliases and bounds it validates with."""

from __future__ import annotations

from pydantic import Field

from scheduler.framework.arguments import Arguments, Weight


class NodeOrderArguments(Arguments):
    """nodeorder's arguments, in Volcano's spelling."""

    least_requested_weight: Weight = Field(1.0, alias="leastrequested.weight")
    most_requested_weight: Weight = Field(0.0, alias="mostrequested.weight")
    balanced_resource_weight: Weight = Field(1.0, alias="balancedresource.weight")
    node_affinity_weight: Weight = Field(1.0, alias="nodeaffinity.weight")
    # Volcano's defaults (kube-scheduler's too): InterPodAffinity and PodTopologySpread 2.
    pod_affinity_weight: Weight = Field(2.0, alias="podaffinity.weight")
    pod_topology_spread_weight: Weight = Field(2.0, alias="podtopologyspread.weight")
    # Volcano's defaults: TaintToleration 3, ImageLocality 1.
    taint_toleration_weight: Weight = Field(3.0, alias="tainttoleration.weight")
    image_locality_weight: Weight = Field(1.0, alias="imagelocality.weight")
