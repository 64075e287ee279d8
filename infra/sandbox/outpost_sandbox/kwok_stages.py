"""kwok Stage objects the sandbox runs with, copied verbatim from kwok v0.8.0
(`sigs.k8s.io/kwok/kustomize/stage/...`, Apache-2.0).

Nodes become Ready and pods Running through upstream's own stages, with liveness from the Lease kwok renews.
Embedded rather than read from the Go module cache, so an installed package runs; `node-initialize` keeps an
existing InternalIP, which gives each fake node its 10.245.x.y address.
"""

from importlib import resources

STAGES_YAML = (resources.files("outpost_sandbox") / "kwok" / "stages.yaml").read_text()
"""The stages, byte-for-byte as upstream's files hold them (one YAML stream)."""
