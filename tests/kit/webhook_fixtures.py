"""The webhook states captured from the sandbox by `kit/capture_webhooks.py`, served the way the API server did.

`STATES` names every captured state (`healthy`, `<fault>@<target>`); `serve(state)` is a `FakeApiServer` holding
that state's objects (healthy overlaid with the fault's, minus what it deleted), answering both webhook Services'
`/healthz` through the `https:` service proxy with the captured status and body (or hanging where the sandbox
did not answer), and `GET /version` (the control request of `outpost.cluster.probes`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.fake_cluster import FakeApiServer
from outpost.kube.paths import service_proxy

CAPTURED = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "webhooks"
STATES = sorted(p.name for p in CAPTURED.iterdir() if p.is_dir())
SERVICES = {"koordinator-webhook-service": "koordinator-system", "kruise-webhook-service": "kruise-system"}
VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.2"}


def objects(state: str) -> list[dict[str, Any]]:
    by_file = {p.name: json.loads(p.read_text()) for p in (CAPTURED / "healthy" / "objects").glob("*.json")}
    if state != "healthy":
        by_file |= {p.name: json.loads(p.read_text()) for p in (CAPTURED / state / "objects").glob("*.json")}
        for name in json.loads((CAPTURED / state / "deleted.json").read_text()):
            del by_file[name]
    return list(by_file.values())


def answer(state: str, stem: str) -> tuple[str, str]:
    """(status, body) of a captured answer; status is a code or `timeout`."""
    return (CAPTURED / state / f"{stem}.status").read_text().strip(), (CAPTURED / state / f"{stem}.body").read_text()


def serve(state: str) -> FakeApiServer:
    api = FakeApiServer().add_all(objects(state))
    api.respond("/version", 200, VERSION)
    for service, namespace in SERVICES.items():
        status, body = answer(state, f"healthz.{service}")
        path = service_proxy(namespace, service, 443, "/healthz", "https")
        if status == "timeout":
            api.hang(path)
        else:
            api.respond(path, int(status), body)
    return api
