"""The switchable behaviour of the sandbox backends, kept in one JSON file in the state dir.

Guarantees: the file is written atomically (temp file + rename), so the backend daemon, which
re-reads it whenever its mtime changes, never sees half a write; an unreadable or malformed file
makes the daemon keep its last good behaviour and say so in its log (it never falls back to
"healthy" silently). Targets, modes and their meaning are listed here once and shared by the
daemon, `faults.py` and the tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from outpost.kube.quantity import cpu_millis

# target -> the component it stands for (what answers on which port is in the pod annotations). Only what needs
# a real node is a stand-in: the managers and their webhooks are the real binaries (outpost_sandbox.kubelet), whose
# faults are real too (outpost_sandbox.faults.managers).
TARGETS: dict[str, str] = {
    "koordlet": "koordlet metrics :9316 (hostNetwork)",
    "kruise-daemon": "kruise-daemon /healthz :10221 (hostNetwork)",
    "ls-workload": "the example LS workload ls-web :8090 behind Service default/ls-web:80",
}

# mode -> what the backend does for the target.
MODES: dict[str, str] = {
    "ok": "answers as upstream does",
    "down": "accepts and closes the connection at once (proxy sees a reset)",
    "500": "answers 500 (health: '[-]CHECK failed: reason withheld')",
    "hang": "accepts and never answers",
    "slow": "answers correctly after delay_ms",
    "wrong-body": "answers 200 with a body upstream never sends",
}

DEFAULT_CPU_RATIO = 0.62  # inside the default node-utilization band (lower bound 60 %, threshold 65 %)


def behaviour_path(systems_dir: Path) -> Path:
    return systems_dir / "behaviour.json"


def default_behaviour() -> dict[str, Any]:
    return {
        "targets": {t: {"mode": "ok", "delay_ms": 0} for t in TARGETS},
        # certificate stem served per TLS role (the overload fault's seat holder)
        "certs": {"apf-hold": "outpost-sandbox-hold"},
        "stale_nodemetrics": [],  # nodes whose NodeMetric must not be refreshed
        "cpu_ratio": DEFAULT_CPU_RATIO,
        "apf_load": None,  # {"user": ..., "groups": [...]} while the overload fault is on
    }


def read_behaviour(systems_dir: Path) -> dict[str, Any]:
    """The current behaviour (defaults if the file does not exist yet); raises ValueError if malformed."""
    path = behaviour_path(systems_dir)
    if not path.exists():
        return default_behaviour()
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("targets"), dict):
        raise ValueError(f"behaviour file {path}: not an object with 'targets'")
    merged = default_behaviour()
    merged.update(data)
    return merged


def write_behaviour(systems_dir: Path, data: dict[str, Any]) -> None:
    path = behaviour_path(systems_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)


def set_target(systems_dir: Path, target: str, mode: str, delay_ms: int = 0) -> None:
    if target not in TARGETS:
        raise ValueError(f"backend target {target!r}: unknown (known: {', '.join(sorted(TARGETS))})")
    if mode not in MODES:
        raise ValueError(f"backend mode {mode!r}: unknown (known: {', '.join(sorted(MODES))})")
    data = read_behaviour(systems_dir)
    data["targets"][target] = {"mode": mode, "delay_ms": int(delay_ms)}
    write_behaviour(systems_dir, data)


def cpu_usage_millis(allocatable_cpu: str, ratio: float) -> int:
    """The CPU usage the sandbox reports in a node's NodeMetric for a `cpu_ratio` behaviour."""
    return int(cpu_millis(allocatable_cpu) * ratio)
