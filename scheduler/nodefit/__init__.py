"""Whether and how well a pod fits a node, by kube-scheduler's rules: the filters and scores
(node affinity and taints, pod affinity, topology spread, volumes) that the predicates and
nodeorder plugins call. Rules, not plugins: none is registered or configured on its own."""
