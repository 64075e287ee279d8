"""The operator's side: commands run on a workstation or in CI, never part of a run. `package` (the bundle),
`lock_writer` (`make lock`), `rbac`, `monitors`, `maintenance` and `catalogue` (`make catalogue`).

Nothing on the run-time path (the runtime adapters, the runner, the checks, the seams) imports this package, and
bundles leave it out together with the CLI that offers it: import-linter holds the first (`pyproject.toml`), the
packaging tests the second, so a function's cold start never pays for it.
"""
