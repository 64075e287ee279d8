"""States of the manager checks captured from the sandbox (tests/unit/fixtures/managers/, see its capture.py).

Every state was captured from the real managers the sandbox runs (kruise-manager v1.8.0; koord-manager,
koord-scheduler and koord-descheduler v1.6.0): `healthy`, then one per fault while it was active,
`<fault>_<system>` (`scaled_to_zero_kruise`, `lease_stolen_kruise`, `manager_down_kruise`, `manager_frozen_koord`,
`manager_down_koord`). A state is the koord-manager and kruise-controller-manager Deployments, their pods, the
koord-scheduler and koord-descheduler pods, the leader Leases of both namespaces, and each manager pod's raw health
answers through the pod proxy, as the API server returned them; `serve` puts one behind the kit's fake API server.
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
STATES = (
    "healthy",
    "scaled_to_zero_kruise",
    "lease_stolen_kruise",
    "manager_down_kruise",
    "manager_frozen_koord",
    "manager_down_koord",
)


@dataclass(frozen=True)
class State:
    name: str
    captured_at: datetime
    objects: list[dict[str, Any]]
    health: dict[str, tuple[int | None, str]]
    """`"<ns>/<pod> <path>"` -> (status code, body) as the pod proxy answered; (None, `<error type>: <message>`)
    when it did not answer at all (capture.py asked with a 5 s timeout)."""

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["kind"] == kind]

    def one(self, kind: str, name: str) -> dict[str, Any]:
        return next(o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name)

    def pods(self, namespace: str, prefix: str = "") -> list[str]:
        """Names of the namespace's pods (those starting with `prefix`), sorted."""
        return sorted(
            o["metadata"]["name"]
            for o in self.of_kind("Pod")
            if o["metadata"]["namespace"] == namespace and o["metadata"]["name"].startswith(prefix)
        )


def load(name: str) -> State:
    raw = json.loads((MANAGERS_FIXTURES / f"{name}.json").read_text())
    captured = parse_time(raw["captured_at"])
    assert captured is not None
    return State(name, captured, raw["objects"], {k: (v[0], v[1]) for k, v in raw["health"].items()})


def serve(state: State, port: int = 8000) -> FakeApiServer:
    """The state's objects, and every captured health answer at its pod proxy path.

    An answer captured as none at all within capture.py's 5 s (`ClusterTimeout`, e.g. a SIGSTOPped manager whose
    port accepts and never answers, the API server waiting on it) is served as a hang. Any other unanswered capture
    is refused rather than guessed at: e.g. `ClusterUnreachable` means the API server itself was not reached, which
    served on the one path would be blamed on the pod.
    """
    api = FakeApiServer().add_all(state.objects)
    for key, (status, body) in state.health.items():
        target, _, path = key.partition(" ")
        namespace, _, pod = target.partition("/")
        proxied = pod_proxy(namespace, pod, port, path)
        if status is not None:
            api.respond(proxied, status, body)
        elif body.startswith("ClusterTimeout:"):
            api.hang(proxied)
        else:
            raise AssertionError(
                f"{state.name}: {key} was not answered when captured, for a reason the kit cannot serve: {body}"
            )
    return api
