"""muster sim and muster demo: an emulated, strict kube-apiserver with simulated nodes, kubelets
and controllers, the test bench of muster's e2e suite, demo and benches.

`apiserver/` serves the API verbs with kube-apiserver's semantics, `validation/` holds its rules
for each kind, `access/` who may do what, `http/` the HTTP front end, `cluster/` the nodes,
kubelets and controllers around it; `server.py` wires them into one process (`muster sim`,
`cli.py`) and `demo.py` is `muster demo`. The scheduler and the controller never import this
package; `muster sim` and `muster demo` load it only when they run. Its dependencies beyond
muster's are the `sim` extra's (`pip install 'muster[sim]'`), and the image leaves it out.
"""
