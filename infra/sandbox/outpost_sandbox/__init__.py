"""The local simulated cluster: a real Kubernetes control plane with kwok fake nodes.

A distribution of its own (`outpost-sandbox`), so it never ships in a function bundle: the product
never imports it (an import-linter contract) and finds its commands (`outpost sandbox ...`,
`outpost demo`) through the `outpost.commands` entry-point group. `cluster` runs the processes
(`up`/`down`/`status` and the fault hooks), `pki` makes the key material, `systems` installs the
extension systems, `faults` breaks and heals them, `cli` wires `outpost sandbox ...`; the probe's
read-only role comes from the product (`outpost.tooling.rbac`). Importing this package starts nothing.
"""
