"""The local simulated cluster: a real Kubernetes control plane with kwok fake nodes.

`cluster` runs the processes (`up`/`down`/`status` and the fault hooks), `pki` makes the key
material, `rbac` defines the probe's read-only role, `cli` wires `outpost sandbox ...`.
Importing this package starts nothing.
"""
