"""kwok Stage objects the sandbox runs with, copied verbatim from kwok v0.8.0
(`sigs.k8s.io/kwok/kustomize/stage/...`, Apache-2.0).

Guarantees: nodes become Ready through upstream's own `node-initialize` stage, keep their
condition heartbeats on upstream's slow cadence (`node-heartbeat-with-lease`: liveness is the
Lease, renewed by kwok itself with --node-lease-duration-seconds), and pods reach Running with an
IP from kwok's --cidr pool (`pod-ready`), complete when owned by a Job and disappear when deleted.
They are package data (`kwok/stages.yaml`) rather than read from the Go module cache so the sandbox runs
from an installed package; `node-initialize` keeps an InternalIP already present on the Node, which is how every
fake node gets its own 10.245.x.y address.
"""

from importlib import resources

STAGES_YAML = (resources.files("outpost_sandbox") / "kwok" / "stages.yaml").read_text()
"""The stages, byte-for-byte as upstream's files hold them (one YAML stream)."""
