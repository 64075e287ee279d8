"""Repository tooling: commands a developer runs on the source tree, never part of a run.

Nothing on the product's path (the CLI, the runtime adapters, the runner, the checks) imports this package;
import-linter holds that (`pyproject.toml`), so a function's cold start never pays for it.
"""
