"""Captured sandbox fixtures (see `kit/capture.py`): real API JSON, trimmed of managedFields only.

Layout under `tests/fixtures/sandbox/`: `healthy/<Kind>/<ns>.<name>.json` and
`faults/<fault>/<Kind>/...` for the objects a fault changed, plus `<state>/health/<label>.status|.body`
for raw health answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sandbox"


def _state_dir(state: str) -> Path:
    return FIXTURES / ("healthy" if state == "healthy" else f"faults/{state}")


def fixture(kind: str, name: str, namespace: str | None = None, state: str = "healthy") -> dict[str, Any]:
    """One captured object; `state` is "healthy" or a fault name."""
    stem = f"{namespace}.{name}" if namespace else name
    data: dict[str, Any] = json.loads((_state_dir(state) / kind / f"{stem}.json").read_text())
    return data


def fixtures(kind: str, state: str = "healthy") -> list[dict[str, Any]]:
    """Every captured object of `kind` in `state`, sorted by file name."""
    return [json.loads(p.read_text()) for p in sorted((_state_dir(state) / kind).glob("*.json"))]


def load_state(state: str = "healthy") -> list[dict[str, Any]]:
    """Every object of a captured state; for a fault, the healthy objects overlaid with the faulted ones.

    An object a fault deleted is simply absent from the fault's directory, so such faults list what
    to drop in `<fault>/deleted.json` (kind, namespace, name), written by the capture script.
    """
    by_key: dict[tuple[str, str, str], dict[str, Any]] = {}
    directories = [_state_dir("healthy")] + ([] if state == "healthy" else [_state_dir(state)])
    for directory in directories:
        for path in sorted(directory.glob("*/*.json")):
            obj = json.loads(path.read_text())
            metadata = obj.get("metadata", {})
            by_key[(obj["kind"], metadata.get("namespace", ""), metadata["name"])] = obj
    deleted = _state_dir(state) / "deleted.json"
    if state != "healthy" and deleted.exists():
        for kind, namespace, name in json.loads(deleted.read_text()):
            by_key.pop((kind, namespace, name), None)
    return list(by_key.values())


def health_body(label: str, state: str = "healthy") -> tuple[int, str]:
    """(status code, body) of a captured health answer."""
    directory = _state_dir(state) / "health"
    return int((directory / f"{label}.status").read_text()), (directory / f"{label}.body").read_text()
