"""States of the manager checks captured from the sandbox (tests/unit/fixtures/managers/, see its capture.py).

A state is the koord-manager and kruise-controller-manager Deployments, their pods, the leader Leases of
both namespaces, and each manager pod's raw health answers through the pod proxy, as the API server
returned them; `serve` puts one behind the kit's fake API server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kit.fake_cluster import FakeApiServer
from outpost.kube.paths import pod_proxy
from outpost.kube.timestamps import parse_time

MANAGERS_FIXTURES = Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "managers"
STATES = ("healthy", "scaled_to_zero_kruise", "lease_stale_kruise", "backend_500_kruise", "backend_down_kruise",
          "backend_wrong_body_koord")


@dataclass(frozen=True)
class State:
    name: str
    captured_at: datetime
    objects: list[dict[str, Any]]
    health: dict[str, tuple[int | None, str]]
    """`"<ns>/<pod> <path>"` -> (status code, body) as the pod proxy answered."""

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str) -> dict[str, Any]:
        return next(o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name)

    def pods(self, namespace: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.of_kind("Pod") if o["metadata"]["namespace"] == namespace)


def load(name: str) -> State:
    raw = json.loads((MANAGERS_FIXTURES / f"{name}.json").read_text())
    captured = parse_time(raw["captured_at"])
    assert captured is not None
    return State(name, captured, raw["objects"], {k: (v[0], v[1]) for k, v in raw["health"].items()})


def serve(state: State, port: int = 8000) -> FakeApiServer:
    """The state's objects, and every captured health answer at its pod proxy path."""
    api = FakeApiServer().add_all(state.objects)
    for key, (status, body) in state.health.items():
        target, _, path = key.partition(" ")
        namespace, _, pod = target.partition("/")
        assert status is not None, f"{state.name}: {key} was not answered when captured"
        api.respond(pod_proxy(namespace, pod, port, path), status, body)
    return api
