"""`outpost run` as an operator runs it from a shell: a child process of this interpreter, JSON out, no heartbeat."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def run_cli(
    *checks: str, config: Path, timeout: float, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`outpost run CHECK... --config CONFIG --json --no-report`, its output captured; any exit code is returned,
    for the test to judge. `env` replaces the environment (None: this process's)."""
    return subprocess.run(
        [sys.executable, "-m", "outpost.cli", "run", *checks, "--config", str(config), "--json", "--no-report"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
