"""An environment whose cluster is unreachable, for the runtime adapters' functional tests.

The API server is a closed loopback port: a real `error` result (connection refused) without any fake of
the Kubernetes API. A module of its own, not conftest, so test modules can import it by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ENTRY_MODULE = Path(__file__).resolve().parents[2] / "functions" / "apiserver_health" / "main.py"
"""The entry module of the tracer check, as a function platform loads it."""

HEARTBEAT_TOKEN = "hb_Zr8mQ2xK5vN9pL4w"
"""The secret part of the test heartbeat URL: tests assert it never shows up in output."""


def write_unreachable_config(path: Path, closed_port: int, **check: Any) -> Path:
    """An environment whose cluster refuses connections; `check` overrides apiserver-health's entry."""
    entry = {"heartbeat": "env:OUTPOST_TEST_HEARTBEAT", **check}
    document = {
        "environment": "test",
        "cluster": {
            "name": "unreachable",
            "auth": {"mode": "token", "server": f"https://127.0.0.1:{closed_port}", "token": "env:OUTPOST_TEST_TOKEN"},
            "connect_timeout_seconds": 1,
            "read_timeout_seconds": 1,
            "deadline_seconds": 5,
        },
        "heartbeat": {"timeout_seconds": 1, "retries": 0},
        "checks": {"apiserver-health": entry},
    }
    path.write_text(json.dumps(document))  # JSON is YAML
    return path
