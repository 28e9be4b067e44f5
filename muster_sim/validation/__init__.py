"""kube-apiserver's rules for the objects it stores: each kind's defaults, strategy and
validation, in the real server's words and field paths; typed decoding; CRD schemas."""
