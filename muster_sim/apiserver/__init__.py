"""The API verbs with kube-apiserver's semantics, independent of HTTP: the store and its
versions, the kinds served, reads, writes, admission, deletion and subresources."""
