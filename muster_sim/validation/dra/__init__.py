"""resource.k8s.io/v1 (Dynamic Resource Allocation) as kube-apiserver 1.36 defaults and
validates it: DeviceClasses, ResourceSlices, ResourceClaims and their templates, the CEL
device selectors they carry, in the real server's words and field paths."""
